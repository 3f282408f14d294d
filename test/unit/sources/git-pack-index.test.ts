// Indexing packs in bounded memory (pack-index.ts) against real git: the index written for a pack that git made is
// byte for byte the one `git index-pack` writes; objects over the limit are hashed in chunks (whole objects) or
// left out (deltas that would need a large base or result); a thin pack's bases come from outside; sizes are then
// read from headers (object-size.ts), and compaction keeps what can be read without inflating large objects.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { compactPacks } from '../../../src/sources/git/compact.ts';
import { parseCommit, parseTree, readObject } from '../../../src/sources/git/object-read.ts';
import { objectSize } from '../../../src/sources/git/object-size.ts';
import { encodeIndex, PackIdx } from '../../../src/sources/git/pack-idx.ts';
import { indexPack } from '../../../src/sources/git/pack-index.ts';
import { installPack } from '../../../src/sources/git/pack-receive.ts';
import { readBlob } from '../../../src/sources/git/tree.ts';

// These tests run real work (processes, Git repositories, whole pages): a busy 2-core machine needs more than 5 s.
vi.setConfig({ testTimeout: 30_000 });

const MiB = 1024 * 1024;
let dir = '';

function git(args: string[], input?: string | Buffer): string {
  return execFileSync('git', args, {
    cwd: dir,
    input,
    maxBuffer: 64 * MiB,
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
  }).toString();
}

function lines(count: number, tag: string): string {
  return Array.from(
    { length: count },
    (_, i) => `line ${i} of ${tag}: a value long enough to compress\n`,
  ).join('');
}

/** A pack of the objects `revs` selects (`git pack-objects --revs`), written to `name-<sha>.pack/.idx`. */
function pack(name: string, revs: string, ...flags: string[]): { pack: string; idx: string } {
  const sha = git(['pack-objects', '--revs', ...flags, join(dir, name)], revs).trim();
  return { pack: join(dir, `${name}-${sha}.pack`), idx: join(dir, `${name}-${sha}.idx`) };
}

/** A thin pack (deltas against objects outside it, as a server sends to a client that has them); no index. */
async function thinPack(name: string, revs: string): Promise<string> {
  const bytes = execFileSync(
    'git',
    ['--git-dir', join(dir, '.git'), 'pack-objects', '--revs', '--thin', '--stdout', '--delta-base-offset'],
    {
      input: revs,
      maxBuffer: 64 * MiB,
    },
  );
  const path = join(dir, `${name}.pack`);
  await writeFile(path, bytes);
  return path;
}

const noExternal = async () => undefined;
const TYPES: Record<string, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };

/** An object as the cache would give it to a thin pack's delta. */
function catFile(oid: string): { type: number; data: Buffer } {
  const run = (args: string[]) => execFileSync('git', ['--git-dir', join(dir, '.git'), 'cat-file', ...args]);
  const type = run(['-t', oid]).toString().trim();
  return { type: TYPES[type] ?? 0, data: Buffer.from(run([type, oid])) };
}

describe('indexPack', () => {
  const commits: string[] = [];
  let big = '';
  let bigText = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mooring-pack-index-'));
    git(['init', '--quiet']);
    // Commit 1: small manifests and a 3 MiB blob of zeros (outside any path that would be read).
    // Commit 2: every manifest changed a little (deltas), and a 1.5 MiB text file added.
    // Commit 3: the 1.5 MiB file changed a little (a delta whose base and result are over 1 MiB).
    await mkdir(join(dir, 'apps'), { recursive: true });
    await mkdir(join(dir, 'data'), { recursive: true });
    for (let i = 0; i < 5; i++) await writeFile(join(dir, `apps/app-${i}.yaml`), lines(200, `app ${i}`));
    await writeFile(join(dir, 'data/zeros.bin'), Buffer.alloc(3 * MiB));
    git(['add', '-A']);
    git(['commit', '--quiet', '-m', 'one']);
    commits.push(git(['rev-parse', 'HEAD']).trim());
    for (let i = 0; i < 5; i++)
      await writeFile(join(dir, `apps/app-${i}.yaml`), `${lines(200, `app ${i}`)}changed: ${i}\n`);
    bigText = lines(28_000, 'big');
    await writeFile(join(dir, 'data/big.txt'), bigText);
    git(['add', '-A']);
    git(['commit', '--quiet', '-m', 'two']);
    commits.push(git(['rev-parse', 'HEAD']).trim());
    await writeFile(join(dir, 'data/big.txt'), `${bigText}one more line\n`);
    git(['add', '-A']);
    git(['commit', '--quiet', '-m', 'three']);
    commits.push(git(['rev-parse', 'HEAD']).trim());
    big = git(['rev-parse', 'HEAD:data/big.txt']).trim();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['ofs-deltas', ['--delta-base-offset']],
    ['ref-deltas', []],
  ])('writes the index git writes, with %s, large objects hashed in chunks', async (_, flags) => {
    const made = pack(`all-${flags.length}`, `${commits.at(-1)}\n`, ...flags);
    const indexed = await indexPack(made.pack, { maxObjectBytes: 64 * MiB, external: noExternal });
    expect(indexed.skipped).toBe(0);
    expect(encodeIndex(indexed.entries, indexed.packSha)).toEqual(await readFile(made.idx));
    // With a 1 MiB limit the 3 MiB blob of zeros is still indexed (streamed into the hash, never held).
    const bounded = await indexPack(made.pack, { maxObjectBytes: MiB, external: noExternal });
    const zeros = git(['rev-parse', `${commits.at(-1)}:data/zeros.bin`]).trim();
    expect(bounded.entries.map((e) => e.oid)).toContain(zeros);
    expect(bounded.largest).toBeGreaterThanOrEqual(3 * MiB);
  });

  it('leaves out a delta whose base and result are over the limit, and only it', async () => {
    const made = pack('deltas', `${commits.at(-1)}\n`, '--delta-base-offset');
    const gitIdx = new PackIdx(await readFile(made.idx));
    const stored = git(['verify-pack', '-v', made.idx]);
    const bigIsDelta = stored.split('\n').some((l) => l.startsWith(big) && l.split(/\s+/).length > 6);
    const bounded = await indexPack(made.pack, { maxObjectBytes: MiB, external: noExternal });
    const ours = bounded.entries.map((e) => e.oid).sort();
    if (bigIsDelta) {
      expect(bounded.skipped).toBe(1);
      expect(ours).toEqual(gitIdx.oids().filter((oid) => oid !== big));
    } else {
      // git chose to store the newer version whole and the older one as a delta: that one is left out.
      expect(bounded.skipped).toBe(1);
      expect(ours).toContain(big);
    }
    expect(ours).toHaveLength(gitIdx.count - 1);
  });

  it('resolves a thin pack against bases from outside, and names a base nobody has', async () => {
    const thin = await thinPack('thin', `${commits[1]}\n^${commits[0]}\n`);
    const bases = new Set<string>();
    const external = async (oid: string) => {
      bases.add(oid);
      return catFile(oid);
    };
    const indexed = await indexPack(thin, { maxObjectBytes: 64 * MiB, external });
    expect(bases.size).toBeGreaterThan(0);
    const oids = indexed.entries.map((e) => e.oid);
    for (let i = 0; i < 5; i++)
      expect(oids).toContain(git(['rev-parse', `${commits[1]}:apps/app-${i}.yaml`]).trim());
    await expect(indexPack(thin, { maxObjectBytes: 64 * MiB, external: noExternal })).rejects.toThrow(
      /deltas name bases that are not in the cache/,
    );
  });

  it('reads sizes from headers, and compacts without losing what can be read', async () => {
    const gitdir = await mkdtemp(join(tmpdir(), 'mooring-pack-store-'));
    try {
      const folder = join(gitdir, 'objects/pack');
      await mkdir(folder, { recursive: true });
      // Two packs, as two fetches would leave them: the first commit, then what the other two added (thin).
      const first = pack('first', `${commits[0]}\n`, '--delta-base-offset').pack;
      const rest = await thinPack('rest', `${commits[2]}\n^${commits[0]}\n`);
      const store = { gitdir, cache: {} };
      for (const [i, made] of [first, rest].entries()) {
        const copy = join(folder, `tmp_pack_${i}`);
        await writeFile(copy, await readFile(made));
        const indexed = await indexPack(copy, {
          maxObjectBytes: MiB,
          external: async (oid) => {
            const size = await objectSize({ gitdir, cache: {} }, oid);
            return size === undefined ? undefined : catFile(oid);
          },
        });
        await installPack(
          folder,
          copy,
          encodeIndex(indexed.entries, indexed.packSha),
          indexed.packSha.toString('hex'),
        );
      }
      const size = (path: string, rev = commits[2]) => Number(git(['cat-file', '-s', `${rev}:${path}`]));
      const oid = (path: string, rev = commits[2]) => git(['rev-parse', `${rev}:${path}`]).trim();
      expect(await objectSize(store, oid('data/zeros.bin'))).toBe(3 * MiB);
      expect(await objectSize(store, oid('apps/app-1.yaml'))).toBe(size('apps/app-1.yaml'));
      expect(await objectSize(store, '0'.repeat(40))).toBeUndefined();
      // Objects read by offset from the packs, deltas (a thin pack's among them) resolved, as git has them.
      const limit = { gitdir, cache: {} };
      for (const path of ['apps/app-1.yaml', 'apps/app-4.yaml', 'data/big.txt']) {
        const object = await readObject(limit, oid(path), 64 * MiB);
        expect(object.type).toBe('blob');
        expect(object.data.toString()).toBe(git(['cat-file', 'blob', oid(path)]));
      }
      const commit = await readObject(limit, commits[2] as string, MiB);
      expect(parseCommit(commits[2] as string, commit.data)).toMatchObject({
        tree: git(['rev-parse', `${commits[2]}^{tree}`]).trim(),
        parent: [commits[1]],
        author: { name: 't' },
        message: 'three\n',
      });
      const tree = await readObject(limit, oid('apps'), MiB);
      expect(parseTree(oid('apps'), tree.data).map((e) => `${e.mode} ${e.type} ${e.oid}\t${e.path}`)).toEqual(
        git(['ls-tree', oid('apps')])
          .trim()
          .split('\n'),
      );
      await expect(readObject(limit, oid('data/zeros.bin'), MiB)).rejects.toThrow(
        `needs ${3 * MiB} bytes, more than maxObjectBytes (${MiB})`,
      );
      await expect(readObject(limit, oid('data/big.txt'), MiB)).rejects.toThrow(/more than maxObjectBytes/);

      // Readers refuse by these sizes, naming the file, its size and the limit.
      const objects = { gitdir, cache: {}, maxObjectBytes: MiB };
      const zeros = { path: 'data/zeros.bin', oid: oid('data/zeros.bin') };
      await expect(readBlob(objects, zeros, 4 * MiB)).rejects.toThrow(
        `data/zeros.bin is ${3 * MiB} bytes, more than maxObjectBytes (${MiB})`,
      );
      const app = { path: 'apps/app-1.yaml', oid: oid('apps/app-1.yaml') };
      await expect(readBlob(objects, app, 1000)).rejects.toThrow(
        `apps/app-1.yaml is ${size('apps/app-1.yaml')} bytes, more than maxFileBytes (1000)`,
      );
      expect(Buffer.from(await readBlob(objects, app, MiB)).toString()).toBe(
        git(['cat-file', 'blob', app.oid]),
      );

      expect(await compactPacks(gitdir, 1, MiB)).toBe(true);
      const left = (await readdir(folder)).filter((n) => n.endsWith('.idx'));
      expect(left).toHaveLength(1);
      const after = { gitdir, cache: {} };
      expect(await objectSize(after, oid('data/zeros.bin'))).toBe(3 * MiB);
      expect(await objectSize(after, oid('apps/app-1.yaml'))).toBe(size('apps/app-1.yaml'));
      expect((await readObject(after, oid('apps/app-1.yaml'), MiB)).data.toString()).toBe(
        git(['cat-file', 'blob', oid('apps/app-1.yaml')]),
      );
      // git reads the compacted pack and finds every object of it whole and intact.
      const compacted = join(folder, left[0] as string);
      const verified = execFileSync('git', ['verify-pack', '-v', compacted]).toString();
      expect(verified).toContain(oid('data/zeros.bin'));
      expect(verified).not.toMatch(/chain length/);
    } finally {
      await rm(gitdir, { recursive: true, force: true });
    }
  });
});
