// Reading objects from the cache's packs by offset, in place of isomorphic-git's reads, which load a whole pack
// file into memory to read one object from it (a pack can hold up to maxTransferBytes of other objects). Here an
// object's entry is read from its pack file, its size checked against the limit before it is inflated (for a
// delta: its data, its base and its result), and delta chains resolved from their bases, recent bases kept in a
// small cache per store view. Trees and commits are parsed here too (only the fields mooring reads).
import { closeSync, openSync, readSync } from 'node:fs';
import { StalledError } from '../../errors.ts';
import { applyDelta } from './delta.ts';
import { inflateSized, inflateWhole } from './inflate.ts';
import { locate } from './object-size.ts';
import { isDelta } from './pack-file.ts';
import {
  type EntryHeader,
  MAX_ENTRY_HEADER,
  type ObjectTypeName,
  readDeltaSizes,
  readEntryHeader,
  readLooseHeader,
  TYPE_NAMES,
} from './pack-header.ts';

export interface GitObject {
  type: ObjectTypeName;
  data: Buffer;
}

interface Store {
  gitdir: string;
  cache: object;
}

const CACHE_BYTES = 16 * 1024 * 1024;
const MAX_CHAIN = 10_000;
const MAX_REF_HOPS = 1_000;

class BaseCache {
  readonly #objects = new Map<string, GitObject>();
  #bytes = 0;

  get(key: string): GitObject | undefined {
    return this.#objects.get(key);
  }

  set(key: string, object: GitObject): void {
    if (object.data.length > CACHE_BYTES / 8 || this.#objects.has(key)) return;
    this.#objects.set(key, object);
    this.#bytes += object.data.length;
    for (const [oldest, value] of this.#objects) {
      if (this.#bytes <= CACHE_BYTES) break;
      this.#objects.delete(oldest);
      this.#bytes -= value.data.length;
    }
  }
}

const caches = new WeakMap<object, BaseCache>();

/**
 * The object `oid`, refused (StalledError) when it, or what it takes to resolve it, is larger than `limit`; an
 * Error with code NotFoundError when the cache does not hold it.
 */
export async function readObject(store: Store, oid: string, limit: number, hops = 0): Promise<GitObject> {
  // Packs are searched oldest first (object-size.ts), so bases lead to older packs; a crafted loop still ends here.
  if (hops > MAX_REF_HOPS) throw new Error(`object ${oid}: more than ${MAX_REF_HOPS} bases in other packs`);
  const found = await locate(store, oid);
  if (!found) throw Object.assign(new Error(`object ${oid} is not in the cache`), { code: 'NotFoundError' });
  if ('loose' in found) {
    if (found.loose.size > limit) throw tooLarge(oid, found.loose.size, limit);
    return readLoose(store.gitdir, oid);
  }
  let cache = caches.get(store.cache);
  if (!cache) {
    cache = new BaseCache();
    caches.set(store.cache, cache);
  }
  const fd = openSync(found.pack, 'r');
  let result: GitObject | { refBase: string; chain: Link[] };
  try {
    result = resolveInPack(fd, found.pack, found.offset, oid, limit, cache);
  } finally {
    closeSync(fd);
  }
  if ('data' in result) return result;
  // A ref-delta whose base lies elsewhere (a thin pack's base, in an older pack): read it, then apply the chain.
  const base = await readObject(store, result.refBase, limit, hops + 1);
  return applyChain(found.pack, base, result.chain, cache);
}

interface Link {
  offset: number;
  delta: Buffer;
}

function resolveInPack(
  fd: number,
  pack: string,
  offset: number,
  oid: string,
  limit: number,
  cache: BaseCache,
): GitObject | { refBase: string; chain: Link[] } {
  const chain: Link[] = [];
  let at = offset;
  for (let step = 0; step < MAX_CHAIN; step++) {
    const cached = cache.get(`${pack}:${at}`);
    if (cached && cached.data.length > limit) throw tooLarge(oid, cached.data.length, limit);
    if (cached) return applyChain(pack, cached, chain, cache);
    const header = entryHeader(fd, pack, at);
    if (header.size > limit) throw tooLarge(oid, header.size, limit);
    const data = inflateEntry(fd, pack, at + header.length, header.size);
    if (!isDelta(header.type)) {
      const object = { type: TYPE_NAMES[header.type] as ObjectTypeName, data };
      return applyChain(pack, object, chain, cache, at);
    }
    const sizes = readDeltaSizes(data);
    if (!sizes) throw new Error(`${pack}: a delta at ${at} without sizes`);
    if (sizes.resultSize > limit) throw tooLarge(oid, sizes.resultSize, limit);
    if (sizes.baseSize > limit) throw tooLarge(oid, sizes.baseSize, limit);
    chain.push({ offset: at, delta: data });
    if (header.baseOffset === undefined) return { refBase: header.baseOid as string, chain };
    at = header.baseOffset;
  }
  throw new Error(`${pack}: a delta chain longer than ${MAX_CHAIN}`);
}

/** Applies the deltas of `chain` (outermost first) to `base`, keeping each result as a base for later reads. */
function applyChain(
  pack: string,
  base: GitObject,
  chain: Link[],
  cache: BaseCache,
  baseOffset?: number,
): GitObject {
  if (baseOffset !== undefined) cache.set(`${pack}:${baseOffset}`, base);
  let object = base;
  for (let i = chain.length - 1; i >= 0; i--) {
    const link = chain[i] as Link;
    object = { type: object.type, data: applyDelta(link.delta, object.data) };
    cache.set(`${pack}:${link.offset}`, object);
  }
  return object;
}

function entryHeader(fd: number, pack: string, offset: number): EntryHeader {
  const header = readEntryHeader(readAt(fd, offset, MAX_ENTRY_HEADER), 0, offset);
  if (!header) throw new Error(`${pack}: truncated entry at ${offset}`);
  return header;
}

function inflateEntry(fd: number, pack: string, position: number, size: number): Buffer {
  // A zlib stream is at most its data plus 5 bytes per 16 KiB stored block and a few more.
  const input = readAt(fd, position, size + 5 * Math.ceil((size + 1) / 16_383) + 64);
  const data = inflateSized(input, size);
  if (data.length !== size)
    throw new Error(`${pack}: entry at ${position} holds ${data.length} bytes, not ${size}`);
  return data;
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const read = readSync(fd, buffer, filled, length - filled, position + filled);
    if (read === 0) break;
    filled += read;
  }
  return buffer.subarray(0, filled);
}

function readLoose(gitdir: string, oid: string): GitObject {
  const fd = openSync(`${gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`, 'r');
  let raw: Buffer;
  try {
    const chunks: Buffer[] = [];
    for (let at = 0; ; ) {
      const chunk = readAt(fd, at, 1024 * 1024);
      if (chunk.length === 0) break;
      chunks.push(chunk);
      at += chunk.length;
    }
    raw = inflateWhole(Buffer.concat(chunks));
  } finally {
    closeSync(fd);
  }
  const header = readLooseHeader(raw);
  if (!header || raw.length - header.length !== header.size)
    throw new Error(`loose object ${oid} is corrupt`);
  return { type: header.type, data: raw.subarray(header.length) };
}

function tooLarge(oid: string, size: number, limit: number): StalledError {
  return new StalledError(`object ${oid} needs ${size} bytes, more than maxObjectBytes (${limit})`);
}

export interface TreeEntry {
  mode: string;
  path: string;
  oid: string;
  type: 'blob' | 'tree' | 'commit';
}

const MODES: Record<string, { mode: string; type: TreeEntry['type'] }> = {
  '40000': { mode: '040000', type: 'tree' },
  '040000': { mode: '040000', type: 'tree' },
  '100644': { mode: '100644', type: 'blob' },
  '100664': { mode: '100644', type: 'blob' },
  '100755': { mode: '100755', type: 'blob' },
  '120000': { mode: '120000', type: 'blob' },
  '160000': { mode: '160000', type: 'commit' },
};

/** A tree's entries, in the order Git sorts them, names as UTF-8; an entry of unknown mode is refused. */
export function parseTree(oid: string, data: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const nul = space === -1 ? -1 : data.indexOf(0, space);
    if (space === -1 || nul === -1 || nul + 21 > data.length)
      throw new StalledError(`tree ${oid} is malformed`);
    const known = MODES[data.toString('latin1', at, space)];
    if (!known)
      throw new StalledError(
        `tree ${oid} holds an entry of unknown mode ${data.toString('latin1', at, space)}`,
      );
    entries.push({
      ...known,
      path: data.toString('utf8', space + 1, nul),
      oid: data.toString('hex', nul + 1, nul + 21),
    });
    at = nul + 21;
  }
  return entries;
}

export interface Commit {
  tree: string;
  parent: string[];
  author: { name: string };
  message: string;
}

/** The fields of a commit mooring reads: its tree, parents, author's name and message. */
export function parseCommit(oid: string, data: Buffer): Commit {
  const text = data.toString('utf8');
  const end = text.indexOf('\n\n');
  const headers = (end === -1 ? text : text.slice(0, end)).split('\n');
  const commit: Commit = {
    tree: '',
    parent: [],
    author: { name: '' },
    message: end === -1 ? '' : text.slice(end + 2),
  };
  for (const line of headers) {
    if (line.startsWith('tree ')) commit.tree = line.slice(5);
    else if (line.startsWith('parent ')) commit.parent.push(line.slice(7));
    else if (line.startsWith('author ')) commit.author.name = line.slice(7).replace(/ <[^>]*> .*$/, '');
  }
  if (!/^[0-9a-f]{40}$/.test(commit.tree) || commit.parent.some((p) => !/^[0-9a-f]{40}$/.test(p))) {
    throw new StalledError(`commit ${oid} is malformed`);
  }
  return commit;
}
