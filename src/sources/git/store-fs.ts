// The file system isomorphic-git reads the cache's object store through, for one read-only operation (run under
// the cache's lock, so nothing writes meanwhile). isomorphic-git pays per object read for a directory listing
// of objects/pack, a failed open of the loose object path, a stat of the gitdir and, per API call, a probe
// `readFile()` without arguments whose Node error is costly. Memoizing listings and stats, answering loose-object
// probes from one listing of objects/, and failing the probe cheaply made reading 5,000 manifests about five
// times faster (bench/git-poll.ts). Never used for fetches: they write.
import * as fs from 'node:fs';
import { packView } from './pack-order.ts';

const NOT_FOUND = Object.assign(new Error('ENOENT: no such file or directory'), { code: 'ENOENT' });

type Promises = typeof fs.promises;

export function readOnlyStoreFs(gitdir: string): { promises: Promises } {
  const real = fs.promises;
  const listings = new Map<string, Promise<string[]>>();
  const stats = new Map<string, Promise<fs.Stats>>();
  const objects = `${gitdir}/objects/`;
  let looseFolders: Promise<Set<string>> | undefined;
  // Packs listed oldest first, under aliases (pack-order.ts): without it, some reads never end.
  const packs = packView();

  const memo = <T>(map: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> => {
    let value = map.get(key);
    if (!value) {
      value = load();
      map.set(key, value);
      value.catch(() => map.delete(key));
    }
    return value;
  };

  const readFile = async (given: unknown, options?: unknown): Promise<unknown> => {
    if (typeof given !== 'string') throw NOT_FOUND;
    const path = packs.real(given);
    // `objects/ab/cdef…`: a loose object can only exist when its folder does.
    const folder = path.startsWith(objects) ? looseFolder(path.slice(objects.length)) : undefined;
    if (folder !== undefined) {
      looseFolders ??= real.readdir(`${gitdir}/objects`).then((names) => new Set(names));
      if (!(await looseFolders).has(folder)) throw NOT_FOUND;
    }
    return real.readFile(path, options as Parameters<Promises['readFile']>[1]);
  };
  const readdir = (path: unknown, options?: unknown): Promise<unknown> =>
    typeof path === 'string' && options === undefined
      ? memo(listings, path, () => packs.list(path) ?? real.readdir(path))
      : real.readdir(path as string, options as undefined);
  const stat = (path: unknown, options?: unknown): Promise<unknown> =>
    typeof path === 'string' && options === undefined
      ? memo(stats, path, () => real.stat(packs.real(path)))
      : real.stat(path as string, options as undefined);

  return { promises: { ...real, readFile, readdir, stat } as unknown as Promises };
}

/** Node's fs with the packs seen oldest first (pack-order.ts), for fetches: they read bases and write packs. */
export function packOrderedFs(): { promises: Promises } {
  const real = fs.promises;
  const packs = packView();
  const readdir = (path: unknown, options?: unknown): Promise<unknown> =>
    (typeof path === 'string' && options === undefined && packs.list(path)) ||
    real.readdir(path as string, options as undefined);
  const readFile = (path: unknown, options?: unknown): Promise<unknown> =>
    real.readFile(typeof path === 'string' ? packs.real(path) : (path as string), options as undefined);
  const stat = (path: unknown, options?: unknown): Promise<unknown> =>
    real.stat(typeof path === 'string' ? packs.real(path) : (path as string), options as undefined);
  return { promises: { ...real, readdir, readFile, stat } as unknown as Promises };
}

function looseFolder(rest: string): string | undefined {
  return /^[0-9a-f]{2}\/[0-9a-f]{38}$/.test(rest) ? rest.slice(0, 2) : undefined;
}
