// Flux's `kustomize.toolkit.fluxcd.io/ssa` on the real test bed: `IfNotPresent` creates an object once and then
// leaves it as it is (a Secret whose placeholder someone fills by hand, an object a controller takes over): never
// versioned, written over by a later deploy, or put back by a drift pass; `Ignore` is never written. Both are pruned
// as any object of the set once they leave it.
import { afterAll, describe, expect, it } from 'vitest';
import { beginDriftPass } from '../../src/kube/drift-pass.ts';
import { type DeployRequest, deploy } from '../../src/sync/deploy.ts';
import { driftClient, kubectl, manifestDir, mooring, testbed, useNamespace } from './helpers.ts';

const token = (value: string) => `apiVersion: v1
kind: Secret
metadata:
  name: api-token
  annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}
stringData: {token: ${value}}
`;
const ignored = `apiVersion: v1
kind: ConfigMap
metadata:
  name: managed-elsewhere
  annotations: {kustomize.toolkit.fluxcd.io/ssa: Ignore}
data: {a: "1"}
`;
const web = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx
          env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: api-token, key: token}}}]
`;

describe("Flux's ssa: IfNotPresent and Ignore", () => {
  const ns = useNamespace('write-once');
  const agentNs = useNamespace('write-once-agent');
  const closers: (() => void | Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });
  const tokenNow = async () => {
    const out = await kubectl('get', 'secret', 'api-token', '-n', ns(), '-o', 'jsonpath={.data.token}');
    return out.code === 0 ? Buffer.from(out.stdout, 'base64').toString() : undefined;
  };
  const setToken = async (value: string) => {
    const patch = JSON.stringify({ stringData: { token: value } });
    const out = await kubectl('patch', 'secret', 'api-token', '-n', ns(), '-p', patch);
    expect(out.code, out.stderr).toBe(0);
  };

  it('creates once, then leaves it to whoever filled it in; never writes what says Ignore', async () => {
    const flags = ['--kubeconfig', testbed().kube.kubeconfig, '-n', ns(), '--application', 'once'];
    const dir = await manifestDir({
      'token.yaml': token('placeholder'),
      'ignored.yaml': ignored,
      'web.yaml': web,
    });
    const first = await mooring('deploy', dir, ...flags, '--timeout', '60s');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('secret/api-token created');
    expect(first.stdout).toContain(
      'configmap/managed-elsewhere not created (kustomize.toolkit.fluxcd.io/ssa: Ignore)',
    );
    // Under its own name: a version would be a new object at every change.
    expect(await tokenNow()).toBe('placeholder');
    expect((await kubectl('get', 'configmap', 'managed-elsewhere', '-n', ns())).code).not.toBe(0);

    await setToken('filled-by-hand');
    const changed = await manifestDir({
      'token.yaml': token('placeholder-2'),
      'ignored.yaml': ignored,
      'web.yaml': web,
    });
    const again = await mooring('deploy', changed, ...flags, '--timeout', '60s');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(
      'secret/api-token left as it is (kustomize.toolkit.fluxcd.io/ssa: IfNotPresent)',
    );
    expect(again.stdout).toContain('deployment.apps/web unchanged');
    expect(await tokenNow()).toBe('filled-by-hand');
    const diff = await mooring('diff', changed, ...flags);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);

    // Deleted, it is created again, once.
    expect((await kubectl('delete', 'secret', 'api-token', '-n', ns())).code).toBe(0);
    const back = await mooring('deploy', changed, ...flags, '--timeout', '60s');
    expect(back.code, back.stderr).toBe(0);
    expect(await tokenNow()).toBe('placeholder-2');

    // Left out of the set, it is pruned as any object.
    const without = await manifestDir({ 'web.yaml': web });
    const pruned = await mooring('deploy', without, ...flags, '--timeout', '60s', '--prune');
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain('secret/api-token pruned');
    expect(await tokenNow()).toBeUndefined();
  }, 180_000);

  it('is not put back by a drift pass', async () => {
    const { api, cache, discovery } = driftClient(closers);
    const request = (drift?: 'correct'): DeployRequest => ({
      files: [{ path: 'app.yaml', text: `${token('placeholder')}---\n${web}` }],
      namespace: ns(),
      application: 'once-agent',
      images: [],
      timeoutMs: 120_000,
      dryRun: false,
      fieldManager: 'mooring',
      concurrency: 4,
      inventory: {
        owner: 'once-agent',
        namespace: agentNs(),
        prune: true,
        allowEmpty: false,
        emptyAdvice: '',
      },
      ...(drift ? { drift, hooks: false } : {}),
    });
    await kubectl('delete', 'secret', 'api-token', '-n', ns(), '--ignore-not-found');
    const first = await deploy({ api, discovery, cache }, request());
    expect(first.outcome, first.summary).toBe('stable');
    expect(await tokenNow()).toBe('placeholder');
    await setToken('rotated');
    beginDriftPass(cache, ['once-agent'], { info: () => {} });
    const pass = await deploy({ api, discovery, cache }, request('correct'));
    expect(pass.outcome, pass.summary).toBe('stable');
    expect(pass.drift).toEqual([]);
    expect(await tokenNow()).toBe('rotated');
    // A sync of the same release leaves it too.
    const sync = await deploy({ api, discovery, cache }, request());
    expect(sync.outcome, sync.summary).toBe('stable');
    expect(await tokenNow()).toBe('rotated');
  }, 180_000);
});
