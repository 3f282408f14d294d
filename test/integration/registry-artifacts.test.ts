// Charts and manifests from registries, on the test bed's real servers: a Helm chart pushed with the real `helm push`
// to the distribution registry and one served by a TLS chart repository (a static folder indexed by the real
// `helm repo index`), each followed by a version policy; manifests pushed as an OCI artifact in the layout
// `flux push artifact` writes. A new version the policy picks is deployed, recorded and named in the commit status; a
// version outside the policy is not; a rollback restores the recorded chart version; a corrupted or oversized
// download is refused with a status that names it, and nothing of it is applied.
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { indexRepo, packageChart, pushChart, startChartRepo, writeChart } from '../testbed/chart-repo.ts';
import { pushArtifact } from '../testbed/oci-push.ts';
import { releaseDeployment } from './build-helpers.ts';
import {
  bareRepo,
  deploymentYaml,
  eventually,
  type GitAgent,
  ledgerHistory,
  mooring,
  runningConfig,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const TEMPLATES = {
  'config.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-config}
data:
  chart: {{ .Chart.Version | quote }}
  color: {{ .Values.color | quote }}
`,
  'deployment.yaml': releaseDeployment('config'),
};

/** A chart `web` of this version, packaged by the real helm into `out`. */
async function packaged(version: string, out: string): Promise<string> {
  const helm = testbed().tools.helm;
  const dir = await writeChart(await tempDir(), { name: 'web', version, templates: TEMPLATES });
  return packageChart(helm, dir, out);
}

interface HistoryItem {
  id: number;
  result: string;
  trigger: string;
  images: Record<string, { kind?: string; tag?: string; digest: string; image: string }>;
}

/**
 * The agent on repository `repo` holding `values/prod.yaml` (its commit is `first`): deployment `web` in
 * `namespace`, its chart from the chart source `chart` with those values.
 */
function startChartAgent(
  repo: string,
  values: string,
  agentNamespace: string,
  namespace: string,
  chart: Record<string, unknown>,
): Promise<GitAgent> {
  return startGitAgent({
    repo,
    files: { 'values/prod.yaml': values },
    cluster: { name: 'charts', namespace: agentNamespace },
    deployments: [
      { name: 'web', namespace, helm: { chartSource: 'web-chart', valuesFiles: ['values/prod.yaml'] } },
    ],
    extra: { sources: { charts: [{ name: 'web-chart', chart: 'web', ...chart }] } },
  });
}

/** Waits until the chart version running in `namespace` is `version`. */
function untilChart(namespace: string, version: string, what = `${version} deployed`): Promise<true> {
  return eventually(
    what,
    async () => ((await runningConfig(namespace))?.data.chart === version ? true : undefined),
    90_000,
  );
}

describe('charts from an OCI registry', () => {
  const ns = useNamespace('chart-oci');
  it('deploys the version ^1.2 picks, upgrades to a newer 1.x, ignores 2.0.0 and rolls back', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const out = await tempDir();
    const registry = { url: env.registry.url, host: env.registry.host };
    const path = `charts-${suffix}`;
    // 1.1.0 is below the range; 1.2.0 is what ^1.2 picks at first.
    await pushChart(env.tools.helm, await packaged('1.1.0', join(out, 'a')), registry, path);
    const v120 = await pushChart(env.tools.helm, await packaged('1.2.0', join(out, 'b')), registry, path);
    const agentNs = `mooring-chart-oci-${suffix}`;
    process.env.MOORING_HELM = env.tools.helm;
    const {
      receiver,
      configFile,
      first: values,
      agent,
    } = await startChartAgent(`chart-oci-${suffix}/values`, 'color: green\n', agentNs, ns(), {
      url: `oci://${env.registry.host}/${path}`,
      policy: { type: 'semver', range: '^1.2' },
      insecure: true,
      interval: '1s',
    });
    try {
      const ended = (sha: string) =>
        receiver.statuses().filter((s) => s.sha === sha && s.state !== 'pending');
      await untilChart(ns(), '1.2.0');
      const first = await eventually('its status', async () => ended(values)[0], 30_000);
      expect(first.state).toBe('success');
      expect(first.description).toMatch(/chart web 1\.2\.0/);
      expect((await runningConfig(ns()))?.data).toEqual({ chart: '1.2.0', color: 'green' });
      const one = (await ledgerHistory<HistoryItem>('web', configFile))[0];
      expect(one?.images['web-chart']).toMatchObject({ kind: 'chart', tag: '1.2.0', digest: v120.digest });

      // A newer version inside the range: an artifact, deployed with the same values, named in a new status.
      await pushChart(env.tools.helm, await packaged('1.3.0', join(out, 'c')), registry, path);
      await untilChart(ns(), '1.3.0');
      await eventually('the upgrade reported', async () =>
        ended(values).some((s) => /chart web 1\.3\.0/.test(s.description)) ? true : undefined,
      );
      const upgraded = (await ledgerHistory<HistoryItem>('web', configFile))[0];
      expect(upgraded).toMatchObject({ trigger: 'image', result: 'stable' });
      expect(upgraded?.images['web-chart']?.tag).toBe('1.3.0');

      // 2.0.0 is outside ^1.2: polls go on (every second) and deploy nothing.
      await pushChart(env.tools.helm, await packaged('2.0.0', join(out, 'd')), registry, path);
      await agent.morePolls(4);
      expect((await runningConfig(ns()))?.data.chart).toBe('1.3.0');
      expect(
        (await ledgerHistory<HistoryItem>('web', configFile)).some(
          (r) => r.images['web-chart']?.tag === '2.0.0',
        ),
      ).toBe(false);

      // The rollback restores the recorded chart version (and its ConfigMap version), and holds it.
      const back = await mooring('rollback', 'web', '--to', String(one?.id), '--config', configFile);
      expect(back.code, back.stdout + back.stderr).toBe(0);
      expect((await runningConfig(ns()))?.data.chart).toBe('1.2.0');
      await agent.morePolls(3);
      expect((await runningConfig(ns()))?.data.chart).toBe('1.2.0');
      const rolled = (await ledgerHistory<HistoryItem>('web', configFile))[0];
      expect(rolled).toMatchObject({ trigger: 'rollback', result: 'stable' });
      expect(rolled?.images['web-chart']).toMatchObject({ tag: '1.2.0', digest: v120.digest });
    } finally {
      await agent.stop();
    }
  });
});

describe('charts from an HTTPS chart repository', () => {
  const ns = useNamespace('chart-https');
  it('deploys the latest version over TLS with credentials, upgrades, rides out a failing repository, and refuses a package that does not match its digest', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const folder = await tempDir();
    await packaged('1.0.0', folder);
    const server = await startChartRepo(folder, { username: 'charts', password: `pw-${suffix}` });
    await indexRepo(env.tools.helm, folder, server.url);
    const secrets = await tempDir();
    await writeFile(join(secrets, 'user'), 'charts');
    await writeFile(join(secrets, 'password'), `pw-${suffix}`);
    process.env.MOORING_HELM = env.tools.helm;
    const {
      receiver,
      first: values,
      agent,
    } = await startChartAgent(
      `chart-https-${suffix}/values`,
      'color: blue\n',
      `mooring-chart-https-${suffix}`,
      ns(),
      {
        url: server.url,
        caFile: server.ca,
        credentials: {
          username: { file: join(secrets, 'user') },
          password: { file: join(secrets, 'password') },
        },
        interval: '1s',
      },
    );
    try {
      const ended = (sha: string) =>
        receiver.statuses().filter((s) => s.sha === sha && s.state !== 'pending');
      await untilChart(ns(), '1.0.0');
      await eventually('its status', async () => ended(values).find((s) => s.state === 'success'), 30_000);
      expect(server.requests.every((r) => r.withCredentials)).toBe(true);

      await packaged('1.1.0', folder);
      await indexRepo(env.tools.helm, folder, server.url);
      await untilChart(ns(), '1.1.0');

      // The repository fails while 1.1.1 is published (500, then 429 with Retry-After): nothing is deployed or
      // failed meanwhile, the agent lives on, and 1.1.1 is deployed once the repository answers again.
      const failedBefore = ended(values).filter((s) => s.state !== 'success').length;
      server.fail({ status: 500 });
      await packaged('1.1.1', folder);
      await indexRepo(env.tools.helm, folder, server.url);
      const polledBefore = server.requests.length;
      await agent.morePolls(2);
      server.fail({ status: 429 });
      await agent.morePolls(2);
      expect(server.requests.length).toBeGreaterThan(polledBefore);
      expect((await runningConfig(ns()))?.data.chart).toBe('1.1.0');
      server.fail(undefined);
      await untilChart(ns(), '1.1.1', '1.1.1 deployed after the failures');
      await eventually('its status', async () =>
        ended(values).some((s) => s.state === 'success' && /chart web 1\.1\.1/.test(s.description))
          ? true
          : undefined,
      );
      expect(ended(values).filter((s) => s.state !== 'success').length).toBe(failedBefore);

      // 1.2.0 is indexed, then its package is replaced: the download does not match the index's digest.
      const tgz = await packaged('1.2.0', folder);
      await indexRepo(env.tools.helm, folder, server.url);
      await writeFile(tgz, gzipSync(Buffer.from('not the chart that was indexed')));
      const refused = await eventually(
        'the corrupted package refused',
        async () => ended(values).find((s) => s.state === 'failure'),
        90_000,
      );
      expect(refused.description).toMatch(/chart web 1\.2\.0.*digest/);
      expect((await runningConfig(ns()))?.data.chart).toBe('1.1.1');

      // An index that sends the download elsewhere (to fetch what its author chose, with the repository's
      // credentials): refused, named; nothing is fetched from there.
      await packaged('1.3.0', folder);
      await indexRepo(env.tools.helm, folder, server.url);
      const index = await readFile(join(folder, 'index.yaml'), 'utf8');
      await writeFile(
        join(folder, 'index.yaml'),
        index.replace(`${server.url}/web-1.3.0.tgz`, 'https://127.0.0.2:9/web-1.3.0.tgz'),
      );
      const elsewhere = await eventually(
        'the package elsewhere refused',
        async () => ended(values).find((s) => s.state === 'failure' && /1\.3\.0/.test(s.description)),
        90_000,
      );
      expect(elsewhere.description).toMatch(/outside the chart repository/);
      expect((await runningConfig(ns()))?.data.chart).toBe('1.1.1');
    } finally {
      await agent.stop();
      await server.close();
    }
  });
});

describe('manifests as OCI artifacts', () => {
  const ns = useNamespace('oci-manifests');
  it('deploys each new artifact, reports on the Git commit it names, and refuses corrupted or oversized ones', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    // The application's repository: the artifacts are built from its commits (the status goes there).
    const repo = await bareRepo(`oci-${suffix}/app`);
    const repository = `manifests-${suffix}/app`;
    const manifests = (color: string) => ({
      'apps/web.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {color: ${color}}
---
${deploymentYaml({ configMap: 'web-config' })}`,
    });
    const push = async (
      tag: string,
      color: string,
      extra: { layer?: Buffer; corrupt?: 'digest'; files?: Record<string, string> } = {},
    ) => {
      const commit = await repo.commit({ 'apps/web.yaml': color });
      const pushed = await pushArtifact({
        registry: env.registry.url,
        repository,
        tag,
        ...(extra.layer ? { layer: extra.layer } : { files: extra.files ?? manifests(color) }),
        ...(extra.corrupt ? { corrupt: extra.corrupt } : {}),
        annotations: {
          'org.opencontainers.image.source': repo.url,
          'org.opencontainers.image.revision': `main@sha1:${commit}`,
        },
      });
      return { commit, ...pushed };
    };
    const first = await push('1.0.0', 'green');
    const { receiver, agent } = await startGitAgent({
      // The application's repository is a Git source of the agent: the host a status may go to (docs/security.md).
      repo,
      cluster: { name: 'oci', namespace: `mooring-oci-${suffix}` },
      deployments: [{ name: 'web', namespace: ns(), source: 'app-manifests', paths: ['apps'] }],
      extra: {
        sources: {
          oci: [
            {
              name: 'app-manifests',
              url: `oci://${env.registry.host}/${repository}`,
              policy: { type: 'semver', range: '>=1.0.0' },
              insecure: true,
              interval: '1s',
              maxBytes: 64 * 1024,
            },
          ],
        },
      },
    });
    try {
      const ended = (sha: string) => receiver.statuses().find((s) => s.sha === sha && s.state !== 'pending');
      const states = (sha: string) =>
        receiver
          .statuses()
          .filter((s) => s.sha === sha)
          .map((s) => s.state);
      await eventually(
        '1.0.0 deployed',
        async () => ((await runningConfig(ns()))?.data.color === 'green' ? true : undefined),
        90_000,
      );
      await eventually('its status on the named commit', async () => ended(first.commit), 30_000);
      expect(states(first.commit)).toEqual(['pending', 'success']);
      expect(receiver.statuses().find((s) => s.sha === first.commit)?.repository).toBe(`oci-${suffix}/app`);

      const second = await push('1.1.0', 'red');
      await eventually(
        '1.1.0 deployed',
        async () => ((await runningConfig(ns()))?.data.color === 'red' ? true : undefined),
        90_000,
      );
      await eventually('its status', async () => ended(second.commit), 30_000);
      expect(ended(second.commit)?.state).toBe('success');

      // A manifest that does not parse: the status names its path inside the artifact, not a temporary folder.
      const broken = await push('1.1.5', 'broken', {
        files: { 'apps/web.yaml': 'kind: ConfigMap\nmetadata: [\n' },
      });
      const parse = await eventually(
        'the broken artifact reported',
        async () => ended(broken.commit),
        60_000,
      );
      expect(parse.state).toBe('failure');
      expect(parse.description).toMatch(/apps\/web\.yaml/);
      expect(parse.description).not.toMatch(/\/tmp\//);

      // A layer larger than maxBytes: refused before it is read, the status names the limit.
      const big = await push('1.2.0', 'big', { layer: gzipSync(randomBytes(200 * 1024)) });
      const tooBig = await eventually(
        'the oversized artifact refused',
        async () => ended(big.commit),
        60_000,
      );
      expect(tooBig.state).toBe('failure');
      expect(tooBig.description).toMatch(/more than maxBytes/);

      // A layer whose stored bytes no longer match its digest: refused, named.
      const bad = await push('1.3.0', 'yellow', { corrupt: 'digest' });
      const corrupted = await eventually(
        'the corrupted artifact refused',
        async () => ended(bad.commit),
        60_000,
      );
      expect(corrupted.state).toBe('failure');
      expect(corrupted.description).toMatch(/does not match its digest/);
      expect((await runningConfig(ns()))?.data.color).toBe('red');
    } finally {
      await agent.stop();
    }
  });
});
