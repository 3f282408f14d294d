// Keeping the cache's packs few. Every fetch adds a pack file, and isomorphic-git looks an object up in each
// pack's index in turn (and loads each index once per operation), so an agent that fetched a thousand changes
// would read a thousand indexes per poll. Past a bound, all packs are rewritten as one. No object is dropped:
// the commits of earlier polls stay comparable. The new pack holds whole objects (isomorphic-git writes no
// deltas), which costs disk for long histories of large files but resolves the thin packs' external bases.
import * as fs from 'node:fs';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { readOnlyStoreFs } from './store-fs.ts';

const IDX_MAGIC = 0xff744f63;

/** Rewrites the packs of the cache repository as one when there are more than `maxPacks`; true if it did. */
export async function compactPacks(gitdir: string, maxPacks: number): Promise<boolean> {
  const folder = join(gitdir, 'objects/pack');
  const indexes = (await fs.promises.readdir(folder)).filter((f) => f.endsWith('.idx'));
  if (indexes.length <= maxPacks) return false;
  const oids = new Set<string>();
  for (const index of indexes) {
    for (const oid of objectIds(await fs.promises.readFile(join(folder, index)))) oids.add(oid);
  }
  // Reading every object is the cost here; the store view makes it several times cheaper (its writes are real).
  const { filename } = await git.packObjects({
    fs: readOnlyStoreFs(gitdir),
    gitdir,
    oids: [...oids].sort(),
    write: true,
    cache: {},
  });
  await git.indexPack({ fs, dir: gitdir, gitdir, filepath: `objects/pack/${filename}`, cache: {} });
  const kept = filename.replace(/\.pack$/, '');
  for (const index of indexes) {
    const base = index.replace(/\.idx$/, '');
    if (base === kept) continue;
    // The index first: a pack without one is invisible to readers, an index without its pack is an error.
    await fs.promises.rm(join(folder, index), { force: true });
    await fs.promises.rm(join(folder, `${base}.pack`), { force: true });
  }
  return true;
}

/** The object ids listed in a version-2 pack index. */
export function objectIds(idx: Buffer): string[] {
  if (idx.length < 8 + 256 * 4 || idx.readUInt32BE(0) !== IDX_MAGIC || idx.readUInt32BE(4) !== 2) {
    throw new Error('not a version-2 pack index');
  }
  const count = idx.readUInt32BE(8 + 255 * 4);
  const start = 8 + 256 * 4;
  if (idx.length < start + count * 20) throw new Error('truncated pack index');
  const oids: string[] = [];
  for (let i = 0; i < count; i++) oids.push(idx.toString('hex', start + i * 20, start + (i + 1) * 20));
  return oids;
}
