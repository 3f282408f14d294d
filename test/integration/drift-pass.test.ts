// A drift pass reads the watch cache first (src/kube/drift-check.ts): on the real control plane, a pass where
// nothing moved sends no dry run and no write (counted by a client of the test's own around mooring's KubeApi);
// a Deployment scaled by hand with kubectl is found from the managed fields of its cached copy (Kubernetes 1.37
// records the /scale write as kubectl's) and scaled back without a single dry run; and the agent logs one
// summary line per pass with the same counts. Edits with kubectl edit and an autoscaler's replicas:
// drift-managed-fields.test.ts.
import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { beginDriftPass } from '../../src/kube/drift-pass.ts';
import { type DeployRequest, deploy } from '../../src/sync/deploy.ts';
import {
  agentConfig,
  driftClient,
  eventually,
  kubeConfig,
  manifestDir,
  recordingApi,
  runTool,
  type SentRequest,
  startAgent,
  testbed,
  useNamespace,
} from './helpers.ts';
import { apps } from './scale-fixtures.ts';

function kubectl(...args: string[]) {
  const env = testbed();
  return runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, ...args]);
}

describe('a drift pass from the watch cache', () => {
  const ns = useNamespace('drift-pass');
  const agentNs = useNamespace('drift-pass-agent');
  const closers: (() => void | Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it('sends no dry run and no write when nothing moved, and scales back a Deployment scaled by hand', async () => {
    const { api, cache, discovery } = driftClient(closers);
    const request = (drift?: 'correct'): DeployRequest => ({
      files: [{ path: 'app.yaml', text: apps(1, 'web') }],
      namespace: ns(),
      application: 'web',
      images: [],
      timeoutMs: 120_000,
      dryRun: false,
      fieldManager: 'mooring',
      concurrency: 4,
      inventory: { owner: 'web', namespace: agentNs(), prune: true, allowEmpty: false, emptyAdvice: '' },
      ...(drift ? { drift, hooks: false } : {}),
    });
    const first = await deploy({ api, discovery, cache }, request());
    expect(first.outcome, first.summary).toBe('stable');

    const sent: SentRequest[] = [];
    // mooring's own summary of each pass, beside the test's count.
    const summaries: Record<string, unknown>[] = [];
    const log = { info: (fields: object) => summaries.push({ ...fields }) };
    const pass = () => {
      beginDriftPass(cache, ['web'], log);
      return deploy({ api: recordingApi(api, sent), discovery, cache }, request('correct'));
    };
    const quiet = await pass();
    expect(quiet.outcome, quiet.summary).toBe('stable');
    expect(quiet.drift).toEqual([]);
    expect(quiet.applied).toEqual([]);
    console.log(`a quiet drift pass of 3 objects sent ${sent.length} requests:`, sent);
    // Not one request: the check runs before the namespace and the inventory are read, and the snapshot's lists
    // come from the watch cache.
    expect(sent).toEqual([]);

    const scaled = await kubectl('-n', ns(), 'scale', 'deployment/web-000', '--replicas=3');
    expect(scaled.code, scaled.stderr).toBe(0);
    // The watch cache hears of the change within moments; a pass before that finds nothing yet.
    const corrected = await eventually('the scale found', async () => {
      sent.length = 0;
      const report = await pass();
      return report.drift?.length ? report : undefined;
    });
    expect(corrected.outcome, corrected.summary).toBe('stable');
    expect(corrected.drift).toEqual([
      { object: `Deployment ${ns()}/web-000`, fields: ['spec.replicas'], added: [], by: ['kubectl'] },
    ]);
    expect(corrected.applied.map((a) => [a.target.plan.object, a.action])).toEqual([
      [`Deployment ${ns()}/web-000`, 'configured'],
    ]);
    // Found from the managed fields and put back with one forced apply: not one dry run, one write.
    console.log(`the pass that scaled web-000 back sent ${sent.length} requests:`, sent);
    expect(sent.filter((s) => s.dryRun)).toEqual([]);
    expect(sent.filter((s) => s.method !== 'GET')).toEqual([
      {
        method: 'PATCH',
        path: expect.stringMatching(`/namespaces/${ns()}/deployments/web-000$`),
        dryRun: false,
      },
    ]);
    expect(summaries.at(-1)).toMatchObject({
      objects: 3,
      moved: 1,
      byDryRun: 0,
      drifted: 1,
      dryRuns: 0,
      writes: 1,
    });
    const appsApi = kubeConfig().makeApiClient(AppsV1Api);
    expect(
      (await appsApi.readNamespacedDeployment({ name: 'web-000', namespace: ns() })).spec?.replicas,
    ).toBe(1);

    // Put back by mooring's own write: the next pass is quiet again.
    sent.length = 0;
    const after = await pass();
    expect(after.drift).toEqual([]);
    expect(sent.filter((s) => s.dryRun || s.method !== 'GET')).toEqual([]);
  });

  it('the agent logs one line per pass: no dry run and no write while nothing moves, nor for a scale', async () => {
    const suffix = Date.now().toString(36);
    const dir = await manifestDir({ 'app.yaml': apps(1, 'logged') });
    const agent = startAgent(
      await agentConfig({
        cluster: { namespace: `mooring-dp-${suffix}` },
        deployments: [{ name: 'logged', namespace: ns(), source: 'folder', stability: { timeout: '2m' } }],
        extra: { sources: { local: [{ name: 'folder', path: dir }] }, drift: { interval: '2s' } },
      }),
      { level: 'info' },
    );
    closers.push(async () => {
      await agent.stop();
      await kubectl('delete', 'namespace', `mooring-dp-${suffix}`, '--wait=false');
    });
    await agent.ready();
    const passes = await eventually(
      'two drift passes after the first release',
      async () => {
        const lines = agent
          .logged('drift pass ended')
          .filter((l) => l.deployments === 1 && l.unchecked === 0);
        return lines.length >= 2 ? lines : undefined;
      },
      60_000,
    );
    const quiet = passes.at(-1);
    console.log('the agent logged a quiet drift pass:', quiet);
    expect(quiet).toMatchObject({ objects: 3, moved: 0, drifted: 0, dryRuns: 0, writes: 0 });
    expect(quiet?.elapsedMs).toEqual(expect.any(Number));

    // Scaled by hand: the pass that finds it puts it back, and its line counts no dry run.
    const scaled = await kubectl('-n', ns(), 'scale', 'deployment/logged-000', '--replicas=2');
    expect(scaled.code, scaled.stderr).toBe(0);
    const found = await eventually(
      'a drift pass that puts the scale back',
      async () => agent.logged('drift pass ended').find((l) => l.drifted === 1),
      60_000,
    );
    console.log('the agent logged the pass that put the scale back:', found);
    expect(found).toMatchObject({ objects: 3, moved: 1, byDryRun: 0, drifted: 1, dryRuns: 0, writes: 1 });
    const appsApi = kubeConfig().makeApiClient(AppsV1Api);
    await eventually('scaled back to 1', async () =>
      (await appsApi.readNamespacedDeployment({ name: 'logged-000', namespace: ns() })).spec?.replicas === 1
        ? true
        : undefined,
    );
  });

  it('an agent started again judges from the marks its ledger saved, and puts back a scale made while it was down', async () => {
    const suffix = Date.now().toString(36);
    const dir = await manifestDir({ 'app.yaml': apps(1, 'again') });
    const config = await agentConfig({
      cluster: { namespace: `mooring-dp-${suffix}` },
      deployments: [{ name: 'again', namespace: ns(), source: 'folder', stability: { timeout: '2m' } }],
      extra: { sources: { local: [{ name: 'folder', path: dir }] }, drift: { interval: '2s' } },
    });
    closers.push(async () => {
      await kubectl('delete', 'namespace', `mooring-dp-${suffix}`, '--wait=false');
    });
    const pass = (agent: ReturnType<typeof startAgent>) =>
      eventually(
        'a drift pass',
        async () => agent.logged('drift pass ended').find((l) => l.deployments === 1 && l.unchecked === 0),
        60_000,
      );
    const first = startAgent(config, { level: 'info' });
    await first.ready();
    // A pass follows the first release, whose ledger write saved the marks.
    await pass(first);
    await first.stop();

    const scaled = await kubectl('-n', ns(), 'scale', 'deployment/again-000', '--replicas=2');
    expect(scaled.code, scaled.stderr).toBe(0);
    const second = startAgent(config, { level: 'info' });
    closers.push(() => second.stop());
    await second.ready();
    // Without the saved marks, the first pass after a start checked every object with a read and two dry runs.
    const found = await pass(second);
    console.log('the first pass of the agent started again:', found);
    expect(found).toMatchObject({ objects: 3, byDryRun: 0, dryRuns: 0, drifted: 1, writes: 1 });
    const appsApi = kubeConfig().makeApiClient(AppsV1Api);
    expect(
      (await appsApi.readNamespacedDeployment({ name: 'again-000', namespace: ns() })).spec?.replicas,
    ).toBe(1);
  });
});
