// Version-2 pack indexes (`.idx`): written for the packs mooring indexes itself (pack-index.ts, compact.ts) and
// read to find where an object lies in a pack, so that its size can be read from the entry header before anything
// inflates it (object-size.ts). Layout: magic, version, a 256-entry fan-out of counts by first byte, the sorted
// ids, a CRC-32 per entry, a 31-bit offset per entry, the pack's checksum and the index's own SHA-1.
// isomorphic-git reads only 31-bit offsets, so a pack of 2 GiB or more cannot be indexed for it and is refused.

import { createHash } from 'node:crypto';
import { byCodeUnit, lowerBound } from '../../arrays.ts';

const IDX_MAGIC = 0xff744f63;
const HEADER = 8 + 256 * 4;
export const MAX_PACK_OFFSET = 0x7fffffff;

export interface IndexEntry {
  oid: string;
  offset: number;
  /** CRC-32 of the entry's bytes in the pack (header and compressed data). */
  crc: number;
}

/** The index of a pack whose entries are `entries` (in any order) and whose trailing checksum is `packSha`. */
export function encodeIndex(entries: readonly IndexEntry[], packSha: Buffer): Buffer {
  const sorted = [...entries].sort((a, b) => byCodeUnit(a.oid, b.oid));
  const count = sorted.length;
  const out = Buffer.alloc(HEADER + count * (20 + 4 + 4) + 40);
  out.writeUInt32BE(IDX_MAGIC, 0);
  out.writeUInt32BE(2, 4);
  const fanout = new Array<number>(256).fill(0);
  for (const e of sorted) {
    const first = Number.parseInt(e.oid.slice(0, 2), 16);
    fanout[first] = (fanout[first] ?? 0) + 1;
  }
  let running = 0;
  for (let i = 0; i < 256; i++) {
    running += fanout[i] ?? 0;
    out.writeUInt32BE(running, 8 + i * 4);
  }
  const crcs = HEADER + count * 20;
  const offsets = crcs + count * 4;
  sorted.forEach((e, i) => {
    out.write(e.oid, HEADER + i * 20, 20, 'hex');
    out.writeUInt32BE(e.crc >>> 0, crcs + i * 4);
    if (e.offset > MAX_PACK_OFFSET) throw new Error('pack offsets over 2 GiB are not supported');
    out.writeUInt32BE(e.offset, offsets + i * 4);
  });
  const trailer = offsets + count * 4;
  packSha.copy(out, trailer, 0, 20);
  createHash('sha1')
    .update(out.subarray(0, trailer + 20))
    .digest()
    .copy(out, trailer + 20);
  return out;
}

/** A parsed version-2 pack index: object ids and where each lies in its pack. */
export class PackIdx {
  readonly count: number;
  readonly #idx: Buffer;

  constructor(idx: Buffer) {
    if (idx.length < HEADER || idx.readUInt32BE(0) !== IDX_MAGIC || idx.readUInt32BE(4) !== 2) {
      throw new Error('not a version-2 pack index');
    }
    this.count = idx.readUInt32BE(8 + 255 * 4);
    if (idx.length < HEADER + this.count * 28 + 40) throw new Error('truncated pack index');
    this.#idx = idx;
  }

  /** The offset of `oid` in the pack, undefined when the pack does not hold it. */
  find(oid: string): number | undefined {
    const wanted = Buffer.from(oid, 'hex');
    if (wanted.length !== 20) return undefined;
    const first = wanted[0] as number;
    const high = this.#idx.readUInt32BE(8 + first * 4);
    const oidOf = (i: number) => this.#idx.subarray(HEADER + i * 20, HEADER + (i + 1) * 20);
    const i = lowerBound(
      first === 0 ? 0 : this.#idx.readUInt32BE(8 + (first - 1) * 4),
      high,
      (mid) => Buffer.compare(oidOf(mid), wanted) < 0,
    );
    return i < high && oidOf(i).equals(wanted) ? this.offsetAt(i) : undefined;
  }

  oidAt(i: number): string {
    return this.#idx.toString('hex', HEADER + i * 20, HEADER + (i + 1) * 20);
  }

  offsetAt(i: number): number {
    const small = this.#idx.readUInt32BE(HEADER + this.count * 24 + i * 4);
    if (!(small & 0x80000000)) return small;
    // The 64-bit offset table follows the 31-bit one (git writes it for packs over 2 GiB).
    const large = HEADER + this.count * 28 + (small & 0x7fffffff) * 8;
    return this.#idx.readUInt32BE(large) * 2 ** 32 + this.#idx.readUInt32BE(large + 4);
  }

  /** Every object id, in index (sorted) order. */
  oids(): string[] {
    return Array.from({ length: this.count }, (_, i) => this.oidAt(i));
  }
}
