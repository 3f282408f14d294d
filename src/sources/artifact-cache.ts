// Downloaded artifacts (chart packages, manifest layers) kept on disk by digest, so that a re-render (a drift pass,
// a retry, a rollback) does not download again and a rollback works while the server is away. An entry is named by
// the kind of download and the digest the release records, and by the digest of its bytes, and is checked against
// the latter on every read: a changed or damaged file is dropped and fetched again. The kind is part of the name
// because one digest means different bytes to different kinds: an OCI chart's digest is its manifest's, whose
// layer is what is kept, while a chart index's digest is its package's own; an index that gives an OCI manifest's
// digest for a package (and serves that manifest as the package) must not stand in for that chart. The folder is
// bounded in bytes: past the bound the least recently used entries go.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The bound of the cache folder. */
export const ARTIFACT_CACHE_BYTES = 256 * 1024 * 1024;

const hex = (digest: string) => digest.replace(/^sha256:/, '');

/** What one digest is the digest of, for a kind of download: each kind's entries are its own. */
export type ArtifactKind = 'chart-oci' | 'chart-index' | 'oci';

const KINDS: readonly ArtifactKind[] = ['chart-oci', 'chart-index', 'oci'];
const entryPrefix = (kind: ArtifactKind, digest: string) => {
  if (!KINDS.includes(kind)) throw new Error(`unknown artifact kind ${kind}`);
  return `${kind}-${hex(digest)}.`;
};
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

export class ArtifactCache {
  readonly #dir: string;
  readonly #maxBytes: number;

  constructor(cacheDir: string | undefined, maxBytes = ARTIFACT_CACHE_BYTES) {
    this.#dir = join(cacheDir ?? join(tmpdir(), `mooring-${process.getuid?.() ?? 'user'}`), 'artifacts');
    this.#maxBytes = maxBytes;
  }

  /** The bytes kept for `digest` of `kind`, when they are there and still match. */
  async get(kind: ArtifactKind, digest: string): Promise<Buffer | undefined> {
    const prefix = entryPrefix(kind, digest);
    const names = await readdir(this.#dir).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.startsWith(prefix) && n.endsWith('.blob'))) {
      const path = join(this.#dir, name);
      const data = await readFile(path).catch(() => undefined);
      if (data && sha256(data) === name.slice(prefix.length, -'.blob'.length)) {
        const now = new Date();
        await utimes(path, now, now).catch(() => undefined);
        return data;
      }
      await rm(path, { force: true });
    }
    return undefined;
  }

  /** Keeps `data` (already checked against its digests) for `digest` of `kind`; a failure to keep it is no error. */
  async put(kind: ArtifactKind, digest: string, data: Buffer): Promise<void> {
    if (data.length > this.#maxBytes) return;
    try {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
      const name = `${entryPrefix(kind, digest)}${sha256(data)}.blob`;
      const partial = join(this.#dir, `.${name}.${process.pid}.${Date.now()}`);
      await writeFile(partial, data, { mode: 0o600 });
      await rename(partial, join(this.#dir, name));
      await this.#trim();
    } catch {
      // A read-only or full disk only costs a download next time.
    }
  }

  async #trim(): Promise<void> {
    const names = (await readdir(this.#dir)).filter((n) => n.endsWith('.blob') && !n.startsWith('.'));
    const entries = [];
    for (const name of names) {
      const info = await stat(join(this.#dir, name)).catch(() => undefined);
      if (info) entries.push({ name, size: info.size, used: info.mtimeMs });
    }
    let total = entries.reduce((sum, e) => sum + e.size, 0);
    for (const entry of entries.sort((a, b) => a.used - b.used)) {
      if (total <= this.#maxBytes) break;
      await rm(join(this.#dir, entry.name), { force: true });
      total -= entry.size;
    }
  }
}
