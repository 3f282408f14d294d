// An agent of 40 deployments stopped (SIGTERM, as its Pod is deleted) in the middle of its first wave of syncs: it
// exits well within the chart's grace period, every sync under way gets its end and none starts after the signal;
// the next agent then brings every deployment to a new revision, with no configuration version lost or dangling.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { convergedTo, startAgent, terminate } from './fault-helpers.ts';
import { useCleanups } from './faults-support.ts';
import { agentConfig, eventually, kubectl, tempDir, useNamespace } from './helpers.ts';
import { appName, configuredApp } from './scale-fixtures.ts';

const APPS = 40;
const STOPPING = 'stopping: polling ends, the write in progress finishes';

async function writeApps(dir: string, rev: number): Promise<void> {
  for (let i = 0; i < APPS; i++) {
    const { configMap, deployment } = configuredApp(appName('app', i), 'app', `{REV: "${rev}"}`);
    await writeFile(join(dir, `${appName('app', i)}.yaml`), `${configMap}\n---\n${deployment}\n`);
  }
}

describe('an agent of many deployments stopped while it syncs', () => {
  const ns = useNamespace('stop-scale');
  const cleanup = useCleanups();

  it('ends every sync under way, starts none after the signal, and the next agent converges', async () => {
    const agentNs = `mooring-stop-scale-${Date.now().toString(36)}`;
    cleanup(async () => {
      await kubectl('delete', 'namespace', agentNs, '--wait=false');
    });
    const dir = await tempDir();
    await writeApps(dir, 1);
    const configFile = join(await tempDir(), 'mooring.yaml');
    await writeFile(
      configFile,
      await agentConfig({
        cluster: { namespace: agentNs },
        deployments: Array.from({ length: APPS }, (_, i) => ({
          name: appName('app', i),
          namespace: ns(),
          source: 'folder',
          paths: [`${appName('app', i)}.yaml`],
        })),
        extra: { sources: { local: [{ name: 'folder', path: dir }] } },
      }),
    );

    // Stopped at three moments of the wave (a few syncs started, a third, half), each time a new agent that takes
    // up where the last left off: some syncs have ended, some are under way, some were taken from the queue and
    // not yet begun, the rest still wait.
    for (const moment of [3, APPS / 4, APPS / 2]) {
      const agent = startAgent(configFile);
      cleanup(() => agent.stop());
      await eventually(`${moment} syncs started`, async () =>
        agent.logs().filter((r) => r.msg === 'sync started').length >= moment ? true : undefined,
      );
      const { code, took } = await terminate(agent, 45_000);
      const records = agent.logs();
      const msgs = records.map((r) => r.msg);
      const at = `stopped after ${moment} syncs`;
      expect(code, `${at}: ${took} ms; last: ${msgs.slice(-8).join(' | ')}`).toBe(0);
      expect(took, at).toBeLessThan(30_000);
      expect(msgs.at(-1), at).toBe('stopped');
      const stopping = msgs.indexOf(STOPPING);
      expect(stopping, at).toBeGreaterThanOrEqual(0);
      // None begins after the signal, not even one taken from the queue just before it.
      expect(msgs.slice(stopping + 1), at).not.toContain('sync started');
      // Every sync that started has its end, once, for its own deployment.
      const startedFor = records.filter((r) => r.msg === 'sync started').map((r) => String(r.deployment));
      const endedFor = records.filter((r) => typeof r.outcome === 'string').map((r) => String(r.deployment));
      expect(endedFor.sort(), at).toEqual(startedFor.sort());
    }

    // The next agent: every deployment at a new revision, each Deployment pointing at a version that holds it.
    await writeApps(dir, 2);
    const next = startAgent(configFile);
    cleanup(() => next.stop());
    await eventually(
      'every deployment at revision 2',
      async () => ((await convergedTo(ns(), 2, APPS)) ? true : undefined),
      240_000,
    );
    // No version left dangling or lost: each application has its versions in order from v000, and the newest is the
    // one its Deployment uses.
    const listed = await kubectl('-n', ns(), 'get', 'configmaps', '-o', 'jsonpath={.items[*].metadata.name}');
    const names = listed.stdout.split(' ').filter((n) => n.startsWith('app-'));
    for (let i = 0; i < APPS; i++) {
      const own = names.filter((n) => n.startsWith(`${appName('app', i)}-config-v`)).sort();
      expect(own, appName('app', i)).toEqual(
        own.map((_, k) => `${appName('app', i)}-config-v${String(k).padStart(3, '0')}`),
      );
      expect(own.length, appName('app', i)).toBeGreaterThanOrEqual(1);
    }
  });
});
