// Unpacks a gzip'd tar archive from an untrusted place (a Helm chart .tgz from a chart repository, the layer of a
// `flux push artifact`) into a fresh folder. The archive's author chooses every name, type and size, so only
// regular files and folders come out, inside dest, with fixed modes, and every bound is checked on the declared
// sizes before any content is read. The inflated stream is counted as it arrives, so a gzip bomb stops at the
// bound instead of inflating whole in memory. On any failure, what was written is removed.
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { errorMessage, StalledError } from '../../errors.ts';

export interface ArchiveLimits {
  /** Most entries (files and folders). */
  maxEntries: number;
  /** Most bytes of all files together, uncompressed. */
  maxBytes: number;
  /** Largest single file. */
  maxFileBytes: number;
}

const BLOCK = 512;
const MAX_PATH_BYTES = 4096;
/** Long names and PAX headers are read whole; no honest one comes near this. */
const MAX_META_BYTES = 1024 * 1024;
/** What the inflated stream may hold beside file contents: a header and padding per entry, plus slack. */
const OVERHEAD_PER_ENTRY = 1024;
const OVERHEAD_SLACK = 1024 * 1024;
const REFUSED_TYPES: Record<string, string> = {
  '1': 'a hard link',
  '2': 'a symbolic link',
  '3': 'a character device',
  '4': 'a block device',
  '6': 'a FIFO',
};

const CLASHES = new Set(['EEXIST', 'ENOTDIR', 'EISDIR']);

type Refuse = (path: string, why: string) => never;

type Reader = ReturnType<typeof reader>;

/** Pulls the inflated stream piece by piece, counting every byte against the bound as it arrives. */
function reader(chunks: AsyncIterator<Buffer>, bound: number, tooBig: () => Error) {
  let pending: Buffer = Buffer.alloc(0);
  let inflated = 0;
  const self = {
    position: 0,
    /** Passes the next `n` bytes to `sink`; false if the stream ends first. */
    async consume(n: number, sink?: (piece: Buffer) => Promise<void>): Promise<boolean> {
      for (let left = n; left > 0; ) {
        while (pending.length === 0) {
          const next = await chunks.next();
          if (next.done) return false;
          inflated += next.value.length;
          if (inflated > bound) throw tooBig();
          pending = next.value;
        }
        const piece = pending.subarray(0, Math.min(left, pending.length));
        pending = pending.subarray(piece.length);
        self.position += piece.length;
        left -= piece.length;
        if (sink) await sink(piece);
      }
      return true;
    },
    /** Exactly `n` bytes, or undefined if the stream ends first. */
    async read(n: number): Promise<Buffer | undefined> {
      const pieces: Buffer[] = [];
      const whole = await self.consume(n, async (piece) => void pieces.push(piece));
      return whole ? Buffer.concat(pieces) : undefined;
    },
  };
  return self;
}

export async function extractTarGz(
  archive: Buffer | string,
  dest: string,
  limits: ArchiveLimits,
  label: string,
): Promise<{ files: string[]; bytes: number }> {
  const subject = { describe: label };
  const invalid = (why: string) => new StalledError(`not a valid tar.gz archive: ${why}`, { subject });
  const refuse: Refuse = (path, why) => {
    throw new StalledError(`entry ${shown(path)} ${why}`, { subject });
  };
  const created = await prepare(dest);
  const gunzip = createGunzip();
  // Errors of the source (a missing file) and of zlib both reach us through gunzip's iterator.
  const source = typeof archive === 'string' ? createReadStream(archive) : Readable.from([archive]);
  pipeline(source, gunzip, () => {});
  const bound = limits.maxBytes + limits.maxEntries * OVERHEAD_PER_ENTRY + OVERHEAD_SLACK;
  const tooBig = () => new StalledError(`unpacks to more than ${bound} bytes`, { subject });
  const input = reader(gunzip[Symbol.asyncIterator](), bound, tooBig);
  try {
    return await unpack(input, dest, limits, invalid, refuse);
  } catch (error) {
    await clear(dest, created);
    throw codeOf(error)?.startsWith('Z_') ? invalid(errorMessage(error)) : error;
  } finally {
    gunzip.destroy();
  }
}

async function unpack(
  input: Reader,
  dest: string,
  limits: ArchiveLimits,
  invalid: (why: string) => Error,
  refuse: Refuse,
): Promise<{ files: string[]; bytes: number }> {
  const files: string[] = [];
  const seen = new Set<string>();
  let entries = 0;
  let bytes = 0;
  let longName: string | undefined;
  let pax = new Map<string, string>();
  for (;;) {
    const block = await input.read(BLOCK);
    if (!block) throw invalid('it ends before the end-of-archive marker');
    if (isZero(block)) break;
    if (!checksumOk(block)) throw invalid(`bad header checksum at byte ${input.position - BLOCK}`);
    const type = String.fromCharCode(block[156] ?? 0);
    const meta = type === 'L' || type === 'K' || type === 'x' || type === 'g';
    const paxSize = meta ? undefined : pax.get('size');
    if (paxSize !== undefined && !/^\d+$/.test(paxSize)) throw invalid(`bad PAX size ${shown(paxSize)}`);
    const size = paxSize === undefined ? numeric(block, 124, 12) : Number(paxSize);
    if (!Number.isSafeInteger(size)) throw invalid(`bad size in header at byte ${input.position - BLOCK}`);
    if (meta) {
      if (size > MAX_META_BYTES) throw invalid(`an extended header of ${size} bytes`);
      const data = await input.read(size);
      if (!data || !(await input.consume(padding(size)))) throw invalid('it ends inside an extended header');
      if (type === 'L') longName = text(data, 0, data.length);
      if (type === 'x') pax = paxRecords(data, invalid);
      continue; // 'K' (a long link target) only ever precedes a link, which is refused; 'g' sets nothing we use
    }
    const raw = pax.get('path') ?? longName ?? headerName(block);
    pax = new Map();
    longName = undefined;
    const folder = type === '5';
    const path = cleanPath(raw, folder, refuse);
    const refused = REFUSED_TYPES[type];
    if (refused) refuse(path, `is ${refused}`);
    if (!folder && type !== '0' && type !== '\0')
      refuse(path, `has unsupported type ${JSON.stringify(type)}`);
    if (seen.has(path)) refuse(path, 'appears twice');
    seen.add(path);
    entries += 1;
    if (entries > limits.maxEntries)
      refuse(path, `is past the limit of ${limits.maxEntries} entries (the source's maxFiles)`);
    if (folder) {
      if (size !== 0) refuse(path, `is a folder with ${size} bytes of content`);
      // The folder `./` is dest itself.
      if (path) await place(path, refuse, () => mkdir(join(dest, path), { recursive: true, mode: 0o755 }));
      continue;
    }
    if (size > limits.maxFileBytes)
      refuse(
        path,
        `is ${size} bytes, more than the ${limits.maxFileBytes} allowed for one file (the source's maxFileBytes)`,
      );
    bytes += size;
    if (bytes > limits.maxBytes)
      refuse(
        path,
        `brings the files to ${bytes} bytes, more than the ${limits.maxBytes} allowed in all (the source's maxExtractedBytes)`,
      );
    const target = join(dest, path);
    await place(path, refuse, () => mkdir(dirname(target), { recursive: true, mode: 0o755 }));
    // 'wx' (O_CREAT | O_EXCL) never opens what is already there, a symbolic link least of all.
    const handle = await place(path, refuse, () => open(target, 'wx', 0o644));
    try {
      const write = async (piece: Buffer) => {
        for (let at = 0; at < piece.length; ) at += (await handle.write(piece, at)).bytesWritten;
      };
      const whole = (await input.consume(size, write)) && (await input.consume(padding(size)));
      if (!whole) throw invalid(`it ends inside entry ${shown(path)}`);
    } finally {
      await handle.close();
    }
    files.push(path);
  }
  // The first zero block ends the archive; a second one, or nothing, must follow.
  const second = await input.read(BLOCK);
  if (second && !isZero(second)) throw invalid(`a lone zero block at byte ${input.position - 2 * BLOCK}`);
  if (longName !== undefined || pax.size > 0) throw invalid('an extended header with no entry after it');
  // The rest is padding. Read it to the end, within the bound, so that gzip's own checksum is verified.
  await input.consume(Number.POSITIVE_INFINITY);
  return { files: files.sort(), bytes };
}

/** The entry's path inside dest, '/'-separated; '' for the archive's root folder (`./`). */
function cleanPath(raw: string, folder: boolean, refuse: Refuse): string {
  if (raw.includes('\0')) refuse(raw, 'contains NUL');
  if (raw.includes('\\')) refuse(raw, 'contains a backslash');
  if (Buffer.byteLength(raw) > MAX_PATH_BYTES) refuse(raw, `is longer than ${MAX_PATH_BYTES} bytes`);
  if (raw.startsWith('/')) refuse(raw, 'is an absolute path');
  let path = raw;
  while (path.startsWith('./')) path = path.slice(2);
  if (folder) path = path.replace(/\/+$/, '');
  if (path === '' || path === '.') return folder && raw !== '' ? '' : refuse(raw, 'has no name');
  const segments = path.split('/');
  if (segments.includes('..')) refuse(raw, 'leaves the archive');
  if (segments.some((s) => s === '' || s === '.')) refuse(raw, 'is not a plain path');
  return path;
}

/** Turns a clash with an earlier entry (a file where a folder goes, or the reverse) into a refusal. */
async function place<T>(path: string, refuse: Refuse, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (error) {
    if (CLASHES.has(codeOf(error) ?? '')) refuse(path, 'conflicts with an earlier entry');
    throw error;
  }
}

/** Creates dest, or checks that it is an empty folder; true if created, so that a failure removes it whole. */
async function prepare(dest: string): Promise<boolean> {
  const existing = await readdir(dest).catch((error: unknown) => {
    if (codeOf(error) === 'ENOENT') return undefined;
    throw error;
  });
  if (existing === undefined) {
    await mkdir(dest, { recursive: true, mode: 0o755 });
    return true;
  }
  if (existing.length > 0) throw new Error(`${dest} is not empty: archives are extracted into new folders`);
  return false;
}

async function clear(dest: string, created: boolean): Promise<void> {
  if (created) return rm(dest, { recursive: true, force: true });
  for (const name of await readdir(dest)) await rm(join(dest, name), { recursive: true, force: true });
}

function headerName(block: Buffer): string {
  const name = text(block, 0, 100);
  // Only POSIX ustar has the prefix field; GNU's format keeps other things at that offset.
  const prefix = block.toString('latin1', 257, 263) === 'ustar\0' ? text(block, 345, 155) : '';
  return prefix ? `${prefix}/${name}` : name;
}

function text(block: Buffer, start: number, length: number): string {
  const field = block.subarray(start, start + length);
  const end = field.indexOf(0);
  return field.subarray(0, end < 0 ? field.length : end).toString('utf8');
}

/** An octal field, or GNU's base-256 form (first bit set) used for sizes past 8 GiB; NaN if neither. */
function numeric(block: Buffer, start: number, length: number): number {
  const field = block.subarray(start, start + length);
  const first = field[0] ?? 0;
  if (first & 0x80) {
    if (first === 0xff) return Number.NaN; // negative
    return field.subarray(1).reduce((n, byte) => n * 256 + byte, first & 0x7f);
  }
  const digits = text(block, start, length).trim();
  return /^[0-7]*$/.test(digits) ? Number.parseInt(digits || '0', 8) : Number.NaN;
}

/** Old writers summed signed bytes; both sums are accepted, as GNU tar does. */
function checksumOk(block: Buffer): boolean {
  const stored = numeric(block, 148, 8);
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const byte = i >= 148 && i < 156 ? 0x20 : (block[i] ?? 0);
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  return stored === unsigned || stored === signed;
}

/** PAX records: `<length> <key>=<value>\n`, the length counting the whole record. */
function paxRecords(data: Buffer, invalid: (why: string) => Error): Map<string, string> {
  const records = new Map<string, string>();
  for (let at = 0; at < data.length; ) {
    const space = data.indexOf(0x20, at);
    const digits = space < 0 ? '' : data.toString('latin1', at, space);
    const length = /^\d+$/.test(digits) ? Number(digits) : 0;
    const record = data.toString('utf8', space + 1, at + length - 1);
    const eq = record.indexOf('=');
    if (length <= space - at || at + length > data.length || data[at + length - 1] !== 0x0a || eq < 0) {
      throw invalid(`a bad PAX record at byte ${at} of an extended header`);
    }
    records.set(record.slice(0, eq), record.slice(eq + 1));
    at += length;
  }
  return records;
}

const padding = (size: number) => (BLOCK - (size % BLOCK)) % BLOCK;
const isZero = (block: Buffer) => block.every((byte) => byte === 0);

/** The archive's author chose the path: shortened, and quoted when it holds characters a message should not. */
function shown(path: string): string {
  const short = path.length > 200 ? `${path.slice(0, 200)}…` : path;
  const quoted = JSON.stringify(short);
  return short && quoted.slice(1, -1) === short ? short : quoted;
}

function codeOf(error: unknown): string | undefined {
  const code = error instanceof Error && 'code' in error ? error.code : undefined;
  return typeof code === 'string' ? code : undefined;
}
