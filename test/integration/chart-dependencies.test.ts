// Chart dependencies from allowed repositories, on the test bed's real servers: library charts packaged by the real
// `helm package`, served by a TLS chart repository indexed by `helm repo index` and pushed to the distribution
// registry with `helm push`. A chart whose dependency is not in charts/ gets it fetched through the one download
// path (checked against the index's sha256 or the OCI digest, extracted with the archive bounds), at the version
// Chart.lock pins or the highest its range allows; the release records name, version and digest; a version that
// comes back with another digest is refused; a rollback restores the recorded versions. Hostile Chart.yaml content
// (names that leave charts/, repositories that only look allowed, too many dependencies) is refused by name, a
// user's folder is never written into, and a repository that fails is retried rather than blamed on the commit.
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { configSchema, deployment } from '../../src/config/schema.ts';
import { StalledError, TransientError, WaitingError } from '../../src/errors.ts';
import { ChartRepositoryClient } from '../../src/sources/charts/repository.ts';
import { deploymentManifests, pathManifests } from '../../src/sources/deployment-manifests.ts';
import {
  type ChartRepo,
  indexRepo,
  packageChart,
  pushChart,
  startChartRepo,
  writeChart,
} from '../testbed/chart-repo.ts';
import { releaseDeployment, writeTree } from './build-helpers.ts';
import {
  eventually,
  ledgerHistory,
  mooring,
  runningConfig,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

/** The library chart `common` of this version: a ConfigMap saying which version rendered it. */
async function common(version: string, out: string, marker = ''): Promise<string> {
  const dir = await writeChart(await tempDir(), {
    name: 'common',
    version,
    templates: {
      'config.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-common}
data:
  common: {{ .Chart.Version | quote }}${marker ? `\n  marker: ${JSON.stringify(marker)}` : ''}
`,
    },
  });
  return packageChart(testbed().tools.helm, dir, out);
}

const WEB_DEPLOYMENT = releaseDeployment('common');

interface Dep {
  name: string;
  version: string;
  repository: string;
}

/** The files of chart `web` (under `prefix`) depending on `deps`, with a Chart.lock pinning `lock` when given. */
function webChart(prefix: string, deps: Dep[], lock?: Dep[]): Record<string, string> {
  const files: Record<string, string> = {
    [`${prefix}/Chart.yaml`]: stringify({
      apiVersion: 'v2',
      name: 'web',
      version: '0.1.0',
      dependencies: deps,
    }),
    [`${prefix}/templates/deployment.yaml`]: WEB_DEPLOYMENT,
  };
  if (lock)
    files[`${prefix}/Chart.lock`] = stringify({
      dependencies: lock,
      digest: `sha256:${'0'.repeat(64)}`,
      generated: '2026-01-01T00:00:00Z',
    });
  return files;
}

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** What the rendered ConfigMap of `common` says. */
function commonData(text: string): string | undefined {
  return /common: "([^"]+)"/.exec(text)?.[1];
}

describe('chart dependencies from an HTTPS chart repository', () => {
  let server: ChartRepo;
  let folder: string;
  let secrets: string;
  const digests = new Map<string, string>();

  beforeAll(async () => {
    folder = await tempDir();
    for (const v of ['1.0.0', '1.1.0', '2.0.0'])
      digests.set(v, sha256(await readFile(await common(v, folder))));
    server = await startChartRepo(folder, { username: 'charts', password: 'deps-pw' });
    await indexRepo(testbed().tools.helm, folder, server.url);
    secrets = await tempDir();
    await writeFile(join(secrets, 'user'), 'charts');
    await writeFile(join(secrets, 'password'), 'deps-pw');
  }, 120_000);
  afterAll(async () => server?.close());

  /** A local source holding chart `web` with these dependencies, and the context to read it. */
  async function setUp(deps: Dep[], lock?: Dep[], bounds: Record<string, number> = {}) {
    const dir = await tempDir();
    await writeTree(dir, webChart('web', deps, lock));
    const config = configSchema.parse({
      sources: {
        local: [{ name: 'dev', path: dir }],
        // Dependencies from this URL use this source's CA and credentials (as Flux matches a HelmRepository).
        charts: [
          {
            name: 'library',
            url: server.url,
            chart: 'common',
            caFile: server.ca,
            credentials: {
              username: { file: join(secrets, 'user') },
              password: { file: join(secrets, 'password') },
            },
            ...bounds,
          },
        ],
      },
    });
    const spec = deployment.parse({
      name: 'web',
      namespace: 'shop',
      source: 'dev',
      helm: { chart: 'web', allowedRepositories: [server.url] },
    });
    process.env.MOORING_HELM = testbed().tools.helm;
    return { dir, ctx: { config, cacheDir: await tempDir() }, spec };
  }

  it('fetches the highest version the range allows, over TLS with the matching source credentials, and records it', async () => {
    const { dir, ctx, spec } = await setUp([{ name: 'common', version: '^1.0.0', repository: server.url }]);
    const before = server.requests.length;
    const [file] = await deploymentManifests(ctx, spec, {});
    expect(commonData(file?.text ?? '')).toBe('1.1.0');
    expect(file?.dependencies).toEqual([
      { name: 'common', version: '1.1.0', repository: server.url, digest: digests.get('1.1.0') },
    ]);
    expect(server.requests.slice(before).every((r) => r.withCredentials)).toBe(true);
    // The user's folder is never written into: the chart was copied before its dependency was added.
    expect(await readdir(join(dir, 'web'))).toEqual(['Chart.yaml', 'templates']);
  });

  it('fetches the version Chart.lock pins, and the recorded version on a restore', async () => {
    const dep = { name: 'common', version: '^1.0.0', repository: server.url };
    const { ctx, spec } = await setUp([dep], [{ ...dep, version: '1.0.0' }]);
    const [locked] = await deploymentManifests(ctx, spec, {});
    expect(commonData(locked?.text ?? '')).toBe('1.0.0');
    expect(locked?.dependencies?.[0]).toMatchObject({ version: '1.0.0', digest: digests.get('1.0.0') });
    const recorded = [{ ...dep, version: '1.1.0', digest: digests.get('1.1.0') as string }];
    const [restored] = await deploymentManifests(ctx, spec, {
      dependencies: recorded,
      restoreDependencies: true,
    });
    expect(commonData(restored?.text ?? '')).toBe('1.1.0');
  });

  it('refuses a version whose digest is not the one a release recorded', async () => {
    const dep = { name: 'common', version: '1.0.0', repository: server.url };
    const { ctx, spec } = await setUp([dep]);
    const pinned = [{ ...dep, digest: `sha256:${'ab'.repeat(32)}` }];
    const error = await deploymentManifests(ctx, spec, { dependencies: pinned }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect((error as Error).message).toMatch(
      /^web\/Chart\.yaml: dependency common 1\.0\.0 now has digest sha256:[0-9a-f]{12}, not sha256:abababababab as recorded; a chart version must not change \(https:\/\/127\.0\.0\.1:\d+\)$/,
    );
  });

  it('refuses what Chart.yaml may not ask for, naming it', async () => {
    const port = new URL(server.url).port;
    // Only looks allowed: the prefix https://127.0.0.1:PORT is not a folder of https://127.0.0.1:PORT0.
    const lookalike = await setUp([{ name: 'common', version: '1.0.0', repository: `${server.url}0` }]);
    await expect(deploymentManifests(lookalike.ctx, lookalike.spec, {})).rejects.toThrow(
      `web/Chart.yaml: dependency common comes from https://127.0.0.1:${port}0, which is not in charts/ and not an allowed repository`,
    );
    const leaving = await setUp([{ name: '../../../tmp/x', version: '1.0.0', repository: server.url }]);
    await expect(deploymentManifests(leaving.ctx, leaving.spec, {})).rejects.toThrow(
      'web/Chart.yaml: dependency name "../../../tmp/x" is not a chart name',
    );
    const many = Array.from({ length: 40 }, (_, i) => ({
      name: `lib${i}`,
      version: '1.0.0',
      repository: server.url,
    }));
    const tooMany = await setUp(many);
    await expect(deploymentManifests(tooMany.ctx, tooMany.spec, {})).rejects.toThrow(
      'web/Chart.yaml: 40 dependencies to fetch, more than 32; vendor some in charts/',
    );
    const before = server.requests.length;
    const small = await setUp([{ name: 'common', version: '1.0.0', repository: server.url }], undefined, {
      maxBytes: 200,
    });
    await expect(deploymentManifests(small.ctx, small.spec, {})).rejects.toThrow(
      /dependency common \(https:[^)]*\): chart source library: GET \S+common-1\.0\.0\.tgz: the answer is larger than 200 bytes/,
    );
    expect(server.requests.length).toBeGreaterThan(before);
  });

  it('downloads a package once for dozens of deployments that render it at once', async () => {
    const { ctx, spec } = await setUp([{ name: 'common', version: '2.0.0', repository: server.url }]);
    const before = server.requests.length;
    const renders = await Promise.all(Array.from({ length: 24 }, () => deploymentManifests(ctx, spec, {})));
    expect(renders.map(([f]) => commonData(f?.text ?? ''))).toEqual(Array(24).fill('2.0.0'));
    const packages = server.requests.slice(before).filter((r) => r.path.endsWith('.tgz'));
    expect(packages.map((r) => r.path)).toEqual(['/common-2.0.0.tgz']);
  });

  it('reads a chart path of the CLI the same way', async () => {
    const { dir, ctx } = await setUp([{ name: 'common', version: '~1.0', repository: server.url }]);
    const files = await pathManifests(ctx, {
      paths: [join(dir, 'web')],
      recursive: false,
      chart: { namespace: 'shop', releaseName: 'web', allowedRepositories: [server.url] },
    });
    expect(commonData(files[0]?.text ?? '')).toBe('1.0.0');
    expect(files[0]?.dependencies?.[0]?.digest).toBe(digests.get('1.0.0'));
  });

  it('says a failing repository may pass: 500 and no answer back off, 429 waits, and then it reads again', async () => {
    const client = new ChartRepositoryClient({
      url: server.url,
      credentials: { username: 'charts', password: 'deps-pw' },
      ca: await readFile(server.ca, 'utf8'),
      requestsPerSecond: 50,
      maxIndexBytes: 1024 * 1024,
      timeoutMs: 1000,
    });
    try {
      server.fail({ status: 500 });
      await expect(client.versions('common')).rejects.toBeInstanceOf(TransientError);
      server.fail({ status: 429 });
      await expect(client.versions('common')).rejects.toBeInstanceOf(WaitingError);
      server.fail('hang');
      const hung = await client.versions('common').catch((e: unknown) => e);
      expect(hung).toBeInstanceOf(TransientError);
      expect((hung as Error).message).toMatch(/no answer in 1000 ms/);
      server.fail(undefined);
      expect((await client.versions('common')).map((e) => e.version).sort()).toEqual([
        '1.0.0',
        '1.1.0',
        '2.0.0',
      ]);
      // A dependency fetch under a failing repository is transient: the sync is retried, the commit not failed.
      const { ctx, spec } = await setUp([{ name: 'common', version: '1.0.0', repository: server.url }]);
      server.fail({ status: 503 });
      const error = await deploymentManifests(ctx, spec, {}).catch((e: unknown) => e);
      expect(error).not.toBeInstanceOf(StalledError);
      expect((error as Error).message).toMatch(/^web\/Chart\.yaml: dependency common/);
    } finally {
      server.fail(undefined);
      client.close();
    }
  });
});

interface HistoryItem {
  id: number;
  result: string;
  trigger: string;
  dependencies?: { name: string; version: string; repository: string; digest: string }[];
}

describe('chart dependencies from an OCI registry, through the agent', () => {
  const ns = useNamespace('chart-deps');
  it('deploys the locked version, records its digest, upgrades, rolls back, and refuses a version whose digest changed', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const registry = { url: env.registry.url, host: env.registry.host };
    const path = `deps-${suffix}`;
    const repository = `oci://${env.registry.host}/${path}`;
    const out = await tempDir();
    const v100 = await pushChart(env.tools.helm, await common('1.0.0', join(out, 'a')), registry, path);
    const v110 = await pushChart(env.tools.helm, await common('1.1.0', join(out, 'b')), registry, path);
    const dep = { name: 'common', version: '^1.0.0', repository };
    process.env.MOORING_HELM = env.tools.helm;
    const { repo, receiver, configFile, first, agent } = await startGitAgent({
      repo: `chart-deps-${suffix}/app`,
      files: webChart('charts/web', [dep], [{ ...dep, version: '1.0.0' }]),
      cluster: { name: 'deps', namespace: `mooring-chart-deps-${suffix}` },
      deployments: [
        { name: 'web', namespace: ns(), helm: { chart: 'charts/web', allowedRepositories: [repository] } },
      ],
      // The registry of the test bed is plain HTTP: a chart source with the dependency's URL says so.
      extra: {
        sources: {
          charts: [{ name: 'library', url: repository, chart: 'common', insecure: true, interval: '1h' }],
        },
      },
    });
    try {
      const ended = (sha: string) =>
        receiver.statuses().filter((s) => s.sha === sha && s.state !== 'pending');
      await eventually(
        '1.0.0 deployed',
        async () => ((await runningConfig(ns()))?.data?.common === '1.0.0' ? true : undefined),
        90_000,
      );
      expect((await eventually('its status', async () => ended(first)[0], 30_000)).state).toBe('success');
      const one = (await ledgerHistory<HistoryItem>('web', configFile))[0];
      expect(one?.dependencies).toEqual([
        { name: 'common', version: '1.0.0', repository, digest: v100.digest },
      ]);

      // Chart.lock moves to 1.1.0: deployed, recorded.
      const second = await repo.commit(webChart('charts/web', [dep], [{ ...dep, version: '1.1.0' }]));
      await eventually(
        '1.1.0 deployed',
        async () => ((await runningConfig(ns()))?.data?.common === '1.1.0' ? true : undefined),
        90_000,
      );
      expect((await eventually('its status', async () => ended(second)[0], 30_000)).state).toBe('success');
      expect((await ledgerHistory<HistoryItem>('web', configFile))[0]?.dependencies?.[0]).toMatchObject({
        version: '1.1.0',
        digest: v110.digest,
      });

      // The rollback renders the first commit with the dependency it recorded.
      const back = await mooring('rollback', 'web', '--to', String(one?.id), '--config', configFile);
      expect(back.code, back.stdout + back.stderr).toBe(0);
      expect((await runningConfig(ns()))?.data?.common).toBe('1.0.0');
      expect((await ledgerHistory<HistoryItem>('web', configFile))[0]).toMatchObject({
        trigger: 'rollback',
        result: 'stable',
        dependencies: [{ name: 'common', version: '1.0.0', repository, digest: v100.digest }],
      });

      // 1.0.0 is pushed again with other content: a commit that locks it is refused, naming both digests, and
      // nothing of it is applied.
      const again = await pushChart(
        env.tools.helm,
        await common('1.0.0', join(out, 'c'), 'changed'),
        registry,
        path,
      );
      expect(again.digest).not.toBe(v100.digest);
      const third = await repo.commit({
        ...webChart('charts/web', [dep], [{ ...dep, version: '1.0.0' }]),
        'charts/web/values.yaml': 'touched: true\n',
      });
      const refused = await eventually('the refusal', async () => ended(third)[0], 60_000);
      expect(refused.state).toBe('failure');
      expect(refused.description).toMatch(/dependency common .*now has digest/);
      expect((await runningConfig(ns()))?.data).toEqual({ common: '1.0.0' });
    } finally {
      await agent.stop();
    }
  });
});
