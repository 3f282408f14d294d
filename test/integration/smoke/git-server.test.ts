// The Git server is real: git http-backend behind basic auth. isomorphic-git clones with credentials and is
// refused without them, and the native git client sees the same commits.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { afterAll, describe, expect, it } from 'vitest';
import { commitFiles, createBareRepo } from '../../testbed/git-repos.ts';
import { runTool, testbed } from '../helpers.ts';

describe('git server', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  const tempDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-git-'));
    dirs.push(dir);
    return dir;
  };

  it('serves a repository to isomorphic-git with credentials and refuses it without', async () => {
    const env = testbed();
    const name = `smoke-${Date.now().toString(36)}`;
    const repo = await createBareRepo(env.git.root, name);
    await commitFiles(repo, { 'apps/web/deploy.yaml': 'kind: ConfigMap\n' }, { message: 'first' });
    const head = await commitFiles(
      repo,
      { 'apps/web/deploy.yaml': 'kind: Deployment\n' },
      { message: 'second' },
    );
    const url = `${env.git.url}/${name}.git`;

    const dir = await tempDir();
    await git.clone({
      fs: await import('node:fs'),
      http,
      dir,
      url,
      singleBranch: true,
      depth: 1,
      onAuth: () => ({ username: env.git.username, password: env.git.password }),
    });
    expect(await git.resolveRef({ fs: await import('node:fs'), dir, ref: 'HEAD' })).toBe(head);
    expect(await readFile(join(dir, 'apps/web/deploy.yaml'), 'utf8')).toBe('kind: Deployment\n');

    const refs = await git.listServerRefs({
      http,
      url,
      onAuth: () => ({ username: env.git.username, password: env.git.password }),
    });
    expect(refs.find((r) => r.ref === 'refs/heads/main')?.oid).toBe(head);

    await expect(
      git.clone({
        fs: await import('node:fs'),
        http,
        dir: await tempDir(),
        url,
      }),
    ).rejects.toThrow(/401/);
    await expect(
      git.clone({
        fs: await import('node:fs'),
        http,
        dir: await tempDir(),
        url,
        onAuth: () => ({ username: env.git.username, password: 'wrong' }),
      }),
    ).rejects.toThrow(/401/);

    // The native client agrees on the branch head.
    const authed = url.replace('http://', `http://${env.git.username}:${env.git.password}@`);
    const lsRemote = await runTool('git', ['ls-remote', authed, 'refs/heads/main']);
    expect(lsRemote.code, lsRemote.stderr).toBe(0);
    expect(lsRemote.stdout.split(/\s/)[0]).toBe(head);
  });

  it('accepts a push over HTTP with credentials', async () => {
    const env = testbed();
    const name = `push-${Date.now().toString(36)}`;
    const repo = await createBareRepo(env.git.root, name);
    await commitFiles(repo, { 'README.md': 'hello\n' });
    const dir = await tempDir();
    const fs = await import('node:fs');
    const auth = () => ({ username: env.git.username, password: env.git.password });
    await git.clone({ fs, http, dir, url: `${env.git.url}/${name}.git`, onAuth: auth });
    await fs.promises.writeFile(join(dir, 'app.yaml'), 'kind: Service\n');
    await git.add({ fs, dir, filepath: 'app.yaml' });
    const sha = await git.commit({
      fs,
      dir,
      message: 'add app',
      author: { name: 'Test', email: 'test@example.invalid' },
    });
    const pushed = await git.push({ fs, http, dir, onAuth: auth });
    expect(pushed.ok).toBe(true);
    const lsRemote = await runTool('git', ['--git-dir', repo, 'rev-parse', 'refs/heads/main']);
    expect(lsRemote.stdout.trim()).toBe(sha);
  });
});
