// The agent at fleet scale on the real Git server and control plane (issue 24): 300 deployments of four objects
// each (ConfigMap, ServiceAccount, Service, Deployment of one replica: bench:fleet's shape, from its fixture
// bench/support/fleet-apps.ts), one folder per application in one repository, spread over four namespaces.
// Every first sync ends with a success status on the first commit; then one commit changes all 300 applications
// (ConfigMap content and pod template) and every one of the 300 commit statuses on it goes pending -> success, each
// ConfigMap moves to -v001 while -v000 is kept (within versionHistory, and the version a rollback needs), and the
// agent still answers. Statuses go to a GitHub-shaped receiver whose every request is checked against GitHub's
// OpenAPI description. The times of the first sync and the rollout are printed, never asserted.
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { appFiles, appName, fleetFiles } from '../../bench/support/fleet-apps.ts';
import { githubStatusValidator } from '../contract/github-openapi.ts';
import {
  agentConfig,
  bareRepo,
  deleteNamespace,
  eventually,
  kubeConfig,
  kubectl,
  type PostedStatus,
  startAgent,
  startStatusReceiver,
  useNamespace,
} from './helpers.ts';

const APPS = 300;
const NAMESPACES = 4;

/** The states posted for each context on `sha`, in order, read once for all 300. */
function statesByContext(statuses: readonly PostedStatus[], sha: string): Map<string, string[]> {
  const byContext = new Map<string, string[]>();
  for (const s of statuses) {
    if (s.sha !== sha) continue;
    byContext.set(s.context, [...(byContext.get(s.context) ?? []), s.state]);
  }
  return byContext;
}

describe('the agent with a fleet of 300 deployments', () => {
  const namespaces = Array.from({ length: NAMESPACES }, (_, k) => useNamespace(`fleet-${k}`));

  it('deploys 300 apps from one repository, then rolls a commit to all of them, every status success', async () => {
    const suffix = Date.now().toString(36);
    const home = `mooring-fleet-${suffix}`;
    const names = Array.from({ length: APPS }, (_, i) => appName(i));
    const nsOf = (i: number) => (namespaces[i % NAMESPACES] as () => string)();
    const contexts = names.map((d) => `mooring/fleet/${d}`);

    const repo = await bareRepo(`fleet-${suffix}/apps`);
    const first = await repo.commit(fleetFiles(APPS, 0), { message: 'the fleet' });
    const validate = githubStatusValidator();
    const receiver = await startStatusReceiver();
    const aliased = await agentConfig({
      // The request budget raised from client-go's 50 a second: at the default, the ~40 requests of each of 600
      // syncs alone would take 8 minutes. What is measured here is the agent at scale, not the budget.
      cluster: { name: 'fleet', namespace: home, qps: 1000, burst: 2000 },
      git: [{ name: 'fleet', repo, interval: '2s' }],
      deployments: names.map((name, i) => ({
        name,
        namespace: nsOf(i),
        source: 'fleet',
        paths: [`apps/${name}`],
        stability: { timeout: '5m' },
      })),
      statuses: receiver,
      // As bench:fleet runs it (Flux's benchmark runs kustomize-controller with --concurrency 20).
      extra: { concurrency: 20 },
    });
    // agentConfig's YAML shares one credentials object among the 300 deployments as anchors and aliases, more than
    // the config loader accepts from a file (its alias limit guards against billion-laughs input): written out whole.
    const config = stringify(parse(aliased, { maxAliasCount: -1 }), { aliasDuplicateObjects: false });
    const started = Date.now();
    const agent = startAgent(config, { level: 'info' });
    try {
      /** Contexts whose states on `sha` are not exactly pending, then success (an empty list: all are). */
      const unfinished = (sha: string) => {
        const states = statesByContext(receiver.statuses(), sha);
        return contexts.filter((c) => states.get(c)?.join() !== 'pending,success');
      };
      const allSucceeded = async (sha: string, what: string) => {
        const failed = await eventually(
          what,
          async () => {
            // A failure is final: it ends the wait at once, and the assertion below names it.
            const failures = receiver
              .statuses()
              .filter((s) => s.sha === sha && s.state !== 'pending' && s.state !== 'success');
            if (failures.length > 0) return failures;
            const left = unfinished(sha);
            if (left.length === 0) return [];
            // What the deadline's message shows: how far the fleet got, and the agent's last words.
            const ended = agent.logs().filter((r) => r.outcome !== undefined).length;
            throw new Error(
              `${left.length} of ${APPS} not ended success yet (${left[0]}: ${
                statesByContext(receiver.statuses(), sha)
                  .get(left[0] as string)
                  ?.join() ?? 'no status'
              }); ` +
                `${agent.logged('sync started').length} syncs started, ${ended} ended, ${receiver.statuses().length} statuses; ` +
                `last log: ${agent.lines.at(-1)}`,
            );
          },
          200_000,
        );
        expect(failed).toEqual([]);
      };

      await allSucceeded(first, 'every first sync: pending then success on the first commit');
      const firstSyncMs = Date.now() - started;

      const pushed = Date.now();
      const head = await repo.commit(fleetFiles(APPS, 1), { message: 'every app' });
      await allSucceeded(head, 'every deployment: pending then success on the commit to all');
      const rolloutMs = Date.now() - pushed;
      console.log(
        `fleet of ${APPS} deployments (${APPS * 4} objects, ${NAMESPACES} namespaces, concurrency 20): ` +
          `first sync ${(firstSyncMs / 1000).toFixed(1)} s, rollout of one commit to all ${(rolloutMs / 1000).toFixed(1)} s`,
      );
      // Each status says what it judged: four objects stable.
      const ended = receiver.statuses().filter((s) => s.sha === head && s.state === 'success');
      expect(ended).toHaveLength(APPS);
      for (const s of ended) expect(s.description).toMatch(/^4\/4 stable in \d+(\.\d)?s/);
      expect(new Set(ended.map((s) => s.repository))).toEqual(new Set([`fleet-${suffix}/apps`]));
      for (const request of receiver.captured) expect(validate(request), request.path).toEqual([]);

      // Every ConfigMap moved to -v001 with the new content; -v000 is kept (versionHistory 10: the version a
      // rollback to the first release needs), never pruned; the Deployment refers to -v001.
      const core = kubeConfig().makeApiClient(CoreV1Api);
      const versions = new Map<string, string | undefined>();
      for (const ns of namespaces) {
        const listed = await core.listNamespacedConfigMap({ namespace: ns() });
        for (const cm of listed.items) versions.set(cm.metadata?.name ?? '', cm.data?.ROUND);
      }
      for (const name of names) {
        expect(versions.get(`${name}-config-v000`), name).toBe('0');
        expect(versions.get(`${name}-config-v001`), name).toBe('1');
        expect(versions.has(`${name}-config-v002`), name).toBe(false);
      }
      for (const [k, ns] of namespaces.entries()) {
        const refs = await kubectl(
          '-n',
          ns(),
          'get',
          'deployments',
          '-o',
          'jsonpath={range .items[*]}{.metadata.name}={.spec.template.spec.containers[0].envFrom[0].configMapRef.name}{"\\n"}{end}',
        );
        const lines = refs.stdout.trim().split('\n').sort();
        const expected = names
          .filter((_, i) => i % NAMESPACES === k)
          .map((name) => `${name}=${name}-config-v001`)
          .sort();
        expect(lines).toEqual(expected);
      }

      // Still alive and answering: health, readiness, and one more poll of the repository finds nothing to do.
      const port = await agent.ready();
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).ok).toBe(true);
      const before = receiver.statuses().length;
      // Polls of a commit that moved nothing read no ledger: the watch of the agent's ConfigMaps says none was
      // written since each deployment was found current (before: a GET of each of the 300 ledgers every poll).
      const gets = async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        // Every resource's GETs answered 200, summed.
        const lines = text.matchAll(
          /\nmooring_kube_requests_total\{verb="get",code="200",resource="[^"]*"\} (\d+)/g,
        );
        return [...lines].reduce((sum, m) => sum + Number(m[1]), 0);
      };
      const getsBefore = await gets();
      await agent.morePolls(3);
      const idleGets = (await gets()) - getsBefore;
      console.log(`fleet-scale: ${idleGets} GET requests in 3 polls with ${APPS} deployments`);
      expect(idleGets).toBeLessThan(APPS);
      expect(receiver.statuses().length).toBe(before);

      // A commit to one app: one sync, and the polls after it still read no ledger of the others (they were found
      // current before a commit that changes none of their files; before: every ledger read on the next poll).
      const one = await repo.commit(appFiles(7, 2), { message: 'one app' });
      await eventually('the one app synced', async () =>
        receiver.ended(one, `/${appName(7)}`)?.state === 'success' ? true : undefined,
      );
      const afterOne = await gets();
      await agent.morePolls(3);
      const oneGets = (await gets()) - afterOne;
      console.log(`fleet-scale: ${oneGets} GET requests in 3 polls after a commit to one app`);
      expect(oneGets).toBeLessThan(APPS / 3);
      expect(receiver.statuses().filter((s) => s.sha === one)).toHaveLength(2);
      expect(agent.logged(/unhandled|uncaught/i)).toEqual([]);
    } finally {
      await agent.stop();
      await deleteNamespace(home);
    }
  }, 420_000);
});
