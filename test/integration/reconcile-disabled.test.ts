// Flux's `kustomize.toolkit.fluxcd.io/reconcile: disabled` on the real test bed: annotated on a live object (by hand,
// during an incident, so that GitOps stops putting back a fix), the object is no longer written by a deploy, nor put
// back by a drift pass, nor pruned when it leaves the manifests; brought by the manifest, the object is created once
// and then left, as Flux's controllers do. Taking the annotation off hands the object back.
import { afterAll, describe, expect, it } from 'vitest';
import { ClusterCache } from '../../src/kube/cache.ts';
import { beginDriftPass, keepDriftMarks } from '../../src/kube/drift-pass.ts';
import { type DeployRequest, deploy } from '../../src/sync/deploy.ts';
import { driftClient, kubectl, manifestDir, mooring, testbed, useNamespace } from './helpers.ts';

const settings = (value: string, annotations = '') => `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations: {strategy.spinnaker.io/versioned: "false"${annotations}}
data: {mode: "${value}"}
`;
const web = (replicas: number) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`;
const DISABLED = 'kustomize.toolkit.fluxcd.io/reconcile=disabled';

describe("Flux's reconcile: disabled", () => {
  const ns = useNamespace('reconcile-off');
  const agentNs = useNamespace('reconcile-off-agent');
  const closers: (() => void | Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });
  const get = async (what: string, path: string) => {
    const out = await kubectl('get', what, '-n', ns(), '-o', `jsonpath=${path}`);
    return out.code === 0 ? out.stdout : undefined;
  };
  const ok = async (...args: string[]) => {
    const out = await kubectl(...args, '-n', ns());
    expect(out.code, out.stderr).toBe(0);
  };

  it('leaves an object annotated by hand: not written, not pruned; given back when the annotation goes', async () => {
    const flags = ['--kubeconfig', testbed().kube.kubeconfig, '-n', ns(), '--application', 'off'];
    const first = await mooring(
      'deploy',
      await manifestDir({ 'settings.yaml': settings('a'), 'web.yaml': web(1) }),
      ...flags,
      '--timeout',
      '60s',
    );
    expect(first.code, first.stderr).toBe(0);
    expect(await get('configmap/settings', '{.data.mode}')).toBe('a');

    // The incident: the object fixed by hand and marked so that GitOps leaves it.
    await ok('annotate', 'configmap', 'settings', DISABLED);
    await ok('patch', 'configmap', 'settings', '-p', '{"data":{"mode":"hand"}}');
    const changed = await manifestDir({ 'settings.yaml': settings('b'), 'web.yaml': web(2) });
    const again = await mooring('deploy', changed, ...flags, '--timeout', '60s');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(
      'configmap/settings left as it is (kustomize.toolkit.fluxcd.io/reconcile: disabled)',
    );
    expect(again.stdout).toContain('deployment.apps/web configured');
    expect(await get('configmap/settings', '{.data.mode}')).toBe('hand');
    const diff = await mooring('diff', changed, ...flags);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);

    // Left out of the manifests, it is not pruned.
    const without = await manifestDir({ 'web.yaml': web(2) });
    const pruned = await mooring('deploy', without, ...flags, '--timeout', '60s', '--prune');
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain(
      `ConfigMap ${ns()}/settings not pruned: kustomize.toolkit.fluxcd.io/reconcile: disabled`,
    );
    expect(await get('configmap/settings', '{.data.mode}')).toBe('hand');

    // The annotation taken off: the next deploy writes it as the manifest says.
    await ok('annotate', 'configmap', 'settings', 'kustomize.toolkit.fluxcd.io/reconcile-');
    const back = await mooring('deploy', changed, ...flags, '--timeout', '60s');
    expect(back.code, back.stderr).toBe(0);
    expect(await get('configmap/settings', '{.data.mode}')).toBe('b');
  }, 180_000);

  it('creates an object whose manifest brings the annotation once, then leaves it', async () => {
    const flags = ['--kubeconfig', testbed().kube.kubeconfig, '-n', ns(), '--application', 'born-off'];
    const mark = ', kustomize.toolkit.fluxcd.io/reconcile: disabled';
    await kubectl('delete', 'configmap', 'settings', '-n', ns(), '--ignore-not-found');
    const created = await mooring(
      'deploy',
      await manifestDir({ 'settings.yaml': settings('first', mark) }),
      ...flags,
      '--timeout',
      '60s',
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('configmap/settings created');
    expect(await get('configmap/settings', '{.data.mode}')).toBe('first');
    const later = await mooring(
      'deploy',
      await manifestDir({ 'settings.yaml': settings('second', mark) }),
      ...flags,
      '--timeout',
      '60s',
    );
    expect(later.code, later.stderr).toBe(0);
    expect(later.stdout).toContain('configmap/settings left as it is');
    expect(await get('configmap/settings', '{.data.mode}')).toBe('first');
    await ok('delete', 'configmap', 'settings');
  }, 180_000);

  it('is not put back by a drift pass, from the watch cache or from a read', async () => {
    const { api, cache, discovery } = driftClient(closers);
    const request = (drift?: 'correct'): DeployRequest => ({
      files: [{ path: 'app.yaml', text: `${settings('git')}---\n${web(1)}` }],
      namespace: ns(),
      application: 'off-agent',
      images: [],
      timeoutMs: 120_000,
      dryRun: false,
      fieldManager: 'mooring',
      concurrency: 4,
      inventory: {
        owner: 'off-agent',
        namespace: agentNs(),
        prune: true,
        allowEmpty: false,
        emptyAdvice: '',
      },
      ...(drift ? { drift, hooks: false } : {}),
    });
    await kubectl('delete', 'configmap', 'settings', '-n', ns(), '--ignore-not-found');
    await kubectl('delete', 'deployment', 'web', '-n', ns(), '--ignore-not-found');
    const first = await deploy({ api, discovery, cache }, request());
    expect(first.outcome, first.summary).toBe('stable');
    // A drift pass that sees the hand changes finds them (the control: the pass would put them back).
    await ok('scale', 'deployment', 'web', '--replicas=3');
    beginDriftPass(cache, ['off-agent'], { info: () => {} });
    const control = await deploy({ api, discovery, cache }, { ...request('correct'), dryRun: true });
    expect(control.drift?.map((d) => d.object)).toEqual([`Deployment ${ns()}/web`]);

    await ok('annotate', 'deployment', 'web', DISABLED);
    await ok('annotate', 'configmap', 'settings', DISABLED);
    await ok('patch', 'configmap', 'settings', '-p', '{"data":{"mode":"hand"}}');
    beginDriftPass(cache, ['off-agent'], { info: () => {} });
    const pass = await deploy({ api, discovery, cache }, request('correct'));
    expect(pass.outcome, pass.summary).toBe('stable');
    expect(pass.drift).toEqual([]);
    expect(await get('deployment/web', '{.spec.replicas}')).toBe('3');
    expect(await get('configmap/settings', '{.data.mode}')).toBe('hand');
    // A new agent (no marks: every object read and dry-run) leaves them too.
    const fresh = new ClusterCache(api, { lingerMs: 5 * 60_000 });
    closers.push(() => fresh.close());
    keepDriftMarks(fresh);
    beginDriftPass(fresh, ['off-agent'], { info: () => {} });
    const read = await deploy({ api, discovery, cache: fresh }, request('correct'));
    expect(read.outcome, read.summary).toBe('stable');
    expect(read.drift).toEqual([]);
    // A sync of the same release leaves them as well.
    const sync = await deploy({ api, discovery, cache }, request());
    expect(sync.outcome, sync.summary).toBe('stable');
    expect(await get('deployment/web', '{.spec.replicas}')).toBe('3');
    expect(await get('configmap/settings', '{.data.mode}')).toBe('hand');
  }, 180_000);
});
