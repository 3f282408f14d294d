// The page that shows a commit on its forge, for links in the status page and in notifications.
import { safeUrl } from '../sources/git/errors.ts';

/** The page that shows a commit on the forge, from the Git source's URL and the commit-status provider. */
export function commitUrl(
  sourceUrl: string,
  provider: string | undefined,
  commit: string,
): string | undefined {
  let url: URL;
  try {
    url = new URL(safeUrl(sourceUrl));
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  url.username = '';
  url.password = '';
  url.search = '';
  url.hash = '';
  const base = url
    .toString()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
  // `auto` (the default provider) guesses from the host, as the commit-status reporter does.
  const kind = provider === undefined || provider === 'auto' ? url.hostname : provider;
  const path = kind.includes('gitlab') ? '/-/commit/' : kind.includes('bitbucket') ? '/commits/' : '/commit/';
  return `${base}${path}${encodeURIComponent(commit)}`;
}
