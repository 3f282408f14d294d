// Indexing a received pack in bounded memory, in place of isomorphic-git's indexPack (which inflates every object,
// whatever its size, to hash it). The size of each object is read from its entry header before it is inflated:
//
// - a whole object (commit, tree, blob, tag) up to `maxObjectBytes` is inflated and hashed; a larger one is
//   inflated in chunks into an incremental SHA-1 and never held, so it is indexed (a later fetch may name it as
//   a base, a tree may list it) and readers refuse it by the size in its header (object-size.ts);
// - a delta is resolved only when its own data, its base and its result are each within `maxObjectBytes`
//   (a delta cannot be applied without holding its base and result); otherwise it is left out of the index and
//   counted in `skipped`: an object no deployment reads costs nothing, and one a deployment reads is missing,
//   which its reader reports.
//
// Bases of a thin pack's deltas that are not in the pack come from `external` (the cache), checked by size
// there. The event loop runs between chunks and between objects, so health checks answer during a fetch.
import { createHash } from 'node:crypto';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import zlib from 'node:zlib';
import { applyDelta } from './delta.ts';
import { isDelta, PackReader } from './pack-file.ts';
import { type EntryHeader, MAX_ENTRY_HEADER, readEntryHeader, TYPE_NAMES } from './pack-header.ts';
import { type IndexEntry, MAX_PACK_OFFSET } from './pack-idx.ts';

export interface IndexPackOptions {
  maxObjectBytes: number;
  /** A delta base that is not in the pack, read from the cache; undefined when the cache lacks it. */
  external(oid: string): Promise<{ type: number; data: Uint8Array } | undefined>;
}

export interface IndexedPack {
  entries: IndexEntry[];
  /** The pack's trailing checksum (its name). */
  packSha: Buffer;
  /** Objects left out of the index because resolving them would hold more than maxObjectBytes. */
  skipped: number;
  /** The largest object indexed (whole objects only), in bytes. */
  largest: number;
}

interface Entry {
  offset: number;
  header: EntryHeader;
  /** Where the next entry starts. */
  end: number;
  crc: number;
  /** Known once hashed. */
  oid?: string;
  /** Left out: resolving it would hold more than the limit. */
  skipped?: boolean;
}

const CACHE_BYTES = 16 * 1024 * 1024;
const SLICE_MS = 20;
/** Entries up to this size are read through the pack reader's window (most are, and are already there). */
const READ_WINDOW = 128 * 1024;

export async function indexPack(path: string, options: IndexPackOptions): Promise<IndexedPack> {
  const pack = await PackReader.open(path);
  try {
    return await new Indexer(pack, options).run();
  } finally {
    await pack.close();
  }
}

class Indexer {
  readonly #pack: PackReader;
  readonly #options: IndexPackOptions;
  readonly #byOffset = new Map<number, Entry>();
  readonly #byOid = new Map<string, Entry>();
  readonly #cache = new Map<number, { type: number; data: Buffer }>();
  #cached = 0;
  #skipped = 0;
  #largest = 0;
  #sliceStart = performance.now();

  constructor(pack: PackReader, options: IndexPackOptions) {
    this.#pack = pack;
    this.#options = options;
  }

  async run(): Promise<IndexedPack> {
    const pack = this.#pack;
    if (pack.size < 32) throw new Error('pack: too short');
    const head = Buffer.from(await pack.read(0, 12));
    const version = head.readUInt32BE(4);
    if (head.toString('latin1', 0, 4) !== 'PACK' || (version !== 2 && version !== 3)) {
      throw new Error('pack: not a version 2 or 3 pack');
    }
    if (pack.size - 20 > MAX_PACK_OFFSET) throw new Error('pack: 2 GiB or more cannot be indexed');
    const count = head.readUInt32BE(8);
    const packSha = Buffer.from(await pack.read(pack.size - 20, 20));
    const entries: Entry[] = [];
    let offset = 12;
    for (let i = 0; i < count; i++) {
      const entry = await this.#scan(offset);
      entries.push(entry);
      this.#byOffset.set(offset, entry);
      if (entry.oid) this.#byOid.set(entry.oid, entry);
      offset = entry.end;
      await this.#breathe();
    }
    if (offset !== pack.size - 20)
      throw new Error(`pack: ${pack.size - 20 - offset} bytes after the last entry`);
    await this.#resolveDeltas(entries.filter((e) => isDelta(e.header.type)));
    const indexed = entries.filter((e): e is Entry & { oid: string } => e.oid !== undefined);
    return {
      entries: indexed.map((e) => ({ oid: e.oid, offset: e.offset, crc: e.crc })),
      packSha,
      skipped: this.#skipped,
      largest: this.#largest,
    };
  }

  /** Reads the entry at `offset`: its header, where it ends, its CRC and, for a whole object, its id. */
  async #scan(offset: number): Promise<Entry> {
    const header = readEntryHeader(await this.#pack.read(offset, MAX_ENTRY_HEADER), 0, offset);
    if (!header) throw new Error(`pack: truncated entry at ${offset}`);
    const start = offset + header.length;
    const limit = this.#options.maxObjectBytes;
    let consumed: number;
    let oid: string | undefined;
    if (!isDelta(header.type)) {
      const hash = createHash('sha1').update(`${TYPE_NAMES[header.type]} ${header.size}\0`);
      if (header.size <= limit) {
        const { data, consumed: used } = await this.#pack.inflate(start, header.size);
        hash.update(data);
        consumed = used;
        this.#remember(offset, { type: header.type, data });
      } else {
        let length = 0;
        consumed = await this.#pack.stream(start, (chunk) => {
          length += chunk.length;
          if (length > header.size)
            throw new Error(`pack: entry at ${offset} holds more than ${header.size} bytes`);
          hash.update(chunk);
        });
        if (length !== header.size)
          throw new Error(`pack: entry at ${offset} holds ${length} bytes, not ${header.size}`);
      }
      oid = hash.digest('hex');
      this.#largest = Math.max(this.#largest, header.size);
    } else if (header.size <= limit) {
      consumed = (await this.#pack.inflate(start, header.size)).consumed;
    } else {
      // A delta too large to hold: only its length is needed, to find the next entry.
      consumed = await this.#pack.stream(start, () => {});
    }
    const end = start + consumed;
    return { offset, header, end, crc: await this.#crc(offset, end), ...(oid ? { oid } : {}) };
  }

  async #crc(from: number, to: number): Promise<number> {
    if (to - from <= READ_WINDOW) return zlib.crc32(await this.#pack.read(from, to - from));
    let crc = 0;
    await this.#pack.eachChunk(from, to, (chunk) => {
      crc = zlib.crc32(chunk, crc);
    });
    return crc;
  }

  /** Resolves deltas until none makes progress: a ref-delta may name a base that a later delta makes. */
  async #resolveDeltas(pending: Entry[]): Promise<void> {
    let left = pending;
    while (left.length > 0) {
      const next: Entry[] = [];
      for (const entry of left) {
        const outcome = await this.#resolve(entry);
        if (outcome === 'later') next.push(entry);
        await this.#breathe();
      }
      if (next.length === left.length) {
        const missing = next[0]?.header.baseOid;
        throw new Error(
          `pack: ${next.length} deltas name bases that are not in the cache (${missing ?? 'a base'})`,
        );
      }
      left = next;
    }
  }

  /**
   * Hashes a delta's object. The chain from the delta down to a base that is known (cached, whole, or outside the
   * pack) is collected first and applied upwards, so only one base, one delta and one result are held at a time.
   */
  async #resolve(entry: Entry): Promise<'done' | 'skipped' | 'later'> {
    if (entry.oid !== undefined) return 'done';
    if (entry.skipped) return 'skipped';
    const limit = this.#options.maxObjectBytes;
    const chain: Entry[] = [];
    let base: { type: number; data: Buffer } | undefined;
    let at: Entry | undefined = entry;
    while (at) {
      if (at.skipped || at.header.size > limit) return this.#skip(entry);
      const cached = this.#cache.get(at.offset);
      if (cached) {
        base = cached;
        break;
      }
      if (!isDelta(at.header.type)) {
        base = { type: at.header.type, data: (await this.#inflate(at)).data };
        break;
      }
      chain.push(at);
      const { resultSize, baseSize } = await this.#pack.deltaResultSize(at.offset + at.header.length);
      if (resultSize > limit || baseSize > limit) return this.#skip(entry);
      if (at.header.baseOffset !== undefined) {
        at = this.#byOffset.get(at.header.baseOffset);
        if (!at) throw new Error('pack: a delta names a base offset where no entry starts');
        continue;
      }
      const baseOid = at.header.baseOid as string;
      const inPack = this.#byOid.get(baseOid);
      if (inPack) {
        at = inPack;
        continue;
      }
      // Not (yet) made by another delta of the pack: a thin pack's base in the cache, or one to wait for.
      const outside = await this.#options.external(baseOid);
      if (!outside) return 'later';
      base = { type: outside.type, data: Buffer.from(outside.data) };
      at = undefined;
    }
    if (!base) throw new Error('pack: a delta chain without a base');
    for (let i = chain.length - 1; i >= 0; i--) {
      const link = chain[i] as Entry;
      const delta = (await this.#inflate(link)).data;
      const data = applyDelta(delta, base.data);
      base = { type: base.type, data };
      if (link.oid === undefined) {
        link.oid = createHash('sha1')
          .update(`${TYPE_NAMES[base.type]} ${data.length}\0`)
          .update(data)
          .digest('hex');
        this.#byOid.set(link.oid, link);
      }
      // Bases of more than one delta are common (a file changed twice): keep the small ones for a while.
      this.#remember(link.offset, base);
      await this.#breathe();
    }
    return 'done';
  }

  #skip(entry: Entry): 'skipped' {
    this.#skipped += 1;
    entry.skipped = true;
    return 'skipped';
  }

  async #inflate(entry: Entry): Promise<{ data: Buffer }> {
    return this.#pack.inflate(entry.offset + entry.header.length, entry.header.size);
  }

  #remember(offset: number, object: { type: number; data: Buffer }): void {
    if (object.data.length > CACHE_BYTES / 8) return;
    this.#cache.set(offset, object);
    this.#cached += object.data.length;
    for (const [key, value] of this.#cache) {
      if (this.#cached <= CACHE_BYTES) break;
      this.#cache.delete(key);
      this.#cached -= value.data.length;
    }
  }

  /** Lets the event loop run when this slice of work has taken long enough. */
  async #breathe(): Promise<void> {
    if (performance.now() - this.#sliceStart < SLICE_MS) return;
    await yieldToLoop();
    this.#sliceStart = performance.now();
  }
}
