// The Git source against the test bed's real Git server (git http-backend). This file runs its own instance of
// the test bed's server on the same repositories, so that it can count the requests a poll makes: a poll that
// finds nothing new must not fetch (no POST to git-upload-pack).
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployment, type GitSource, gitSource } from '../../src/config/schema.ts';
import { MooringError, StalledError, TransientError } from '../../src/errors.ts';
import { checkoutTree } from '../../src/sources/git/checkout.ts';
import { gitCredentials } from '../../src/sources/git/credentials.ts';
import { pollGit } from '../../src/sources/git/poll.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { concerns } from '../../src/sync/agent-sources.ts';
import { commitFiles, forcePush, headOf } from '../testbed/git-repos.ts';
import { createGitHttpServer } from '../testbed/git-server.ts';
import { bareRepo, testbed } from './helpers.ts';

const USER_ENV = 'MOORING_TEST_GIT_USERNAME';
const PASSWORD_ENV = 'MOORING_TEST_GIT_PASSWORD';
const WRONG_ENV = 'MOORING_TEST_GIT_WRONG_PASSWORD';
const WRONG_PASSWORD = 'not-the-password-4f1c9a';

let server: Server;
let baseUrl = '';
const requests: { method: string; path: string }[] = [];
const cleanup: string[] = [];
let counter = 0;

beforeAll(async () => {
  const env = testbed();
  process.env[USER_ENV] = env.git.username;
  process.env[PASSWORD_ENV] = env.git.password;
  process.env[WRONG_ENV] = WRONG_PASSWORD;
  server = createGitHttpServer({
    root: env.git.root,
    username: env.git.username,
    password: env.git.password,
  });
  server.on('request', (req: http.IncomingMessage) => {
    requests.push({ method: req.method ?? '', path: (req.url ?? '').split('?')[0] ?? '' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  for (const dir of cleanup) await rm(dir, { recursive: true, force: true });
});

/** A bare repository of a unique name, served by this file's own Git server too (the same root). */
async function uniqueRepo(prefix: string): Promise<{ bare: string; name: string }> {
  const name = `${prefix}-${Date.now().toString(36)}-${counter++}`;
  return { bare: (await bareRepo(name)).path, name };
}

async function tempCache(): Promise<string> {
  const cacheDir = await mkdtemp(join(tmpdir(), 'mooring-git-cache-'));
  cleanup.push(cacheDir);
  return cacheDir;
}

async function repository(
  name: string,
  config: Record<string, unknown> = {},
  options: { maxPacks?: number } = {},
): Promise<GitRepository> {
  const cacheDir = await tempCache();
  const source: GitSource = gitSource.parse({
    name: 'app',
    url: `${baseUrl}/${name}.git`,
    credentials: { username: { env: USER_ENV }, password: { env: PASSWORD_ENV } },
    ...config,
  });
  return new GitRepository(source, { cacheDir, ...options });
}

const uploadPackPosts = () =>
  requests.filter((r) => r.method === 'POST' && r.path.endsWith('/git-upload-pack')).length;

/** Runs git on a bare repository with the given environment (plumbing the test-bed helpers do not offer). */
function git(bare: string, args: string[], env: Record<string, string> = {}, input = ''): Promise<string> {
  const identity = { GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@x.invalid', GIT_COMMITTER_NAME: 'T' };
  const full = { ...process.env, ...identity, GIT_COMMITTER_EMAIL: 't@x.invalid', GIT_DIR: bare, ...env };
  return new Promise((resolve, reject) => {
    const child = execFile('git', args, { env: full, encoding: 'utf8' }, (error, stdout, stderr) =>
      error ? reject(new Error(`git ${args.join(' ')}: ${stderr}`)) : resolve(stdout.trim()),
    );
    child.stdin?.on('error', () => {}); // git may exit without reading its input; its status tells
    child.stdin?.end(input);
  });
}

async function caught(promise: Promise<unknown>): Promise<MooringError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof MooringError)) throw new Error(`expected a MooringError, got ${String(error)}`);
  return error;
}

describe('a cache shared by sources of one URL', () => {
  it('is made once and fetched into by sixteen repositories at once, on first use, each reading its own branch', async () => {
    // Sources of one URL (other branches; the same source in several clusters' agents) share a cache. Their first
    // fetches, all at once, once wrote the cache's configuration over each other, leaving a refspec cut short:
    // every later fetch failed with "Invalid refspec".
    const { bare, name } = await uniqueRepo('shared-cache');
    await commitFiles(bare, { 'app.yaml': 'n: main\n' });
    const heads: string[] = [];
    for (let i = 0; i < 16; i++)
      heads.push(await commitFiles(bare, { 'app.yaml': `n: ${i}\n` }, { branch: `b${i}` }));
    const cacheDir = await tempCache();
    const repos = heads.map(
      (_, i) =>
        new GitRepository(
          gitSource.parse({
            name: `app-${i}`,
            url: `${baseUrl}/${name}.git`,
            ref: { branch: `b${i}` },
            credentials: { username: { env: USER_ENV }, password: { env: PASSWORD_ENV } },
          }),
          { cacheDir },
        ),
    );
    // Each fetches its branch's head at once (by ref and commit, as a poll does once it has resolved them).
    const read = await Promise.all(
      repos.map(async (repo, i) => {
        const commit = heads[i] as string;
        await repo.fetch({ ref: `refs/heads/b${i}`, commit });
        return { commit, files: await repo.files(commit, ['.']) };
      }),
    );
    expect(read.map((r) => r.commit)).toEqual(heads);
    expect(read.map((r) => r.files.map((f) => f.text))).toEqual(heads.map((_, i) => [`n: ${i}\n`]));
    // And every later fetch still works (the refspec whole).
    const next = await commitFiles(bare, { 'app.yaml': 'n: next\n' }, { branch: 'b0' });
    const resolved = await repos[0]?.resolve();
    if (!resolved) throw new Error('no repository');
    expect(resolved.commit).toBe(next);
    await repos[0]?.fetch(resolved);
    expect((await readFile(join(repos[0]?.gitdir ?? '', 'config'), 'utf8')).split('fetch =').length).toBe(2);
  });
});

describe('resolving refs without fetching', () => {
  it('finds the head of the branch, not of a branch sharing its prefix', async () => {
    const { bare, name } = await uniqueRepo('refs-branch');
    const head = await commitFiles(bare, { 'a.yaml': 'a: 1\n' });
    await commitFiles(bare, { 'a.yaml': 'a: 2\n' }, { branch: 'main-old' });
    const repo = await repository(name);
    const before = uploadPackPosts();
    expect(await repo.resolve()).toEqual({ ref: 'refs/heads/main', commit: head });
    expect(uploadPackPosts()).toBe(before);
    const missing = await caught((await repository(name, { ref: { branch: 'nope' } })).resolve());
    expect(missing).toBeInstanceOf(StalledError);
    expect(missing.message).toMatch(/branch nope not found/);
  });

  it('finds a tag, peeling an annotated one to its commit', async () => {
    const { bare, name } = await uniqueRepo('refs-tag');
    const first = await commitFiles(bare, { 'a.yaml': 'a: 1\n' }, { tag: 'light' });
    await commitFiles(bare, { 'a.yaml': 'a: 2\n' });
    await git(bare, ['tag', '-a', 'annotated', '-m', 'release', first]);
    const tagObject = await git(bare, ['rev-parse', 'refs/tags/annotated']);
    expect(tagObject).not.toBe(first);
    expect(await (await repository(name, { ref: { tag: 'light' } })).resolve()).toEqual({
      ref: 'refs/tags/light',
      commit: first,
    });
    const annotated = await repository(name, { ref: { tag: 'annotated' } });
    const resolved = await annotated.resolve();
    expect(resolved).toEqual({
      ref: 'refs/tags/annotated',
      commit: first,
      tag: expect.stringMatching(/^[0-9a-f]{40}$/),
    });
    // The fetch of an annotated tag brings the commit it points at.
    await annotated.fetch(resolved);
    expect(await annotated.files(first, ['.'], [])).toEqual([{ path: 'a.yaml', text: 'a: 1\n' }]);
  });

  it('finds the newest tag in a semver range: v prefixes, pre-releases and other tags', async () => {
    const { bare, name } = await uniqueRepo('refs-semver');
    const tags = ['v1.0.0', '1.2.0', 'v1.3.0-rc.1', 'v2.0.0-beta.1', 'latest', 'release-7', '1.4'];
    const commits = new Map<string, string>();
    for (const tag of tags) commits.set(tag, await commitFiles(bare, { 'v.yaml': `tag: ${tag}\n` }, { tag }));
    const v110 = await commitFiles(bare, { 'v.yaml': 'tag: v1.1.0\n' });
    await git(bare, ['tag', '-a', 'v1.1.0', '-m', 'annotated release', v110]);

    const expectations: [string, string][] = [
      ['^1.0.0', '1.2.0'],
      ['~1.1.0', 'v1.1.0'],
      ['>=1.3.0-rc.0 <2.0.0', 'v1.3.0-rc.1'],
      ['1.0.0', 'v1.0.0'],
    ];
    for (const [range, tag] of expectations) {
      const resolved = await (await repository(name, { ref: { semver: range } })).resolve();
      expect(resolved.ref, range).toBe(`refs/tags/${tag}`);
      expect(resolved.commit, range).toBe(tag === 'v1.1.0' ? v110 : commits.get(tag));
    }
    const none = await caught((await repository(name, { ref: { semver: '>=2.0.0' } })).resolve());
    expect(none).toBeInstanceOf(StalledError);
    expect(none.message).toContain(
      'no tag matches >=2.0.0 (tags seen: 1.2.0, 1.4, latest, release-7, v1.0.0',
    );
  });
});

describe('polling', () => {
  const paths = { paths: ['apps'], exclude: ['*.test.yaml'] };

  it('makes no fetch when the branch has not moved', async () => {
    const { bare, name } = await uniqueRepo('poll-same');
    const head = await commitFiles(bare, {
      'apps/web/deploy.yaml': 'kind: Deployment\n',
      'README.md': 'hi\n',
    });
    const repo = await repository(name);
    const posts = uploadPackPosts();
    const first = await pollGit(repo, {}, paths);
    // The counter does see a fetch when there is one.
    expect(uploadPackPosts()).toBeGreaterThan(posts);
    expect(first).toMatchObject({ source: 'app', changed: true, revision: head, commit: head });

    const gets = requests.length;
    const again = await pollGit(repo, { lastCommit: head }, paths);
    expect(again).toEqual({ source: 'app', changed: false, revision: head, commit: head, artifacts: [] });
    expect(requests.slice(gets)).toEqual([{ method: 'GET', path: `/${name}.git/info/refs` }]);
  });

  it('returns the changed manifest files under the paths, also over several commits', async () => {
    const { bare, name } = await uniqueRepo('poll-change');
    const base = await commitFiles(bare, {
      'apps/web/deploy.yaml': 'replicas: 1\n',
      'apps/web/keep.yaml': 'kind: ConfigMap\n',
      'apps/api/deploy.json': '{}',
      'other/x.yaml': 'x: 1\n',
    });
    const repo = await repository(name);
    const first = await pollGit(repo, {}, paths);
    expect(first.artifacts.map((a) => a.name)).toEqual([
      'apps/api/deploy.json',
      'apps/web/deploy.yaml',
      'apps/web/keep.yaml',
    ]);

    const next = await commitFiles(bare, {
      'apps/web/deploy.yaml': 'replicas: 2\n',
      'apps/web/svc.yaml': 'kind: Service\n',
      'apps/web/svc.test.yaml': 'excluded\n',
      'apps/web/notes.md': 'not a manifest\n',
      'other/x.yaml': 'x: 2\n',
    });
    const changed = await pollGit(repo, { lastCommit: base }, paths);
    expect(changed.changed).toBe(true);
    expect(changed.revision).toBe(next);
    expect(changed.artifacts).toEqual([
      {
        type: 'git/file',
        source: 'app',
        reference: `${baseUrl}/${name}.git#apps/web/deploy.yaml`,
        name: 'apps/web/deploy.yaml',
        version: next,
        provenance: { commit: next, author: 'Mooring Testbed', subject: 'testbed commit' },
      },
      expect.objectContaining({ name: 'apps/web/svc.yaml', version: next }),
    ]);

    // Three commits between two polls: the shallow history is deepened to see that `next` is an ancestor.
    await commitFiles(bare, { 'apps/api/deploy.json': '{"a":1}' });
    await commitFiles(bare, { 'other/y.yaml': 'y: 1\n' });
    const last = await commitFiles(bare, { 'apps/web/svc.yaml': null, 'apps/web/new.yml': 'n: 1\n' });
    const later = await pollGit(repo, { lastCommit: next }, paths);
    expect(later.revision).toBe(last);
    expect(later.artifacts.map((a) => a.name)).toEqual(['apps/api/deploy.json', 'apps/web/new.yml']);
    // changedFiles reports the deletion too, and files() reads the new state.
    expect(await repo.changedFiles(next, last)).toEqual({
      everything: false,
      paths: ['apps/api/deploy.json', 'apps/web/new.yml', 'apps/web/svc.yaml', 'other/y.yaml'],
    });
    expect((await repo.files(last, ['apps/web'], ['*.test.yaml'])).map((f) => f.path)).toEqual([
      'apps/web/deploy.yaml',
      'apps/web/keep.yaml',
      'apps/web/new.yml',
    ]);
  });

  it('uses credentials written in the URL and never shows them', async () => {
    const { bare, name } = await uniqueRepo('poll-url-auth');
    const head = await commitFiles(bare, { 'apps/a.yaml': 'a: 1\n' });
    const env = testbed();
    const authority = `${encodeURIComponent(env.git.username)}:${encodeURIComponent(env.git.password)}@`;
    const url = `${baseUrl.replace('http://', `http://${authority}`)}/${name}.git`;
    const repo = new GitRepository(gitSource.parse({ name: 'app', url }), { cacheDir: await tempCache() });
    const result = await pollGit(repo, {}, paths);
    expect(result.artifacts).toEqual([
      expect.objectContaining({ reference: `${baseUrl}/${name}.git#apps/a.yaml`, version: head }),
    ]);
    expect(JSON.stringify(result)).not.toContain(env.git.password);
  });

  it('gives no artifacts for a commit that touches only other paths', async () => {
    const { bare, name } = await uniqueRepo('poll-other');
    const base = await commitFiles(bare, { 'apps/a.yaml': 'a: 1\n', 'docs/x.yaml': 'x: 1\n' });
    const repo = await repository(name);
    await pollGit(repo, {}, paths);
    const next = await commitFiles(bare, { 'docs/x.yaml': 'x: 2\n', 'apps/a.test.yaml': 'excluded\n' });
    expect(await pollGit(repo, { lastCommit: base }, paths)).toEqual({
      source: 'app',
      changed: true,
      revision: next,
      commit: next,
      artifacts: [],
    });
  });

  it('treats everything as changed after a force-push that dropped the deployed commit', async () => {
    const { bare, name } = await uniqueRepo('poll-force');
    const base = await commitFiles(bare, { 'apps/a.yaml': 'a: 1\n', 'apps/b.yaml': 'b: 1\n' });
    const deployed = await commitFiles(bare, { 'apps/a.yaml': 'a: 2\n' });
    const repo = await repository(name);
    await pollGit(repo, {}, paths);
    await forcePush(bare, base);
    const rewritten = await commitFiles(bare, { 'apps/c.yaml': 'c: 1\n' });
    expect(await headOf(bare)).toBe(rewritten);
    const result = await pollGit(repo, { lastCommit: deployed }, paths);
    expect(result.revision).toBe(rewritten);
    expect(result.artifacts.map((a) => a.name)).toEqual(['apps/a.yaml', 'apps/b.yaml', 'apps/c.yaml']);
    expect(await repo.changedFiles(deployed, rewritten)).toEqual({ everything: true, paths: [] });
    // No last commit, or one the cache never held, also means everything.
    expect(await repo.changedFiles(undefined, rewritten)).toEqual({ everything: true, paths: [] });
    expect((await repo.changedFiles('1'.repeat(40), rewritten)).everything).toBe(true);
  });
});

describe('fetching', () => {
  it('brings only the changed objects once the previous commit is in the cache', async () => {
    const { bare, name } = await uniqueRepo('fetch-thin');
    const files: Record<string, string> = {};
    for (let i = 0; i < 200; i++) files[`apps/app-${i}/config.yaml`] = `index: ${i}\n`;
    const base = await commitFiles(bare, files);
    const repo = await repository(name);
    await pollGit(repo, {}, everywhere());
    const packs = await packObjectCounts(repo.gitdir);
    // 200 blobs, 200 app folders, `apps`, the root tree and the commit.
    expect([...packs.values()]).toEqual([403]);

    const next = await commitFiles(bare, { 'apps/app-7/config.yaml': 'index: seven\n' });
    const result = await pollGit(repo, { lastCommit: base }, everywhere());
    expect(result.artifacts.map((a) => a.name)).toEqual(['apps/app-7/config.yaml']);
    const added = [...(await packObjectCounts(repo.gitdir))].filter(([pack]) => !packs.has(pack));
    // The commit, three trees and one blob: not the 400 objects of the whole tree again.
    expect(added.map(([, count]) => count)).toEqual([5]);
    expect(await repo.files(next, ['apps/app-7'], [])).toEqual([
      { path: 'apps/app-7/config.yaml', text: 'index: seven\n' },
    ]);
  });

  it('rewrites its packs as one past the bound, keeping every fetched commit readable', async () => {
    const { bare, name } = await uniqueRepo('fetch-compact');
    const first = await commitFiles(bare, { 'apps/a.yaml': 'a: 0\n', 'apps/b.yaml': 'b: 0\n' });
    const repo = await repository(name, {}, { maxPacks: 3 });
    let last = (await pollGit(repo, {}, everywhere())).commit;
    const counts: number[] = [];
    for (let i = 1; i <= 5; i++) {
      await commitFiles(bare, { 'apps/a.yaml': `a: ${i}\n` });
      const result = await pollGit(repo, { lastCommit: last }, everywhere());
      expect(result.artifacts.map((a) => a.name)).toEqual(['apps/a.yaml']);
      last = result.commit;
      counts.push((await packObjectCounts(repo.gitdir)).size);
    }
    expect(counts).toEqual([2, 3, 1, 2, 3]);
    expect(await repo.changedFiles(first, last)).toEqual({ everything: false, paths: ['apps/a.yaml'] });
    expect(await repo.files(first, ['apps'], [])).toEqual([
      { path: 'apps/a.yaml', text: 'a: 0\n' },
      { path: 'apps/b.yaml', text: 'b: 0\n' },
    ]);
  });

  it('fetches a commit by its id while a ref reaches it, and says so when none does', async () => {
    const { bare, name } = await uniqueRepo('fetch-id');
    const old = await commitFiles(bare, { 'a.yaml': 'a: 1\n' });
    await commitFiles(bare, { 'a.yaml': 'a: 2\n' });
    const repo = await repository(name);
    await repo.fetch(old); // not the tip, and never resolved: wanted by its id
    expect(await repo.files(old, ['.'], [])).toEqual([{ path: 'a.yaml', text: 'a: 1\n' }]);

    const dropped = await commitFiles(bare, { 'b.yaml': 'b: 1\n' });
    await forcePush(bare, old);
    const error = await caught((await repository(name)).fetch(dropped));
    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toMatch(/commit is no longer on the server: no branch or tag reaches it/);
  });
});

describe('refusals', () => {
  it('reports wrong credentials as authentication, without the password', async () => {
    const { bare, name } = await uniqueRepo('auth');
    await commitFiles(bare, { 'a.yaml': 'a: 1\n' });
    const repo = await repository(name, {
      credentials: { username: { env: USER_ENV }, password: { env: WRONG_ENV } },
    });
    const error = await caught(pollGit(repo, {}, everywhere()));
    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toBe(
      `authentication failed for ${baseUrl}/${name}.git (HTTP 401): check the credentials`,
    );
    expect(
      JSON.stringify({ message: error.message, stack: error.stack, cause: String(error.cause) }),
    ).not.toContain(WRONG_PASSWORD);

    const unset = await repository(name, {
      credentials: { username: { env: USER_ENV }, password: { env: 'MOORING_TEST_GIT_UNSET' } },
    });
    const missing = await caught(unset.resolve());
    expect(missing).toBeInstanceOf(StalledError);
    expect(missing.message).toMatch(/environment variable MOORING_TEST_GIT_UNSET is not set/);

    const anonymous = new GitRepository(gitSource.parse({ name: 'app', url: `${baseUrl}/${name}.git` }), {
      cacheDir: join(tmpdir(), 'unused'),
    });
    expect((await caught(anonymous.resolve())).message).toMatch(/authentication failed/);
  });

  it('sends a token as the password, under the username given or x-access-token', async () => {
    const { bare, name } = await uniqueRepo('token');
    const head = await commitFiles(bare, { 'a.yaml': 'a: 1\n' });
    const token = { token: { env: PASSWORD_ENV } };
    expect(await gitCredentials({ credentials: token })).toEqual({
      username: 'x-access-token',
      password: testbed().git.password,
    });
    // The test bed's server wants its own username, which a token source can name.
    const named = await repository(name, { credentials: { username: { env: USER_ENV }, ...token } });
    expect((await named.resolve()).commit).toBe(head);
    const anyone = await caught((await repository(name, { credentials: token })).resolve());
    expect(anyone.message).toMatch(/authentication failed/);
  });

  it('tells a missing repository from an unreachable or silent server', async () => {
    const missing = await caught((await repository('does-not-exist')).resolve());
    expect(missing).toBeInstanceOf(StalledError);
    expect(missing.message).toMatch(/repository not found \(HTTP 404\)/);

    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await caught(
      new GitRepository(gitSource.parse({ name: 'app', url: `http://127.0.0.1:${port}/x.git` }), {
        cacheDir: tmpdir(),
      }).resolve(),
    );
    expect(refused).toBeInstanceOf(TransientError);
    expect(refused.message).toMatch(/cannot reach the server \(ECONNREFUSED\)/);

    const silent = http.createServer(() => {}); // accepts and never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://user:secret-in-url@127.0.0.1:${(silent.address() as AddressInfo).port}/x.git?token=abc`;
      const slow = await caught(
        new GitRepository(gitSource.parse({ name: 'app', url, timeout: '300ms' }), {
          cacheDir: tmpdir(),
        }).resolve(),
      );
      expect(slow).toBeInstanceOf(TransientError);
      expect(slow.message).toMatch(/no answer within 300ms \(timeout\)/);
      expect(slow.message).not.toMatch(/secret-in-url|token|user/);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('reads a symlink to a file within the repository as that file, and refuses one out, naming it', async () => {
    const { bare, name } = await uniqueRepo('symlink');
    const base = await commitFiles(bare, {
      'apps/deploy.yaml': 'kind: Deployment\n',
      'shared/common.yaml': 'kind: ConfigMap\n',
      'docs/a.md': 'a\n',
    });
    const repo = await repository(name);
    await pollGit(repo, {}, everywhere());
    // A monorepo's shared manifest, linked into the app's folder (a link in the middle of the path too).
    const linked = await commitFiles(
      bare,
      {},
      {
        symlinks: {
          'apps/common.yaml': '../shared/common.yaml',
          alias: 'shared',
          'apps/via.yaml': '../alias/common.yaml',
        },
      },
    );
    const polled = await pollGit(repo, { lastCommit: base }, everywhere());
    expect(polled.artifacts.map((a) => a.name)).toEqual(['alias', 'apps/common.yaml', 'apps/via.yaml']);
    expect(await repo.files(linked, ['apps'], [])).toEqual([
      { path: 'apps/common.yaml', text: 'kind: ConfigMap\n' },
      { path: 'apps/deploy.yaml', text: 'kind: Deployment\n' },
      { path: 'apps/via.yaml', text: 'kind: ConfigMap\n' },
    ]);
    // A commit whose tree holds `apps/link.yaml -> ../../etc/passwd` (mode 120000), made with plumbing.
    const scratch = await mkdtemp(join(tmpdir(), 'mooring-index-'));
    cleanup.push(scratch);
    const index = { GIT_INDEX_FILE: join(scratch, 'index') };
    const target = await git(bare, ['hash-object', '-w', '--stdin'], {}, '../../etc/passwd');
    await git(bare, ['read-tree', linked], index);
    await git(bare, ['update-index', '--add', '--cacheinfo', `120000,${target},apps/link.yaml`], index);
    const tree = await git(bare, ['write-tree'], index);
    const commit = await git(bare, ['commit-tree', tree, '-p', linked, '-m', 'add a symlink']);
    await git(bare, ['update-ref', 'refs/heads/main', commit, linked]);
    await repo.fetch(await repo.resolve());

    const error = await caught(repo.files(commit, ['apps'], []));
    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toContain(
      'apps/link.yaml: a symlink that leads outside the repository; a symlink may lead only to a file within the repository',
    );
    // Excluded, the link is no longer read, and the rest of the folder is.
    expect((await repo.files(commit, ['apps'], ['link.yaml'])).map((f) => f.path)).toEqual([
      'apps/common.yaml',
      'apps/deploy.yaml',
      'apps/via.yaml',
    ]);
    // A link to a folder, and one that leads nowhere: refused, named.
    const folder = await commitFiles(
      bare,
      { 'apps/link.yaml': null },
      { symlinks: { 'apps/more.yaml': '../shared' } },
    );
    await repo.fetch(await repo.resolve());
    await expect(repo.files(folder, ['apps'], [])).rejects.toThrow(
      'apps/more.yaml: a symlink that leads to a folder (a linked folder is not followed: name the folder in paths)',
    );
    const nowhere = await commitFiles(
      bare,
      { 'apps/more.yaml': null },
      { symlinks: { 'apps/gone.yaml': 'missing.yaml' } },
    );
    await repo.fetch(await repo.resolve());
    await expect(repo.files(nowhere, ['apps'], [])).rejects.toThrow(
      'apps/gone.yaml: a symlink that leads nowhere in the repository',
    );
    // A link blob longer than any path (a pusher's 5,000 bytes): refused from the object's header, named, by the
    // manifest read and by the checkout helm and kustomize read (one reader of a link's target).
    const long = await git(bare, ['hash-object', '-w', '--stdin'], {}, `${'a/'.repeat(2500)}x`);
    await git(bare, ['read-tree', nowhere], index);
    await git(bare, ['update-index', '--add', '--cacheinfo', `120000,${long},apps/long.yaml`], index);
    const longTree = await git(bare, ['write-tree'], index);
    const longCommit = await git(bare, ['commit-tree', longTree, '-p', nowhere, '-m', 'a long link']);
    await git(bare, ['update-ref', 'refs/heads/main', longCommit, nowhere]);
    await repo.fetch(await repo.resolve());
    const tooLong = 'apps/long.yaml: a symlink whose target is longer than 4096 bytes';
    await expect(repo.files(longCommit, ['apps'], ['gone.yaml'])).rejects.toThrow(tooLong);
    const out = await mkdtemp(join(tmpdir(), 'mooring-checkout-'));
    cleanup.push(out);
    await expect(checkoutTree(repo, longCommit, out)).rejects.toThrow(tooLong);
  });

  it('concerns a deployment that reads through symlinks only with commits that change what they read', async () => {
    const { bare, name } = await uniqueRepo('link-concern');
    const base = await commitFiles(
      bare,
      {
        'apps/web/deploy.yaml': 'kind: Deployment\n',
        'shared/common.yaml': 'kind: ConfigMap\n',
        'shared/more/extra.yaml': 'kind: Secret\n',
        'other/unrelated.yaml': 'kind: Service\n',
        'charts/web/Chart.yaml': 'name: web\n',
        'shared-templates/cm.yaml': 'kind: ConfigMap\n',
        'lib/helpers.tpl': '{{- define "x" }}x{{ end }}\n',
      },
      {
        symlinks: {
          // A manifest read through a link in the middle of its target (alias -> shared).
          'apps/web/common.yaml': '../../alias/common.yaml',
          alias: 'shared',
          // A chart's linked folder of templates, which holds a link of its own.
          'charts/web/templates': '../../shared-templates',
          'shared-templates/_helpers.tpl': '../lib/helpers.tpl',
        },
      },
    );
    const repo = await repository(name);
    const plain = deployment.parse({ name: 'web', namespace: 'shop', source: 'app', paths: ['apps/web'] });
    const chart = deployment.parse({
      name: 'chart',
      namespace: 'shop',
      source: 'app',
      helm: { chart: 'charts/web' },
    });
    const step = async (files: Record<string, string | null>, symlinks: Record<string, string> = {}) => {
      const from = await headOf(bare);
      const to = await commitFiles(bare, files, { symlinks });
      await repo.fetch(await repo.resolve());
      return { plain: await concerns(repo, plain, from, to), chart: await concerns(repo, chart, from, to) };
    };
    await repo.fetch(await repo.resolve());
    expect(await concerns(repo, plain, base, base)).toBe(false);
    // Neither reads other/ nor shared/more/: no sync, where every commit concerned both before.
    expect(await step({ 'other/unrelated.yaml': 'kind: Service\n# 2\n' })).toEqual({
      plain: false,
      chart: false,
    });
    expect(await step({ 'shared/more/extra.yaml': 'kind: Secret\n# 2\n' })).toEqual({
      plain: false,
      chart: false,
    });
    // The linked file, through the link in the middle.
    expect(await step({ 'shared/common.yaml': 'kind: ConfigMap\n# 2\n' })).toEqual({
      plain: true,
      chart: false,
    });
    // A file added to the chart's linked folder, and the file a link in that folder leads to.
    expect(await step({ 'shared-templates/new.yaml': 'kind: Service\n' })).toEqual({
      plain: false,
      chart: true,
    });
    expect(await step({ 'lib/helpers.tpl': '{{- define "x" }}y{{ end }}\n' })).toEqual({
      plain: false,
      chart: true,
    });
    // The link passed on the way, pointed elsewhere; then removed (the manifest now leads nowhere).
    expect(await step({ 'other/common.yaml': 'kind: ConfigMap\n' }, { alias: 'other' })).toEqual({
      plain: true,
      chart: false,
    });
    expect(await step({ alias: null })).toEqual({ plain: true, chart: false });
    expect(await step({ 'other/unrelated.yaml': 'kind: Service\n# 3\n' })).toEqual({
      plain: false,
      chart: false,
    });
    // What the links read now: a file added where the removed link was.
    expect(await step({ 'alias/common.yaml': 'kind: ConfigMap\n' })).toEqual({ plain: true, chart: false });
  });

  it('counts a commit of a million paths as changing everything, and lists only the paths asked for', async () => {
    const { bare, name } = await uniqueRepo('bomb');
    const base = await commitFiles(bare, { 'apps/a.yaml': 'a: 1\n', 'apps/b.yaml': 'b: 1\n' });
    const repo = await repository(name);
    const paths = { paths: ['apps'], exclude: [] };
    await pollGit(repo, {}, paths);
    // `.bomb/`: ten folders of ten folders, six deep, over ten files: a million paths in a pack of a few KiB.
    const blob = await git(bare, ['hash-object', '-w', '--stdin'], {}, 'x\n');
    let tree = await git(
      bare,
      ['mktree'],
      {},
      Array.from({ length: 10 }, (_, i) => `100644 blob ${blob}\tf${i}\n`).join(''),
    );
    for (let level = 0; level < 5; level++)
      tree = await git(
        bare,
        ['mktree'],
        {},
        Array.from({ length: 10 }, (_, i) => `040000 tree ${tree}\td${i}\n`).join(''),
      );
    const top = await git(bare, ['ls-tree', base]);
    const root = await git(bare, ['mktree'], {}, `${top}\n040000 tree ${tree}\t.bomb\n`);
    const commit = await git(bare, ['commit-tree', root, '-p', base, '-m', 'a million paths']);
    await git(bare, ['update-ref', 'refs/heads/main', commit, base]);

    const result = await pollGit(repo, { lastCommit: base }, paths);
    expect(result.revision).toBe(commit);
    expect(result.artifacts.map((a) => a.name)).toEqual(['apps/a.yaml', 'apps/b.yaml']);
    expect(await repo.changedFiles(base, commit)).toEqual({ everything: true, paths: [] });
  }, 120_000);

  it('refuses a file larger than maxFileBytes, naming it', async () => {
    const { bare, name } = await uniqueRepo('big');
    const head = await commitFiles(bare, {
      'apps/small.yaml': 'a: 1\n',
      'apps/big.yaml': `a: ${'x'.repeat(200)}\n`,
    });
    const repo = await repository(name, { maxFileBytes: 100 });
    await repo.fetch(await repo.resolve());
    await expect(repo.files(head, ['apps'], [])).rejects.toThrow(
      /apps\/big.yaml is 204 bytes, more than maxFileBytes \(100\)/,
    );
    expect(await repo.files(head, ['apps/small.yaml'], [])).toEqual([
      { path: 'apps/small.yaml', text: 'a: 1\n' },
    ]);
  });
});

/** Object counts of the cache's packs, by pack file name (from the fan-out table of each version-2 .idx). */
async function packObjectCounts(gitdir: string): Promise<Map<string, number>> {
  const folder = join(gitdir, 'objects/pack');
  const counts = new Map<string, number>();
  for (const file of (await readdir(folder)).filter((f) => f.endsWith('.idx'))) {
    const idx = await readFile(join(folder, file));
    counts.set(file, idx.readUInt32BE(8 + 255 * 4));
  }
  return counts;
}

function everywhere(): { paths: string[]; exclude: string[] } {
  return { paths: ['.'], exclude: [] };
}
