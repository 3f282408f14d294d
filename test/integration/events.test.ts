// Kubernetes Events on the test bed: an agent's stable sync shows `Normal Synced` on the Deployment and on its
// ledger ConfigMap (read with the real kubectl, `get events` and `describe`), a failed sync `Warning SyncFailed`; and
// the recorder bounds what a flapping deployment writes: the same event again is one Event with a count, and past the
// per-object limit nothing more is written.
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KubeApi } from '../../src/kube/api.ts';
import { EventRecorder } from '../../src/kube/events.ts';
import {
  clusterConfig,
  deploymentManifest,
  eventually,
  kubeConfig,
  kubectl,
  startGitAgent,
  stopsAfterAll,
  useNamespace,
} from './helpers.ts';

const deployment = (behavior: 'ready' | 'never-ready') =>
  stringify(deploymentManifest({ replicas: 2, image: 'app:1', behavior }));

/** The Events of a namespace that a field selector picks, as the API server lists them; none while it fails. */
async function eventItems<T>(namespace: string, fieldSelector: string): Promise<T[]> {
  const out = await kubectl(
    '-n',
    namespace,
    'get',
    'events',
    '--field-selector',
    fieldSelector,
    '-o',
    'json',
  );
  return (JSON.parse(out.stdout || '{"items":[]}') as { items: T[] }).items;
}

describe('Kubernetes Events', () => {
  const ns = useNamespace('events');
  const agentNs = useNamespace('events-agent');
  const flapNs = useNamespace('events-flap');
  const stops = stopsAfterAll();

  it('tells a sync on the Deployment and the ledger ConfigMap: Synced, then SyncFailed', async () => {
    const suffix = Date.now().toString(36);
    const { repo, first, agent } = await startGitAgent({
      repo: `events-${suffix}/app`,
      files: { 'web.yaml': deployment('ready') },
      cluster: { name: 'events', namespace: agentNs() },
      deployments: [{ name: 'web', namespace: ns(), stability: { timeout: '3s' } }],
      statuses: false,
    });
    stops.push(agent.stop);

    const synced = await eventually(
      'a Synced event on the Deployment',
      async () => {
        const items = await eventItems<{
          type: string;
          message: string;
          source: { component: string };
          involvedObject: { uid?: string };
        }>(ns(), 'involvedObject.kind=Deployment,involvedObject.name=web,reason=Synced');
        return items[0];
      },
      60_000,
    );
    expect(synced.type).toBe('Normal');
    expect(synced.message).toMatch(
      new RegExp(`^web: 1/1 stable in [0-9.]+m?s \\(rev ${first.slice(0, 7)}\\)$`),
    );
    expect(synced.source.component).toBe('mooring');
    expect(synced.involvedObject.uid).toBeTruthy();
    // As a person reads it.
    const describe = await kubectl('-n', ns(), 'describe', 'deployment', 'web');
    expect(describe.stdout).toMatch(/Normal\s+Synced\s+.*mooring\s+web: 1\/1 stable/);
    const ledgerEvents = await eventually('a Synced event on the ledger ConfigMap', async () => {
      const out = await kubectl(
        '-n',
        agentNs(),
        'get',
        'events',
        '--field-selector',
        'involvedObject.name=mooring-ledger-web',
      );
      return out.stdout.includes('Synced') ? out.stdout : undefined;
    });
    expect(ledgerEvents).toContain(`web: 1/1 stable`);

    // A sync that fails: a Warning on the Deployment and on the ledger.
    await repo.commit({ 'web.yaml': deployment('never-ready') });
    const failed = await eventually(
      'a SyncFailed event',
      async () => {
        const items = await eventItems<{ type: string; message: string }>(
          ns(),
          'involvedObject.name=web,reason=SyncFailed',
        );
        return items[0];
      },
      60_000,
    );
    expect(failed.type).toBe('Warning');
    expect(failed.message).toMatch(/^web: .*Deployment .*web/);
    const all = await kubectl('get', 'events', '-n', ns());
    expect(all.stdout).toContain('SyncFailed');
  });

  it('aggregates the same event and stops a flapping object at its limit', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const cm = await core.createNamespacedConfigMap({
      namespace: flapNs(),
      body: { metadata: { name: 'flappy' } },
    });
    const api = new KubeApi(clusterConfig());
    const dropped: number[] = [];
    const recorder = new EventRecorder(api, {
      log: { debug: () => undefined, warn: () => undefined },
      dropped: () => dropped.push(1),
      burst: 6,
    });
    const target = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'flappy',
      namespace: flapNs(),
      uid: cm.metadata?.uid,
    };
    try {
      // The same event three times: one Event, count 3.
      for (let i = 0; i < 3; i++) recorder.record(target, 'Normal', 'Synced', 'web: 1/1 stable');
      await recorder.flush();
      // Then dozens of alternating outcomes: only what the limit leaves (6 in all, 3 already used).
      for (let i = 0; i < 40; i++)
        recorder.record(
          target,
          i % 2 ? 'Warning' : 'Normal',
          i % 2 ? 'SyncFailed' : 'Synced',
          i % 2 ? 'web: failed' : 'web: 1/1 stable',
        );
      await recorder.flush();
    } finally {
      api.close();
    }
    const events = (await core.listNamespacedEvent({ namespace: flapNs() })).items;
    const synced = events.filter((e) => e.reason === 'Synced');
    const failed = events.filter((e) => e.reason === 'SyncFailed');
    expect(events).toHaveLength(2);
    expect(synced[0]?.count).toBe(3 + 2); // 3, then two of the three writes the limit left
    expect(failed[0]?.count).toBe(1);
    expect(dropped).toHaveLength(37);
    expect(synced[0]?.metadata?.name).toMatch(/^flappy\.[0-9a-f]{16}$/);
  });
});
