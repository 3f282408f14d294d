// Which files of a repository a deployment reads: manifest files (.yaml, .yml, .json) under its `paths`, minus
// its `exclude` patterns. Pure, on repository-relative paths with `/` separators.
//
// - A path is a folder (or file) anchored at the repository root (`apps/web`, `./apps`, `.` for all), or a
//   glob (`apps/*/prod`, `apps/**/deploy.yaml`). A glob that matches a folder selects the files under it.
// - Hidden files and folders (a segment starting with `.`) below a selected folder are skipped, as the local
//   source skips them: `.github/workflows/*.yml` are not manifests. Naming one explicitly selects it.
// - An exclude without `/` matches a file or folder name at any depth, as in .gitignore (`*.test.yaml`,
//   `charts`); with a `/` (or a leading `/`) it is anchored at the root. A matching folder excludes its files.
// - Not recursive (a deployment's `recursive: false`): a folder selects only the files directly in it, as
//   `kubectl apply -f DIR`; a glob selects the files it matches and those directly in the folders it matches.
import { posix } from 'node:path';
import { StalledError } from '../../errors.ts';

const MANIFEST = /\.(ya?ml|json)$/i;
const GLOB = /[*?[\]{}]/;

export function isManifestPath(path: string): boolean {
  return MANIFEST.test(path);
}

export interface PathFilter {
  /** Whether the file is selected by `paths` and not excluded (whatever its extension). */
  includes(path: string): boolean;
  /** Whether a folder may hold selected files: false lets a tree walk skip it. */
  mayContain(folder: string): boolean;
  /**
   * Every selected file is one of these paths or lies under one (`''`: anywhere): the literal part of each path
   * before its first glob. Lets a caller look only there (tree.ts `changesUnder`, `listFiles`) instead of asking about every
   * file.
   */
  readonly roots: readonly string[];
}

interface Pattern {
  text: string;
  glob: boolean;
  /** Segments before the first one with a glob character. */
  literal: string[];
}

export function createPathFilter(
  paths: readonly string[],
  exclude: readonly string[] = [],
  options: { recursive?: boolean } = {},
): PathFilter {
  const recursive = options.recursive ?? true;
  const selected = paths.map((p) => pattern(p, 'path'));
  const excluded = exclude.map((p) => pattern(p, 'exclude'));
  const anchoredExcludes = excluded.filter((p) => p.text.includes('/'));
  const nameExcludes = excluded.filter((p) => !p.text.includes('/'));

  const isExcluded = (segments: string[]): boolean => {
    for (let end = 1; end <= segments.length; end++) {
      const name = segments[end - 1] ?? '';
      if (nameExcludes.some((p) => matches(name, p))) return true;
      const prefix = segments.slice(0, end).join('/');
      if (anchoredExcludes.some((p) => matches(prefix, p))) return true;
    }
    return false;
  };

  // A glob is not normalized, and its matching folds `//` and `/./` away: its root ends before such a segment.
  const roots = selected.map((p) => {
    const end = p.literal.findIndex((segment) => segment === '' || segment === '.');
    return (end === -1 ? p.literal : p.literal.slice(0, end)).join('/');
  });
  return {
    includes(path) {
      const segments = path.split('/');
      return selected.some((p) => selects(p, segments, recursive)) && !isExcluded(segments);
    },
    mayContain(folder) {
      if (folder === '') return true;
      const segments = folder.split('/');
      // The paths first: in a monorepo most folders lie on the way to no path, and the excludes cost more.
      return selected.some((p) => reaches(p, segments)) && !isExcluded(segments);
    },
    roots: roots.includes('') ? [''] : roots,
  };
}

function pattern(raw: string, what: 'path' | 'exclude'): Pattern {
  let text = raw
    .trim()
    .replace(/^(\.\/)+/, '')
    .replace(/^\/+/, '')
    .replace(/\/+$/, '');
  if (text === '.' || text === '') text = '';
  else if (!GLOB.test(text)) text = posix.normalize(text);
  const segments = text === '' ? [] : text.split('/');
  if (segments.some((s) => s === '..')) {
    throw new StalledError(`${what} "${raw}" leads outside the repository`);
  }
  const firstGlob = segments.findIndex((s) => GLOB.test(s));
  const glob = firstGlob !== -1;
  return { text, glob, literal: glob ? segments.slice(0, firstGlob) : segments };
}

function matches(candidate: string, p: Pattern): boolean {
  return p.glob ? posix.matchesGlob(candidate, p.text) : candidate === p.text;
}

/** The file (as segments) is the path, under it, or under a folder the glob matches, with nothing hidden below. */
function selects(p: Pattern, segments: string[], recursive: boolean): boolean {
  if (!p.glob) {
    const depth = p.literal.length;
    if (!p.literal.every((s, i) => segments[i] === s) || segments.length < depth) return false;
    if (!recursive && segments.length > depth + 1) return false;
    return !hidden(segments.slice(depth));
  }
  const last = recursive ? 1 : Math.max(1, segments.length - 1);
  for (let end = segments.length; end >= last; end--) {
    if (posix.matchesGlob(segments.slice(0, end).join('/'), p.text) && !hidden(segments.slice(end)))
      return true;
  }
  return false;
}

/** The folder lies on the way to what the pattern selects, or inside it. */
function reaches(p: Pattern, segments: string[]): boolean {
  const shared = Math.min(p.literal.length, segments.length);
  for (let i = 0; i < shared; i++) if (p.literal[i] !== segments[i]) return false;
  if (segments.length <= p.literal.length) return true;
  // Beyond the literal part a glob may match at any depth (`includes` decides per file); a plain path selects
  // everything below it that is not hidden.
  return p.glob || !hidden(segments.slice(shared));
}

function hidden(segments: string[]): boolean {
  return segments.some((s) => s.startsWith('.'));
}

/**
 * The paths that select none of `files` (repository-relative paths of the manifest files selected): a path that
 * names nothing is a mistake to report, not an empty deployment to apply.
 */
export function unmatchedPaths(
  paths: readonly string[],
  exclude: readonly string[],
  files: readonly string[],
): string[] {
  return paths.filter((path) => {
    const filter = createPathFilter([path], exclude);
    return !files.some((file) => filter.includes(file));
  });
}
