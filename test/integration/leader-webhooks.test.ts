// Two replicas of the agent, as the chart runs them with replicaCount: 2: each is a Pod on the test bed (the
// kubelet of the test bed runs them Ready with an IP), each agent runs with that Pod's name. The leader labels its
// own Pod mooring.io/leader=true and the standby does not; a Service selecting that label (as the chart's webhook
// Service does) has the leader's Pod alone behind it, as the controller-manager's endpoints controller computes it;
// a webhook sent to the Pod that Service selects reaches the leader and triggers its poll, while the standby
// answers 503 (the sender retries) instead of accepting and dropping it. When the leader stops, the label moves.
import { createHmac } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Agent,
  agentConfig,
  bareRepo,
  eventually,
  kubeConfig,
  manifestDir,
  startAgent,
  useNamespace,
} from './helpers.ts';

const SECRET = 'leader-webhook-secret';

describe('webhooks with two replicas', () => {
  const ns = useNamespace('leader-hooks');
  const agentNs = useNamespace('leader-hooks-agent');
  const stops = new Map<string, () => Promise<void>>();
  afterAll(async () => {
    for (const stop of stops.values()) await stop();
  });

  it('reach only the leader: its Pod is labelled, the Service selects it, a standby answers 503', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const suffix = Date.now().toString(36);
    const repoPath = `leader-hooks-${suffix}/app`;
    const repo = await bareRepo(repoPath);
    await repo.commit({
      'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n',
    });
    const files = await manifestDir({ hook: SECRET });

    // The two replicas' Pods and the webhook Service, as the chart makes them.
    const selector = { app: `mooring-${suffix}` };
    for (const name of ['agent-a', 'agent-b']) {
      await core.createNamespacedPod({
        namespace: agentNs(),
        body: {
          metadata: { name, labels: selector },
          spec: {
            containers: [{ name: 'mooring', image: 'mooring:test', ports: [{ containerPort: 8080 }] }],
          },
        },
      });
    }
    await core.createNamespacedService({
      namespace: agentNs(),
      body: {
        metadata: { name: 'webhooks' },
        spec: {
          selector: { ...selector, 'mooring.io/leader': 'true' },
          ports: [{ port: 8080, targetPort: 8080 }],
        },
      },
    });

    const config = await agentConfig({
      cluster: { namespace: agentNs() },
      git: [{ name: 'app', repo, interval: '1h' }],
      deployments: [{ name: 'settings', namespace: ns(), source: 'app', stability: { timeout: '30m' } }],
      extra: {
        server: { webhooks: { generic: { secret: { file: `${files}/hook` } } } },
        leaderElection: { enabled: true, leaseName: 'mooring', leaseDuration: '6s', renewInterval: '1s' },
      },
    });
    const agents = new Map<string, Agent>();
    const logs = new Map<string, string[]>();
    const start = (identity: string) => {
      const agent = startAgent(config, { identity });
      logs.set(identity, agent.lines);
      agents.set(identity, agent);
      stops.set(identity, () => agent.stop());
    };
    start('agent-a');
    await eventually('agent-a leads', async () =>
      logs.get('agent-a')?.some((l) => l.includes('leading: syncing')) ? true : undefined,
    );
    start('agent-b');
    await eventually('agent-b stands by', async () =>
      logs.get('agent-b')?.some((l) => l.includes('standing by for the leader lease')) &&
      agents.get('agent-b')?.port()
        ? true
        : undefined,
    );

    const leaderLabel = async (name: string) =>
      (await core.readNamespacedPod({ name, namespace: agentNs() })).metadata?.labels?.['mooring.io/leader'];
    /** The Pods behind the webhook Service, by name, as the endpoints controller computes them. */
    const behindService = async () => {
      const endpoints = await core
        .readNamespacedEndpoints({ name: 'webhooks', namespace: agentNs() })
        .catch(() => undefined);
      return (endpoints?.subsets ?? []).flatMap((s) =>
        (s.addresses ?? []).map((a) => a.targetRef?.name ?? ''),
      );
    };
    const hook = async (identity: string) => {
      const body = JSON.stringify({ sources: ['app'] });
      const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
      return fetch(`http://127.0.0.1:${agents.get(identity)?.port()}/hooks/generic`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Mooring-Signature': signature },
        body,
      });
    };

    await eventually('the leader labelled', async () =>
      (await leaderLabel('agent-a')) === 'true' ? true : undefined,
    );
    expect(await leaderLabel('agent-b')).toBeUndefined();
    expect(
      await eventually('the Service selects the leader', async () => {
        const pods = await behindService();
        return pods.length > 0 ? pods : undefined;
      }),
    ).toEqual(['agent-a']);

    // A webhook to the Pod the Service selects reaches the leader and polls; the standby refuses with 503.
    const polled = () => logs.get('agent-a')?.filter((l) => l.includes('"provider":"generic"')).length ?? 0;
    const toLeader = await hook((await behindService())[0] as string);
    expect(toLeader.status).toBe(202);
    await eventually('the leader logged the webhook', async () => (polled() > 0 ? true : undefined));
    const toStandby = await hook('agent-b');
    expect(toStandby.status).toBe(503);
    expect(toStandby.headers.get('retry-after')).toBe('5');
    expect(((await toStandby.json()) as { error: string }).error).toContain('standby');

    // The leader stops: its label goes, the other takes the lease and the label, and the Service follows.
    await stops.get('agent-a')?.();
    stops.delete('agent-a');
    expect(await leaderLabel('agent-a')).toBeUndefined();
    await eventually(
      'agent-b labelled',
      async () => ((await leaderLabel('agent-b')) === 'true' ? true : undefined),
      30_000,
    );
    await eventually(
      'the Service selects agent-b',
      async () => ((await behindService()).join() === 'agent-b' ? true : undefined),
      30_000,
    );
    expect((await hook('agent-b')).status).toBe(202);
  });
});
