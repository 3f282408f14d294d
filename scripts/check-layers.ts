// The layers of src/, lowest first, and the check `npm run lint` runs: a module imports only from its own layer or
// a lower one (static imports and exports, type-only ones too, and dynamic `import()`), and no two folders import
// each other, directly or round a longer cycle, at any depth (a folder and its own subfolders aside: they are one). A new folder must be given its place here. docs/architecture.md says why this order.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { stronglyConnected } from './strongly-connected.ts';

/** Lowest first. `base` is the modules directly in src/ but the contract; `contract` is src/contract.ts. */
export const LAYERS = [
  'base',
  'yaml',
  'http',
  'render',
  'stability',
  'kube',
  'config',
  'contract',
  'sources',
  'report',
  'sync',
  'server',
  'shard',
  'agent',
  'cli',
] as const;

export interface SourceFile {
  /** Relative to src/, with `/`. */
  path: string;
  text: string;
}

const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*)'(\.{1,2}\/[^']+)'/g;

/** The layer of a module (a path relative to src/). */
export function layerOf(path: string): string {
  const parts = path.split('/');
  if (parts.length === 1) return parts[0] === 'contract.ts' ? 'contract' : 'base';
  return parts[0] as string;
}

/** The folder a module is in, for cycles: the contract and the base modules each count as their own. */
function folderOf(path: string): string {
  const parts = path.split('/');
  if (parts.length === 1) return layerOf(path);
  return parts.slice(0, -1).join('/');
}

/** The relative imports of each file, resolved to paths relative to src/. */
function importsOf(file: SourceFile): string[] {
  const found: string[] = [];
  for (const match of file.text.matchAll(IMPORT)) {
    const target = join(dirname(file.path), match[1] as string).replaceAll('\\', '/');
    if (!target.startsWith('..')) found.push(target);
  }
  return found;
}

/** Every import from a lower layer to a higher one, and every cycle of folders: one line each. */
export function layerProblems(files: readonly SourceFile[]): string[] {
  const rank = new Map<string, number>(LAYERS.map((name, index) => [name, index]));
  const problems: string[] = [];
  const edges = new Map<string, Map<string, string>>();
  for (const file of files) {
    const from = layerOf(file.path);
    const fromRank = rank.get(from);
    if (fromRank === undefined) {
      problems.push(`src/${file.path}: the folder ${from}/ has no place in LAYERS (scripts/check-layers.ts)`);
      continue;
    }
    for (const target of importsOf(file)) {
      const to = layerOf(target);
      const toRank = rank.get(to);
      if (toRank !== undefined && toRank > fromRank)
        problems.push(`src/${file.path} imports src/${target}: ${from} is below ${to}`);
      const a = folderOf(file.path);
      const b = folderOf(target);
      // A folder holds its subfolders: a folder and one of its own subfolders may use each other.
      if (a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`)) continue;
      const out = edges.get(a) ?? new Map<string, string>();
      edges.set(a, out);
      if (!out.has(b)) out.set(b, file.path);
    }
  }
  for (const cycle of cycles(edges)) {
    const steps = cycle.map((folder, i) => {
      const next = cycle[(i + 1) % cycle.length] as string;
      return `${folder} -> ${next} (src/${edges.get(folder)?.get(next)})`;
    });
    problems.push(`folders import each other: ${steps.join(', ')}`);
  }
  return problems;
}

/** One cycle through each strongly connected set of folders (Tarjan's algorithm), in a readable order. */
function cycles(edges: ReadonlyMap<string, ReadonlyMap<string, string>>): string[][] {
  const sets = stronglyConnected([...edges.keys()].sort(), (v) => edges.get(v)?.keys() ?? []);
  // Within a set, a path from its first folder back to itself: the cycle a reader follows.
  return sets.map((set) => {
    const members = new Set(set);
    const start = [...set].sort()[0] as string;
    const previous = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const v = queue.shift() as string;
      for (const w of edges.get(v)?.keys() ?? []) {
        if (!members.has(w)) continue;
        if (w === start) {
          const path = [v];
          while (path[0] !== start) path.unshift(previous.get(path[0] as string) as string);
          return path;
        }
        if (!previous.has(w)) {
          previous.set(w, v);
          queue.push(w);
        }
      }
    }
    return [...set].sort();
  });
}

/** The .ts files under `root`, relative to it. */
export function sourceFiles(root: string): SourceFile[] {
  const files: SourceFile[] = [];
  const visit = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) visit(path);
      else if (name.endsWith('.ts'))
        files.push({ path: relative(root, path).replaceAll('\\', '/'), text: readFileSync(path, 'utf8') });
    }
  };
  visit(root);
  return files;
}

/**
 * JSON text is read only through src/json.ts (parseJson), which keeps JSON.parse from ever seeing a key that ends in
 * a backslash (a V8 bug then misreads later keys of the whole process). The status page's script runs in the
 * browser, not in the agent, and is passed over. Comments are not read.
 */
export function jsonProblems(files: readonly SourceFile[]): string[] {
  const problems: string[] = [];
  for (const file of files) {
    if (file.path === 'json.ts' || file.path === 'server/status/assets.ts') continue;
    file.text.split('\n').forEach((line, index) => {
      const code = line.replace(/\/\/.*$/, '');
      if (/\bJSON\.parse\b|\.json\(\)/.test(code))
        problems.push(`src/${file.path}:${index + 1}: JSON read without parseJson (src/json.ts)`);
    });
  }
  return problems;
}

/**
 * Signals are combined only through src/signals.ts (linkSignals), which detaches from a long-lived signal when the
 * operation ends: Node 22's AbortSignal.any keeps every composite reachable from its sources. Comments are not read.
 */
export function signalProblems(files: readonly SourceFile[]): string[] {
  const problems: string[] = [];
  for (const file of files) {
    file.text.split('\n').forEach((line, index) => {
      const code = line.replace(/\/\/.*$/, '');
      if (/\bAbortSignal\.any\b/.test(code))
        problems.push(
          `src/${file.path}:${index + 1}: AbortSignal.any: combine signals with linkSignals (src/signals.ts)`,
        );
    });
  }
  return problems;
}

if (import.meta.main) {
  const root = resolve(import.meta.dirname, '../src');
  const files = sourceFiles(root);
  const json = [...jsonProblems(files), ...signalProblems(files)];
  for (const problem of json) console.error(problem);
  if (json.length > 0) process.exitCode = 1;
  const problems = layerProblems(files);
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(`${problems.length} layer problem(s): see LAYERS in scripts/check-layers.ts`);
    process.exit(1);
  }
}
