// A file mooring reads itself from a folder on disk (a chart's Chart.yaml, a kustomization, a manifest), read as a
// stream and never past a bound: its size as stat says it is no bound, since a symlink may lead to a device that
// never ends (`Chart.yaml -> /dev/zero`, committed to a pull request that CI renders) and a pipe has no size.
import { createReadStream } from 'node:fs';

/** Past this, a small file mooring reads for itself (Chart.yaml, a kustomization) is refused. */
export const SMALL_FILE_BYTES = 4 * 1024 * 1024;

export class FileTooLargeError extends Error {
  readonly limit: number;
  constructor(path: string, limit: number) {
    super(`${path}: more than ${limit} bytes`);
    this.limit = limit;
  }
}

/** The text of `path`, read up to `maxBytes`; a FileTooLargeError past them (the rest is never read). */
export async function readBounded(path: string, maxBytes: number = SMALL_FILE_BYTES): Promise<string> {
  const stream = createReadStream(path, { highWaterMark: Math.min(maxBytes + 1, 1024 * 1024) });
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
  return Buffer.concat(chunks).toString('utf8');
}
