// The upload-pack response split on its way to isomorphic-git (pack-receive.ts): side-band pack data goes to a file,
// whatever the chunk boundaries the network makes, and everything else passes through unchanged; and deltas that
// reach outside their base or past their result are refused (delta.ts).
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { applyDelta } from '../../../src/sources/git/delta.ts';
import { PackReceiver } from '../../../src/sources/git/pack-receive.ts';

function pktLine(payload: Buffer | string): Buffer {
  const data = Buffer.from(payload);
  return Buffer.concat([Buffer.from((data.length + 4).toString(16).padStart(4, '0')), data]);
}

const band = (channel: number, data: Buffer) => pktLine(Buffer.concat([Buffer.from([channel]), data]));

async function* chunked(bytes: Buffer, cuts: number[]): AsyncGenerator<Uint8Array> {
  let at = 0;
  for (const cut of [...new Set(cuts.map((c) => c % bytes.length))].sort((a, b) => a - b)) {
    if (cut > at) yield bytes.subarray(at, cut);
    at = Math.max(at, cut);
  }
  yield bytes.subarray(at);
}

describe('PackReceiver', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  /** `response` through a receiver in chunks cut at `cuts`: what it passed on, and the pack it received. */
  async function receive(response: Buffer, cuts: number[]) {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-pack-receive-'));
    dirs.push(dir);
    const receiver = new PackReceiver(dir);
    const passed: Buffer[] = [];
    for await (const chunk of receiver.filter(chunked(response, cuts))) passed.push(Buffer.from(chunk));
    return { receiver, passed: Buffer.concat(passed), received: await receiver.finish() };
  }

  it('writes the side-band pack to its file and passes the rest through, whatever the chunks', async () => {
    const content = Buffer.concat([Buffer.from('PACK\0\0\0\x02\0\0\0\x01'), Buffer.alloc(3000, 7)]);
    const pack = Buffer.concat([content, createHash('sha1').update(content).digest()]);
    const negotiation = Buffer.concat([
      pktLine(`shallow ${'a'.repeat(40)}\n`),
      Buffer.from('0000'),
      pktLine('NAK\n'),
    ]);
    const progress = band(2, Buffer.from('Counting objects: 1, done.\n'));
    const response = Buffer.concat([
      negotiation,
      progress,
      band(1, pack.subarray(0, 1000)),
      band(1, pack.subarray(1000, 2500)),
      band(1, pack.subarray(2500)),
      Buffer.from('0000'),
    ]);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(), { maxLength: 12 }), async (cuts) => {
        const { receiver, passed, received } = await receive(response, cuts);
        expect(passed).toEqual(Buffer.concat([negotiation, progress, Buffer.from('0000')]));
        expect(received?.bytes).toBe(pack.length);
        expect(received?.sha).toBe(received?.trailer);
        expect(await readFile(receiver.path)).toEqual(pack);
        await receiver.discard();
      }),
      { numRuns: 40 },
    );
  });

  it('writes a pack larger than its write batch whole, from side-band packets cut into small chunks', async () => {
    // 1.3 MB in 65515-byte packets (git's side-band-64k), split into chunks of a few KiB as a socket delivers them.
    const content = Buffer.concat([Buffer.from('PACK\0\0\0\x02\0\0\0\x01'), randomBytes(1_300_000)]);
    const pack = Buffer.concat([content, createHash('sha1').update(content).digest()]);
    const packets: Buffer[] = [pktLine('NAK\n')];
    for (let at = 0; at < pack.length; at += 65515) {
      packets.push(band(1, pack.subarray(at, at + 65515)));
      if (at % (4 * 65515) === 0) packets.push(band(2, Buffer.from(`Receiving objects: ${at}\r`)));
    }
    packets.push(Buffer.from('0000'));
    const response = Buffer.concat(packets);
    const cuts = Array.from({ length: Math.ceil(response.length / 8197) }, (_, i) => i * 8197 + (i % 7));
    const { receiver, passed, received } = await receive(response, cuts);
    expect(received?.bytes).toBe(pack.length);
    expect(received?.sha).toBe(received?.trailer);
    expect(await readFile(receiver.path)).toEqual(pack);
    expect(passed.toString('latin1')).toMatch(/^0008NAK\n.*Receiving objects: 0\r.*0000$/s);
    await receiver.discard();
  });

  it('takes a pack sent without a side band, and says when there was none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-pack-receive-'));
    dirs.push(dir);
    const content = Buffer.concat([Buffer.from('PACK\0\0\0\x02\0\0\0\0')]);
    const pack = Buffer.concat([content, createHash('sha1').update(content).digest()]);
    const raw = new PackReceiver(dir);
    const passed: Buffer[] = [];
    for await (const chunk of raw.filter(chunked(Buffer.concat([pktLine('NAK\n'), pack]), [3, 9]))) {
      passed.push(Buffer.from(chunk));
    }
    expect(Buffer.concat(passed)).toEqual(pktLine('NAK\n'));
    expect(await raw.finish()).toMatchObject({ bytes: 32 });
    await raw.discard();

    const none = new PackReceiver(dir);
    for await (const _ of none.filter(chunked(pktLine('NAK\n'), []))) {
      // only the negotiation
    }
    expect(await none.finish()).toBeUndefined();
  });
});

describe('applyDelta', () => {
  // sizes: base 4, result 6; copy base[0..4) then insert "xy".
  const good = Buffer.from([4, 6, 0x80 | 0x01 | 0x10, 0, 4, 2, 0x78, 0x79]);

  it('applies copies and inserts', () => {
    expect(applyDelta(good, Buffer.from('abcd')).toString()).toBe('abcdxy');
  });

  it('refuses a wrong base, a copy outside the base, a result past its size and the reserved instruction', () => {
    expect(() => applyDelta(good, Buffer.from('abc'))).toThrow(/base is 3 bytes/);
    // copy base[2..6): past the end of a 4-byte base
    expect(() => applyDelta(Buffer.from([4, 4, 0x80 | 0x01 | 0x10, 2, 4]), Buffer.from('abcd'))).toThrow(
      /copy out of range/,
    );
    // a result of 2 bytes that inserts 3
    expect(() => applyDelta(Buffer.from([4, 2, 3, 0x61, 0x62, 0x63]), Buffer.from('abcd'))).toThrow(
      /insert out of range/,
    );
    // a result of 6 bytes that makes 4
    expect(() => applyDelta(Buffer.from([4, 6, 0x80 | 0x01 | 0x10, 0, 4]), Buffer.from('abcd'))).toThrow(
      /made 4 bytes, expected 6/,
    );
    expect(() => applyDelta(Buffer.from([4, 4, 0]), Buffer.from('abcd'))).toThrow(/reserved/);
  });
});
