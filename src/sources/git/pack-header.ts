// The sizes Git writes in front of compressed data, read without inflating what follows. Pure.
//
// - A pack entry starts with its type and inflated size: a first byte `MTTTSSSS` (M: more bytes follow, T: type,
//   S: the size's low 4 bits), then 7 bits per byte, least significant first. An ofs-delta then names its base
//   by a backwards distance (7 bits per byte, most significant first, +1 per continuation), a ref-delta by its
//   base's 20-byte id.
// - The inflated data of a delta starts with the base's size and the result's size, 7 bits per byte, least
//   significant first: the size of the object a delta makes is known from its first few inflated bytes.
// - A loose object inflates to `<type> <size>\0<content>`.
// Sizes are JavaScript numbers (exact to 2^53); a header that claims more is refused rather than misread.

export const OBJ_COMMIT = 1;
export const OBJ_TREE = 2;
export const OBJ_BLOB = 3;
export const OBJ_TAG = 4;
export const OBJ_OFS_DELTA = 6;
export const OBJ_REF_DELTA = 7;

export const TYPE_NAMES: Readonly<Record<number, 'commit' | 'tree' | 'blob' | 'tag'>> = {
  [OBJ_COMMIT]: 'commit',
  [OBJ_TREE]: 'tree',
  [OBJ_BLOB]: 'blob',
  [OBJ_TAG]: 'tag',
};

export type ObjectTypeName = 'commit' | 'tree' | 'blob' | 'tag';

export const TYPE_CODES: Readonly<Record<ObjectTypeName, number>> = {
  commit: OBJ_COMMIT,
  tree: OBJ_TREE,
  blob: OBJ_BLOB,
  tag: OBJ_TAG,
};

export interface EntryHeader {
  /** 1-4 for whole objects, 6 (ofs-delta) or 7 (ref-delta). */
  type: number;
  /** The inflated size of the entry's data: the object's size, or for a delta the size of the delta itself. */
  size: number;
  /** Bytes from the entry's start to its compressed data. */
  length: number;
  /** An ofs-delta's base: the offset of its entry in the same pack. */
  baseOffset?: number;
  /** A ref-delta's base: its object id. */
  baseOid?: string;
}

/** More header bytes than any valid entry has (a 64-bit size, a 64-bit offset and a 20-byte id). */
export const MAX_ENTRY_HEADER = 10 + 10 + 20;

const MAX_SIZE = Number.MAX_SAFE_INTEGER;

/**
 * The header of the pack entry at `at` (its offset in the pack is `offset`, for ofs-delta bases); undefined when
 * `bytes` ends before the header does. Throws on an unknown type or an impossible size.
 */
export function readEntryHeader(bytes: Uint8Array, at = 0, offset = at): EntryHeader | undefined {
  let i = at;
  if (i >= bytes.length) return undefined;
  let byte = bytes[i++] as number;
  const type = (byte >> 4) & 7;
  let size = byte & 15;
  let scale = 16;
  while (byte & 0x80) {
    if (i >= bytes.length) return undefined;
    byte = bytes[i++] as number;
    size += (byte & 0x7f) * scale;
    scale *= 128;
    if (size > MAX_SIZE) throw new Error('pack entry size out of range');
  }
  if (type === OBJ_OFS_DELTA) {
    if (i >= bytes.length) return undefined;
    byte = bytes[i++] as number;
    let distance = byte & 0x7f;
    while (byte & 0x80) {
      if (i >= bytes.length) return undefined;
      byte = bytes[i++] as number;
      distance = (distance + 1) * 128 + (byte & 0x7f);
      if (distance > MAX_SIZE) throw new Error('pack delta offset out of range');
    }
    if (distance === 0 || distance > offset)
      throw new Error(`pack entry at ${offset}: base offset before the pack`);
    return { type, size, length: i - at, baseOffset: offset - distance };
  }
  if (type === OBJ_REF_DELTA) {
    if (i + 20 > bytes.length) return undefined;
    const baseOid = Buffer.from(bytes.buffer, bytes.byteOffset + i, 20).toString('hex');
    return { type, size, length: i + 20 - at, baseOid };
  }
  if (!(type in TYPE_NAMES)) throw new Error(`pack entry at ${offset}: unknown object type ${type}`);
  return { type, size, length: i - at };
}

export interface DeltaSizes {
  baseSize: number;
  resultSize: number;
  /** Bytes the two sizes take at the start of the delta. */
  length: number;
}

/** The base and result sizes at the start of a delta's inflated data; undefined when `delta` ends too soon. */
export function readDeltaSizes(delta: Uint8Array): DeltaSizes | undefined {
  const base = varint(delta, 0);
  if (!base) return undefined;
  const result = varint(delta, base.next);
  if (!result) return undefined;
  return { baseSize: base.value, resultSize: result.value, length: result.next };
}

/** The type and size of a loose object from the start of its inflated data; undefined when it ends too soon. */
export function readLooseHeader(
  start: Uint8Array,
): { type: ObjectTypeName; size: number; length: number } | undefined {
  const nul = start.indexOf(0);
  if (nul === -1) {
    if (start.length > 32) throw new Error('not a loose object header');
    return undefined;
  }
  const match = /^(commit|tree|blob|tag) (0|[1-9][0-9]{0,15})$/.exec(
    Buffer.from(start.subarray(0, nul)).toString('latin1'),
  );
  if (!match) throw new Error('not a loose object header');
  const size = Number(match[2]);
  if (size > MAX_SIZE) throw new Error('loose object size out of range');
  return { type: match[1] as ObjectTypeName, size, length: nul + 1 };
}

/** The header of a whole-object pack entry of `type` and `size` (the encoding readEntryHeader reads). */
export function encodeEntryHeader(type: number, size: number): Buffer {
  const bytes: number[] = [];
  let rest = Math.floor(size / 16);
  let byte = (type << 4) | (size % 16);
  while (rest > 0) {
    bytes.push(byte | 0x80);
    byte = rest % 128;
    rest = Math.floor(rest / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}

function varint(bytes: Uint8Array, at: number): { value: number; next: number } | undefined {
  let value = 0;
  let scale = 1;
  let i = at;
  for (;;) {
    if (i >= bytes.length) return undefined;
    const byte = bytes[i++] as number;
    value += (byte & 0x7f) * scale;
    if (value > MAX_SIZE) throw new Error('delta size out of range');
    scale *= 128;
    if (!(byte & 0x80)) return { value, next: i };
  }
}
