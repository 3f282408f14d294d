// The status API failing while syncs end: the GitHub-shaped receiver behind the fault proxy answers 500, resets
// connections and hangs; the agent's syncs still end on time, their final statuses wait in the outbox (a
// ConfigMap in the agent's namespace) and are posted once the API answers, so that every commit whose status
// went `pending` ends. Then the agent is stopped while the API is down, a new agent started, the API restored:
// what the first agent kept is delivered by the second; stopped in the middle of a sync, the agent ends that
// sync's pending status with "Agent stopped before the deployment was stable". Every request the receiver got is valid against GitHub's
// OpenAPI description.
import { describe, expect, it } from 'vitest';
import { OUTBOX_NAME } from '../../src/report/outbox-store.ts';
import { githubStatusValidator } from '../contract/github-openapi.ts';
import { FaultProxy } from '../testbed/fault-proxy.ts';
import { faultSetting, newestStable, outboxOf, settingsAt, useCleanups } from './faults-support.ts';
import {
  agentConfig,
  deploymentYaml,
  eventually,
  kubectl,
  type Agent as RunningAgent,
  startAgent,
  startStatusReceiver,
  unended,
  useNamespace,
} from './helpers.ts';

const manifests = (n: number) => ({ 'app.yaml': settingsAt(n) });

describe('faults of the status API', () => {
  const ns = useNamespace('faults-status');
  const cleanup = useCleanups();

  it('keeps final statuses while the API fails, and delivers them after it recovers, also across a restart', async () => {
    const { repo, kube, agentNs } = await faultSetting('faults-status', cleanup);
    const receiver = await startStatusReceiver();
    const proxy = await FaultProxy.start(receiver.url);
    cleanup(receiver.close, () => proxy.close());
    const config = await agentConfig({
      cluster: { name: 'faults', namespace: agentNs },
      git: [{ name: 'app', repo }],
      deployments: [{ name: 'web', namespace: ns(), source: 'app', stability: { timeout: '1m' } }],
      statuses: proxy,
    });
    const statuses = () => receiver.statuses();
    const ends = (agent: RunningAgent) => agent.logged(/./).filter((r) => r.outcome !== undefined);
    const syncedTo = async (agent: RunningAgent, commit: string, timeoutMs = 90_000) => {
      await eventually(
        `sync of ${commit.slice(0, 7)} ended`,
        async () =>
          ends(agent).some((r) => r.revision === commit.slice(0, 12) && r.outcome === 'stable')
            ? true
            : undefined,
        timeoutMs,
      );
    };

    // All is well: pending then success.
    const first = await repo.commit(manifests(1));
    let agent = startAgent(config);
    cleanup(() => agent.stop());
    await eventually('first commit: pending then success', async () =>
      statuses()
        .filter((s) => s.sha === first)
        .map((s) => s.state)
        .join() === 'pending,success'
        ? true
        : undefined,
    );

    // 500s: the sync ends anyway; its final status is kept in the cluster.
    proxy.set({ kind: 'status', status: 500 }, { match: (r) => r.method === 'POST' });
    const second = await repo.commit(manifests(2));
    await syncedTo(agent, second);
    await eventually('the success of the second commit kept in the outbox', async () => {
      const kept = await outboxOf(kube, agentNs);
      return kept.some((e) => e.commit === second && e.state === 'success') ? kept : undefined;
    });
    expect(proxy.count('status')).toBeGreaterThanOrEqual(1);

    // Resets before the request reaches the API.
    proxy.set({ kind: 'reset', when: 'request' }, { match: (r) => r.method === 'POST' });
    const third = await repo.commit(manifests(3));
    await syncedTo(agent, third);

    // A hung API: the request times out (10 s), the sync does not wait for it beyond that.
    proxy.set({ kind: 'hang' }, { match: (r) => r.method === 'POST' });
    const fourth = await repo.commit(manifests(4));
    const hungAt = Date.now();
    await syncedTo(agent, fourth);
    expect(Date.now() - hungAt).toBeLessThan(60_000);
    await eventually('the fourth commit kept', async () =>
      (await outboxOf(kube, agentNs)).some((e) => e.commit === fourth) ? true : undefined,
    );
    // Kept statuses are tried again with back-off (up to 60 s apart): they meet the hang too.
    await eventually(
      'the reset and hung API met twice',
      async () => (proxy.count('reset') + proxy.count('hang') >= 2 ? true : undefined),
      90_000,
    );

    // The API answers again: every commit that went pending gets its end, the newest ends in success.
    proxy.pass();
    await eventually(
      'every pending status ended after the API recovered',
      async () => {
        const posted = statuses();
        const finals = [first, second, third, fourth].map((c) =>
          posted.filter((s) => s.sha === c && s.state !== 'pending'),
        );
        return unended(posted).length === 0 && finals.every((f) => f.length > 0) ? finals : undefined;
      },
      120_000,
    );
    expect(statuses().findLast((s) => s.sha === fourth)?.state).toBe('success');
    // The outbox is written back, and the delivery logged, after the forge has answered the last status: both are
    // waited for, not read the moment the status arrives.
    await eventually('the outbox emptied after the API recovered', async () =>
      (await outboxOf(kube, agentNs)).length === 0 ? true : undefined,
    );
    await eventually('a kept status logged as delivered', async () =>
      agent.logged('kept commit status delivered').length >= 1 ? true : undefined,
    );

    // Down again; the agent ends a sync, then stops while the API is down.
    proxy.set({ kind: 'status', status: 503 }, { match: (r) => r.method === 'POST' });
    const fifth = await repo.commit(manifests(5));
    await syncedTo(agent, fifth);
    await eventually('the fifth commit kept', async () =>
      (await outboxOf(kube, agentNs)).some((e) => e.commit === fifth && e.state === 'success')
        ? true
        : undefined,
    );
    await agent.stop();
    expect(statuses().some((s) => s.sha === fifth && s.state === 'success')).toBe(false);
    const stored = await kubectl(
      '-n',
      agentNs,
      'get',
      'configmap',
      OUTBOX_NAME,
      '-o',
      'jsonpath={.data.statuses\\.json}',
    );
    expect(stored.stdout).toContain(fifth);

    // A new agent, the API still down for a while, then restored: the kept status is delivered. Its ledger says
    // the fifth commit is deployed, so nothing but the outbox can post that success.
    agent = startAgent(config);
    await eventually('the new agent polled', async () =>
      agent.logged('agent started').length > 0 ? true : undefined,
    );
    expect((await newestStable(kube, agentNs, 'web'))?.commit).toBe(fifth);
    proxy.pass();
    await eventually(
      'the kept success of the fifth commit delivered by the new agent',
      async () => (statuses().some((s) => s.sha === fifth && s.state === 'success') ? true : undefined),
      120_000,
    );
    expect(agent.logged('commit statuses kept by a previous agent').length).toBe(1);
    expect(agent.logged('sync started')).toEqual([]);
    await eventually('the outbox emptied', async () =>
      (await outboxOf(kube, agentNs)).length === 0 ? true : undefined,
    );

    // Stopped in the middle of a sync (pods that never become ready): the pending status ends, saying so.
    const sixth = await repo.commit({
      ...manifests(6),
      'web.yaml': deploymentYaml({ behavior: 'never-ready' }),
    });
    await eventually('the sixth commit pending', async () =>
      statuses().some((s) => s.sha === sixth && s.state === 'pending') ? true : undefined,
    );
    await agent.stop();
    const stoppedEnd = statuses().findLast((s) => s.sha === sixth);
    expect(stoppedEnd).toMatchObject({
      state: 'error',
      description: 'Agent stopped before the deployment was stable; it resumes on restart',
    });

    const validate = githubStatusValidator();
    expect(receiver.captured.length).toBeGreaterThanOrEqual(6);
    for (const request of receiver.captured) expect(validate(request), request.path).toEqual([]);
  }, 480_000);
});
