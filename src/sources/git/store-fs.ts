// The file system isomorphic-git's fetch goes through: Node's fs with the cache's packs listed oldest first
// (pack-order.ts), since the fetch reads the objects it offers as `have`s and the shallow commits it is told of.
// Reads of objects themselves go through object-read.ts, which reads packs by offset instead.
import * as fs from 'node:fs';
import { packView } from './pack-order.ts';

type Promises = typeof fs.promises;

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
