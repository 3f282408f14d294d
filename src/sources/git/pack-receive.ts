// Receiving a fetch's pack onto disk as it arrives. isomorphic-git would gather the whole pack in memory, then
// inflate every object in it to index it; instead the upload-pack response is split here, on its way from the
// transport to isomorphic-git: the pack data (side-band channel 1, or a raw pack after the negotiation) goes to
// a temporary file in objects/pack, hashed as it is written, and isomorphic-git is left the negotiation lines
// (ACK/NAK, shallow, unshallow), progress and errors. It sees an empty pack and writes nothing; the caller then
// indexes the file in bounded memory (pack-index.ts) and installs it under its checksum (installPack).
import { createHash, randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

type Handle = Awaited<ReturnType<typeof open>>;

export interface ReceivedPack {
  path: string;
  /** The SHA-1 of the pack's content, which its trailer must repeat. */
  sha: string;
  trailer: string;
  bytes: number;
}

export class PackReceiver {
  readonly path: string;
  #handle: Handle | undefined;
  readonly #hash = createHash('sha1');
  // The last 20 bytes seen: the trailer, once the pack ends, and not part of what it checksums.
  #tail = Buffer.alloc(0);
  #bytes = 0;

  constructor(folder: string) {
    this.path = join(folder, `tmp_pack_${randomBytes(8).toString('hex')}`);
  }

  /** The upload-pack response without its pack data, which is written to `path` meanwhile. */
  async *filter(body: AsyncIterable<Uint8Array>): AsyncIterableIterator<Uint8Array> {
    let pending = Buffer.alloc(0);
    let raw = false;
    for await (const chunk of body) {
      if (raw) {
        await this.#write(Buffer.from(chunk));
        continue;
      }
      pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
      const passed: Buffer[] = [];
      let at = 0;
      while (pending.length - at >= 4) {
        const head = pending.toString('latin1', at, at + 4);
        if (head === 'PACK') {
          // No side band: the rest of the response is the pack.
          raw = true;
          break;
        }
        const length = Number.parseInt(head, 16);
        if (!/^[0-9a-f]{4}$/i.test(head)) throw new Error('upload-pack: not a pkt-line response');
        if (length < 4) {
          passed.push(pending.subarray(at, at + 4));
          at += 4;
          continue;
        }
        if (pending.length - at < length) break;
        const payload = pending.subarray(at + 4, at + length);
        if (payload[0] === 1) await this.#write(payload.subarray(1));
        else passed.push(pending.subarray(at, at + length));
        at += length;
      }
      if (raw) {
        await this.#write(pending.subarray(at));
        pending = Buffer.alloc(0);
      } else {
        pending = pending.subarray(at);
      }
      if (passed.length > 0) yield Buffer.concat(passed);
    }
    if (pending.length > 0) yield pending;
  }

  /** The pack received, closed; undefined when the response held none. */
  async finish(): Promise<ReceivedPack | undefined> {
    const handle = this.#handle;
    this.#handle = undefined;
    if (!handle) return undefined;
    await handle.close();
    if (this.#bytes < 32) throw new Error(`upload-pack: a pack of ${this.#bytes} bytes`);
    return {
      path: this.path,
      sha: this.#hash.digest('hex'),
      trailer: this.#tail.toString('hex'),
      bytes: this.#bytes,
    };
  }

  /** Removes the temporary file, whatever happened. */
  async discard(): Promise<void> {
    await this.#handle?.close().catch(() => {});
    this.#handle = undefined;
    await rm(this.path, { force: true });
  }

  async #write(data: Buffer): Promise<void> {
    if (data.length === 0) return;
    this.#handle ??= await open(this.path, 'wx', 0o644);
    const joined = this.#tail.length === 0 ? data : Buffer.concat([this.#tail, data]);
    const keep = Math.min(20, joined.length);
    this.#hash.update(joined.subarray(0, joined.length - keep));
    this.#tail = Buffer.from(joined.subarray(joined.length - keep));
    await this.#handle.write(data);
    this.#bytes += data.length;
  }
}

/** Moves a received pack and its index into place as `pack-<sha>`: the pack first, so no index ever lacks it. */
export async function installPack(folder: string, pack: string, idx: Buffer, sha: string): Promise<void> {
  const base = join(folder, `pack-${sha}`);
  const tmpIdx = `${pack}.idx`;
  const handle = await open(tmpIdx, 'w', 0o644);
  try {
    await handle.writeFile(idx);
  } finally {
    await handle.close();
  }
  await rename(pack, `${base}.pack`);
  await rename(tmpIdx, `${base}.idx`);
}
