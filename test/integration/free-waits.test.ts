// A sync that only waits for stability holds no worker slot: with one worker (`concurrency: 1`, and `concurrencyMax: 1`
// so that the syncs in flight do not grow with the server's answers), a deployment whose rollout waits (its pods never
// ready) does not hold back another deployment's sync.
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { deploymentManifest, eventually, startGitAgent, useNamespace } from './helpers.ts';

const workload = (name: string, behavior: 'ready' | 'never-ready') =>
  stringify(deploymentManifest({ name, container: 'c', image: `${name}:1`, behavior }));

describe('waits are free', () => {
  const ns = useNamespace('free-waits');
  const agentNs = useNamespace('free-waits-mooring');

  it('syncs a second deployment while the first waits for its rollout, with one worker', async () => {
    let waiting = '';
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `free-waits-${Date.now().toString(36)}/fleet`,
      files: {
        'slow/app.yaml': workload('slow', 'ready'),
        'quick/app.yaml': workload('quick', 'ready'),
      },
      source: { name: 'fleet' },
      cluster: { namespace: agentNs() },
      deployments: [
        { name: 'slow', namespace: ns(), paths: ['slow'], stability: { timeout: '90s' } },
        { name: 'quick', namespace: ns(), paths: ['quick'] },
      ],
      extra: { concurrency: 1, concurrencyMax: 1 },
      start: { level: 'info' },
    });
    try {
      for (const name of ['slow', 'quick'])
        expect(
          (await eventually(`${name} first`, async () => receiver.ended(first, name), 60_000)).state,
        ).toBe('success');
      // The slow one's rollout now waits (its pods never ready), holding the only worker before this change.
      waiting = await repo.commit({ 'slow/app.yaml': workload('slow', 'never-ready') });
      await eventually('slow waits', async () =>
        receiver.states(waiting, 'slow').includes('pending') ? true : undefined,
      );
      const started = Date.now();
      const change = await repo.commit({
        'quick/app.yaml': workload('quick', 'ready').replace('quick:1', 'quick:2'),
      });
      // The quick one ends long before the slow one's 90 s timeout.
      const quick = await eventually('quick stable', async () => receiver.ended(change, 'quick'), 60_000);
      expect(quick.state).toBe('success');
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(receiver.ended(waiting, 'slow')).toBeUndefined();
    } finally {
      await agent.stop();
    }
    // Stopping ends the waiting sync's status too.
    await eventually('slow ended', async () => receiver.ended(waiting, 'slow'));
  });
});
