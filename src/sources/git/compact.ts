// Keeping the cache's packs few. Every fetch adds a pack file, and isomorphic-git looks an object up in each
// pack's index in turn (and loads each index once per operation), so an agent that fetched a thousand changes
// would read a thousand indexes per poll. Past a bound, all packs are rewritten as one. No object is dropped
// that can be read: the commits of earlier polls stay comparable. The new pack holds whole objects, which costs
// disk for long histories of large files but resolves the thin packs' external bases.
//
// Nothing is inflated that need not be: an object stored whole is copied as it is (its compressed bytes, whatever
// its size); one stored as a delta is resolved (after its size was read from its header) only when it is within
// `maxObjectBytes`, and left out otherwise, as the fetch that brought it would have left it out (pack-index.ts).
// The ids, offsets and CRCs of the new pack are known as it is written, so it needs no second indexing.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import zlib from 'node:zlib';
import { readObject } from './object-read.ts';
import { objectSize } from './object-size.ts';
import { isDelta, PackReader } from './pack-file.ts';
import { encodeEntryHeader, MAX_ENTRY_HEADER, readEntryHeader, TYPE_CODES } from './pack-header.ts';
import { encodeIndex, type IndexEntry, MAX_PACK_OFFSET, PackIdx } from './pack-idx.ts';
import { installPack } from './pack-receive.ts';
import { DEFAULT_MAX_OBJECT_BYTES } from './tree.ts';

const COPY_CHUNK = 1024 * 1024;

interface Source {
  pack: PackReader;
  offset: number;
  end: number;
}

/** Rewrites the packs of the cache repository as one when there are more than `maxPacks`; true if it did. */
export async function compactPacks(
  gitdir: string,
  maxPacks: number,
  maxObjectBytes = DEFAULT_MAX_OBJECT_BYTES,
): Promise<boolean> {
  const folder = join(gitdir, 'objects/pack');
  const indexes = (await fs.promises.readdir(folder)).filter(
    (f) => f.startsWith('pack-') && f.endsWith('.idx'),
  );
  if (indexes.length <= maxPacks) return false;
  // Oldest first, as readers see them (pack-order.ts): each object is taken from the oldest pack holding it whole.
  const aged = await Promise.all(
    indexes.map(async (name) => ({ name, at: (await fs.promises.stat(join(folder, name))).mtimeMs })),
  );
  aged.sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : 1));
  const readers: PackReader[] = [];
  const tmp = join(folder, `tmp_pack_compact_${process.pid}_${Date.now()}`);
  try {
    const whole = new Map<string, Source>();
    const deltas = new Set<string>();
    for (const { name } of aged) {
      const pack = await PackReader.open(join(folder, `${name.slice(0, -'.idx'.length)}.pack`));
      readers.push(pack);
      const idx = new PackIdx(await fs.promises.readFile(join(folder, name)));
      // In pack order, so that reads go forward through the pack's window.
      const inOrder = Array.from({ length: idx.count }, (_, i) => ({
        oid: idx.oidAt(i),
        offset: idx.offsetAt(i),
      }));
      inOrder.sort((a, b) => a.offset - b.offset);
      for (const { oid, offset } of inOrder) {
        if (whole.has(oid)) continue;
        const header = readEntryHeader(await pack.read(offset, MAX_ENTRY_HEADER), 0, offset);
        if (!header) throw new Error(`${pack.path}: truncated entry at ${offset}`);
        if (isDelta(header.type)) {
          deltas.add(oid);
          continue;
        }
        deltas.delete(oid);
        // Where the entry ends (the next offset in the index may lie past a delta the index left out): small
        // entries are inflated, large ones streamed through without being held.
        const start = offset + header.length;
        const consumed =
          header.size <= maxObjectBytes
            ? (await pack.inflate(start, header.size)).consumed
            : await pack.stream(start, () => {});
        whole.set(oid, { pack, offset, end: start + consumed });
      }
    }
    const store = { gitdir, cache: {} };
    const resolvable: string[] = [];
    for (const oid of deltas) {
      if (whole.has(oid)) continue;
      const size = await objectSize(store, oid);
      if (size !== undefined && size <= maxObjectBytes) resolvable.push(oid);
    }
    // Whole entries in the order of their packs (reads go forward), then the resolved ones.
    const oids = [...whole.keys(), ...resolvable.sort()];
    const sha = await writePack(tmp, oids, whole, async (oid) => {
      const { type, data } = await readObject(store, oid, maxObjectBytes);
      return { type: TYPE_CODES[type], data };
    });
    await installPack(folder, tmp, sha.idx, sha.hex);
    const kept = `pack-${sha.hex}.idx`;
    for (const index of indexes) {
      if (index === kept) continue;
      const base = index.replace(/\.idx$/, '');
      // The index first: a pack without one is invisible to readers, an index without its pack is an error.
      await fs.promises.rm(join(folder, index), { force: true });
      await fs.promises.rm(join(folder, `${base}.pack`), { force: true });
    }
    return true;
  } finally {
    for (const reader of readers) await reader.close();
    await fs.promises.rm(tmp, { force: true });
    await fs.promises.rm(`${tmp}.idx`, { force: true });
  }
}

/** Writes a pack of `oids`: whole entries copied from their packs, the others read and deflated. */
async function writePack(
  path: string,
  oids: readonly string[],
  whole: ReadonlyMap<string, Source>,
  read: (oid: string) => Promise<{ type: number; data: Uint8Array }>,
): Promise<{ hex: string; idx: Buffer }> {
  const out = await fs.promises.open(path, 'wx', 0o644);
  const hash = createHash('sha1');
  const entries: IndexEntry[] = [];
  let position = 0;
  const put = async (bytes: Buffer): Promise<void> => {
    hash.update(bytes);
    await out.write(bytes);
    position += bytes.length;
  };
  try {
    const head = Buffer.alloc(12);
    head.write('PACK', 0, 'latin1');
    head.writeUInt32BE(2, 4);
    head.writeUInt32BE(oids.length, 8);
    await put(head);
    for (const oid of oids) {
      if (position > MAX_PACK_OFFSET) throw new Error('the compacted pack would reach 2 GiB');
      const offset = position;
      let crc = 0;
      const source = whole.get(oid);
      if (source) {
        for (let at = source.offset; at < source.end; ) {
          const chunk = Buffer.from(await source.pack.read(at, Math.min(COPY_CHUNK, source.end - at)));
          if (chunk.length === 0) throw new Error(`${source.pack.path}: truncated at ${at}`);
          crc = zlib.crc32(chunk, crc);
          await put(chunk);
          at += chunk.length;
        }
      } else {
        const { type, data } = await read(oid);
        const entry = Buffer.concat([encodeEntryHeader(type, data.length), zlib.deflateSync(data)]);
        crc = zlib.crc32(entry);
        await put(entry);
      }
      entries.push({ oid, offset, crc });
      await yieldToLoop();
    }
    const checksum = hash.digest();
    await out.write(checksum);
    return { hex: checksum.toString('hex'), idx: encodeIndex(entries, checksum) };
  } finally {
    await out.close();
  }
}
