// Reading a pack file piece by piece: positional reads through a small window, whole inflation of entries known
// to be small, and streaming inflation (in chunks, yielding to the event loop) of entries that are not, so that
// no reader of the cache ever holds a pack, or an object larger than the limit it was given, in memory.
import { open } from 'node:fs/promises';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import zlib from 'node:zlib';
import { inflateSizedInfo, inflateStart } from './inflate.ts';
import { OBJ_OFS_DELTA, OBJ_REF_DELTA, readDeltaSizes } from './pack-header.ts';

const READAHEAD = 128 * 1024;
const CHUNK = 64 * 1024;

export class PackReader {
  readonly path: string;
  readonly size: number;
  readonly #handle: Awaited<ReturnType<typeof open>>;
  readonly #readahead: number;
  #window = Buffer.alloc(0);
  #windowAt = 0;

  private constructor(
    path: string,
    handle: Awaited<ReturnType<typeof open>>,
    size: number,
    readahead: number,
  ) {
    this.path = path;
    this.#handle = handle;
    this.size = size;
    this.#readahead = readahead;
  }

  /** `readahead`: bytes read at least per read, kept for the next ones (small for a few random reads). */
  static async open(path: string, readahead = READAHEAD): Promise<PackReader> {
    const handle = await open(path, 'r');
    try {
      return new PackReader(path, handle, (await handle.stat()).size, readahead);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.#handle.close();
  }

  /** Up to `length` bytes from `position` (fewer at the end of the file); a view that the next read may reuse. */
  async read(position: number, length: number): Promise<Buffer> {
    const end = Math.min(position + length, this.size);
    if (position >= this.#windowAt && end <= this.#windowAt + this.#window.length) {
      return this.#window.subarray(position - this.#windowAt, end - this.#windowAt);
    }
    const want = Math.max(end - position, Math.min(this.#readahead, this.size - position));
    const buffer = Buffer.allocUnsafe(Math.max(want, 0));
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await this.#handle.read(
        buffer,
        filled,
        buffer.length - filled,
        position + filled,
      );
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    this.#window = buffer.subarray(0, filled);
    this.#windowAt = position;
    return this.#window.subarray(0, Math.min(end - position, filled));
  }

  /**
   * Inflates the zlib stream at `position` whose output is expected to be `size` bytes (held in memory: the
   * caller checked `size` against its limit). Returns the data and the compressed length.
   */
  async inflate(position: number, size: number): Promise<{ data: Buffer; consumed: number }> {
    // A stream is at most its data plus 5 bytes per 16 KiB stored block and zlib's 6; past that, or when the
    // stream is padded beyond the bound, the streaming path takes over.
    const bound = size + 5 * Math.ceil((size + 1) / 16_383) + 64;
    const input = await this.read(position, bound);
    try {
      const { buffer, consumed } = inflateSizedInfo(input, size);
      if (buffer.length !== size)
        throw new Error(`pack entry at ${position}: ${buffer.length} bytes, expected ${size}`);
      return { data: buffer, consumed };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'Z_BUF_ERROR') throw error;
    }
    const chunks: Buffer[] = [];
    let length = 0;
    const consumed = await this.stream(position, (chunk) => {
      length += chunk.length;
      if (length > size) throw new Error(`pack entry at ${position}: more than the ${size} bytes it claims`);
      chunks.push(chunk);
    });
    if (length !== size) throw new Error(`pack entry at ${position}: ${length} bytes, expected ${size}`);
    return { data: Buffer.concat(chunks, length), consumed };
  }

  /**
   * Inflates the zlib stream at `position` chunk by chunk, handing each piece of output to `onData` (which may
   * throw to stop) and keeping none; returns the compressed length. The event loop runs between chunks.
   */
  async stream(position: number, onData: (chunk: Buffer) => void): Promise<number> {
    const inflate = zlib.createInflate({ chunkSize: CHUNK });
    let ended = false;
    let failed: unknown;
    const finished = new Promise<void>((resolve, reject) => {
      inflate.on('data', (chunk: Buffer) => {
        if (failed !== undefined) return;
        try {
          onData(chunk);
        } catch (error) {
          failed = error;
          inflate.destroy();
          reject(error);
        }
      });
      inflate.on('end', () => {
        ended = true;
        resolve();
      });
      inflate.on('error', reject);
      inflate.on('close', () => {
        if (!ended) reject(failed ?? new Error(`pack entry at ${position}: truncated`));
      });
    });
    finished.catch(() => {});
    // One input buffer, read into again once zlib has taken the last (its write callback): a stream as large as
    // a pack then leaves no garbage of its own input behind.
    const input = Buffer.allocUnsafe(CHUNK);
    let at = position;
    while (!ended && failed === undefined && !inflate.destroyed) {
      const { bytesRead } = await this.#handle.read(input, 0, Math.min(CHUNK, this.size - at), at);
      if (bytesRead === 0) {
        inflate.end();
        break;
      }
      at += bytesRead;
      await new Promise<void>((resolve) => inflate.write(input.subarray(0, bytesRead), () => resolve()));
      await yieldToLoop();
    }
    await finished;
    return inflate.bytesWritten;
  }

  /** Calls `onChunk` with the bytes from `from` to `to`, piece by piece, in one reused buffer (valid during the call). */
  async eachChunk(from: number, to: number, onChunk: (chunk: Buffer) => void): Promise<void> {
    const buffer = Buffer.allocUnsafe(Math.min(Math.max(to - from, 0), 1024 * 1024));
    for (let at = from; at < to; ) {
      const { bytesRead } = await this.#handle.read(buffer, 0, Math.min(to - at, buffer.length), at);
      if (bytesRead === 0) throw new Error(`${this.path}: ends at ${at}, before ${to}`);
      onChunk(buffer.subarray(0, bytesRead));
      at += bytesRead;
    }
  }

  /**
   * The size of the object a delta entry makes, from the first bytes of its inflated data. Reads a few KiB of
   * compressed data whatever the entry holds.
   */
  async deltaResultSize(dataPosition: number): Promise<{ baseSize: number; resultSize: number }> {
    for (const length of [1024, 64 * 1024]) {
      const input = await this.read(dataPosition, length);
      let start: Buffer;
      try {
        start = inflateStart(input);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'Z_BUF_ERROR') continue;
        throw error;
      }
      const sizes = readDeltaSizes(start);
      if (sizes) return sizes;
      if (input.length < length) break;
    }
    throw new Error(`pack delta at ${dataPosition}: no size header`);
  }
}

/** Whether a pack entry type is a delta. */
export function isDelta(type: number): boolean {
  return type === OBJ_OFS_DELTA || type === OBJ_REF_DELTA;
}
