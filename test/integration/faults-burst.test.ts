// A burst of commits: 20 pushed quickly over ten deployments, each commit changing the files of three of them.
// Every change but the last of a deployment makes pods that never become ready, so a sync of it waits until a
// newer commit supersedes it. Every pending status ends (a superseded one names the commit that replaced it),
// each deployment converges to what the newest commit holds (its ledger's newest stable release is that commit or,
// when the newest commits left its files alone, one no older than the last that changed them), and no versioned
// ConfigMap is duplicated or dangling.
import { describe, expect, it } from 'vitest';
import { githubStatusValidator } from '../contract/github-openapi.ts';
import {
  deployedRound,
  faultSetting,
  ledgerOf,
  newestStable,
  settingsAndWeb,
  sleep,
  useCleanups,
  versionProblems,
} from './faults-support.ts';
import { eventually, startGitAgent, unended, useNamespace } from './helpers.ts';

const DEPLOYMENTS = 10;
const COMMITS = 20;

const app = (round: number, ready: boolean) => settingsAndWeb(round, ready ? 'ready' : 'never-ready');

describe('a burst of commits', () => {
  const namespaces = Array.from({ length: DEPLOYMENTS }, (_, i) => useNamespace(`faults-burst-${i}`));
  const cleanup = useCleanups();

  it('ends every pending status, names the superseding commit, and converges without stray versions', async () => {
    const { repo, kube, agentNs } = await faultSetting('faults-burst', cleanup, 'apps');
    // Which deployments each commit of the burst changes, and so the last change of each.
    const plan = Array.from({ length: COMMITS }, (_, i) => [
      ...new Set([i % DEPLOYMENTS, (i * 3 + 1) % DEPLOYMENTS, (i * 7 + 2) % DEPLOYMENTS]),
    ]);
    const lastChange = new Map<number, number>();
    plan.forEach((changed, i) => {
      for (const d of changed) lastChange.set(d, i);
    });
    expect(lastChange.size).toBe(DEPLOYMENTS);

    const files: Record<string, string> = {};
    for (let d = 0; d < DEPLOYMENTS; d++) files[`apps/d${d}/app.yaml`] = app(0, true);
    const {
      receiver,
      first: initial,
      agent,
    } = await startGitAgent({
      repo,
      files,
      cluster: { name: 'burst', namespace: agentNs },
      deployments: namespaces.map((ns, d) => ({
        name: `d${d}`,
        namespace: ns(),
        paths: [`apps/d${d}`],
        stability: { timeout: '3m' },
      })),
      extra: { concurrency: DEPLOYMENTS },
    });
    cleanup(() => agent.stop());
    const statuses = () => receiver.statuses();
    await eventually(
      'the initial commit deployed everywhere',
      async () =>
        statuses().filter((s) => s.sha === initial && s.state === 'success').length === DEPLOYMENTS
          ? true
          : undefined,
      120_000,
    );

    const commits: string[] = [];
    for (let i = 0; i < COMMITS; i++) {
      const changed: Record<string, string> = {};
      for (const d of plan[i] ?? []) changed[`apps/d${d}/app.yaml`] = app(i + 1, lastChange.get(d) === i);
      commits.push(await repo.commit(changed));
      await sleep(250);
    }

    // A deployment converges to the newest commit's files; a commit that changes none of its paths leaves it
    // at the commit it was synced to, which is then the last one that changed it or a later one.
    const newest = commits.length - 1;
    const atOrAfterLastChange = (d: number, commit: string | undefined) =>
      commit !== undefined && commits.indexOf(commit) >= (lastChange.get(d) ?? newest);
    await eventually(
      'every deployment synced past the last commit that changed it',
      async () => {
        for (let d = 0; d < DEPLOYMENTS; d++) {
          const mine = statuses().filter((s) => s.context === `mooring/burst/d${d}` && s.state === 'success');
          if (!mine.some((s) => atOrAfterLastChange(d, s.sha))) return undefined;
        }
        return true;
      },
      240_000,
    );
    await eventually('no status left pending', async () =>
      unended(statuses()).length === 0 ? true : undefined,
    );

    // Superseded syncs say by which (later) commit.
    const superseded = statuses().filter((s) => s.description.startsWith('Superseded by'));
    expect(superseded.length).toBeGreaterThan(0);
    for (const s of superseded) {
      expect(s.state).toBe('error');
      const by = /^Superseded by commit ([0-9a-f]{7}) before it was stable$/.exec(s.description)?.[1];
      const index = commits.findIndex((c) => by !== undefined && c.startsWith(by));
      expect(index, s.description).toBeGreaterThanOrEqual(0);
      expect(index).toBeGreaterThan(commits.indexOf(s.sha));
    }
    // No final failure: every sync either succeeded or was superseded.
    expect(statuses().filter((s) => s.state === 'failure')).toEqual([]);

    for (let d = 0; d < DEPLOYMENTS; d++) {
      const ns = namespaces[d]?.() ?? '';
      const stable = await newestStable(kube, agentNs, `d${d}`);
      expect(atOrAfterLastChange(d, stable?.commit), `d${d} at ${stable?.commit}`).toBe(true);
      expect(await deployedRound(ns), `d${d}`).toBe(String((lastChange.get(d) ?? -1) + 1));
      const problems = await versionProblems(kube, ns, [await ledgerOf(kube, agentNs, `d${d}`)]);
      expect(problems.duplicated, `d${d}`).toEqual([]);
      expect(problems.dangling, `d${d}`).toEqual([]);
    }
    const validate = githubStatusValidator();
    for (const request of receiver.captured) expect(validate(request), request.path).toEqual([]);
  }, 420_000);
});
