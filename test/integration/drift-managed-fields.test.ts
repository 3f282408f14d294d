// Drift judged from managed fields on the real control plane (Kubernetes 1.37): `kubectl edit` changing a label
// the manifest sets and adding an env entry is an Update of manager kubectl-edit; the pass finds both from the
// cached copy, and puts them back (a replace, since a server-side apply keeps what another manager added) without
// a dry run. An autoscaler's replicas, when the manifest leaves them out, are no drift: neither when a real
// HorizontalPodAutoscaler scales through /scale (the server records no owner for a field nobody owned) nor when
// a manager writes them to the object itself (it owns them then).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { beginDriftPass, keepDriftMarks } from '../../src/kube/drift-pass.ts';
import { type DeployRequest, deploy } from '../../src/sync/deploy.ts';
import {
  clusterConfig,
  deploymentYaml,
  eventually,
  kubeConfig,
  kubectl,
  recordingApi,
  runTool,
  type SentRequest,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const edited = deploymentYaml({
  name: 'edited',
  labels: { tier: 'front' },
  image: 'registry.example.com/edited:1.0.0',
  env: { MODE: 'prod' },
});

// No replicas: they are the autoscaler's.
const autoscaled = `${deploymentYaml({
  name: 'autoscaled',
  replicas: null,
  image: 'registry.example.com/autoscaled:1.0.0',
})}---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: autoscaled}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: autoscaled}
  minReplicas: 2
  maxReplicas: 4
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`;

/** `kubectl edit` with an editor that changes the object as JSON, as a person would in their editor. */
async function kubectlEdit(namespace: string, object: string, change: string): Promise<void> {
  const dir = await tempDir();
  const editor = join(dir, 'edit.mjs');
  await writeFile(
    editor,
    `import { readFileSync, writeFileSync } from 'node:fs';
const file = process.argv[2];
const o = JSON.parse(readFileSync(file, 'utf8'));
${change}
writeFileSync(file, JSON.stringify(o, null, 2));
`,
  );
  const env = testbed();
  const result = await runTool(
    env.tools.kubectl,
    ['--kubeconfig', env.kube.kubeconfig, '-n', namespace, 'edit', '-o', 'json', object],
    { env: { ...process.env, KUBE_EDITOR: `"${process.execPath}" "${editor}"` } },
  );
  expect(result.code, result.stderr).toBe(0);
}

describe('drift from managed fields', () => {
  const ns = useNamespace('drift-fields');
  const agentNs = useNamespace('drift-fields-agent');
  const api = new KubeApi(clusterConfig());
  const cache = new ClusterCache(api, { lingerMs: 5 * 60_000 });
  const discovery = new Discovery(api);
  keepDriftMarks(cache);
  afterAll(() => {
    cache.close();
    api.close();
  });
  const appsApi = () => kubeConfig().makeApiClient(AppsV1Api);

  /** A deploy of `text` as deployment `owner` (a drift pass of it with `drift`), counted two ways. */
  const deployer = (owner: string, text: string) => {
    const sent: SentRequest[] = [];
    const summaries: Record<string, unknown>[] = [];
    const request = (drift?: 'correct'): DeployRequest => ({
      files: [{ path: `${owner}.yaml`, text }],
      namespace: ns(),
      application: owner,
      images: [],
      timeoutMs: 120_000,
      dryRun: false,
      fieldManager: 'mooring',
      concurrency: 4,
      inventory: { owner, namespace: agentNs(), prune: true, allowEmpty: false, emptyAdvice: '' },
      ...(drift ? { drift, hooks: false } : {}),
    });
    return {
      sent,
      summaries,
      first: () => deploy({ api, discovery, cache }, request()),
      pass: () => {
        sent.length = 0;
        beginDriftPass(cache, [owner], { info: (fields: object) => summaries.push({ ...fields }) });
        return deploy({ api: recordingApi(api, sent), discovery, cache }, request('correct'));
      },
    };
  };

  it('puts back a label and an env entry changed with kubectl edit, with no dry run', async () => {
    const d = deployer('edited', edited);
    const first = await d.first();
    expect(first.outcome, first.summary).toBe('stable');

    await kubectlEdit(
      ns(),
      'deployment/edited',
      `o.metadata.labels.tier = 'back';
o.spec.template.spec.containers[0].env.push({ name: 'DEBUG', value: '1' });`,
    );
    // A replace carries the resourceVersion it read: a status write by the Deployment controller in between is
    // answered 409, and the replace reads the object again and is sent again (kube/apply.ts), in the same pass.
    const corrected = await eventually('the edit found and put back', async () => {
      const report = await d.pass();
      return report.drift?.length ? report : undefined;
    });
    expect(corrected.outcome, corrected.summary).toBe('stable');
    expect(corrected.drift).toEqual([
      {
        object: `Deployment ${ns()}/edited`,
        fields: ['metadata.labels.tier'],
        added: ['spec.template.spec.containers[name=web].env[name=DEBUG]'],
        by: ['kubectl-edit'],
      },
    ]);
    // What another manager added survives an apply: the object is replaced by its manifest.
    expect(corrected.applied.map((a) => [a.target.plan.object, a.action])).toEqual([
      [`Deployment ${ns()}/edited`, 'replaced'],
    ]);
    console.log(`the pass that put the edit back sent ${d.sent.length} requests:`, d.sent);
    expect(d.sent.filter((s) => s.dryRun)).toEqual([]);
    const puts = d.sent.filter((s) => s.method === 'PUT').length;
    expect(puts).toBeGreaterThanOrEqual(1);
    expect(puts).toBeLessThanOrEqual(4);
    expect(d.summaries.at(-1)).toMatchObject({ moved: 1, byDryRun: 0, drifted: 1, dryRuns: 0, writes: puts });
    const live = await appsApi().readNamespacedDeployment({ name: 'edited', namespace: ns() });
    expect(live.metadata?.labels?.tier).toBe('front');
    expect(live.spec?.template.spec?.containers[0]?.env).toEqual([{ name: 'MODE', value: 'prod' }]);

    // Put back by mooring's own write: quiet again (once the cache holds that write).
    await eventually('a quiet pass after the correction', async () => {
      const report = await d.pass();
      return report.drift?.length === 0 && d.sent.every((s) => !s.dryRun && s.method === 'GET')
        ? true
        : undefined;
    });
  });

  it('an autoscaler’s replicas are no drift when the manifest leaves them out', async () => {
    const d = deployer('autoscaled', autoscaled);
    const first = await d.first();
    expect(first.outcome, first.summary).toBe('stable');
    const replicas = async () =>
      (await appsApi().readNamespacedDeployment({ name: 'autoscaled', namespace: ns() })).spec?.replicas;
    // The pass reads the watch cache: each check waits until the cache's copy holds the count written.
    const info = await discovery.resource('apps/v1', 'Deployment');
    const cached = (count: number) =>
      eventually(`the watch cache holds ${count} replicas`, async () => {
        const copy = cache.get(info, ns(), 'autoscaled') as { spec?: { replicas?: number } } | undefined;
        return copy?.spec?.replicas === count ? true : undefined;
      });
    // The HorizontalPodAutoscaler scales up to its minimum through /scale (no metrics are needed for that).
    await eventually('scaled to 2 by the autoscaler', async () =>
      (await replicas()) === 2 ? true : undefined,
    );
    await cached(2);
    const afterHpa = await d.pass();
    expect(afterHpa.drift).toEqual([]);
    expect(afterHpa.applied).toEqual([]);
    expect(d.sent.filter((s) => s.dryRun || s.method !== 'GET')).toEqual([]);
    expect(d.summaries.at(-1)).toMatchObject({ byDryRun: 0, drifted: 0, dryRuns: 0, writes: 0 });
    expect(d.summaries.at(-1)?.moved).toBeGreaterThanOrEqual(1);

    // A manager that writes the count to the object itself owns spec.replicas: still not mooring's business.
    const patched = await kubectl(
      '-n',
      ns(),
      'patch',
      'deployment/autoscaled',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":3}}',
      '--field-manager=autoscaler-like',
    );
    expect(patched.code, patched.stderr).toBe(0);
    await cached(3);
    const afterPatch = await d.pass();
    expect(afterPatch.drift).toEqual([]);
    expect(afterPatch.applied).toEqual([]);
    expect(d.sent.filter((s) => s.dryRun || s.method !== 'GET')).toEqual([]);
    expect(d.summaries.at(-1)).toMatchObject({ byDryRun: 0, drifted: 0, dryRuns: 0, writes: 0 });
    expect(d.summaries.at(-1)?.moved).toBeGreaterThanOrEqual(1);
    expect(await replicas()).toBe(3);
  });
});
