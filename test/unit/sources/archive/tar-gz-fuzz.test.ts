// A fuzz pass of the tar extractor: archives built from a corpus of shapes (files, folders, long names, PAX
// headers, links) and then mutated (header fields, sizes, checksums recomputed or not, truncation, the gzip
// stream itself), under a fixed seed, a fixed number of inputs and a time bound as a safety stop. Every input must
// end in files inside the destination, within the limits, or in a StalledError that leaves nothing behind.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StalledError } from '../../../../src/errors.ts';
import { type ArchiveLimits, extractTarGz } from '../../../../src/sources/archive/tar-gz.ts';
import { random } from '../../seeded-random.ts';
import { type Spec, tar } from './ustar.ts';

const LIMITS: ArchiveLimits = { maxEntries: 20, maxBytes: 64 * 1024, maxFileBytes: 16 * 1024 };
const INPUTS = 400;
const TIME_BOUND_MS = 3000;

const CORPUS: Spec[][] = [
  [
    { name: 'chart/', type: '5' },
    { name: 'chart/Chart.yaml', body: 'name: web\nversion: 1.0.0\n' },
    { name: 'chart/templates/deploy.yaml', body: 'kind: Deployment\n'.repeat(20) },
  ],
  [
    { name: '././@LongLink', type: 'L', body: `${'d/'.repeat(70)}f.yaml\0` },
    { name: 'd/'.repeat(50), body: 'x' },
  ],
  [
    { name: 'PaxHeaders.0/x', type: 'x', body: '30 path=pax/long/name.yaml\n' },
    { name: 'short', body: 'y' },
  ],
  [
    { name: 'a', body: 'z' },
    { name: 'link', type: '2', linkname: '../../etc' },
  ],
  [
    { name: 'big', body: Buffer.alloc(9000, 1) },
    { name: 'dir/', type: '5' },
    { name: 'dir/x', body: '' },
  ],
];

/** A header's checksum written again, so that a mutation of its fields reaches the checks past the checksum. */
function resum(archive: Buffer, at: number): void {
  const block = archive.subarray(at, at + 512);
  if (block.length < 512) return;
  block.fill(' ', 148, 156);
  const sum = block.reduce((total, byte) => total + byte, 0);
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
}

const FIELDS = [
  [0, 100], // name
  [124, 12], // size
  [156, 1], // type
  [157, 100], // link name
  [345, 155], // prefix
] as const;
const VALUES = [
  '../',
  '/',
  '..',
  '\0',
  '7',
  '5',
  '2',
  'x',
  'L',
  '77777777777',
  '\x80',
  '/etc/passwd',
  'a/../../b',
  '',
];

function mutate(specs: Spec[], next: () => number): Buffer {
  const plain = Buffer.from(tar(specs));
  const blocks = Math.floor(plain.length / 512);
  const steps = 1 + Math.floor(next() * 4);
  for (let i = 0; i < steps; i++) {
    const at = Math.floor(next() * blocks) * 512;
    const [offset, width] = FIELDS[Math.floor(next() * FIELDS.length)] ?? [0, 100];
    const value = VALUES[Math.floor(next() * VALUES.length)] ?? '';
    plain.write(
      value.padEnd(Math.min(width, value.length + Math.floor(next() * 3)), '\0'),
      at + offset,
      width,
      'latin1',
    );
    if (next() < 0.8) resum(plain, at);
    if (next() < 0.2) plain[Math.floor(next() * plain.length)] = Math.floor(next() * 256);
  }
  const cut = next() < 0.15 ? Math.floor(next() * plain.length) : plain.length;
  const gz = gzipSync(plain.subarray(0, cut));
  if (next() < 0.1) gz[Math.floor(next() * gz.length)] = Math.floor(next() * 256);
  return gz;
}

/** What is under a folder: only regular files and folders may be there. */
async function filesUnder(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    expect(entry.isFile() || entry.isDirectory(), entry.name).toBe(true);
    if (!entry.isFile()) continue;
    files++;
    bytes += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return { files, bytes };
}

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'mooring-tar-fuzz-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('extractTarGz, fuzzed', () => {
  it('ends every mutated archive in files within the folder and the limits, or in a StalledError', async () => {
    const next = random(35_4);
    const started = Date.now();
    const outcomes = { extracted: 0, refused: 0 };
    for (let i = 0; i < INPUTS && Date.now() - started < TIME_BOUND_MS; i++) {
      const archive = mutate(CORPUS[i % CORPUS.length] ?? [], next);
      const box = join(work, String(i));
      const dest = join(box, 'out');
      let result: { files: string[]; bytes: number } | undefined;
      try {
        result = await extractTarGz(archive, dest, LIMITS, 'fuzz.tgz');
      } catch (error) {
        if (!(error instanceof StalledError))
          throw new Error(`unexpected ${String(error)} for input ${i}`, { cause: error });
      }
      if (result) {
        outcomes.extracted++;
        const found = await filesUnder(dest);
        // Folders a path implies are not entries; files are.
        expect(found.files).toBeLessThanOrEqual(LIMITS.maxEntries);
        expect(found.files).toBe(result.files.length);
        expect(found.bytes).toBe(result.bytes);
        expect(result.bytes).toBeLessThanOrEqual(LIMITS.maxBytes);
      } else {
        outcomes.refused++;
        expect(existsSync(dest)).toBe(false);
      }
      // Nothing was written beside the destination.
      if (existsSync(box)) expect(await readdir(box)).toEqual(existsSync(dest) ? ['out'] : []);
    }
    if (process.env.FUZZ_REPORT) console.log(outcomes);
    expect(outcomes.extracted).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  }, 30_000);
});
