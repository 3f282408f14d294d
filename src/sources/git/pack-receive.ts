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

const BATCH_BYTES = 512 * 1024;

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
  readonly #batch = Buffer.allocUnsafe(BATCH_BYTES);
  #batched = 0;

  constructor(folder: string) {
    this.path = join(folder, `tmp_pack_${randomBytes(8).toString('hex')}`);
  }

  /**
   * The upload-pack response without its pack data, which is written to `path` meanwhile. The pack's bytes are
   * written from the chunks they arrive in, never copied or joined (each copy of a pack would be garbage as large
   * as the pack): a side-band packet cut by a chunk boundary is followed into the next chunks by its length.
   */
  async *filter(body: AsyncIterable<Uint8Array>): AsyncIterableIterator<Uint8Array> {
    let pending: Buffer = Buffer.alloc(0);
    let raw = false;
    // Bytes of the current side-band-1 packet still to come.
    let packLeft = 0;
    for await (const chunk of body) {
      let data = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (raw) {
        await this.#write(data);
        continue;
      }
      if (packLeft > 0) {
        const take = Math.min(packLeft, data.length);
        await this.#write(data.subarray(0, take));
        packLeft -= take;
        data = data.subarray(take);
        if (data.length === 0) continue;
      }
      pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
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
        if (length <= 4) {
          // A flush, delimiter or response-end packet (0000-0002), or an empty one.
          passed.push(pending.subarray(at, at + 4));
          at += 4;
          continue;
        }
        if (pending.length - at < 5) break;
        if (pending[at + 4] === 1) {
          const available = Math.min(length - 5, pending.length - at - 5);
          await this.#write(pending.subarray(at + 5, at + 5 + available));
          packLeft = length - 5 - available;
          at += 5 + available;
          continue;
        }
        if (pending.length - at < length) break;
        passed.push(pending.subarray(at, at + length));
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
    await this.#flush();
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

  /**
   * Takes pack bytes into the batch (one buffer, reused), written out when full: network chunks are a few KiB,
   * and a write each would slow the receive until the server's data queued up in memory.
   */
  async #write(data: Buffer): Promise<void> {
    for (let at = 0; at < data.length; ) {
      const taken = data.copy(this.#batch, this.#batched, at);
      this.#batched += taken;
      at += taken;
      if (this.#batched === this.#batch.length) await this.#flush();
    }
    this.#bytes += data.length;
  }

  /** Writes the batch, hashing all but the last 20 bytes seen (the trailer, once the pack ends). */
  async #flush(): Promise<void> {
    if (this.#batched === 0) return;
    const data = this.#batch.subarray(0, this.#batched);
    this.#handle ??= await open(this.path, 'wx', 0o644);
    if (data.length >= 20) {
      this.#hash.update(this.#tail);
      this.#hash.update(data.subarray(0, data.length - 20));
      this.#tail = Buffer.from(data.subarray(data.length - 20));
    } else {
      const joined = Buffer.concat([this.#tail, data]);
      const keep = Math.min(20, joined.length);
      this.#hash.update(joined.subarray(0, joined.length - keep));
      this.#tail = Buffer.from(joined.subarray(joined.length - keep));
    }
    await this.#handle.write(data);
    this.#batched = 0;
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
