// The Git cache's configuration (src/sources/git/remote.ts initCache): a new cache gets git's bare configuration and
// the one fetch refspec, an existing good one is left as it is, and one left broken (a refspec cut short, as two
// writers of one file or a crash could leave it, after which every fetch failed with "Invalid refspec") is written
// again whole; the write goes through a temporary name, so no reader sees half of it.

import * as fs from 'node:fs';
import { mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { describe, expect, it } from 'vitest';
import { initCache } from '../../../src/sources/git/remote.ts';

const refspec = (gitdir: string) => git.getConfigAll({ fs, gitdir, path: 'remote.origin.fetch' });

describe('the Git cache configuration', () => {
  it('is made for a new cache, and a good one is not written again', async () => {
    const gitdir = join(await mkdtemp(join(tmpdir(), 'mooring-cache-')), 'repo');
    await initCache(gitdir);
    expect(await refspec(gitdir)).toEqual(['+refs/heads/*:refs/remotes/origin/*']);
    expect(await git.getConfig({ fs, gitdir, path: 'core.bare' })).toBe(true);
    expect((await readFile(join(gitdir, 'HEAD'), 'utf8')).trim()).toBe('ref: refs/heads/master');
    const before = (await stat(join(gitdir, 'config'))).mtimeMs;
    await new Promise((r) => setTimeout(r, 20));
    await initCache(gitdir);
    expect((await stat(join(gitdir, 'config'))).mtimeMs).toBe(before);
  });

  it('leaves the configuration isomorphic-git wrote for caches made before as it is', async () => {
    const gitdir = join(await mkdtemp(join(tmpdir(), 'mooring-cache-')), 'repo');
    await git.init({ fs, gitdir, bare: true });
    await git.setConfig({
      fs,
      gitdir,
      path: 'remote.origin.fetch',
      value: '+refs/heads/*:refs/remotes/origin/*',
    });
    const written = await readFile(join(gitdir, 'config'), 'utf8');
    await initCache(gitdir);
    expect(await readFile(join(gitdir, 'config'), 'utf8')).toBe(written);
  });

  it('writes a broken configuration again whole, through a temporary file', async () => {
    const gitdir = join(await mkdtemp(join(tmpdir(), 'mooring-cache-')), 'repo');
    await initCache(gitdir);
    const good = await readFile(join(gitdir, 'config'), 'utf8');
    for (const broken of [
      good.replace('origin/*', 'origin/'),
      good.slice(0, good.indexOf('[remote')),
      '',
      `${good}\tfetch = +refs/heads/x:refs/remotes/origin/*\n`,
    ]) {
      await writeFile(join(gitdir, 'config'), broken);
      await expect(
        refspec(gitdir).then((r) => r.length === 1 && r[0]?.endsWith('origin/*')),
      ).resolves.not.toBe(true);
      await initCache(gitdir);
      expect(await refspec(gitdir)).toEqual(['+refs/heads/*:refs/remotes/origin/*']);
    }
    expect((await readdir(gitdir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
