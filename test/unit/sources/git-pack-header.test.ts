// Sizes read from Git's headers without inflating what follows: pack entry headers (whole objects, ofs-deltas,
// ref-deltas), the sizes at the start of a delta, and loose object headers. The packs are written by real git.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import {
  encodeEntryHeader,
  OBJ_BLOB,
  OBJ_COMMIT,
  OBJ_OFS_DELTA,
  OBJ_REF_DELTA,
  readDeltaSizes,
  readEntryHeader,
  readLooseHeader,
} from '../../../src/sources/git/pack-header.ts';
import { PackIdx } from '../../../src/sources/git/pack-idx.ts';

describe('readEntryHeader', () => {
  it.each([
    [OBJ_BLOB, 0],
    [OBJ_BLOB, 15],
    [OBJ_BLOB, 16],
    [OBJ_COMMIT, 2047],
    [OBJ_BLOB, 1024 ** 3],
    [OBJ_BLOB, 2 ** 40 + 12345],
  ])('reads type %i and size %i as encoded', (type, size) => {
    const header = encodeEntryHeader(type, size);
    expect(readEntryHeader(header)).toEqual({ type, size, length: header.length });
    // Cut short anywhere, it asks for more bytes instead of guessing.
    for (let cut = 0; cut < header.length; cut++)
      expect(readEntryHeader(header.subarray(0, cut))).toBeUndefined();
  });

  it('reads a 1 GiB blob as git encodes it', () => {
    // 2^30: type 3 and the low 4 bits (0) in the first byte, then 7-bit groups 0, 0, 0, 32 (2^26 = 32 * 2^21).
    expect(readEntryHeader(Buffer.from([0xb0, 0x80, 0x80, 0x80, 0x20]))).toEqual({
      type: OBJ_BLOB,
      size: 1024 ** 3,
      length: 5,
    });
  });

  it('reads an ofs-delta base as an absolute offset and a ref-delta base as an id', () => {
    // Distance 200 = (0x00 + 1) * 128 + 0x48 in git's offset encoding.
    const ofs = Buffer.from([(OBJ_OFS_DELTA << 4) | 5, 0x80, 0x48]);
    expect(readEntryHeader(ofs, 0, 1000)).toEqual({
      type: OBJ_OFS_DELTA,
      size: 5,
      length: 3,
      baseOffset: 800,
    });
    expect(() => readEntryHeader(ofs, 0, 100)).toThrow(/before the pack/);
    const oid = 'ab'.repeat(20);
    const ref = Buffer.concat([Buffer.from([(OBJ_REF_DELTA << 4) | 9]), Buffer.from(oid, 'hex')]);
    expect(readEntryHeader(ref)).toEqual({ type: OBJ_REF_DELTA, size: 9, length: 21, baseOid: oid });
    expect(readEntryHeader(ref.subarray(0, 20))).toBeUndefined();
  });

  it('refuses an unknown type and a size past 2^53', () => {
    expect(() => readEntryHeader(Buffer.from([0x50]))).toThrow(/unknown object type 5/);
    expect(() => readEntryHeader(Buffer.from([0xbf, ...Array(8).fill(0xff), 0x7f]))).toThrow(/out of range/);
  });
});

describe('readDeltaSizes and readLooseHeader', () => {
  it('reads the base and result sizes at the start of a delta', () => {
    // 1,000,000 = 0x0f4240: 7-bit groups 0x40, 0x04, 0x3d, least significant first.
    const delta = Buffer.from([0x0a, 0xc0, 0x84, 0x3d, 0x90]);
    expect(readDeltaSizes(delta)).toEqual({ baseSize: 10, resultSize: 1_000_000, length: 4 });
    expect(readDeltaSizes(delta.subarray(0, 3))).toBeUndefined();
  });

  it('reads a loose object header', () => {
    expect(readLooseHeader(Buffer.from('blob 1073741824\0rest'))).toEqual({
      type: 'blob',
      size: 1024 ** 3,
      length: 16,
    });
    expect(readLooseHeader(Buffer.from('tree 12'))).toBeUndefined();
    expect(() => readLooseHeader(Buffer.from('blob 012\0'))).toThrow(/not a loose object header/);
    expect(() => readLooseHeader(Buffer.from('chunk 1\0'))).toThrow(/not a loose object header/);
  });
});

describe('headers of packs and loose objects written by git', () => {
  const scratch: string[] = [];
  afterAll(async () => {
    for (const dir of scratch) await rm(dir, { recursive: true, force: true });
  });

  it('gives every object its size, deltas included, as git cat-file reports it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-pack-header-'));
    scratch.push(dir);
    const git = (args: string[], input?: string | Buffer) =>
      execFileSync('git', args, {
        cwd: dir,
        input,
        env: {
          ...process.env,
          GIT_DIR: join(dir, '.git'),
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
        },
      });
    git(['init', '--quiet']);
    // Versions of one file: git stores all but one as deltas against another.
    const oids: string[] = [];
    let text = Array.from({ length: 400 }, (_, i) => `line ${i}: some configuration value\n`).join('');
    for (let v = 0; v < 6; v++) {
      text = `${text}appended in version ${v}\n`.replace(`line ${v * 7}:`, `LINE ${v * 7}:`);
      oids.push(git(['hash-object', '-w', '--stdin'], text).toString().trim());
    }
    // With --delta-base-offset git names bases by offset (ofs-delta), without it by id (ref-delta).
    const kinds = new Set<number>();
    for (const [name, flags] of [
      ['ofs', ['--delta-base-offset']],
      ['ref', []],
    ] as const) {
      const args = ['pack-objects', '--window=10', '--depth=5', ...flags, join(dir, name)];
      const pack = git(args, `${oids.join('\n')}\n`)
        .toString()
        .trim();
      const bytes = await readFile(join(dir, `${name}-${pack}.pack`));
      const idx = new PackIdx(await readFile(join(dir, `${name}-${pack}.idx`)));
      expect(idx.find('0'.repeat(40))).toBeUndefined();
      for (const oid of oids) {
        const offset = idx.find(oid);
        if (offset === undefined) throw new Error(`${oid} not in the index`);
        const header = readEntryHeader(bytes, offset, offset);
        if (!header) throw new Error('no header');
        const expected = Number(git(['cat-file', '-s', oid]).toString().trim());
        kinds.add(header.type);
        if (header.type === OBJ_BLOB) {
          expect(header.size).toBe(expected);
          continue;
        }
        expect(header.type).toBe(name === 'ofs' ? OBJ_OFS_DELTA : OBJ_REF_DELTA);
        if (header.baseOid) expect(oids).toContain(header.baseOid);
        if (header.baseOffset !== undefined) expect(readEntryHeader(bytes, header.baseOffset)).toBeDefined();
        // The size of what the delta makes is in the first inflated bytes of its data.
        const start = offset + header.length;
        const prefix = zlib.inflateSync(bytes.subarray(start, start + 64), {
          finishFlush: zlib.constants.Z_SYNC_FLUSH,
        });
        expect(readDeltaSizes(prefix)?.resultSize).toBe(expected);
      }
    }
    expect([...kinds].sort()).toEqual([OBJ_BLOB, OBJ_OFS_DELTA, OBJ_REF_DELTA]);

    // A loose object's header, from its first bytes.
    const first = oids[0] as string;
    const loose = await readFile(join(dir, '.git/objects', first.slice(0, 2), first.slice(2)));
    const start = zlib.inflateSync(loose.subarray(0, 1024), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    expect(readLooseHeader(start)).toMatchObject({
      type: 'blob',
      size: Number(git(['cat-file', '-s', first])),
    });
  });
});
