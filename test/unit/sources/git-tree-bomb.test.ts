// Walks of trees that name their subtrees many times over (a "git bomb": a commit of a few KiB whose tree holds
// millions of paths, which `git fsck` accepts). Every walk of the tree store (tree.ts) is bounded in the entries it
// reads, a diff also in the changes it lists (past them the caller counts everything as changed), and a walk lets
// the event loop turn while it reads trees from the cache: before, a diff of such a commit filled the agent's
// memory, and a listing served from the cache held the event loop for as long as it ran.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { diffTrees, listFiles, MAX_WALK_ENTRIES } from '../../../src/sources/git/tree.ts';

vi.setConfig({ testTimeout: 60_000 });

let dir = '';
const git = (args: string[], input?: string): string =>
  execFileSync('git', args, {
    input,
    env: {
      ...process.env,
      GIT_DIR: join(dir, '.git'),
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    },
  })
    .toString()
    .trim();

/** A tree of ten entries `leaf`, then `levels` trees of ten entries each naming the one below: 10^(levels+1) paths. */
function bomb(leaf: string, levels: number): string {
  let tree = git(
    ['mktree', '--missing'],
    Array.from({ length: 10 }, (_, i) => `${leaf}\tf${i}.md\n`).join(''),
  );
  for (let level = 0; level < levels; level++)
    tree = git(['mktree'], Array.from({ length: 10 }, (_, i) => `040000 tree ${tree}\td${i}\n`).join(''));
  return tree;
}

const store = () => ({ gitdir: join(dir, '.git'), cache: {} });
let base = '';
let blobs6 = '';
let links5 = '';
let links6 = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mooring-tree-bomb-'));
  git(['init', '-q', dir]);
  const blob = git(['hash-object', '-w', '--stdin'], 'kind: ConfigMap\n');
  base = git(['mktree'], `100644 blob ${blob}\tapp.yaml\n`);
  // Six levels of files: a million paths. Submodule entries (gitlinks) are not files: no listing counts them.
  blobs6 = git(
    ['mktree'],
    `100644 blob ${blob}\tapp.yaml\n040000 tree ${bomb(`100644 blob ${blob}`, 5)}\t.hidden\n`,
  );
  const link = `160000 commit ${'1'.repeat(40)}`;
  links5 = bomb(link, 4);
  links6 = git(['mktree'], `100644 blob ${blob}\tapp.yaml\n040000 tree ${bomb(link, 5)}\tvendor\n`);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('walks of a tree that repeats its subtrees', () => {
  it('a diff past a hundred thousand changed files is not listed, and says why', async () => {
    const diff = await diffTrees(store(), base, blobs6);
    expect(diff).toEqual({ tooLarge: 'more than 100000 files changed' });
  });

  it('a diff past the entries a walk may read is not listed, though no file changed', async () => {
    const diff = await diffTrees(store(), base, links6);
    expect(diff).toEqual({
      tooLarge: `more than ${MAX_WALK_ENTRIES} tree entries to read (a tree that names its subtrees many times over?)`,
    });
    // Within the bounds, the same function lists the changes.
    expect(await diffTrees(store(), base, links5)).toEqual({
      changes: [
        { path: 'app.yaml', before: expect.objectContaining({ path: 'app.yaml' }), after: undefined },
      ],
    });
  });

  it('a listing past the entries a walk may read is refused', async () => {
    const everyFile = { includes: () => true, mayContain: () => true };
    const error = await listFiles(store(), links6, everyFile, 10_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect(String(error)).toContain(`more than ${MAX_WALK_ENTRIES} tree entries to read`);
    // Outside the paths asked for, the same tree costs nothing.
    expect(
      (await listFiles(store(), links6, { ...everyFile, roots: ['app.yaml'] }, 10_000)).map((f) => f.path),
    ).toEqual(['app.yaml']);
  });

  it('lets the event loop turn while it reads trees from the cache', async () => {
    const everyFile = { includes: () => true, mayContain: () => true };
    // 111,110 entries, under the bound; the first walk fills the tree cache, the second reads only from it.
    expect(await listFiles(store(), links5, everyFile, 10)).toEqual([]);
    // Each turn of the event loop runs one of these: 11,111 trees read, a turn every 256 of them.
    let turns = 0;
    let running = true;
    const tick = () => {
      turns++;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    try {
      expect(await listFiles(store(), links5, everyFile, 10)).toEqual([]);
    } finally {
      running = false;
    }
    expect(turns).toBeGreaterThanOrEqual(40);
  });
});
