// zlib inflation of Git objects with output buffers sized to what is expected. Node's inflateSync writes into a
// 16 KiB buffer by default and returns a slice of it, so each small object read (a tree, a 300-byte manifest) kept
// 16 KiB alive, and indexing a pack of 20,000 objects churned through a gigabyte of such buffers: glibc kept the
// fragmented heap they left (RSS 300 MiB at rest after a 20,000-file commit, 110 before it). An object's size is
// known from its header before it is inflated, so the buffer is made to fit it.
import zlib from 'node:zlib';

/** zlib's smallest output chunk. */
const MIN_CHUNK = 64;
/** Past this, output is written in chunks of this size and joined (large objects are rare and short-lived). */
const MAX_CHUNK = 64 * 1024;

function chunkFor(size: number): number {
  return Math.min(Math.max(size + 1, MIN_CHUNK), MAX_CHUNK);
}

/** The whole stream in `input`, expected to hold `size` bytes (at most `size` are produced). */
export function inflateSized(input: Buffer, size: number): Buffer {
  return zlib.inflateSync(input, { chunkSize: chunkFor(size), maxOutputLength: Math.max(size, 1) });
}

/** As inflateSized, with how many bytes of `input` the stream took. */
export function inflateSizedInfo(input: Buffer, size: number): { buffer: Buffer; consumed: number } {
  const { buffer, engine } = zlib.inflateSync(input, {
    info: true,
    chunkSize: chunkFor(size),
  }) as unknown as {
    buffer: Buffer;
    engine: { bytesWritten: number };
  };
  return { buffer, consumed: engine.bytesWritten };
}

/** The first bytes of a stream (a header's worth), from a prefix of it: what `input` inflates to so far. */
export function inflateStart(input: Buffer): Buffer {
  return zlib.inflateSync(input, { finishFlush: zlib.constants.Z_SYNC_FLUSH, chunkSize: 1024 });
}

/** A loose object's whole stream, whose size is not known before its header is read. */
export function inflateWhole(input: Buffer): Buffer {
  return zlib.inflateSync(input, { chunkSize: chunkFor(input.length * 4) });
}
