// The Kubernetes requests of a first sync, counted at the test bed's proxy in front of the real kube-apiserver:
// 24 deployments of four objects each (a ConfigMap, a ServiceAccount, a Service, a Deployment), as bench:fleet
// deploys them, from one local folder. Per deployment, what reaches the server is the floor docs/fleet.md names:
// one server-side dry run and one write per object, one inventory write (with the sync's note: src/sync/attempts.ts),
// one ledger write (the release) and mooring's Events; no ledger is read back after its own write, and no object is
// read before a dry run of what was never applied. Then a rollout of every deployment: what the agent wrote before is
// known from its watch cache, not read by name (src/kube/drift-check.ts, cachedSinceWrite).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appFolder, appName, fleetFiles } from '../../bench/support/fleet-apps.ts';
import { proxiedServer, stopping } from './fault-helpers.ts';
import { newestStable, useCleanups } from './faults-support.ts';
import { agentConfig, eventually, manifestDir, startAgent, useNamespace } from './helpers.ts';

const APPS = 24;

describe('the requests of a first sync', () => {
  const ns = useNamespace('sync-requests');
  const cleanup = useCleanups();

  it('are one dry run and one write per object, one inventory and one ledger write, and no read-back', async () => {
    const bed = await proxiedServer(cleanup);
    const dir = await manifestDir(fleetFiles(APPS, 1));
    const agentNs = `mooring-sync-requests-${Date.now().toString(36)}`;
    const agent = startAgent(
      await agentConfig({
        cluster: { namespace: agentNs, kubeconfig: bed.kubeconfig },
        deployments: Array.from({ length: APPS }, (_, i) => ({
          name: appName(i),
          namespace: ns(),
          source: 'folder',
          paths: [appFolder(i)],
        })),
        extra: { sources: { local: [{ name: 'folder', path: dir }] } },
      }),
      { level: 'info' },
    );
    cleanup(stopping(agent, agentNs));
    for (let i = 0; i < APPS; i++)
      await eventually(
        `a stable release of ${appName(i)}`,
        () => newestStable(bed.direct, agentNs, appName(i)),
        120_000,
      );

    type Seen = { method: string; path: string; dry: boolean };
    const seen: Seen[] = bed.proxy.requests.map((r) => ({
      method: r.method,
      path: r.path.split('?')[0] ?? '',
      dry: r.path.includes('dryRun=All'),
    }));
    const inApps = seen.filter((r) => r.path.includes(`/namespaces/${ns()}/`));
    const inAgent = seen.filter((r) => r.path.includes(`/namespaces/${agentNs}/`));
    const count = (list: Seen[], test: (r: Seen) => boolean) => list.filter(test).length;
    // What was sent, by verb and path (names of the apps folded), for the assertions' messages.
    const tally = new Map<string, number>();
    for (const r of [...inApps, ...inAgent]) {
      const path = r.path.replace(/\/namespaces\/[^/]+/, '/namespaces/*').replace(/app-\d{4}/, 'app-NNNN');
      const key = `${r.method}${r.dry ? ' (dry run)' : ''} ${path}`;
      tally.set(key, (tally.get(key) ?? 0) + 1);
    }
    const summary = [...tally].map(([k, v]) => `${v} ${k}`).join('\n');

    // The objects: one dry run and one write each, and none read by name (never applied before: dry-run first).
    // The lists of a namespace's Deployments and ConfigMaps (the versions of its configuration) are shared by the
    // syncs that run at once.
    expect(
      count(inApps, (r) => r.method === 'PATCH' && r.dry),
      summary,
    ).toBe(4 * APPS);
    expect(
      count(inApps, (r) => r.method === 'PATCH' && !r.dry),
      summary,
    ).toBe(4 * APPS);
    expect(
      count(inApps, (r) => r.method === 'GET' && /\/app-\d{4}/.test(r.path)),
      summary,
    ).toBe(0);
    // The ledgers: created with the release, never written before it (the sync's note goes with the inventory), never
    // read back by name (the Events that name a ledger take its uid from the write).
    const ledgerByName = (r: Seen) => r.path.includes('/configmaps/mooring-ledger-');
    expect(
      count(inAgent, (r) => r.method === 'GET' && ledgerByName(r)),
      summary,
    ).toBe(0);
    expect(
      count(inAgent, (r) => (r.method === 'PUT' || r.method === 'PATCH') && ledgerByName(r)),
      summary,
    ).toBe(0);
    // Created: each ledger (the release) and each inventory (with the note), nothing else written in the agent's
    // namespace but Events.
    expect(
      count(
        inAgent,
        (r) =>
          (r.method === 'PUT' || r.method === 'PATCH') && r.path.includes('/configmaps/mooring-inventory-'),
      ),
      summary,
    ).toBe(0);
    expect(
      count(inAgent, (r) => r.method === 'POST' && r.path.endsWith('/configmaps')),
      summary,
    ).toBe(2 * APPS);
    // Everything but mooring's Events in both namespaces: the floor above (10 per deployment), the shared lists
    // and the agent's start (its control map, its hash key).
    const rest = count([...inApps, ...inAgent], (r) => !r.path.endsWith('/events'));
    expect(rest / APPS, summary).toBeLessThanOrEqual(11);

    // A rollout of every app (a new ConfigMap version, the Deployment changed to refer to it): the objects the
    // agent wrote before are known from its watch cache, not read; each changed object is dry-run and written once.
    const firstRevisions = await Promise.all(
      Array.from(
        { length: APPS },
        async (_, i) => (await newestStable(bed.direct, agentNs, appName(i)))?.revision,
      ),
    );
    const from = bed.proxy.requests.length;
    for (const [path, text] of Object.entries(fleetFiles(APPS, 2))) await writeFile(join(dir, path), text);
    for (let i = 0; i < APPS; i++)
      await eventually(
        `a stable release of ${appName(i)} after the change`,
        async () => {
          const release = await newestStable(bed.direct, agentNs, appName(i));
          return release && release.revision !== firstRevisions[i] ? release : undefined;
        },
        120_000,
      );
    const rollout = bed.proxy.requests.slice(from).map((r) => ({
      method: r.method,
      path: r.path.split('?')[0] ?? '',
      dry: r.path.includes('dryRun=All'),
    }));
    const rolled = rollout.filter((r) => r.path.includes(`/namespaces/${ns()}/`));
    const rolloutSummary = rolled.map((r) => `${r.method}${r.dry ? ' (dry run)' : ''} ${r.path}`).join('\n');
    expect(
      count(rolled, (r) => r.method === 'GET' && /\/app-\d{4}/.test(r.path)),
      rolloutSummary,
    ).toBe(0);
    const deploymentWrites = (dry: boolean) =>
      count(rolled, (r) => r.method === 'PATCH' && r.dry === dry && r.path.includes('/deployments/'));
    expect(deploymentWrites(true), rolloutSummary).toBe(APPS);
    expect(deploymentWrites(false), rolloutSummary).toBe(APPS);
  });
});
