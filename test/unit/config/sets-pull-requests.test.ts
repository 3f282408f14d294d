import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { type Found, pullRequestGenerator, restoredInputs, withSets } from '../../../src/config/sets.ts';
import type { PullRequestInfo } from '../../../src/report/forges/types.ts';
import { selectRef } from '../../../src/sources/git/refs.ts';
import { decidePullRequest, slug } from '../../../src/sync/pull-request-sets.ts';
import { problemsOf } from './problems.ts';

const base = `
sources:
  git:
    - name: app
      url: https://git.example.com/acme/app.git
      ref: {branch: main}
deploymentSets:
  - name: previews
    generator:
      pullRequests: {source: app, labels: [deploy], ttl: 72h}
    allowedNamespaces: ["pr-*"]
    removal: {prune: true}
    template:
      name: "web-pr-{{number}}"
      namespace: "pr-{{number}}"
      source: "{{source}}"
      paths: [deploy]
      createNamespace: true
      application: "{{branch.slug}}"
      commitStatus: {targetUrl: "https://pr-{{number}}.preview.example.com"}
`;

const HEAD = 'a'.repeat(40);
const pr = (over: Partial<PullRequestInfo> = {}): PullRequestInfo => ({
  number: 7,
  state: 'open',
  headSha: HEAD,
  baseRef: 'main',
  headRef: 'feature/Blue-Button',
  fromFork: false,
  author: 'alice',
  labels: ['deploy'],
  updatedAt: '2026-11-30T08:00:00Z',
  ...over,
});
const NOW = Date.parse('2026-11-30T09:00:00Z');

function setup() {
  const config = parseConfig(base, 'agent.yaml');
  const set = config.deploymentSets[0];
  const generator = set && pullRequestGenerator(set);
  const git = config.sources.git[0];
  if (!set || !generator || !git) throw new Error('no set');
  return { config, set, generator, git };
}

describe('pull-request deployment sets', () => {
  it('deploy an open, labelled pull request to the source branch, with its number, branch, head and own source', () => {
    const { generator, git } = setup();
    expect(decidePullRequest(generator, git, pr(), HEAD, NOW)).toEqual({
      input: {
        label: 'pull request #7',
        values: {
          number: '7',
          branch: 'feature/Blue-Button',
          'branch.slug': 'feature-blue-button',
          author: 'alice',
          head: HEAD,
          'head.short': 'aaaaaaaa',
          source: 'app-pr-7',
        },
      },
    });
  });

  it('leave out a closed, merged, unlabelled, other-branch, stale or fork pull request, saying why', () => {
    const { generator, git } = setup();
    const why = (over: Partial<PullRequestInfo>) => {
      const d = decidePullRequest(generator, git, pr(over), HEAD, NOW);
      return 'why' in d ? d.why : 'deployed';
    };
    expect(why({ state: 'closed' })).toBe('it is closed');
    expect(why({ state: 'merged' })).toBe('it is merged');
    expect(why({ labels: ['other'] })).toBe('it has none of the labels deploy');
    expect(why({ baseRef: 'release' })).toBe('it targets release, not main');
    const features = { ...generator, headBranches: ['feature/*'] };
    expect(decidePullRequest(features, git, pr({ headRef: 'fix/typo' }), HEAD, NOW)).toEqual({
      why: 'its branch fix/typo matches none of feature/*',
    });
    expect('input' in decidePullRequest(features, git, pr(), HEAD, NOW)).toBe(true);
    expect(why({ updatedAt: '2026-11-26T08:00:00Z' })).toMatch(/^it was not updated for longer than its ttl/);
    expect(why({ fromFork: true })).toBe('it comes from a fork (forks, allowAuthors, allowLabels)');
    // Bitbucket Cloud's abbreviated head: the listed ref's commit is used whole.
    const short = decidePullRequest(generator, git, pr({ headSha: HEAD.slice(0, 12) }), 'b'.repeat(40), NOW);
    expect('input' in short && short.input.values.head).toBe('b'.repeat(40));
  });

  it('make a slug of any branch that is a DNS label part, however hostile', () => {
    expect(slug('feature/Blue-Button')).toBe('feature-blue-button');
    expect(slug('../../kube-system')).toBe('kube-system');
    expect(slug('$(curl evil.example.com)')).toBe('curl-evil-example-com');
    expect(slug('-'.repeat(10))).toBe('');
    expect(slug(`a${'-b'.repeat(40)}`)).toMatch(/^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$/);
  });

  it("make an environment per pull request, deployed from a source following the pull request's ref", () => {
    const { config, generator, git } = setup();
    const inputs: Found[] = [];
    for (const [n, branch] of [
      [7, 'feature/blue'],
      [9, 'fix'],
    ] as const) {
      const d = decidePullRequest(generator, git, pr({ number: n, headRef: branch }), HEAD, NOW);
      if ('input' in d) inputs.push(d.input);
    }
    const made = withSets(config, new Map([['previews', inputs]]));
    expect(made.problems).toEqual([]);
    expect(
      made.config.deployments.map((d) => [
        d.name,
        d.namespace,
        d.source,
        d.application,
        d.createNamespace,
        d.set,
      ]),
    ).toEqual([
      ['web-pr-7', 'pr-7', 'app-pr-7', 'feature-blue', true, 'previews'],
      ['web-pr-9', 'pr-9', 'app-pr-9', 'fix', true, 'previews'],
    ]);
    expect(made.config.deployments[0]?.commitStatus.targetUrl).toBe('https://pr-7.preview.example.com');
    expect(made.config.sources.git.map((g) => [g.name, g.url, g.ref, g.preview.enabled])).toEqual([
      ['app', 'https://git.example.com/acme/app.git', { branch: 'main' }, false],
      ['app-pr-7', 'https://git.example.com/acme/app.git', { pullRequest: 7 }, false],
      ['app-pr-9', 'https://git.example.com/acme/app.git', { pullRequest: 9 }, false],
    ]);
    // Closed: its environment leaves with its objects and its namespace, its source kept for that last sync.
    const closed = withSets(config, new Map([['previews', inputs.slice(1)]]), made.config);
    expect(closed.config.deployments.map((d) => [d.name, d.removing])).toEqual([
      ['web-pr-9', undefined],
      ['web-pr-7', 'namespace'],
    ]);
    expect(closed.config.sources.git.map((g) => g.name)).toEqual(['app', 'app-pr-7', 'app-pr-9']);
    // Once that sync ended, the deployment and its source go.
    const gone = withSets(
      config,
      new Map([['previews', inputs.slice(1)]]),
      closed.config,
      new Set(['web-pr-7']),
    );
    expect(gone.config.deployments.map((d) => d.name)).toEqual(['web-pr-9']);
    expect(gone.config.sources.git.map((g) => g.name)).toEqual(['app', 'app-pr-9']);
  });

  it('refuse a hostile branch name by name, and a branch or author in a field whose value they may not choose', () => {
    const { config, generator, git } = setup();
    const hostile = decidePullRequest(
      generator,
      git,
      pr({ number: 8, headRef: 'x";kubectl delete ns --all' }),
      HEAD,
      NOW,
    );
    if (!('input' in hostile)) throw new Error('not decided');
    const named = parseConfig(base.replace('name: "web-pr-{{number}}"', 'name: "web-{{branch}}"'), 'a.yaml');
    const made = withSets(named, new Map([['previews', [hostile.input]]]));
    expect(made.config.deployments).toEqual([]);
    expect(made.problems.map((p) => p.text)).toEqual([
      expect.stringMatching(
        /^deployment set previews, pull request #8: name "web-x\\";kubectl delete ns --all": must be a DNS label/,
      ),
    ]);
    expect(config.deploymentSets).toHaveLength(1);
    // Which source, cluster or credential: never a pull request author's choice.
    expect(
      problemsOf(base.replace('source: "{{source}}"', 'source: "{{branch.slug}}"')).map((p) => p.message),
    ).toEqual([
      expect.stringMatching(
        /^template\.source: "\{\{branch\.slug\}\}" comes from a pull request, .*not source$/,
      ),
    ]);
    expect(
      problemsOf(
        base.replace(
          'commitStatus: {targetUrl: "https://pr-{{number}}.preview.example.com"}',
          'commitStatus: {context: "{{author}}"}',
        ),
      ).map((p) => p.message),
    ).toEqual([expect.stringMatching(/comes from a pull request, .*not commitStatus\.context$/)]);
    // A namespace from a branch needs the set's allowedNamespaces.
    expect(
      problemsOf(
        base
          .replace('namespace: "pr-{{number}}"', 'namespace: "pr-{{branch.slug}}"')
          .replace('    allowedNamespaces: ["pr-*"]\n', ''),
      ).map((p) => p.message),
    ).toEqual([expect.stringMatching(/comes from a pull request: say which namespaces/)]);
  });

  it('read back only the inputs its generator could have given, from a ConfigMap anyone in the namespace may write', () => {
    const { set, generator, git } = setup();
    const good = decidePullRequest(generator, git, pr(), HEAD, NOW);
    if (!('input' in good)) throw new Error('not decided');
    const forged = (values: Record<string, string>) => ({
      ...good.input,
      values: { ...good.input.values, ...values },
    });
    const text = JSON.stringify([
      good.input,
      forged({ source: 'app' }), // the base branch instead of the pull request's own source
      forged({ number: 'kube-system', source: 'app-pr-kube-system' }),
      forged({ head: 'HEAD' }),
      forged({ number: '8' }), // its source says 7
    ]);
    expect(restoredInputs(set, text)).toEqual([good.input]);
    expect(restoredInputs(set, 'not json')).toEqual([]);
    expect(restoredInputs(set, JSON.stringify({ label: 'x' }))).toEqual([]);
    expect(restoredInputs(set, JSON.stringify([{ label: 'x', values: { 'bad key': '1' } }]))).toEqual([]);
    // A folder set: no path out of its source.
    const folders = parseConfig(
      `${base.split('deploymentSets:')[0]}deploymentSets:
  - name: apps
    generator: {gitDirectories: {source: app, directories: ["apps/*"]}}
    template: {name: "{{path.basename}}", namespace: web, source: app, paths: ["{{path}}"]}
`,
      'a.yaml',
    ).deploymentSets[0];
    if (!folders) throw new Error('no set');
    const folder = (path: string) => ({ label: `folder ${path}`, values: { path, 'path.basename': 'x' } });
    expect(
      restoredInputs(
        folders,
        JSON.stringify([folder('apps/web'), folder('../etc'), folder('/etc'), folder('')]),
      ),
    ).toEqual([folder('apps/web')]);
  });

  it('refuse a generator whose repository is no Git source of the configuration, at its line', () => {
    expect(problemsOf(base.replace('pullRequests: {source: app,', 'pullRequests: {source: ap,'))).toEqual([
      {
        path: 'deploymentSets[0].generator.pullRequests.source',
        line: 10,
        column: 30,
        message: 'no Git source is named "ap" (Git sources: app)',
      },
    ]);
  });

  it("follow a pull request's head under any of the refs forges keep it", () => {
    const refs = [
      { ref: 'refs/heads/main', oid: '1'.repeat(40) },
      { ref: 'refs/pull/70/head', oid: '2'.repeat(40) },
      { ref: 'refs/merge-requests/7/head', oid: '3'.repeat(40) },
    ];
    expect(selectRef(refs, { pullRequest: 7 })).toEqual({
      ref: 'refs/merge-requests/7/head',
      commit: '3'.repeat(40),
    });
    expect(() => selectRef(refs, { pullRequest: 8 })).toThrow('pull request #8 not found on the server');
  });
});
