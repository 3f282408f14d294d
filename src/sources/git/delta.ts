// Applying a Git delta (the data of an ofs-delta or ref-delta pack entry) to its base. Pure. The sizes at the
// delta's start are checked against the base and the result before anything is allocated, and every copy and
// insert is checked against both, so a crafted delta can neither read outside its base nor grow past its size.
import { readDeltaSizes } from './pack-header.ts';

export function applyDelta(delta: Uint8Array, base: Uint8Array): Buffer {
  const sizes = readDeltaSizes(delta);
  if (!sizes) throw new Error('delta: truncated size header');
  if (sizes.baseSize !== base.length) {
    throw new Error(`delta: base is ${base.length} bytes, the delta expects ${sizes.baseSize}`);
  }
  const out = Buffer.allocUnsafe(sizes.resultSize);
  let written = 0;
  let i = sizes.length;
  while (i < delta.length) {
    const op = delta[i++] as number;
    if (op & 0x80) {
      let offset = 0;
      let length = 0;
      for (let bit = 0; bit < 4; bit++) {
        if (op & (1 << bit)) offset += (delta[i++] ?? 0) * 2 ** (8 * bit);
      }
      for (let bit = 0; bit < 3; bit++) {
        if (op & (1 << (4 + bit))) length += (delta[i++] ?? 0) * 2 ** (8 * bit);
      }
      if (length === 0) length = 0x10000;
      if (offset + length > base.length || written + length > out.length)
        throw new Error('delta: copy out of range');
      out.set(base.subarray(offset, offset + length), written);
      written += length;
    } else if (op !== 0) {
      if (i + op > delta.length || written + op > out.length) throw new Error('delta: insert out of range');
      out.set(delta.subarray(i, i + op), written);
      written += op;
      i += op;
    } else {
      throw new Error('delta: reserved instruction 0');
    }
  }
  if (written !== out.length) throw new Error(`delta: made ${written} bytes, expected ${out.length}`);
  return out;
}
