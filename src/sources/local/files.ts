// Reading manifest files from local paths: files as given, folders walked (sorted, hidden entries skipped) for
// .yaml, .yml and .json, and `-` for standard input (as kubectl's `-f -`), named `<stdin>` in messages. Bounded
// by file size and count; a symlink that leads outside its root is refused. Standard input is a stream of documents
// (`helm template … | mooring deploy -f -`), as a tool's output: bounded whole by the tool output bound and held to
// the file size limit one document at a time (render/parse.ts).
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { StalledError } from '../../errors.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { overLimit, sizeOverLimit } from '../../render/size-limits.ts';
import { FileTooLargeError, NotRegularFileError, OutsideFolderError, readBounded } from './bounded-read.ts';

const MANIFEST = /\.(ya?ml|json)$/i;

export interface ReadLimits {
  maxFileBytes: number;
  maxFiles: number;
  /** All of standard input (render.toolMaxOutputBytes). */
  maxStdinBytes: number;
}

export const DEFAULT_READ_LIMITS: ReadLimits = {
  maxFileBytes: 4 * 1024 * 1024,
  maxFiles: 10_000,
  maxStdinBytes: 32 * 1024 * 1024,
};

/** The path that stands for standard input, and the name its manifests carry in messages. */
export const STDIN_PATH = '-';
export const STDIN_NAME = '<stdin>';

export interface ReadSources {
  /** What `-` reads: the process's standard input unless given. */
  stdin?: AsyncIterable<Uint8Array | string>;
}

export async function readManifestFiles(
  paths: readonly string[],
  limits = DEFAULT_READ_LIMITS,
  sources: ReadSources = {},
): Promise<ManifestFile[]> {
  if (paths.filter((p) => p === STDIN_PATH).length > 1) {
    throw new StalledError(`"${STDIN_PATH}" (standard input) may be given only once`);
  }
  const files: ManifestFile[] = [];
  for (const path of paths) {
    if (path === STDIN_PATH) {
      files.push(await readStdin(sources.stdin ?? process.stdin, limits));
      continue;
    }
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(path);
    } catch {
      throw new StalledError('no such file or folder', { subject: { describe: path } });
    }
    if (info.isDirectory()) {
      const root = await realpath(path);
      await walk(path, root, files, limits, new Set([root]));
    } else {
      // Named on the command line: a pipe is read too (a shell's `<(...)`).
      files.push(await readOne(path, limits, true));
    }
  }
  return files;
}

/** `walked`: the real folders read so far; one reached again through a symlink (a loop among them) is read once. */
async function walk(
  dir: string,
  root: string,
  files: ManifestFile[],
  limits: ReadLimits,
  walked: Set<string>,
): Promise<void> {
  const entries = (await readdir(dir)).filter((name) => !name.startsWith('.')).sort();
  for (const name of entries) {
    const path = join(dir, name);
    const link = await lstat(path);
    let real: string | undefined;
    if (link.isSymbolicLink()) {
      real = await realpath(path).catch(() => undefined);
      if (!real) throw new StalledError('symlink leads nowhere', { subject: { describe: path } });
      if (real !== root && !real.startsWith(root + sep)) {
        throw new StalledError(`symlink leads outside ${relative(process.cwd(), root) || '.'}`, {
          subject: { describe: path },
        });
      }
    }
    const info = await stat(path);
    if (info.isDirectory()) {
      real ??= await realpath(path);
      if (walked.has(real)) continue;
      walked.add(real);
      await walk(path, root, files, limits, walked);
    } else if (MANIFEST.test(name)) {
      if (files.length >= limits.maxFiles) {
        throw new StalledError(`more than ${limits.maxFiles} manifest files`, {
          subject: { describe: resolve(dir) },
        });
      }
      files.push(await readOne(path, limits, false, root));
    }
  }
}

async function readOne(
  path: string,
  limits: ReadLimits,
  anyKind = false,
  within?: string,
): Promise<ManifestFile> {
  const info = await stat(path);
  if (info.size > limits.maxFileBytes) {
    throw new StalledError(`file ${sizeOverLimit(info.size, 'maxFileBytes', limits.maxFileBytes)}`, {
      subject: { describe: path },
    });
  }
  // Read as a stream and never past the bound: a size of 0 may be a pipe or a device (bounded-read.ts).
  try {
    return { path, text: await readBounded(path, limits.maxFileBytes, { anyKind, within }) };
  } catch (error) {
    if (error instanceof OutsideFolderError)
      throw new StalledError(`symlink leads outside ${relative(process.cwd(), within ?? '') || '.'}`, {
        subject: { describe: path },
      });
    if (error instanceof NotRegularFileError)
      throw new StalledError('not a regular file (a named pipe, socket or device)', {
        subject: { describe: path },
      });
    if (!(error instanceof FileTooLargeError)) throw error;
    throw new StalledError(`file is ${overLimit('maxFileBytes', limits.maxFileBytes)}`, {
      subject: { describe: path },
    });
  }
}

/** Standard input as one stream of documents, read until its end but never past its bound. */
async function readStdin(
  input: AsyncIterable<Uint8Array | string>,
  limits: ReadLimits,
): Promise<ManifestFile> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk);
    size += bytes.length;
    if (size > limits.maxStdinBytes) {
      // Not read to its end: its whole size is not known.
      throw new StalledError(`input is ${overLimit('toolMaxOutputBytes', limits.maxStdinBytes)}`, {
        subject: { describe: STDIN_NAME },
      });
    }
    chunks.push(bytes);
  }
  return { path: STDIN_NAME, text: Buffer.concat(chunks).toString('utf8'), perDocument: true };
}
