// An agent stopped while it starts (SIGTERM as its Pod is deleted, the leader lease lost) ends: nothing it was
// starting (the control map's watch, a folder watcher, a poll schedule) is left behind to keep the process alive or
// to sync after the stop, a sync under way gets its end, and the leader elector calls no handler after its own stop.
import { describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { LeaderElector } from '../../src/kube/lease.ts';
import { type AgentProcess, freezeApiServer, stopsWithin } from './fault-helpers.ts';
import {
  agentConfigFile,
  clusterConfig,
  deleteNamespace,
  deploymentManifest,
  eventually,
  kubectl,
  leaderConfig,
  manifestDir,
  startAgent,
  tempDir,
  useNamespace,
} from './helpers.ts';

/** The index of the first record with this msg (-1: none). */
function indexOf(records: readonly { msg: string }[], msg: string): number {
  return records.findIndex((r) => r.msg === msg);
}

/**
 * With the API server stopped (SIGSTOP) for `frozenMs` from now, SIGTERM 1.5 s later: the agent exits 0 within
 * `boundMs` with `stopped` as its last line. Returns its log records.
 */
async function stoppedWhileFrozen(agent: AgentProcess, frozenMs: number, boundMs: number) {
  const frozen = freezeApiServer(frozenMs);
  await new Promise((r) => setTimeout(r, 1500));
  // Within the chart's grace period (60 s), after which the kubelet would kill it.
  const records = await stopsWithin(agent, boundMs, frozenMs - 5000);
  await frozen;
  return records;
}

describe('an agent stopped while it starts', () => {
  const ns = useNamespace('agent-stop');

  it('ends at every moment of its start, and every sync under way gets its end', async () => {
    const agentNs = `mooring-stop-${Date.now().toString(36)}`;
    const configFile = await leaderConfig(await tempDir(), agentNs, ns());
    await kubectl('create', 'namespace', agentNs);
    // SIGTERM this long after the agent took the lease: the first few land while its agent starts (its namespace,
    // the control map's watch, the ledgers, the folder's watcher), the later ones during or after its first sync.
    const delays = [0, 5, 10, 20, 30, 45, 60, 90, 150, 300];
    const hung: string[] = [];
    for (const delay of delays) {
      const agent = startAgent({ file: configFile }, { process: true });
      // Timed from the line's arrival (a poll of the logs would add up to its interval).
      await new Promise<void>((resolve) => {
        let seen = '';
        const look = (chunk: Buffer) => {
          seen = (seen + chunk.toString()).slice(-4096);
          if (!seen.includes('"leading: syncing"')) return;
          agent.child.stdout?.off('data', look);
          setTimeout(() => {
            agent.child.kill('SIGTERM');
            resolve();
          }, delay);
        };
        agent.child.stdout?.on('data', look);
      });
      const code = await Promise.race([
        agent.exited,
        new Promise<'running'>((r) => setTimeout(() => r('running'), 10_000)),
      ]);
      const records = agent.logs();
      const msgs = records.map((r) => r.msg);
      if (code === 'running') {
        hung.push(`${delay} ms: still running 10 s after SIGTERM; last: ${msgs.slice(-5).join(' | ')}`);
        agent.child.kill('SIGKILL');
        await agent.exited;
        continue;
      }
      expect(code, `${delay} ms: ${msgs.join(' | ')}`).toBe(0);
      const stopping = indexOf(records, 'stopping: polling ends, the write in progress finishes');
      expect(stopping, msgs.join(' | ')).toBeGreaterThanOrEqual(0);
      // No agent starts after the stop, and a sync that was under way when it came has its end before the process
      // ends (its status with it).
      expect(msgs.slice(stopping + 1), `${delay} ms`).not.toContain('agent started');
      const started = records.filter((r) => r.msg === 'sync started').length;
      const ended = records.filter((r) => typeof r.outcome === 'string').length;
      expect(ended, `${delay} ms: ${msgs.join(' | ')}`).toBe(started);
      expect(msgs.at(-1), `${delay} ms`).toBe('stopped');
    }
    expect(hung).toEqual([]);
    await deleteNamespace(agentNs);
  });

  it('ends soon after SIGTERM while its API server does not answer', async () => {
    const agentNs = `mooring-stop-${Date.now().toString(36)}`;
    const configFile = await leaderConfig(await tempDir(), agentNs, ns());
    await kubectl('create', 'namespace', agentNs);
    // As in its Pod: it marks its Pod as the leader (the Pod does not exist here; the request is what counts).
    process.env.POD_NAME = 'mooring-stop-test';
    const agent = startAgent({ file: configFile }, { process: true });
    delete process.env.POD_NAME;
    await eventually('synced', async () =>
      agent.logs().some((l) => l.outcome === 'stable') ? true : undefined,
    );
    // Nothing answers: the lease's release, the Pod's label and any read hang until they are given up.
    await stoppedWhileFrozen(agent, 50_000, 15_000);
    await deleteNamespace(agentNs);
  });

  it('ends within its bound when a sync is under way and its API server stops answering', async () => {
    const agentNs = `mooring-stop-${Date.now().toString(36)}`;
    await kubectl('create', 'namespace', agentNs);
    // A Deployment that never becomes ready: its sync waits for it when the server stops answering and SIGTERM comes.
    const dir = await manifestDir({
      'web.yaml': JSON.stringify(deploymentManifest({ behavior: 'never-ready' })),
    });
    const configFile = await agentConfigFile({
      cluster: { namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns(), source: 'folder' }],
      extra: { sources: { local: [{ name: 'folder', path: dir }] } },
    });
    const agent = startAgent({ file: configFile }, { process: true });
    await eventually('waiting for web', async () =>
      agent.logs().some((l) => l.msg === 'applied') ? true : undefined,
    );
    // The writes in progress get 20 s, what is said on the way out 10 s.
    const records = await stoppedWhileFrozen(agent, 60_000, 40_000);
    const msgs = records.map((l) => l.msg);
    expect(msgs).toContain('the writes in progress did not end in time: stopping without them');
    // The sync under way has its end.
    const started = records.filter((r) => r.msg === 'sync started').length;
    expect(records.filter((r) => typeof r.outcome === 'string').length).toBe(started);
    await deleteNamespace(agentNs);
  });

  it('a leader elector stopped during its first round calls no handler and gives up the lease it took', async () => {
    const api = new KubeApi(clusterConfig());
    const namespace = ns();
    const handlers = { lead: 0, lose: 0, errors: [] as string[] };
    for (let i = 0; i < 5; i++) {
      const name = `stopped-round-${i}`;
      const elector = new LeaderElector(api, {
        namespace,
        name,
        identity: 'candidate',
        durationMs: 4000,
        renewMs: 1000,
      });
      elector.run({
        onLead: () => handlers.lead++,
        onLose: () => handlers.lose++,
        onError: (e) => handlers.errors.push(String(e)),
      });
      // The round's request is under way: stop now.
      await elector.stop();
      expect(elector.isLeader).toBe(false);
      // Nothing runs afterwards: no handler, no new round (the Lease is not taken again).
      await new Promise((r) => setTimeout(r, 1500));
      const lease = await kubectl(
        '-n',
        namespace,
        'get',
        'lease',
        name,
        '-o',
        'jsonpath={.spec.holderIdentity}',
      );
      expect(lease.code, lease.stderr).toBe(0);
      expect(lease.stdout).toBe('');
    }
    expect(handlers).toEqual({ lead: 0, lose: 0, errors: [] });
    api.close();
  });
});
