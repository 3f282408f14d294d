// SOPS files that a build tool reads from disk (a kustomization's resources and generator files, a chart's values
// files): kustomize and helm cannot decrypt them, and decrypting their output is too late (the MAC covers values
// the build changes, such as a namespace or labels). So the folders a build reads are copied into a private
// temporary folder (mode 0700), the SOPS files in the copy are decrypted there, and the tool builds the copy.
// The user's files are never written; the copy is removed after the build. A file that cannot be decrypted
// fails the build naming the file as the user knows it. Nothing is copied when no file of the folders is
// encrypted (the tool then builds the folders where they lie).
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { redactableValues } from '../../render/redact.ts';
import { readBounded } from '../local/bounded-read.ts';
import { copiedBytes, copyBudget, inside, MAX_CHECKED_ENTRIES, walkLinked } from '../local/symlinks.ts';
import { decryptFiles, type IdentitySource, isSopsText } from './decrypt.ts';

const MANIFEST = /\.(ya?ml|json)$/i;
const MAX_FILE_BYTES = 4 * 1024 * 1024;

/** A folder (or file) on disk, and how messages name it. */
export interface Place {
  disk: string;
  label: string;
}

/**
 * The real folder a place's files must lie in: `bound` (the repository) when the place lies in it, else the place
 * itself (a values file the user named on the command line, outside any repository, is the user's own choice).
 */
async function boundOf(place: Place, bound: string | undefined): Promise<string | undefined> {
  const real = await realpath(place.disk).catch(() => undefined);
  if (real === undefined) return undefined;
  if (bound !== undefined && inside(real, bound)) return bound;
  const info = await stat(real).catch(() => undefined);
  return info?.isDirectory() ? real : dirname(real);
}

/**
 * The real folder links must stay in: the repository, or outside any (a CLI path with no Git work tree above it) the
 * deepest folder holding every place, so that the folders of one build may link to each other as they do in place.
 */
async function boundaryOf(
  places: readonly Place[],
  boundary: string | undefined,
): Promise<string | undefined> {
  const folder = boundary ?? (places.length > 0 ? commonFolder(places.map((p) => p.disk)) : undefined);
  return folder === undefined ? undefined : realpath(folder).catch(() => undefined);
}

/**
 * The SOPS files (YAML or JSON with a top-level `sops:` block) under the places, folders walked and symlinks
 * followed as the build tool follows them; `boundary` is the repository the links of a place in it must stay in.
 */
export async function sopsFilesUnder(places: readonly Place[], boundary?: string): Promise<Place[]> {
  const found: Place[] = [];
  const seen = new Set<string>();
  const budget = { entries: MAX_CHECKED_ENTRIES };
  const bound = await boundaryOf(places, boundary);
  for (const place of places) {
    const within = await boundOf(place, bound);
    await walkLinked(place, {
      bound: within,
      nowhere: 'skip', // the tool says so
      budget,
      file: async (file, info) => {
        if (!MANIFEST.test(file.disk) || seen.has(file.disk)) return;
        seen.add(file.disk);
        if (!info.isFile() || info.size > MAX_FILE_BYTES) return;
        // Read from the file opened, which must lie where the walk found it (not a link swapped in since).
        const text = await readBounded(file.disk, MAX_FILE_BYTES, { within }).catch(() => '');
        if (isSopsText(text)) found.push(file);
      },
    });
  }
  return found;
}

/** The deepest folder holding every path (absolute paths). */
function commonFolder(paths: readonly string[]): string {
  let common = resolve(paths[0] ?? '.');
  for (const p of paths.slice(1)) {
    const abs = resolve(p);
    while (common !== dirname(common) && abs !== common && !abs.startsWith(common + sep)) {
      common = dirname(common);
    }
  }
  return common;
}

export interface Staged {
  /** Where a path on disk (one under the staged places) lies in the copy. */
  at(disk: string): string;
  /** Turns the copy's paths in a tool's message back into the user's. */
  clean(text: string): string;
  /**
   * The values decrypted into the copy (render/redact.ts's redactableValues: strings and numbers of 4 characters
   * or more, the lines of multi-line ones), for the runner to redact from what the tool prints.
   */
  readonly secrets: readonly string[];
  remove(): Promise<void>;
}

/**
 * Decrypted copies not yet removed: an exit that skips their `remove` (a command ended by Ctrl-C or SIGTERM through
 * process.exit, src/cli/last-resort.ts) removes them on its way out, so no plaintext stays on disk.
 */
const undeleted = new Set<string>();
let exitHook = false;
function removedAtExit(copy: string): void {
  undeleted.add(copy);
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const folder of undeleted) rmSync(folder, { recursive: true, force: true });
  });
}

/**
 * Copies the places (folders or files) into a private temporary folder, keeping their layout relative to each
 * other, and decrypts the SOPS files among them there. A symlink is copied as what it leads to (a file's bytes, a
 * folder's files), as the tool would have read it: the copy holds no link back to the user's folders. `treeRoot` is
 * the folder the places' labels are relative to ('' for paths on disk as given); `boundary` is the repository the
 * links of a place in it must stay in (sopsFilesUnder's).
 */
export async function stageDecrypted(
  places: readonly Place[],
  encrypted: readonly Place[],
  identities: IdentitySource,
  treeRoot = '',
  boundary?: string,
): Promise<Staged> {
  const root = commonFolder(places.map((p) => p.disk));
  // Messages name files as the user does: under the repository (a checkout's root) or the working folder.
  const rootLabel = relative(treeRoot === '' ? process.cwd() : resolve(treeRoot), root)
    .split(sep)
    .join('/');
  const copy = await mkdtemp(join(tmpdir(), 'mooring-sops-'));
  removedAtExit(copy);
  const at = (disk: string) => join(copy, relative(root, resolve(disk)));
  const secrets: string[] = [];
  const staged: Staged = {
    secrets,
    at,
    clean: (text) =>
      text
        .split(`${copy}${sep}`)
        .join(rootLabel ? `${rootLabel}/` : '')
        .split(copy)
        .join(rootLabel || '.'),
    remove: async () => {
      await rm(copy, { recursive: true, force: true });
      undeleted.delete(copy);
    },
  };
  try {
    const budget = { entries: MAX_CHECKED_ENTRIES };
    const bytes = copyBudget();
    const secret = new Set(encrypted.map((file) => resolve(file.disk)));
    const bound = await boundaryOf(places, boundary);
    for (const place of places) {
      const within = await boundOf(place, bound);
      await walkLinked(place, {
        bound: within,
        nowhere: 'skip',
        budget,
        file: async (file) => {
          if (secret.has(resolve(file.disk))) return; // written decrypted below, readable only by us
          const target = at(file.disk);
          await mkdir(dirname(target), { recursive: true, mode: 0o700 });
          await writeFile(target, await copiedBytes(file.disk, within ?? root, file.label, bytes), {
            mode: 0o600,
          });
        },
      });
    }
    const loaded = typeof identities === 'function' ? await identities() : identities;
    for (const file of encrypted) {
      const [plain] = await decryptFiles(
        [
          {
            path: file.label,
            text: await readBounded(file.disk, MAX_FILE_BYTES, { within: await boundOf(file, bound) }),
          },
        ],
        loaded,
      );
      await mkdir(dirname(at(file.disk)), { recursive: true, mode: 0o700 });
      await writeFile(at(file.disk), plain?.text ?? '', { mode: 0o600 });
      for (const value of plain?.secrets ?? []) secrets.push(value);
    }
    // Distinct and longest first across the files (a long list is not spread into one call).
    const all = redactableValues(secrets);
    secrets.length = 0;
    for (const value of all) secrets.push(value);
    return staged;
  } catch (error) {
    await staged.remove();
    throw error;
  }
}
