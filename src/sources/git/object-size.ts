// Where an object lies in the cache, and its size, read from headers without inflating the object: for a packed
// object, its pack index gives the entry's offset and the entry header its size (for a delta, the first bytes of
// the delta give the size of the object it makes); for a loose object, the first bytes of the file. Readers check
// this size against their limit before they inflate anything (tree.ts, object-read.ts).
//
// The reads are a few bytes each, from files the page cache holds, so they are synchronous: a read through the
// thread pool costs far more than the read itself, and a poll checks thousands of objects.
import { closeSync, openSync, readSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { inflateStart } from './inflate.ts';
import { isDelta } from './pack-file.ts';
import {
  type EntryHeader,
  MAX_ENTRY_HEADER,
  type ObjectTypeName,
  readDeltaSizes,
  readEntryHeader,
  readLooseHeader,
} from './pack-header.ts';
import { PackIdx } from './pack-idx.ts';

export interface ObjectInfo {
  type: ObjectTypeName;
  size: number;
}

interface Store {
  gitdir: string;
  cache: object;
}

interface LoadedIdx {
  pack: string;
  idx: PackIdx;
}

// One listing and parse of the pack indexes per store view (its `cache`, isomorphic-git's per-operation cache).
const indexes = new WeakMap<object, Promise<LoadedIdx[]>>();

/** The object's size, or undefined when the cache does not hold it. */
export async function objectSize(store: Store, oid: string): Promise<number | undefined> {
  return (await objectSizes(store, [oid]))[0];
}

/** The sizes of objects (undefined for one the cache does not hold), each pack opened once for all of them. */
export async function objectSizes(store: Store, oids: readonly string[]): Promise<(number | undefined)[]> {
  const found = await Promise.all(oids.map((oid) => locate(store, oid)));
  const sizes: (number | undefined)[] = found.map((f) => (f && 'loose' in f ? f.loose.size : undefined));
  const byPack = new Map<string, number[]>();
  found.forEach((f, i) => {
    if (!f || 'loose' in f) return;
    const list = byPack.get(f.pack) ?? [];
    list.push(i);
    byPack.set(f.pack, list);
  });
  for (const [pack, indexes] of byPack) {
    withFile(pack, (fd) => {
      for (const i of indexes) {
        const { offset } = found[i] as { offset: number };
        const header = entryHeader(fd, pack, offset);
        sizes[i] = isDelta(header.type) ? deltaResultSize(fd, offset + header.length) : header.size;
      }
    });
  }
  return sizes;
}

export type Location = { pack: string; offset: number } | { loose: ObjectInfo };

/** Where the cache holds an object: a pack and offset, or a loose object (with its type and size). */
export async function locate(store: Store, oid: string): Promise<Location | undefined> {
  if (!/^[0-9a-f]{40}$/.test(oid)) return undefined;
  for (const { pack, idx } of await packIndexes(store)) {
    const offset = idx.find(oid);
    if (offset !== undefined) return { pack, offset };
  }
  const loose = looseInfo(store.gitdir, oid);
  return loose && { loose };
}

async function packIndexes(store: Store): Promise<LoadedIdx[]> {
  let loaded = indexes.get(store.cache);
  if (!loaded) {
    const folder = join(store.gitdir, 'objects/pack');
    // Oldest first, as pack-order.ts explains: a thin pack's ref-deltas then always lead to older packs, and a
    // chain of bases ends (two packs holding an object and its base as deltas of each other would loop).
    loaded = readdir(folder)
      .catch(() => [] as string[])
      .then(async (names) => {
        const loaded = await Promise.all(
          names
            .filter((n) => n.startsWith('pack-') && n.endsWith('.idx'))
            .map(async (n) => ({
              name: n,
              pack: join(folder, `${n.slice(0, -'.idx'.length)}.pack`),
              at: (await stat(join(folder, n))).mtimeMs,
              idx: new PackIdx(await readFile(join(folder, n))),
            })),
        );
        return loaded.sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : 1));
      });
    indexes.set(store.cache, loaded);
  }
  return loaded;
}

function withFile<T>(path: string, use: (fd: number) => T): T {
  const fd = openSync(path, 'r');
  try {
    return use(fd);
  } finally {
    closeSync(fd);
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  const read = readSync(fd, buffer, 0, length, position);
  return buffer.subarray(0, read);
}

function entryHeader(fd: number, path: string, offset: number): EntryHeader {
  const header = readEntryHeader(readAt(fd, offset, MAX_ENTRY_HEADER), 0, offset);
  if (!header) throw new Error(`${path}: truncated entry at ${offset}`);
  return header;
}

/** The first bytes of a zlib stream, inflated: enough for a header, whatever the stream holds. */
function inflatedStart(fd: number, position: number, enough: (start: Buffer) => boolean): Buffer {
  // A compressed block's own header can take a few hundred bytes before the first output.
  for (const length of [1024, 64 * 1024]) {
    const input = readAt(fd, position, length);
    const start = inflateStart(input);
    if (enough(start) || input.length < length) return start;
  }
  throw new Error(`no header in the first 64 KiB at ${position}`);
}

function deltaResultSize(fd: number, dataPosition: number): number {
  const sizes = readDeltaSizes(inflatedStart(fd, dataPosition, (s) => readDeltaSizes(s) !== undefined));
  if (!sizes) throw new Error(`delta at ${dataPosition}: no size header`);
  return sizes.resultSize;
}

function looseInfo(gitdir: string, oid: string): ObjectInfo | undefined {
  let fd: number;
  try {
    fd = openSync(join(gitdir, 'objects', oid.slice(0, 2), oid.slice(2)), 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const header = readLooseHeader(inflatedStart(fd, 0, (s) => s.includes(0)));
    if (!header) throw new Error(`loose object ${oid}: no header`);
    return { type: header.type, size: header.size };
  } finally {
    closeSync(fd);
  }
}
