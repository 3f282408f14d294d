// Folder globs of a deployment set's Git-directories generator (docs/deployment-sets.md): `*` matches within one
// folder name, `**` any number of folders (none included), `?` one character; everything else is itself. A glob is
// matched against a whole folder path (`apps/web`), never a file.
import type { FolderSelection } from './tree.ts';

/** A glob as a regular expression of the whole path; every character but the wildcards is escaped. */
export function globExpression(glob: string): RegExp {
  const segments = glob.split('/').filter((s) => s !== '' && s !== '.');
  let source = '';
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '**') {
      source += last ? '.*' : '(?:[^/]+/)*';
      return;
    }
    source += segment
      .split('')
      .map((c) => (c === '*' ? '[^/]*' : c === '?' ? '[^/]' : c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')))
      .join('');
    if (!last) source += '/';
  });
  return new RegExp(`^${source}$`);
}

/** The folders `include` matches and `exclude` does not; folders deeper than any include may reach are not read. */
export function folderSelection(include: readonly string[], exclude: readonly string[]): FolderSelection {
  const included = include.map(globExpression);
  const excluded = exclude.map(globExpression);
  const depths = include.map((g) =>
    g.split('/').includes('**')
      ? Number.POSITIVE_INFINITY
      : g.split('/').filter((s) => s !== '' && s !== '.').length,
  );
  const deepest = Math.max(0, ...depths);
  return {
    matches: (folder) => included.some((r) => r.test(folder)) && !excluded.some((r) => r.test(folder)),
    mayContain: (folder) => folder.split('/').length < deepest && !excluded.some((r) => r.test(folder)),
  };
}
