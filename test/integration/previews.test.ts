// Pull-request previews on the test bed: the agent follows a repository on the test bed's Git server, pull requests
// are pushed to it as refs/pull/N/head (as GitHub keeps them), and a forge receiver stands in for GitHub's API (pull
// requests, comments, statuses; every request checked against GitHub's published OpenAPI). The agent posts one
// comment per pull request and updates it on a new push, a status per deployment on the head, shows a ConfigMap's
// new version as its content change and the Deployment moving to it, never a Secret value; a pull request from a
// fork is not previewed; a broken kustomization fails its preview naming the file; the cluster is never written to.
// `mooring diff --base --head -o markdown` on a clone prints the same sections.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { gitSource } from '../../src/config/schema.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { startChartRepo } from '../testbed/chart-repo.ts';
import { startForgeReceiver } from '../testbed/forge-receiver.ts';
import { commitFiles, setMergeRef, setRef } from '../testbed/git-repos.ts';
import { api } from './faults-support.ts';
import { secretFiles } from './harness.ts';
import {
  bareRepo,
  deploymentYaml,
  eventually,
  mooring,
  pollHealth,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const run = promisify(execFile);

const web = (color: string, password: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {color: ${color}}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret}
stringData: {password: ${password}}
---
${deploymentYaml({ configMap: 'web-config', secret: 'web-secret' })}`;

const apiFiles = {
  'apps/api/kustomization.yaml': 'resources: [api.yaml]\n',
  'apps/api/api.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: api}\ndata: {a: "1"}\n',
};

/**
 * A GitHub-shaped forge, and the agent of cluster `cluster` previewing the pull requests of a new repository
 * `<name>-<suffix>/app` holding `files` (its commit is `first`), its deployments reporting to the forge.
 */
async function startPreviewAgent(
  name: string,
  cluster: string,
  files: Record<string, string>,
  deployments: { name: string; namespace: string; paths: string[] }[],
  preview: Record<string, unknown> = { enabled: true },
) {
  const suffix = Date.now().toString(36);
  const forge = await startForgeReceiver('github');
  const started = await startGitAgent({
    repo: `${name}-${suffix}/app`,
    files,
    source: { preview },
    cluster: { name: cluster, namespace: `mooring-${name}-${suffix}` },
    deployments,
    statuses: forge,
  });
  return { forge, ...started };
}

/** The per-deployment sections of a preview comment (from its first <details>), without the header. */
function sections(markdown: string): string {
  const at = markdown.indexOf('<details');
  return at < 0 ? '' : markdown.slice(at).trim();
}

describe('pull-request previews', () => {
  const ns = useNamespace('previews');
  it('comments once per pull request and updates it, posts statuses, skips forks, fails a broken kustomization, writes nothing', async () => {
    const env = testbed();
    process.env.MOORING_KUBECTL = env.tools.kubectl;
    const {
      forge,
      repo,
      configFile,
      first: main,
      agent,
    } = await startPreviewAgent(
      'previews',
      'previews',
      { 'apps/web/web.yaml': web('blue', 'pw-main-1'), ...apiFiles },
      [
        { name: 'web', namespace: ns(), paths: ['apps/web'] },
        { name: 'api', namespace: ns(), paths: ['apps/api'] },
      ],
    );
    try {
      const mainStatus = (sha: string, context: string) =>
        forge.statuses().filter((s) => s.commit === sha && s.context === context && s.state !== 'pending');
      await eventually('main deployed', async () => mainStatus(main, 'mooring/previews/web')[0], 90_000);
      const kube = api();
      const configMaps = async () =>
        (
          await kube.request<{ items: { metadata: { name: string } }[] }>(
            'GET',
            `/api/v1/namespaces/${ns()}/configmaps`,
          )
        ).items
          .map((c) => c.metadata.name)
          .filter((n) => n.startsWith('web-config'))
          .sort();
      expect(await configMaps()).toEqual(['web-config-v000']);

      // Pull request 7 branches from main: a new color and a new password for web. Then main moves on (a new
      // image), and the forge keeps a trial merge of the pull request into it.
      const head1 = await commitFiles(
        repo.path,
        { 'apps/web/web.yaml': web('green', 'pw-pr-2') },
        { branch: 'pr-7', from: main },
      );
      const main2 = await repo.commit({
        'apps/web/web.yaml': web('blue', 'pw-main-1').replace('example/web:1', 'example/web:2'),
      });
      await eventually('main moved on', async () => mainStatus(main2, 'mooring/previews/web')[0], 90_000);
      await setMergeRef(repo.path, 'refs/pull/7/merge', main2, head1);
      const releasesBefore = (await mooring('history', 'web', '--config', configFile, '-o', 'json')).stdout;
      forge.setPullRequest(7, {
        headSha: head1,
        baseRef: 'main',
        state: 'open',
        fromFork: false,
        author: 'alice',
        labels: [],
      });
      await setRef(repo.path, 'refs/pull/7/head', head1);
      const previewStatus = (sha: string, deployment: string) =>
        forge
          .statuses()
          .filter(
            (s) => s.commit === sha && s.context === `mooring/preview/${deployment}` && s.state !== 'pending',
          );
      await eventually(
        'the preview of #7',
        async () => (forge.comments(7).length > 0 ? true : undefined),
        60_000,
      );
      const first = forge.comments(7);
      expect(first).toHaveLength(1);
      const body = first[0] as string;
      expect(body).toContain('<!-- mooring-preview -->');
      expect(body).toMatch(
        /New version ` ConfigMap [a-z0-9-]+\/web-config `: ` web-config-v000 ` → ` web-config-v001 `; moves ` Deployment [a-z0-9-]+\/web `/,
      );
      expect(body).toContain('-  color: blue');
      expect(body).toContain('+  color: green');
      // Rendered as the merge into main would deploy: main's newer image is not shown as undone.
      expect(body).not.toContain('example/web:1');
      expect(body).not.toContain('| object | from | to |');
      for (const secret of ['pw-main-1', 'pw-pr-2', Buffer.from('pw-pr-2').toString('base64')])
        expect(body).not.toContain(secret);
      // api's files did not change; a kustomization may read any file, so it is rendered, and says so in one line.
      expect(body).not.toContain('<b>api:');
      expect(body).toContain('Rendered without changes: ` api `.');
      expect(await eventually('its status', async () => previewStatus(head1, 'web')[0])).toMatchObject({
        state: 'success',
      });
      expect(await eventually('api status', async () => previewStatus(head1, 'api')[0])).toMatchObject({
        state: 'success',
        description: 'no change',
      });

      // A new push to #7: the same comment is updated, a status on the new head.
      const head2 = await commitFiles(
        repo.path,
        { 'apps/web/web.yaml': web('purple', 'pw-pr-3') },
        { branch: 'pr-7' },
      );
      forge.setPullRequest(7, { headSha: head2 });
      await setMergeRef(repo.path, 'refs/pull/7/merge', main2, head2);
      await setRef(repo.path, 'refs/pull/7/head', head2);
      await eventually(
        'the comment updated',
        async () => (forge.comments(7)[0]?.includes('+  color: purple') ? true : undefined),
        60_000,
      );
      expect(forge.comments(7)).toHaveLength(1);
      expect(await eventually('its status', async () => previewStatus(head2, 'web')[0])).toMatchObject({
        state: 'success',
      });

      // Pull request 8 comes from a fork: not previewed, no comment, no status.
      const fork = await commitFiles(
        repo.path,
        { 'apps/web/web.yaml': web('red', 'pw-fork') },
        { branch: 'pr-8', from: main },
      );
      forge.setPullRequest(8, {
        headSha: fork,
        baseRef: 'main',
        state: 'open',
        fromFork: true,
        author: 'mallory',
        labels: [],
      });
      await setRef(repo.path, 'refs/pull/8/head', fork);

      // Pull request 9 breaks api's kustomization: its preview fails, naming the file.
      const broken = await commitFiles(
        repo.path,
        { 'apps/api/kustomization.yaml': 'resources: [api.yaml, missing.yaml]\n' },
        { branch: 'pr-9', from: main },
      );
      forge.setPullRequest(9, {
        headSha: broken,
        baseRef: 'main',
        state: 'open',
        fromFork: false,
        author: 'bob',
        labels: [],
      });
      await setRef(repo.path, 'refs/pull/9/head', broken);
      const failed = await eventually(
        'the failing preview of #9',
        async () => previewStatus(broken, 'api')[0],
        60_000,
      );
      expect(failed.state).toBe('failure');
      expect(failed.description).toMatch(/apps\/api\/kustomization\.yaml|missing\.yaml/);
      // The comment follows the statuses (posted once every deployment is rendered).
      const broke = await eventually('the comment of #9', async () => forge.comments(9)[0], 30_000);
      expect(broke).toContain('api: does not render');
      await agent.morePolls(2);
      expect(forge.comments(8)).toEqual([]);
      expect(forge.statuses().filter((s) => s.commit === fork)).toEqual([]);

      // Nothing was written to the cluster: the ConfigMap versions and the releases are those of main.
      expect(await configMaps()).toEqual(['web-config-v000']);
      expect((await mooring('history', 'web', '--config', configFile, '-o', 'json')).stdout).toBe(
        releasesBefore,
      );
      kube.close();
      expect(forge.problems()).toEqual([]);

      // In CI: the same preview from a clone, without the agent or a cluster.
      const clone = await mkdtemp(join(tmpdir(), 'mooring-preview-clone-'));
      await run('git', ['clone', '-q', repo.path, clone]);
      await run('git', ['fetch', '-q', 'origin', 'refs/pull/7/merge:refs/remotes/origin/pr-7'], {
        cwd: clone,
      });
      const printed = await mooring(
        'diff',
        '--checkout',
        clone,
        '--base',
        'origin/main',
        '--head',
        'origin/pr-7',
        '--config',
        configFile,
        '-o',
        'markdown',
      );
      expect(printed.code, printed.stderr).toBe(1);
      expect(sections(printed.stdout)).toBe(sections(forge.comments(7)[0] as string));
    } finally {
      await agent.stop();
      await forge.close();
    }
  });

  const ticks = useNamespace('previews-ticks');

  it('posts the comment of a value of 150,000 backtick runs, within the forge size, the diff left out', async () => {
    const configMap = (value: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ticks, annotations: {strategy.spinnaker.io/versioned: "false"}}\ndata: {v: "${value}"}\n`;
    const {
      forge,
      repo,
      first: main,
      agent,
    } = await startPreviewAgent('previews-ticks', 'ticks', { 'apps/t/t.yaml': configMap('plain') }, [
      { name: 'ticks', namespace: ticks(), paths: ['apps/t'] },
    ]);
    const poller = pollHealth(agent.port);
    try {
      await eventually(
        'main deployed',
        async () =>
          forge
            .statuses()
            .find((s) => s.commit === main && s.context === 'mooring/ticks/ticks' && s.state !== 'pending'),
        90_000,
      );
      const head = await commitFiles(
        repo.path,
        { 'apps/t/t.yaml': configMap('` '.repeat(150_000)) },
        { branch: 'pr-3', from: main },
      );
      forge.setPullRequest(3, {
        headSha: head,
        baseRef: 'main',
        state: 'open',
        fromFork: false,
        author: 'alice',
        labels: [],
      });
      await setRef(repo.path, 'refs/pull/3/head', head);
      const body = await eventually('the comment of #3', async () => forge.comments(3)[0], 60_000);
      expect(body.length).toBeLessThanOrEqual(65_536);
      expect(body).toContain('<b>ticks: 1 changed</b>');
      expect(body).toMatch(/\*\*Changed ` ConfigMap [a-z0-9-]+\/ticks `\*\* \(diff left out\)/);
      expect(forge.problems()).toEqual([]);
      await poller.answeredThroughout();
    } finally {
      await poller.stop();
      await agent.stop();
      await forge.close();
    }
  });

  const live = useNamespace('previews-live');
  it('with preview.live compares the head with the cluster by a dry run: a change made by hand shows, nothing is written; a failing forge API is tried again', async () => {
    const {
      forge,
      repo,
      first: main,
      agent,
    } = await startPreviewAgent(
      'previews-live',
      'live',
      { 'apps/web/web.yaml': web('blue', 'pw-live-1') },
      [{ name: 'web', namespace: live(), paths: ['apps/web'] }],
      { enabled: true, live: true },
    );
    const kube = api();
    try {
      await eventually(
        'main deployed',
        async () => forge.statuses().find((s) => s.commit === main && s.state === 'success'),
        90_000,
      );
      // Scaled by hand: the manifests say 1.
      const path = `/apis/apps/v1/namespaces/${live()}/deployments/web`;
      await kube.request('PATCH', path, {
        body: { spec: { replicas: 2 } },
        contentType: 'application/merge-patch+json',
      });
      // Its configuration deleted by hand: the release still names web-config-v000 for the base's content, so the
      // head's is web-config-v001 (as the next sync numbers it), never v000 again.
      await kube.request('DELETE', `/api/v1/namespaces/${live()}/configmaps/web-config-v000`);
      // The head also adds a v1 Endpoints, which the API server warns of (deprecated since 1.33) in the dry run.
      const head = await commitFiles(
        repo.path,
        {
          'apps/web/web.yaml': web('green', 'pw-live-2'),
          'apps/web/legacy.yaml': 'apiVersion: v1\nkind: Endpoints\nmetadata: {name: legacy}\n',
        },
        { branch: 'pr-3', from: main },
      );
      // The forge's API fails (500) when the pull request appears: nothing is posted, the agent lives on, and the
      // preview is made once the API answers again (the next poll of the refs).
      forge.fail({ status: 500 });
      forge.setPullRequest(3, {
        headSha: head,
        baseRef: 'main',
        state: 'open',
        fromFork: false,
        author: 'alice',
        labels: [],
      });
      await setRef(repo.path, 'refs/pull/3/head', head);
      await agent.morePolls(3);
      expect(forge.comments(3)).toEqual([]);
      expect(forge.requests.some((r) => r.path.includes('/pulls/3'))).toBe(true);
      forge.fail(undefined);
      const body = await eventually('the live preview', async () => forge.comments(3)[0], 60_000);
      expect(body).toContain('compared with the cluster (server-side dry run)');
      expect(body).toContain(
        `warning: apps/web/legacy.yaml:1:1: Endpoints ${live()}/legacy: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice`,
      );
      expect(body).toMatch(/^-\s+replicas: 2$/m);
      expect(body).toMatch(/^\+\s+replicas: 1$/m);
      expect(body).toMatch(/Added ` ConfigMap [a-z0-9-]+\/web-config-v001 `/);
      expect(body).not.toContain('pw-live-2');
      // The dry run wrote nothing: still scaled by hand, no new ConfigMap version.
      expect((await kube.request<{ spec: { replicas: number } }>('GET', path)).spec.replicas).toBe(2);
      const names = (
        await kube.request<{ items: { metadata: { name: string } }[] }>(
          'GET',
          `/api/v1/namespaces/${live()}/configmaps`,
        )
      ).items.map((c) => c.metadata.name);
      expect(names.filter((n) => n.startsWith('web-config'))).toEqual([]);
      expect(forge.problems()).toEqual([]);
    } finally {
      kube.close();
      await agent.stop();
      await forge.close();
    }
  });

  it('ends the pending statuses of a preview stopped by a chart repository that fails, and tries it again', async () => {
    // The pull request adds a dependency from a chart repository that answers 503: a failure that is not the
    // commit's, so the preview is tried again, and meanwhile its pending status ends (the retry may never come).
    process.env.MOORING_HELM = testbed().tools.helm;
    const charts = await startChartRepo(await tempDir(), {});
    charts.fail({ status: 503 });
    const chart = (deps: object[]) => ({
      'charts/web/Chart.yaml': stringify({
        apiVersion: 'v2',
        name: 'web',
        version: '0.1.0',
        dependencies: deps,
      }),
      'charts/web/templates/config.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-settings}\ndata: {color: blue}\n',
    });
    const suffix = Date.now().toString(36);
    const forge = await startForgeReceiver('github');
    const {
      repo,
      first: main,
      agent,
    } = await startGitAgent({
      repo: `previews-charts-${suffix}/app`,
      files: chart([]),
      source: { preview: { enabled: true } },
      cluster: { name: 'previews-charts', namespace: `mooring-previews-charts-${suffix}` },
      deployments: [
        {
          name: 'web',
          namespace: ns(),
          helm: { chart: 'charts/web', allowedRepositories: [charts.url] },
        },
      ],
      statuses: forge,
      extra: {
        sources: { charts: [{ name: 'library', url: charts.url, chart: 'common', caFile: charts.ca }] },
      },
    });
    try {
      await eventually(
        'main deployed',
        async () =>
          forge
            .statuses()
            .find(
              (s) =>
                s.commit === main && s.context === 'mooring/previews-charts/web' && s.state !== 'pending',
            ),
        90_000,
      );
      const head = await commitFiles(
        repo.path,
        chart([{ name: 'common', version: '1.0.0', repository: charts.url }]),
        { branch: 'pr-9', from: main },
      );
      forge.setPullRequest(9, {
        headSha: head,
        baseRef: 'main',
        state: 'open',
        fromFork: false,
        author: 'carol',
        labels: [],
      });
      await setRef(repo.path, 'refs/pull/9/head', head);
      const statuses = () =>
        forge.statuses().filter((s) => s.commit === head && s.context === 'mooring/preview/web');
      const ended = await eventually(
        'the preview status ended',
        async () => statuses().find((s) => s.state !== 'pending'),
        90_000,
      );
      expect(ended.state).toBe('failure');
      expect(ended.description, ended.description).toMatch(
        /^preview not rendered \(tried again\): charts\/web\/Chart\.yaml: dependency common /,
      );
      // Tried again while the repository fails: each try opens its status and ends it.
      await eventually('tried again', async () =>
        statuses().filter((s) => s.state !== 'pending').length >= 2 ? true : undefined,
      );
      expect(forge.problems()).toEqual([]);
    } finally {
      await agent.stop();
      await forge.close();
      await charts.close();
    }
  });

  it('finds pull requests where each forge keeps them, with their trial merges', async () => {
    const env = testbed();
    const repo = await bareRepo(`previews-refs-${Date.now().toString(36)}/app`);
    const main = await repo.commit({ 'a.yaml': 'a: 1\n' });
    const head = await commitFiles(repo.path, { 'a.yaml': 'a: 2\n' }, { branch: 'topic', from: main });
    await setRef(repo.path, 'refs/pull/3/head', head);
    const merge = await setMergeRef(repo.path, 'refs/pull/3/merge', main, head);
    await setRef(repo.path, 'refs/merge-requests/4/head', head);
    await setRef(repo.path, 'refs/pull-requests/5/from', head);
    await setRef(repo.path, 'refs/pull/6/merge', merge); // a merge without its head is no pull request
    await setRef(repo.path, 'refs/pull/x/head', head); // not a number
    const source = gitSource.parse({
      name: 'app',
      url: repo.url,
      credentials: {
        username: env.git.username,
        password: { file: join(await secretFiles(), 'password') },
      },
    });
    const git = new GitRepository(source, { cacheDir: await tempDir() });
    const pulls = await git.pullRequests(10);
    expect([...pulls.keys()]).toEqual([5, 4, 3]);
    expect(pulls.get(3)).toEqual({
      head: { ref: 'refs/pull/3/head', commit: head },
      merge: { ref: 'refs/pull/3/merge', commit: merge },
    });
    expect(pulls.get(4)?.head.ref).toBe('refs/merge-requests/4/head');
    expect(pulls.get(5)?.head.ref).toBe('refs/pull-requests/5/from');
    expect([...(await git.pullRequests(1)).keys()]).toEqual([5]);
  });
});
