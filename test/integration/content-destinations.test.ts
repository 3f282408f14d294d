// Content never chooses where a credential goes or what a configured repository is (docs/security.md, "Where
// credentials go"), on the test bed's real servers:
// - an OCI artifact whose `org.opencontainers.image.source` names another host: no request reaches that host (the
//   forge token stays home), the refusal is logged once and shown on the status board, and an artifact naming the
//   configured Git host still gets its statuses on the configured forge;
// - a chart dependency whose repository climbs out of an allowed prefix with `..` is refused by name, and nothing
//   is fetched from where it leads;
// - a chart repository whose package URL redirects to another host: refused, naming both, the other host asked
//   nothing.
// The chart cases run the CLI as a process that trusts the chart repository's CA (NODE_EXTRA_CA_CERTS), so that
// an anonymous download would succeed if it were not refused.
import { spawn } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { indexRepo, packageChart, startChartRepo, writeChart } from '../testbed/chart-repo.ts';
import { pushArtifact } from '../testbed/oci-push.ts';
import { makeCertificates } from '../testbed/tls.ts';
import {
  agentConfig,
  bareRepo,
  eventually,
  pollHealth,
  secretFiles,
  startAgent,
  startGitAgent,
  startStatusReceiver,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const SOURCE = 'org.opencontainers.image.source';

interface BoardView {
  name: string;
  state: string;
  images: { tag?: string }[];
  reporting?: string[];
}
const REVISION = 'org.opencontainers.image.revision';

describe('an artifact names a commit, never where the forge token goes', () => {
  const nsTrusted = useNamespace('dest-trusted');
  const nsHostile = useNamespace('dest-hostile');
  it('posts nothing to a host the source annotation names, says so once, and still reports to the configured forge', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repo = await bareRepo(`dest-${suffix}/app`);
    const forge = await startStatusReceiver();
    const attacker = await startStatusReceiver();
    const attackerHost = new URL(attacker.url).host;
    const secrets = await secretFiles();
    const token = { file: join(secrets, 'token') };
    const files = (color: string) => ({
      'apps/config.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {color: ${color}}\n`,
    });
    const push = async (repository: string, tag: string, source: string, color: string) => {
      const commit = await repo.commit({ 'apps/config.yaml': color });
      await pushArtifact({
        registry: env.registry.url,
        repository,
        tag,
        files: files(color),
        annotations: { [SOURCE]: source, [REVISION]: `main@sha1:${commit}` },
      });
      return commit;
    };
    const oci = (name: string, repository: string) => ({
      name,
      url: `oci://${env.registry.host}/${repository}`,
      policy: { type: 'semver', range: '>=1.0.0' },
      insecure: true,
      interval: '1s',
    });
    const trusted = await push(`trusted-${suffix}/app`, '1.0.0', repo.url, 'green');
    // As the issue reproduced it: the status API derived from the annotation's host, with no apiUrl set.
    const hostile = await push(`hostile-${suffix}/app`, '1.0.0', `${attacker.url}/owner/repo`, 'red');
    const agent = startAgent(
      await agentConfig({
        cluster: { name: 'dest', namespace: `mooring-dest-${suffix}` },
        // The application's repository is a Git source of the agent: its host is a configured one.
        git: [{ name: 'app', repo }],
        deployments: [
          {
            name: 'trusted',
            namespace: nsTrusted(),
            source: 'trusted-manifests',
            paths: ['apps'],
            commitStatus: { provider: 'github', apiUrl: forge.url, token },
          },
          {
            name: 'hostile',
            namespace: nsHostile(),
            source: 'hostile-manifests',
            paths: ['apps'],
            commitStatus: { provider: 'github', token },
          },
        ],
        extra: {
          sources: {
            oci: [
              oci('trusted-manifests', `trusted-${suffix}/app`),
              oci('hostile-manifests', `hostile-${suffix}/app`),
            ],
          },
          server: { statusPage: { enabled: true, token } },
        },
      }),
    );
    const poller = pollHealth(agent.port);
    try {
      await eventually('the trusted artifact reported', async () => forge.ended(trusted), 90_000);
      expect(forge.states(trusted)).toEqual(['pending', 'success']);
      expect(forge.statuses().find((s) => s.sha === trusted)?.repository).toBe(`dest-${suffix}/app`);

      const board = async () => {
        const res = await fetch(`http://127.0.0.1:${agent.port()}/status/api/deployments`, {
          headers: { authorization: 'Bearer github-token' },
        });
        if (!res.ok) return undefined;
        const body = (await res.json()) as { items: BoardView[] };
        return body.items.find((v) => v.name === 'hostile');
      };
      // The board says when a sync of a version ended (the artifact's tag).
      const synced = (tag: string) => async () => {
        const view = await board();
        return view?.state === 'synced' && view.images.some((i) => i.tag === tag) ? view : undefined;
      };
      const view = await eventually('the hostile artifact deployed', synced('1.0.0'), 90_000);
      const why = `commit status not posted: ${SOURCE} names host ${attackerHost}, which is not a configured forge (apiUrl) or Git source host`;
      expect(attacker.captured).toEqual([]);
      expect(view?.reporting).toEqual([why]);

      // A second artifact naming the same host: still nothing there, and not logged again.
      const again = await push(`hostile-${suffix}/app`, '1.1.0', `${attacker.url}/owner/repo`, 'blue');
      await eventually('the second hostile artifact deployed', synced('1.1.0'), 90_000);
      expect(attacker.captured).toEqual([]);
      expect(forge.statuses().filter((s) => s.sha === hostile || s.sha === again)).toEqual([]);
      const logged = agent.logged(
        'commit status not posted: the source annotation names an unconfigured host',
      );
      expect(logged).toHaveLength(1);
      expect(logged[0]?.err).toBe(why);
      expect(agent.output()).not.toContain('github-token');
      await poller.answeredThroughout();
    } finally {
      await poller.stop();
      await agent.stop();
    }
  });
});

/** `mooring render --offline` of a chart folder as a user runs it, trusting `ca` as the system would. */
function renderChart(
  chartDir: string,
  allowed: string,
  ca: string,
  env: Record<string, string> = {},
): Promise<{ code: number; out: string }> {
  const main = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [main, 'render', '--offline', '-n', 'shop', '--allowed-repository', allowed, chartDir],
      {
        env: { ...process.env, NODE_EXTRA_CA_CERTS: ca, MOORING_HELM: testbed().tools.helm, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, out }));
  });
}

/** A chart `common` of version 1.0.0 whose ConfigMap says `marker`, packaged into `folder`. */
async function library(folder: string, marker: string): Promise<void> {
  const dir = await writeChart(await tempDir(), {
    name: 'common',
    version: '1.0.0',
    templates: {
      'config.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: common}\ndata: {from: ${marker}}\n`,
    },
  });
  await packageChart(testbed().tools.helm, dir, folder);
}

/** Chart `web` in a folder of its own (or `dir`), depending on `common` 1.0.0 from `repository`. */
async function web(repository: string, dir?: string): Promise<string> {
  dir ??= join(await tempDir(), 'web');
  await mkdir(join(dir, 'templates'), { recursive: true });
  await writeFile(
    join(dir, 'Chart.yaml'),
    stringify({
      apiVersion: 'v2',
      name: 'web',
      version: '0.1.0',
      dependencies: [{ name: 'common', version: '1.0.0', repository }],
    }),
  );
  await writeFile(
    join(dir, 'templates', 'config.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n',
  );
  return dir;
}

describe('chart repositories are compared parsed and stay in their origin', () => {
  it('refuses a dependency that climbs out of its allowed repository with .., fetching nothing from where it leads', async () => {
    const folder = await tempDir();
    await mkdir(join(folder, 'myorg'));
    await mkdir(join(folder, 'evilorg'));
    const server = await startChartRepo(folder);
    try {
      await library(join(folder, 'myorg'), 'myorg');
      await library(join(folder, 'evilorg'), 'evilorg');
      await indexRepo(testbed().tools.helm, join(folder, 'myorg'), `${server.url}/myorg`);
      await indexRepo(testbed().tools.helm, join(folder, 'evilorg'), `${server.url}/evilorg`);
      const climbing = `${server.url}/myorg/../evilorg`;

      const result = await renderChart(await web(climbing), `${server.url}/myorg`, server.ca);
      expect(result.out).not.toContain('from: evilorg');
      expect(result.code, result.out).not.toBe(0);
      expect(result.out).toContain(
        `web/Chart.yaml: dependency common is refused: its repository holds a ".." path segment: "${climbing}"; write the path without it`,
      );
      expect(server.requests.filter((r) => r.path.startsWith('/evilorg'))).toEqual([]);

      // The same dependency written plainly inside the prefix is fetched: the refusal is the `..`, not the server.
      const plain = await renderChart(await web(`${server.url}/myorg`), `${server.url}/myorg`, server.ca);
      expect(plain.code, plain.out).toBe(0);
      expect(plain.out).toContain('from: myorg');
    } finally {
      await server.close();
    }
  });

  it('copies a chart that needs its dependencies with each symlink leading where it led in the repository', async () => {
    // A chart three folders deep in a repository, whose file links up four folders to a file of the repository: the
    // check sees it inside. The copy made to fetch the dependency sits in a shallower (temporary) folder, where the
    // same relative text climbs out to a file of the machine's, and helm followed it there.
    const base = await tempDir();
    const repo = join(base, 'repo');
    const chart = join(repo, 'a', 'b', 'web');
    await mkdir(join(repo, '.git'), { recursive: true });
    await mkdir(join(repo, 'X'), { recursive: true });
    await writeFile(join(repo, 'X', 'secret.txt'), 'inside-the-repository');
    // Where the link leads from the copy (TMPDIR is base/tmp: the copy is base/tmp/<copy>/web).
    await mkdir(join(base, 'tmp'), { recursive: true });
    await mkdir(join(base, 'X'), { recursive: true });
    await writeFile(join(base, 'X', 'secret.txt'), 'outside-the-repository');
    const folder = await tempDir();
    const server = await startChartRepo(folder);
    try {
      await library(folder, 'lib');
      await indexRepo(testbed().tools.helm, folder, server.url);
      await web(server.url, chart);
      await mkdir(join(chart, 'files'), { recursive: true });
      await symlink('../../../../X/secret.txt', join(chart, 'files', 'note'));
      await writeFile(
        join(chart, 'templates', 'config.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {note: {{ .Files.Get "files/note" | quote }}}\n',
      );
      const result = await renderChart(chart, server.url, server.ca, { TMPDIR: join(base, 'tmp') });
      expect(result.code, result.out).toBe(0);
      expect(result.out).toContain('from: lib');
      expect(result.out).toContain('note: inside-the-repository');
      expect(result.out).not.toContain('outside-the-repository');
    } finally {
      await server.close();
    }
  });

  it('refuses a package URL that redirects to another host, naming both, and asks the other host nothing', async () => {
    const certificates = await makeCertificates(await tempDir());
    const folder = await tempDir();
    const elsewhere = await startChartRepo(folder, { certificates });
    const server = await startChartRepo(folder, {
      certificates,
      redirects: { '/common-1.0.0.tgz': `${elsewhere.url}/common-1.0.0.tgz?signature=secret` },
    });
    try {
      await library(folder, 'moved');
      await indexRepo(testbed().tools.helm, folder, server.url);

      const result = await renderChart(await web(server.url), server.url, certificates.ca);
      expect(result.out).not.toContain('from: moved');
      expect(result.code, result.out).not.toBe(0);
      expect(result.out).toContain(
        `GET ${server.url}/common-1.0.0.tgz was redirected to ${elsewhere.url}/common-1.0.0.tgz, outside its origin ${server.url}; redirects are followed only within the origin`,
      );
      expect(result.out).not.toContain('signature=secret');
      expect(result.out).toMatch(/web\/Chart\.yaml: dependency common/);
      expect(elsewhere.requests).toEqual([]);
      expect(server.requests.map((r) => r.path)).toContain('/common-1.0.0.tgz');
    } finally {
      await server.close();
      await elsewhere.close();
    }
  });
});

describe('chart repositories in the agent', () => {
  const nsClimb = useNamespace('dest-climb');
  const nsOci = useNamespace('dest-oci-climb');
  const nsMoved = useNamespace('dest-moved');

  it('fails a dependency that climbs with .. (https and oci) or whose package redirects away, by name, fetching nothing there; /healthz answers throughout', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const certificates = await makeCertificates(await tempDir());
    const folder = await tempDir();
    for (const org of ['myorg', 'evilorg', 'moved']) {
      await mkdir(join(folder, org));
      await library(join(folder, org), org);
    }
    const elsewhere = await startChartRepo(folder, { certificates });
    const server = await startChartRepo(folder, {
      certificates,
      redirects: { '/moved/common-1.0.0.tgz': `${elsewhere.url}/moved/common-1.0.0.tgz?signature=secret` },
    });
    for (const org of ['myorg', 'evilorg', 'moved'])
      await indexRepo(env.tools.helm, join(folder, org), `${server.url}/${org}`);
    const chart = (repository: string) => ({
      'Chart.yaml': stringify({
        apiVersion: 'v2',
        name: 'web',
        version: '0.1.0',
        dependencies: [{ name: 'common', version: '1.0.0', repository }],
      }),
      'templates/config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n',
    });
    const climbing = `${server.url}/myorg/../evilorg`;
    const ociAllowed = `oci://${env.registry.host}/myorg-${suffix}/charts`;
    const ociClimbing = `oci://${env.registry.host}/myorg-${suffix}/charts/../../evilorg-${suffix}/charts`;
    const files: Record<string, string> = {};
    for (const [dir, repository] of [
      ['climb', climbing],
      ['oci-climb', ociClimbing],
      ['moved', `${server.url}/moved`],
    ] as const)
      for (const [path, text] of Object.entries(chart(repository))) files[`${dir}/${path}`] = text;
    process.env.MOORING_HELM = env.tools.helm;
    const {
      receiver,
      first: sha,
      agent,
    } = await startGitAgent({
      repo: `dest-charts-${suffix}/app`,
      files,
      cluster: { name: 'charts', namespace: `mooring-dest-charts-${suffix}` },
      deployments: [
        {
          name: 'climb',
          namespace: nsClimb(),
          helm: { chart: 'climb', allowedRepositories: [`${server.url}/myorg`] },
        },
        {
          name: 'oci-climb',
          namespace: nsOci(),
          helm: { chart: 'oci-climb', allowedRepositories: [ociAllowed] },
        },
        {
          name: 'moved',
          namespace: nsMoved(),
          helm: { chart: 'moved', allowedRepositories: [`${server.url}/moved`] },
        },
      ],
      // The package's own repository is trusted by its CA, as a configured chart source says.
      extra: {
        sources: {
          charts: [
            {
              name: 'moved',
              url: `${server.url}/moved`,
              chart: 'common',
              caFile: certificates.ca,
              interval: '1h',
            },
          ],
        },
      },
    });
    const poller = pollHealth(agent.port);
    try {
      const ended = (name: string) =>
        eventually(`${name} ended`, async () => receiver.ended(sha, name), 90_000);
      const climb = await ended('climb');
      expect(climb.state).toBe('failure');
      // The cause comes first: a forge keeps only the first 140 characters of a status.
      expect(climb.description).toContain(
        'climb/Chart.yaml: dependency common is refused: its repository holds a ".." path segment',
      );
      const oci = await ended('oci-climb');
      expect(oci.state).toBe('failure');
      expect(oci.description).toContain(
        'oci-climb/Chart.yaml: dependency common is refused: its repository holds a ".." path segment',
      );
      const moved = await ended('moved');
      expect(moved.state).toBe('failure');
      // The status names the dependency and its chart source (a forge cuts it at 140 characters); the log says all.
      expect(moved.description).toMatch(
        /^moved\/Chart\.yaml: dependency common \(https:[^)]+\/moved\): chart source moved: GET /,
      );
      expect(agent.output()).toContain(
        `GET ${server.url}/moved/common-1.0.0.tgz was redirected to ${elsewhere.url}/moved/common-1.0.0.tgz, outside its origin ${server.url}`,
      );
      expect(agent.output()).not.toContain('signature=secret');
      expect(server.requests.filter((r) => r.path.startsWith('/evilorg'))).toEqual([]);
      expect(elsewhere.requests).toEqual([]);
      expect(server.requests.map((r) => r.path)).toContain('/moved/common-1.0.0.tgz');
      await poller.answeredThroughout();
    } finally {
      await poller.stop();
      await agent.stop();
      await server.close();
      await elsewhere.close();
    }
  }, 180_000);
});
