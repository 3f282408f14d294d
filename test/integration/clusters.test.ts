// Many clusters from one agent (docs/clusters.md), on three real control planes of the test bed: each target is
// synced as its own unit with its own commit-status context and ledger in its own cluster; one cluster's API
// server stopped (SIGSTOP) holds up nothing else and converges when it returns; a rollout in steps stops at a
// failure in its first step and says so; a promotion waits for `after` and for `mooring promote`.
import { readFile } from 'node:fs/promises';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KubeApi } from '../../src/kube/api.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { Ledger } from '../../src/report/ledger.ts';
import { FaultProxy } from '../testbed/fault-proxy.ts';
import { createGitHttpServer } from '../testbed/git-server.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { stateDir } from '../testbed/paths.ts';
import type { DaemonRecord } from '../testbed/processes.ts';
import { type ExtraCluster, up } from '../testbed/testbed.ts';
import {
  bareRepo,
  deploymentManifest,
  eventually,
  kubectl,
  mooring,
  runTool,
  stableImageSource,
  startGitAgent,
  testbed,
  unended,
  useNamespace,
} from './helpers.ts';

const web = (value: string, behavior: 'ready' | 'never-ready' = 'ready') =>
  stringify(deploymentManifest({ container: 'c', image: `web:${value}`, behavior }));

let two: ExtraCluster;
let three: ExtraCluster;

/** A client of one of the test bed's clusters, closed by the caller. */
function client(kubeconfig: string): KubeApi {
  return new KubeApi(loadKubeConfig({ kubeconfig }));
}

/** The test bed's kubectl on one of its clusters. */
function kubectlIn(kubeconfig: string, ...args: string[]) {
  return runTool(testbed().tools.kubectl, ['--kubeconfig', kubeconfig, ...args]);
}

async function imageIn(kubeconfig: string, namespace: string): Promise<string | undefined> {
  const out = await kubectlIn(
    kubeconfig,
    '-n',
    namespace,
    'get',
    'deployment',
    'web',
    '-o',
    'jsonpath={.spec.template.spec.containers[0].image}',
  );
  return out.code === 0 ? out.stdout.trim() : undefined;
}

async function apiServerOf(cluster: string): Promise<DaemonRecord> {
  const daemons = JSON.parse(await readFile(join(stateDir(), 'daemons.json'), 'utf8')) as DaemonRecord[];
  const record = daemons.find((d) => d.name === `${cluster}-kube-apiserver`);
  if (!record) throw new Error(`no kube-apiserver of ${cluster} in the test bed`);
  return record;
}

/** A namespace of its own for one test, in each of the three clusters. */
async function everywhere(name: string): Promise<string> {
  for (const kubeconfig of [testbed().kube.kubeconfig, two.kubeconfig, three.kubeconfig])
    await kubectlIn(kubeconfig, 'create', 'namespace', name);
  return name;
}

/** The three clusters of these tests: the test bed's own (`one`), and two more. */
function clusters(agentNs: string, more: Record<string, unknown> = {}) {
  return [
    { name: 'two', kubeconfig: two.kubeconfig, namespace: agentNs, labels: { tier: 'main' }, ...more },
    { name: 'three', kubeconfig: three.kubeconfig, namespace: agentNs, labels: { tier: 'main' }, ...more },
  ];
}

describe('many clusters from one agent', () => {
  const ns = useNamespace('clusters');
  const agentNs = useNamespace('clusters-mooring');

  beforeAll(async () => {
    const { env } = await up((line) => process.stderr.write(`testbed: ${line}\n`), { clusters: 3 });
    [two, three] = env.clusters as [ExtraCluster, ExtraCluster];
    // The agent's namespace exists in every cluster (the test bed's own gets it from useNamespace).
    for (const c of [two, three]) await kubectlIn(c.kubeconfig, 'create', 'namespace', agentNs());
  }, 300_000);

  it('deploys to each cluster as its own unit, and one stopped API server holds up no other', async () => {
    const space = await everywhere(`${ns()}-units`);
    const { repo, receiver, configFile, first, agent } = await startGitAgent({
      repo: `clusters-${Date.now().toString(36)}/fleet`,
      files: { 'web/web.yaml': web('1') },
      source: { name: 'fleet' },
      cluster: { name: 'one', namespace: agentNs(), labels: { tier: 'canary' } },
      deployments: [
        {
          name: 'web',
          namespace: space,
          paths: ['web'],
          clusters: ['one', 'two'],
          retryInterval: '2s',
          // A sync's requests are retried until its deadline: a stopped server fails it after this.
          stability: { timeout: '20s' },
        },
      ],
      extra: {
        clusters: clusters(agentNs(), { requestTimeout: '3s' }).slice(0, 1),
        server: { statusPage: { enabled: true, anonymous: true } },
      },
      start: { process: true },
    });
    const apiTwo = client(two.kubeconfig);
    const apiOne = client(testbed().kube.kubeconfig);
    try {
      // Each cluster has its own status context, its own objects and its own ledger.
      for (const cluster of ['one', 'two'])
        expect(
          (await eventually(`web in ${cluster}`, async () => receiver.ended(first, `${cluster}/web`), 90_000))
            .state,
        ).toBe('success');
      expect(receiver.statuses().map((s) => s.context)).toEqual(
        expect.arrayContaining(['mooring/one/web', 'mooring/two/web']),
      );
      expect(await imageIn(testbed().kube.kubeconfig, space)).toBe('web:1');
      expect(await imageIn(two.kubeconfig, space)).toBe('web:1');
      expect((await new Ledger(apiTwo, agentNs()).read('web')).releases[0]).toMatchObject({
        commit: first,
        result: 'stable',
      });
      expect((await new Ledger(apiOne, agentNs()).read('web')).releases[0]).toMatchObject({ commit: first });
      // `mooring status` reads either cluster's ledger through the configuration.
      const status = await mooring('status', 'web', '--config', configFile, '--cluster', 'two');
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(first.slice(0, 12));
      const ambiguous = await mooring('history', 'web', '--config', configFile);
      expect(ambiguous.stderr).toContain('is deployed to clusters one, two: say which with --cluster');
      // Without --cluster, status shows the deployment in each of its clusters.
      const both = await mooring('status', 'web', '--config', configFile, '-o', 'json');
      expect(both.code, both.stderr).toBe(0);
      expect(
        (JSON.parse(both.stdout) as { items: { cluster: string; current?: { commit: string } }[] }).items.map(
          (r) => [r.cluster, r.current?.commit],
        ),
      ).toEqual([
        ['one', first],
        ['two', first],
      ]);
      // The status page lists each target.
      const page = async () =>
        (await (await fetch(`http://127.0.0.1:${await agent.ready()}/status/api/deployments`)).json()) as {
          items: { name: string; cluster?: string; state: string }[];
          clusters: { name: string; reachable: boolean; since?: string }[];
        };
      await eventually('both targets on the page', async () => {
        const names = (await page()).items.map((v) => v.name).sort();
        return names.join() === 'one/web,two/web' ? names : undefined;
      });

      // Cluster two's API server stops answering; a commit arrives: cluster one deploys it and reports.
      const server = await apiServerOf('cluster-2');
      process.kill(server.pid, 'SIGSTOP');
      let second = '';
      try {
        second = await repo.commit({ 'web/web.yaml': web('2') });
        expect(
          (
            await eventually(
              'web in one while two is stopped',
              async () => receiver.ended(second, 'one/web'),
              60_000,
            )
          ).state,
        ).toBe('success');
        expect(await imageIn(testbed().kube.kubeconfig, space)).toBe('web:2');
        // The agent says which cluster cannot be reached, in its metrics.
        const port = await agent.ready();
        await eventually(
          'cluster two unreachable in the metrics',
          async () => {
            const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
            return text.includes('mooring_cluster_reachable{cluster="two"} 0') ? true : undefined;
          },
          60_000,
        );
        // Each cluster's client is counted under its name.
        const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        for (const cluster of ['one', 'two'])
          expect(metrics).toMatch(
            new RegExp(
              `^mooring_kube_requests_total\\{verb="[a-z]+",code="\\d+",resource="[a-z0-9./-]+",cluster="${cluster}"\\} [1-9]`,
              'm',
            ),
          );
        expect(metrics).toMatch(/^mooring_cluster_watch_streams\{cluster="two"\} \d+$/m);
        // Its target's sync ends in an error that says since when the cluster does not answer; it is retried.
        const error = await eventually(
          'an error for two',
          async () =>
            receiver
              .statuses()
              .find((s) => s.sha === second && s.context.endsWith('two/web') && s.state === 'error'),
          90_000,
        );
        expect(error.description).toMatch(/^cluster two unreachable since \d{4}-\d\d-\d\dT/);
        expect((await page()).clusters.find((c) => c.name === 'two')).toMatchObject({ reachable: false });
        expect(receiver.states(second, 'two/web')).not.toContain('success');
        expect(agent.alive()).toBe(true);
      } finally {
        process.kill(server.pid, 'SIGCONT');
      }
      // It returns: the commit is deployed there too, and its status ends.
      expect(
        (
          await eventually(
            'web in two after it returns',
            async () => {
              const states = receiver.states(second, 'two/web');
              return states.at(-1) === 'success' ? states : undefined;
            },
            180_000,
          )
        ).at(-1),
      ).toBe('success');
      expect(await imageIn(two.kubeconfig, space)).toBe('web:2');
      const errors = receiver
        .statuses()
        .filter((s) => s.sha === second && s.context.endsWith('two/web') && s.state === 'error');
      for (const e of errors) expect(e.description).toMatch(/cluster two unreachable since/);
      expect(agent.alive()).toBe(true);
    } finally {
      apiOne.close();
      apiTwo.close();
      await agent.stop();
    }
  }, 600_000);

  it('rolls out in steps: a failure in step one stops the steps after, and their statuses say so', async () => {
    const space = await everywhere(`${ns()}-steps`);
    const {
      repo,
      receiver,
      first: good,
      agent,
    } = await startGitAgent({
      repo: `rollout-${Date.now().toString(36)}/fleet`,
      files: { 'web/web.yaml': web('1') },
      source: { name: 'fleet' },
      cluster: { name: 'one', namespace: agentNs(), labels: { tier: 'canary' } },
      deployments: [
        {
          name: 'steps',
          namespace: space,
          paths: ['web'],
          clusters: { selector: {} },
          rollout: [{ clusters: 'one' }, { clusters: ['two'] }, { clusters: { selector: { tier: 'main' } } }],
          stability: { timeout: '8s' },
        },
      ],
      extra: { clusters: clusters(agentNs()) },
      start: { level: 'info' },
    });
    const apis = [client(testbed().kube.kubeconfig), client(two.kubeconfig), client(three.kubeconfig)];
    try {
      for (const cluster of ['one', 'two', 'three'])
        expect(
          (
            await eventually(
              `steps in ${cluster}`,
              async () => receiver.ended(good, `${cluster}/steps`),
              120_000,
            )
          ).state,
        ).toBe('success');
      // Each step began after the step before was stable.
      const releases = await Promise.all(
        apis.map(async (a) => (await new Ledger(a, agentNs()).read('steps')).releases[0]),
      );
      const end = (r: (typeof releases)[number]) => Date.parse(r?.time ?? '') + (r?.durationMs ?? 0);
      expect(Date.parse(releases[1]?.time ?? '')).toBeGreaterThanOrEqual(end(releases[0]) - 1000);
      expect(Date.parse(releases[2]?.time ?? '')).toBeGreaterThanOrEqual(end(releases[1]) - 1000);

      // A commit that never becomes ready fails in step one: steps two and three never deploy it.
      const bad = await repo.commit({ 'web/web.yaml': web('2', 'never-ready') });
      expect(
        (await eventually('step one fails', async () => receiver.ended(bad, 'one/steps'), 90_000)).state,
      ).toBe('failure');
      for (const cluster of ['two', 'three']) {
        const stopped = await eventually(
          `${cluster} stopped`,
          async () => receiver.ended(bad, `${cluster}/steps`),
          60_000,
        );
        expect(stopped.state).toBe('failure');
        expect(stopped.description).toMatch(/^Rollout stopped: step 1 (failed|timed-out) in cluster one/);
      }
      const stopped = await eventually('three says step 1', async () => receiver.ended(bad, 'three/steps'));
      expect(stopped.description).toMatch(/step 1/);
      expect(await imageIn(two.kubeconfig, space)).toBe('web:1');
      expect(await imageIn(three.kubeconfig, space)).toBe('web:1');
      expect((await new Ledger(apis[2] as KubeApi, agentNs()).read('steps')).releases[0]?.commit).toBe(good);
    } finally {
      for (const a of apis) a.close();
      await agent.stop();
    }
  }, 600_000);

  it('promotes what staging has had stable for `after`, and waits for mooring promote when approval is manual', async () => {
    const space = await everywhere(`${ns()}-staging`);
    const prodNs = await everywhere(`${ns()}-prod`);
    // Cluster three's kubeconfig is read from a Secret of the agent's own cluster.
    const secret = await kubectl(
      '-n',
      agentNs(),
      'create',
      'secret',
      'generic',
      'three-kubeconfig',
      `--from-file=config=${three.kubeconfig}`,
    );
    expect(secret.code, secret.stderr).toBe(0);
    const { repo, receiver, configFile, first, agent } = await startGitAgent({
      repo: `promote-${Date.now().toString(36)}/fleet`,
      files: { 'web/web.yaml': web('1') },
      source: { name: 'fleet' },
      cluster: { name: 'one', namespace: agentNs() },
      deployments: [
        { name: 'staging', namespace: space, paths: ['web'] },
        {
          name: 'prod',
          namespace: prodNs,
          paths: ['web'],
          clusters: 'two',
          promote: { from: 'staging', after: '15s' },
        },
        {
          name: 'gated',
          namespace: prodNs,
          paths: ['web'],
          clusters: 'three',
          promote: { from: 'staging', approval: 'manual' },
        },
      ],
      extra: {
        clusters: [
          ...clusters(agentNs()).slice(0, 1),
          {
            name: 'three',
            kubeconfigSecret: { name: 'three-kubeconfig', key: 'config' },
            namespace: agentNs(),
          },
        ],
      },
      start: { level: 'info' },
    });
    const apiTwo = client(two.kubeconfig);
    const apiThree = client(three.kubeconfig);
    try {
      const staged = await eventually(
        'staging stable',
        async () => receiver.ended(first, 'one/staging'),
        90_000,
      );
      expect(staged.state).toBe('success');
      const stagedAt = Date.now();
      // prod says what it waits for, on the commit, and deploys it only once staging has been stable for 15s.
      const waiting = await eventually('prod waits', async () =>
        receiver
          .statuses()
          .find((s) => s.sha === first && s.context.endsWith('two/prod') && s.state === 'pending'),
      );
      expect(waiting.description).toMatch(/^Waiting until staging has been stable for 15s/);
      expect(
        (await eventually('prod promoted', async () => receiver.ended(first, 'two/prod'), 90_000)).state,
      ).toBe('success');
      const promoted = (await new Ledger(apiTwo, agentNs()).read('prod')).releases[0];
      expect(Date.parse(promoted?.time ?? '')).toBeGreaterThanOrEqual(stagedAt + 10_000);
      expect(promoted).toMatchObject({
        commit: first,
        result: 'stable',
        promotedFrom: { deployment: 'staging', cluster: 'one' },
      });

      // gated waits for an approval, and says how to give it.
      const asks = await eventually('gated asks', async () =>
        receiver
          .statuses()
          .find(
            (s) => s.sha === first && s.context.endsWith('three/gated') && /approval/.test(s.description),
          ),
      );
      expect(asks.description).toBe(
        `Waiting for approval: mooring promote gated --revision ${first.slice(0, 12)}`,
      );
      expect(await imageIn(three.kubeconfig, prodNs)).toBeUndefined();
      // A newer commit reaches staging; prod stays where it is until that one has been stable 15s.
      const second = await repo.commit({ 'web/web.yaml': web('2') });
      expect(
        (await eventually('staging 2', async () => receiver.ended(second, 'one/staging'), 90_000)).state,
      ).toBe('success');
      expect(await imageIn(two.kubeconfig, prodNs)).toBe('web:1');
      // The approval without --revision takes what gated waits for: now the second commit.
      await eventually('gated asks for the second', async () =>
        receiver
          .statuses()
          .find(
            (s) => s.sha === second && s.context.endsWith('three/gated') && /approval/.test(s.description),
          ),
      );
      // `mooring status` of the whole configuration: a row per target, and one for the cluster it cannot reach
      // without kubectl's flags (its kubeconfig is in a Secret).
      const all = await mooring('status', '--config', configFile, '-o', 'json');
      expect(all.code, all.stderr).toBe(0);
      const rows = (
        JSON.parse(all.stdout) as { items: { cluster: string; deployment: string; error?: string }[] }
      ).items;
      expect(rows.map((r) => `${r.cluster}/${r.deployment}`)).toEqual(['one/staging', 'two/prod', 'three/*']);
      expect(rows[2]?.error).toContain('keeps its kubeconfig in Secret three-kubeconfig');
      // The CLI reaches a cluster whose kubeconfig is in a Secret with kubectl's flags.
      const secretOnly = await mooring('promote', 'gated', '--config', configFile);
      expect(secretOnly.code).toBe(2);
      expect(secretOnly.stderr).toContain('keeps its kubeconfig in Secret three-kubeconfig');
      const approved = await mooring(
        'promote',
        'gated',
        '--config',
        configFile,
        '--kubeconfig',
        three.kubeconfig,
      );
      expect(approved.code, approved.stderr).toBe(0);
      expect(approved.stdout).toContain(`promotion of gated to ${second.slice(0, 12)} approved`);
      expect(
        (await eventually('gated promoted', async () => receiver.ended(second, 'three/gated'), 90_000)).state,
      ).toBe('success');
      expect(await imageIn(three.kubeconfig, prodNs)).toBe('web:2');
      expect((await new Ledger(apiThree, agentNs()).read('gated')).releases[0]).toMatchObject({
        commit: second,
        promotedFrom: { deployment: 'staging' },
      });
      expect((await eventually('prod 2', async () => receiver.ended(second, 'two/prod'), 90_000)).state).toBe(
        'success',
      );
      // A rollback of the promoted deployment holds it as any rollback does: until its upstream moves on.
      const rolled = await mooring('rollback', 'prod', '--config', configFile);
      expect(rolled.code, rolled.stderr).toBe(0);
      expect(await imageIn(two.kubeconfig, prodNs)).toBe('web:1');
      // Several polls later it still runs the release rolled back to.
      await agent.morePolls(4);
      expect(await imageIn(two.kubeconfig, prodNs)).toBe('web:1');
      const third = await repo.commit({ 'web/web.yaml': web('3') });
      expect((await eventually('prod 3', async () => receiver.ended(third, 'two/prod'), 120_000)).state).toBe(
        'success',
      );
      expect(await imageIn(two.kubeconfig, prodNs)).toBe('web:3');
      // Every status that began ended, but the third commit's, which gated waits to be approved.
      expect(unended(receiver.statuses())).toEqual([`${third} mooring/three/gated`]);
      expect(receiver.ended(first, 'three/gated')?.description).toMatch(/^Superseded by commit /);
      // promote of a deployment that follows no other is a usage error.
      const wrong = await mooring('promote', 'staging', '--config', configFile);
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toContain('is promoted from no other deployment');
    } finally {
      apiTwo.close();
      apiThree.close();
      await agent.stop();
    }
  }, 600_000);

  it('rolls dozens of deployments out across two clusters, each step after the one before', async () => {
    const space = await everywhere(`${ns()}-fleet`);
    const count = 24;
    const files = (rev: number) =>
      Object.fromEntries(
        Array.from({ length: count }, (_, i) => [
          `apps/app-${i}/config.yaml`,
          `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-${i}}\ndata: {rev: "${rev}", payload: "${'x'.repeat(200)}"}\n`,
        ]),
      );
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `fleet-${Date.now().toString(36)}/fleet`,
      files: files(1),
      source: { name: 'fleet' },
      cluster: { name: 'one', namespace: agentNs() },
      deployments: Array.from({ length: count }, (_, i) => ({
        name: `app-${i}`,
        namespace: space,
        paths: [`apps/app-${i}`],
        clusters: ['one', 'two'],
        rollout: [{ clusters: 'one' }, { clusters: 'two' }],
      })),
      extra: { clusters: clusters(agentNs()).slice(0, 1) },
      start: { level: 'info' },
    });
    const apis = [client(testbed().kube.kubeconfig), client(two.kubeconfig)];
    try {
      {
        const commit = first;
        for (let i = 0; i < count; i++)
          for (const cluster of ['one', 'two'])
            expect(
              (
                await eventually(
                  `app-${i} in ${cluster}`,
                  async () => receiver.ended(commit, `${cluster}/app-${i}`),
                  180_000,
                )
              ).state,
            ).toBe('success');
      }
      const second = await repo.commit(files(2));
      for (let i = 0; i < count; i++)
        for (const cluster of ['one', 'two'])
          expect(
            (
              await eventually(
                `app-${i} 2 in ${cluster}`,
                async () => receiver.ended(second, `${cluster}/app-${i}`),
                180_000,
              )
            ).state,
          ).toBe('success');
      // Every status that began ended, and in each deployment cluster two began after cluster one was stable.
      for (const commit of [first, second])
        for (let i = 0; i < count; i++)
          for (const cluster of ['one', 'two'])
            expect(receiver.states(commit, `${cluster}/app-${i}`).at(-1)).toBe('success');
      const [one, other] = apis as [KubeApi, KubeApi];
      for (let i = 0; i < count; i++) {
        const a = (await new Ledger(one, agentNs()).read(`app-${i}`)).releases[0];
        const b = (await new Ledger(other, agentNs()).read(`app-${i}`)).releases[0];
        expect([a?.commit, b?.commit]).toEqual([second, second]);
        expect(Date.parse(b?.time ?? '')).toBeGreaterThanOrEqual(
          Date.parse(a?.time ?? '') + (a?.durationMs ?? 0) - 1000,
        );
      }
    } finally {
      for (const a of apis) a.close();
      await agent.stop();
    }
  }, 600_000);

  it('makes one deployment per cluster a deployment set selects by label, each deployed to its own cluster', async () => {
    const space = await everywhere(`${ns()}-set`);
    const { first, agent } = await startGitAgent({
      repo: `clusters-set-${Date.now().toString(36)}/fleet`,
      files: { 'web/web.yaml': web('set') },
      source: { name: 'fleet' },
      cluster: { name: 'one', namespace: agentNs(), labels: { tier: 'canary' } },
      deployments: [],
      extra: {
        clusters: clusters(agentNs()),
        deploymentSets: [
          {
            name: 'per-cluster',
            generator: { clusters: { selector: { tier: 'main' } } },
            template: {
              name: 'web-{{cluster.name}}',
              namespace: space,
              source: 'fleet',
              paths: ['web'],
              clusters: '{{cluster.name}}',
            },
          },
        ],
      },
      start: { process: true },
    });
    try {
      for (const [cluster, kubeconfig] of [
        ['two', two.kubeconfig],
        ['three', three.kubeconfig],
      ] as const) {
        await eventually(
          `web-${cluster} in ${cluster}`,
          async () => ((await imageIn(kubeconfig, space)) === 'web:set' ? true : undefined),
          90_000,
        );
        // The release is recorded once the deployment is stable, a moment after its image is seen.
        const api = client(kubeconfig);
        try {
          const release = await eventually(
            `web-${cluster}'s release in ${cluster}`,
            async () => {
              const last = (await new Ledger(api, agentNs()).read(`web-${cluster}`)).releases[0];
              return last?.result === 'stable' ? last : undefined;
            },
            60_000,
          );
          expect(release).toMatchObject({ commit: first, result: 'stable' });
        } finally {
          api.close();
        }
      }
      // The agent's own cluster is not selected (its label is tier: canary): nothing deployed there.
      expect(await imageIn(testbed().kube.kubeconfig, space)).toBeUndefined();
    } finally {
      await agent.stop();
    }
  });

  it('polls a repository once for all three clusters: one ref read per poll, one fetch per commit', async () => {
    const space = await everywhere(`${ns()}-once`);
    // A Git server of its own on the test bed's repositories, so that the test counts what the agent asks of it.
    const env = testbed();
    const requests: { method: string; path: string }[] = [];
    const server = createGitHttpServer({
      root: env.git.root,
      username: env.git.username,
      password: env.git.password,
    });
    server.on('request', (req: http.IncomingMessage) =>
      requests.push({ method: req.method ?? '', path: (req.url ?? '').split('?')[0] ?? '' }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const fetches = () =>
      requests.filter((r) => r.method === 'POST' && r.path.endsWith('/git-upload-pack')).length;
    const refReads = () => requests.filter((r) => r.method === 'GET' && r.path.endsWith('/info/refs')).length;
    const made = await bareRepo(`once-${Date.now().toString(36)}/fleet`);
    const repo = { ...made, url: made.url.replace(/^https?:\/\/[^/]+/, origin) };
    const config = (rev: number) => ({
      'app/config.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {rev: "${rev}"}\n`,
    });
    const { receiver, first, agent } = await startGitAgent({
      repo,
      files: config(1),
      source: { name: 'fleet', interval: '2s' },
      cluster: { name: 'one', namespace: agentNs() },
      deployments: [{ name: 'app', namespace: space, paths: ['app'], clusters: ['one', 'two', 'three'] }],
      extra: { clusters: clusters(agentNs()) },
    });
    try {
      const deployedEverywhere = async (commit: string) => {
        for (const cluster of ['one', 'two', 'three'])
          expect(
            (
              await eventually(
                `app in ${cluster}`,
                async () => receiver.ended(commit, `${cluster}/app`),
                120_000,
              )
            ).state,
          ).toBe('success');
      };
      await deployedEverywhere(first);
      expect(fetches()).toBe(1);
      const second = await repo.commit(config(2));
      await deployedEverywhere(second);
      const third = await repo.commit(config(3));
      await deployedEverywhere(third);
      // One fetch per commit, whatever the number of clusters that deploy it.
      expect(fetches()).toBe(3);
      // Each poll of the schedule reads the refs once for the three agents: 30 polls (10 ticks) read them 10 times.
      const [polls, reads] = [await agent.pollCount('fleet'), refReads()];
      await agent.morePolls(30, 'fleet');
      const [pollsAfter, readsAfter] = [await agent.pollCount('fleet'), refReads()];
      expect(readsAfter - reads).toBeLessThanOrEqual(Math.ceil((pollsAfter - polls) / 3) + 1);
      expect(readsAfter - reads).toBeGreaterThan(0);
      // Nothing changed meanwhile: no fetch.
      expect(fetches()).toBe(3);
      // Stopped, no agent of any cluster polls again.
      await agent.stop();
      const stoppedAt = requests.length;
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect(requests.slice(stoppedAt)).toEqual([]);
    } finally {
      await agent.stop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 600_000);

  it('polls a registry once for all three clusters: one manifest read per poll, one digest deployed everywhere', async () => {
    const space = await everywhere(`${ns()}-image`);
    const env = testbed();
    const repository = `clusters-${Date.now().toString(36)}/web`;
    const pushed = await pushImage({ registry: env.registry.url, repository, tag: 'stable' });
    // The test bed's registry behind a proxy that counts what the agent asks of it.
    const proxy = await FaultProxy.start(env.registry.url);
    const image = `${proxy.host}/${repository}`;
    const manifestReads = () =>
      proxy.count(undefined, (r) => r.path.startsWith(`/v2/${repository}/manifests/`));
    const { receiver, first, agent } = await startGitAgent({
      repo: `image-${Date.now().toString(36)}/fleet`,
      files: {
        'web/web.yaml': stringify(deploymentManifest({ container: 'c', image: `${image}:stable` })),
      },
      source: { name: 'fleet', interval: '1h' },
      cluster: { name: 'one', namespace: agentNs() },
      deployments: [
        {
          name: 'web',
          namespace: space,
          paths: ['web'],
          images: ['web-image'],
          clusters: ['one', 'two', 'three'],
        },
      ],
      extra: {
        clusters: clusters(agentNs()),
        sources: { registry: [stableImageSource(image, '2s')] },
      },
    });
    try {
      for (const cluster of ['one', 'two', 'three']) {
        expect(
          (
            await eventually(
              `web in ${cluster}`,
              async () => receiver.ended(first, `${cluster}/web`),
              120_000,
            )
          ).state,
        ).toBe('success');
      }
      // The digest the registry holds, in each cluster.
      for (const kubeconfig of [env.kube.kubeconfig, two.kubeconfig, three.kubeconfig])
        expect(await imageIn(kubeconfig, space)).toBe(`${image}:stable@${pushed.digest}`);
      // Each poll of the schedule reads the tag's manifest once for the three agents.
      const [polls, reads] = [await agent.pollCount('web-image'), manifestReads()];
      await agent.morePolls(30, 'web-image');
      const [pollsAfter, readsAfter] = [await agent.pollCount('web-image'), manifestReads()];
      expect(readsAfter - reads).toBeGreaterThan(0);
      expect(readsAfter - reads).toBeLessThanOrEqual(Math.ceil((pollsAfter - polls) / 3) + 1);
    } finally {
      await agent.stop();
      await proxy.close();
    }
  }, 600_000);
});
