// Where a repository lives, read from the URL a Git source is configured with: https, ssh:// and the scp-like
// form (`git@host:owner/repo.git`). Credentials in the URL are dropped here, so nothing downstream can show them.
import { StalledError, type Subject } from '../../errors.ts';

export interface RepoLocation {
  /** Lowercased host name, without port or user. */
  hostname: string;
  /**
   * Where the host's web server and API are: the URL's own origin for http(s); for ssh the SSH port says nothing
   * about HTTP, so https on the default port.
   */
  webOrigin: string;
  /** Path segments, decoded, with a trailing `.git` removed. */
  segments: string[];
}

// `user@host:path` without a scheme; a `//` after the colon would make it a URL instead.
const SCP_LIKE = /^(?:[^@/]+@)?([^:/]+):(?!\/\/)(.+)$/;

export function parseRepoUrl(url: string): RepoLocation {
  let hostname: string;
  let webOrigin: string;
  let path: string;
  if (!url.includes('://')) {
    const match = SCP_LIKE.exec(url);
    if (!match?.[1] || !match[2]) throw invalid();
    hostname = match[1].toLowerCase();
    webOrigin = `https://${hostname}`;
    path = match[2];
  } else {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw invalid();
    }
    hostname = parsed.hostname.toLowerCase();
    if (!hostname) throw invalid();
    const web = parsed.protocol === 'https:' || parsed.protocol === 'http:';
    webOrigin = web ? `${parsed.protocol}//${parsed.host.toLowerCase()}` : `https://${hostname}`;
    path = parsed.pathname;
  }
  const segments = path.split('/').filter((segment) => segment !== '');
  const last = segments.at(-1);
  if (last?.endsWith('.git')) segments[segments.length - 1] = last.slice(0, -'.git'.length);
  let decoded: string[];
  try {
    decoded = segments.map((segment) => decodeURIComponent(segment));
  } catch {
    throw invalid();
  }
  if (decoded.length === 0 || decoded.some((segment) => segment === '')) {
    throw new StalledError(`repository URL ${hostname} has no repository path`);
  }
  return { hostname, webOrigin, segments: decoded };
}

/** How a repository is named in messages and logs: host and path, never credentials or a query. */
export function describeRepo(url: string): string {
  try {
    const location = parseRepoUrl(url);
    return `${location.hostname}/${location.segments.join('/')}`;
  } catch {
    return '<invalid repository URL>';
  }
}

/**
 * The last two segments as [owner, name]. `exact` for hosts that serve repositories at the top level only
 * (GitHub, Bitbucket Cloud); otherwise anything before them is a sub-path the server is mounted under.
 */
export function ownerAndName(location: RepoLocation, exact: boolean, shape: string): [string, string] {
  const [owner, name] = location.segments.slice(-2);
  if (owner === undefined || name === undefined || (exact && location.segments.length !== 2)) {
    throw new StalledError(
      `repository ${location.hostname}/${location.segments.join('/')} does not have the form ${shape}`,
    );
  }
  return [owner, name];
}

/** What a status error is about: the repository (safe form) at the commit. */
export function statusSubject(target: { repoUrl: string; commit: string }): Subject {
  return { describe: `${describeRepo(target.repoUrl)}@${target.commit.slice(0, 12)}` };
}

function invalid(): StalledError {
  // The URL itself is not repeated: a URL that does not parse may still hold credentials.
  return new StalledError('the repository URL cannot be parsed (expected https://, ssh:// or git@host:path)');
}
