// SOPS files that a build tool reads from disk (a kustomization's resources and generator files, a chart's values
// files): kustomize and helm cannot decrypt them, and decrypting their output is too late (the MAC covers values
// the build changes, such as a namespace or labels). So the folders a build reads are copied into a private
// temporary folder (mode 0700), the SOPS files in the copy are decrypted there, and the tool builds the copy.
// The user's files are never written; the copy is removed after the build. A file that cannot be decrypted
// fails the build naming the file as the user knows it. Nothing is copied when no file of the folders is
// encrypted (the tool then builds the folders where they lie).
import { rmSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { StalledError } from '../../errors.ts';
import { redactableValues } from '../../render/redact.ts';
import { readBounded } from '../local/bounded-read.ts';
import { copiedBytes } from '../local/symlinks.ts';
import { decryptFiles, type IdentitySource, isSopsText } from './decrypt.ts';

const MANIFEST = /\.(ya?ml|json)$/i;
const MAX_ENTRIES = 100_000;
const MAX_FILE_BYTES = 4 * 1024 * 1024;

/** A folder (or file) on disk, and how messages name it. */
export interface Place {
  disk: string;
  label: string;
}

async function walk(
  place: Place,
  visit: (file: Place) => Promise<void>,
  budget: { entries: number },
): Promise<void> {
  const info = await lstat(place.disk).catch(() => undefined);
  if (!info || info.isSymbolicLink()) return;
  if (info.isFile()) return visit(place);
  if (!info.isDirectory()) return;
  for (const name of (await readdir(place.disk)).sort()) {
    if (--budget.entries < 0)
      throw new StalledError(`more than ${MAX_ENTRIES} entries`, { subject: { describe: place.label } });
    await walk(
      { disk: join(place.disk, name), label: place.label === '.' ? name : `${place.label}/${name}` },
      visit,
      budget,
    );
  }
}

/** The SOPS files (YAML or JSON with a top-level `sops:` block) under the places, folders walked. */
export async function sopsFilesUnder(places: readonly Place[]): Promise<Place[]> {
  const found: Place[] = [];
  const seen = new Set<string>();
  const budget = { entries: MAX_ENTRIES };
  for (const place of places) {
    await walk(
      place,
      async (file) => {
        if (!MANIFEST.test(file.disk) || seen.has(file.disk)) return;
        seen.add(file.disk);
        const info = await lstat(file.disk);
        // A symlink is not read (it may lead to a device that never ends): it is passed on as it is.
        if (!info.isFile() || info.size > MAX_FILE_BYTES) return;
        if (isSopsText(await readBounded(file.disk, MAX_FILE_BYTES))) found.push(file);
      },
      budget,
    );
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
 * other, and decrypts the SOPS files among them there. Regular files only (symlinks are not followed).
 * `treeRoot` is the folder the places' labels are relative to ('' for paths on disk as given).
 */
export async function stageDecrypted(
  places: readonly Place[],
  encrypted: readonly Place[],
  identities: IdentitySource,
  treeRoot = '',
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
    const budget = { entries: MAX_ENTRIES };
    const secret = new Set(encrypted.map((file) => resolve(file.disk)));
    const within = await realpath(root);
    for (const place of places) {
      await walk(
        place,
        async (file) => {
          if (secret.has(resolve(file.disk))) return; // written decrypted below, readable only by us
          const target = at(file.disk);
          await mkdir(dirname(target), { recursive: true, mode: 0o700 });
          await writeFile(target, await copiedBytes(file.disk, within, file.label), { mode: 0o600 });
        },
        budget,
      );
    }
    const loaded = typeof identities === 'function' ? await identities() : identities;
    for (const file of encrypted) {
      const [plain] = await decryptFiles(
        [{ path: file.label, text: await readBounded(file.disk, MAX_FILE_BYTES) }],
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
