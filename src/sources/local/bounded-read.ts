// A file mooring reads itself from a folder on disk (a chart's Chart.yaml, a kustomization, a manifest), read as a
// stream and never past a bound: its size as stat says it is no bound, since a symlink may lead to a device that
// never ends (`Chart.yaml -> /dev/zero`, committed to a pull request that CI renders) and a pipe has no size. A file
// found in a folder is read only if it is a regular file: a named pipe there would hold the open until some writer
// came, and a device never ends. What the user names on the command line may be a pipe (`<(...)` in a shell).
import { constants, createReadStream, type ReadStream } from 'node:fs';
import { open, readlink, realpath } from 'node:fs/promises';
import { sep } from 'node:path';

/** Past this, a small file mooring reads for itself (Chart.yaml, a kustomization) is refused. */
export const SMALL_FILE_BYTES = 4 * 1024 * 1024;

export class FileTooLargeError extends Error {
  readonly limit: number;
  constructor(path: string, limit: number) {
    super(`${path}: more than ${limit} bytes`);
    this.limit = limit;
  }
}

export class NotRegularFileError extends Error {
  constructor(path: string) {
    super(`${path}: not a regular file (a named pipe, socket or device)`);
  }
}

/** The file opened lies outside the folder it was read from (a link put in its place after the folder was checked). */
export class OutsideFolderError extends Error {
  constructor(path: string) {
    super(`${path}: leads outside its folder`);
  }
}

export interface BoundedReadOptions {
  /**
   * The real folder the file must lie in, checked on the file opened, not on its name: a file swapped for a link
   * between a check of the folder and this read is refused, not followed.
   */
  within?: string | undefined;
  /**
   * Read a pipe or a device too (still within the bound): for a path the user gave on the command line. Otherwise
   * anything but a regular file is a NotRegularFileError, found without waiting for a named pipe's writer.
   */
  anyKind?: boolean;
}

/** The text of `path`, read up to `maxBytes`; a FileTooLargeError past them (the rest is never read). */
export async function readBounded(
  path: string,
  maxBytes: number = SMALL_FILE_BYTES,
  options: BoundedReadOptions = {},
): Promise<string> {
  return (await readBoundedBytes(path, maxBytes, options)).toString('utf8');
}

/** readBounded's bytes, for a file that is not text (a key). */
export async function readBoundedBytes(
  path: string,
  maxBytes: number = SMALL_FILE_BYTES,
  options: BoundedReadOptions = {},
): Promise<Buffer> {
  const largest = Math.min(maxBytes + 1, 1024 * 1024);
  let stream: ReadStream;
  if (options.anyKind) stream = createReadStream(path, { highWaterMark: largest });
  else {
    // O_NONBLOCK: the open of a named pipe returns at once instead of waiting for a writer; a regular file reads the
    // same with it.
    const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    let size: number;
    try {
      const info = await handle.stat();
      if (!info.isFile()) throw new NotRegularFileError(path);
      size = info.size;
      if (options.within !== undefined) {
        // Where the open file is (Linux names it in /proc); elsewhere, where the name leads now.
        const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => realpath(path));
        const folder = options.within.endsWith(sep) ? options.within : `${options.within}${sep}`;
        if (!real.startsWith(folder)) throw new OutsideFolderError(path);
      }
    } catch (error) {
      await handle.close();
      throw error;
    }
    // Chunks the size the file says it has (and one byte, to see its end in the same read): a chart's eighty small
    // templates read with a chunk of 1 MiB each allocated 80 MiB, and the garbage collection it set off took more
    // time than the reads. The size only sizes the chunks; the bound is still counted on what is read.
    stream = handle.createReadStream({ highWaterMark: Math.max(1024, Math.min(size + 1, largest)) });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw new FileTooLargeError(path, maxBytes);
      chunks.push(chunk);
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks);
}
