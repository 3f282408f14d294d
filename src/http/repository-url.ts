// The one comparison of repository URLs (helm.allowedRepositories, chart sources and chart dependencies): a URL is
// parsed into scheme, host, port and path segments before it is compared, never matched as a string. A string
// prefix lets `oci://reg/myorg/charts/../../evilorg/charts` pass `oci://reg/myorg/charts`, and a server decodes
// `%2e%2e`, `%2f` and a backslash into the same escape, so `.`/`..` segments and encoded separators are refused
// outright (with a message naming them) rather than resolved: what is compared is what is fetched.
//
// Normal form: scheme and host lower-cased (an IDN host is kept as written, not converted to punycode), the port
// always explicit (443 for https and oci, 80 for http), percent-escapes upper-cased, a trailing slash dropped.
// Credentials, a query or a fragment have no place in a repository URL and are refused too.
import { StalledError } from '../errors.ts';

export interface RepositoryUrl {
  scheme: 'https' | 'http' | 'oci';
  /** Lower-cased; `[::1]` for an IPv6 address. */
  host: string;
  /** Always explicit. */
  port: number;
  /** Non-empty, with percent-escapes upper-cased. */
  segments: readonly string[];
}

const DEFAULT_PORTS: Readonly<Record<RepositoryUrl['scheme'], number>> = { https: 443, http: 80, oci: 443 };
const SHAPE = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/]*)(.*)$/s;
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[^\s:[\]@/\\?#%]+)$/u;
const ENCODED_SEPARATOR = /%(?:2f|2e|5c)/i;

/** The parsed URL, or why it is refused, naming what is wrong. */
export function parseRepositoryUrl(url: string): RepositoryUrl | string {
  const parsed = parse(url);
  return 'reason' in parsed ? parsed.reason : parsed;
}

/** A refusal; `climbs`: a dot segment, an encoded separator or a backslash, a way out of a path prefix. */
interface Refused {
  reason: string;
  climbs: boolean;
}

function parse(url: string): RepositoryUrl | Refused {
  // The cause first, then the URL, then what to do: a commit status keeps only its first 140 characters.
  const shown = JSON.stringify(url.length > 200 ? `${url.slice(0, 200)}…` : url);
  const reason = (cause: string, hint?: string) => `${cause}: ${shown}${hint ? `; ${hint}` : ''}`;
  const invalid = (cause: string, hint?: string): Refused => ({ reason: reason(cause, hint), climbs: false });
  const climbing = (cause: string, hint?: string): Refused => ({ reason: reason(cause, hint), climbs: true });
  if (/[\s\p{Cc}]/u.test(url)) return invalid('holds a space or control character');
  if (url.includes('\\')) return climbing('holds a backslash (a path separator to some servers)');
  const shape = SHAPE.exec(url);
  if (!shape) return invalid('is not a URL of the form scheme://host/path');
  const scheme = (shape[1] ?? '').toLowerCase();
  if (scheme !== 'https' && scheme !== 'http' && scheme !== 'oci')
    return invalid(`has scheme ${scheme}`, 'only https, http and oci are compared');
  const authority = shape[2] ?? '';
  const rest = shape[3] ?? '';
  if (authority.includes('@')) return invalid('holds credentials', 'a repository URL must not');
  if (/[?#]/.test(rest) || /[?#]/.test(authority)) return invalid('has a query or fragment');
  const port = /^(.*?)(?::(\d*))?$/.exec(authority);
  const hostname = (port?.[1] ?? '').toLowerCase();
  if (hostname === '' || !HOST.test(hostname)) return invalid('has no valid host');
  const portText = port?.[2];
  const number = portText === undefined || portText === '' ? DEFAULT_PORTS[scheme] : Number(portText);
  if (!Number.isInteger(number) || number < 1 || number > 65_535) return invalid('has an invalid port');
  if (ENCODED_SEPARATOR.test(rest))
    return climbing('holds an encoded separator or dot (%2F, %2E or %5C)', 'write the path plainly');
  if (/%(?![0-9A-Fa-f]{2})/.test(rest)) return invalid('holds a malformed percent-escape');
  const raw = rest.split('/').slice(1);
  // A trailing slash names the same repository; an empty segment inside the path does not.
  while (raw.length > 0 && raw.at(-1) === '') raw.pop();
  const segments: string[] = [];
  for (const segment of raw) {
    if (segment === '.' || segment === '..')
      return climbing(`holds a "${segment}" path segment`, 'write the path without it');
    if (segment === '') return invalid('holds an empty path segment (//)');
    segments.push(segment.replace(/%[0-9a-f]{2}/gi, (hex) => hex.toUpperCase()));
  }
  return { scheme, host: hostname, port: number, segments };
}

/** The parsed URL; a StalledError naming `what` (`helm.allowedRepositories[0]`) and the reason otherwise. */
export function repositoryUrl(url: string, what: string): RepositoryUrl {
  const parsed = parseRepositoryUrl(url);
  if (typeof parsed === 'string') throw new StalledError(`${what} ${parsed}`);
  return parsed;
}

/** The normal form as text: the same for every way of writing the same repository. */
export function formatRepositoryUrl(url: RepositoryUrl): string {
  const path = url.segments.length > 0 ? `/${url.segments.join('/')}` : '';
  return `${url.scheme}://${url.host}:${url.port}${path}`;
}

/** `url` normalised; what cannot be parsed is returned as it is (it then equals only itself). */
export function normaliseRepositoryUrl(url: string): string {
  const parsed = parseRepositoryUrl(url);
  return typeof parsed === 'string' ? url : formatRepositoryUrl(parsed);
}

export function sameOrigin(a: RepositoryUrl, b: RepositoryUrl): boolean {
  return a.scheme === b.scheme && a.host === b.host && a.port === b.port;
}

/** Whether `url` is `prefix` or below it: same origin, and prefix's segments are url's first ones. */
export function isUnder(url: RepositoryUrl, prefix: RepositoryUrl): boolean {
  return (
    sameOrigin(url, prefix) &&
    prefix.segments.length <= url.segments.length &&
    prefix.segments.every((segment, i) => url.segments[i] === segment)
  );
}

/** Whether two URLs name the same repository; a URL that does not parse names none. */
export function sameRepositoryUrl(a: string, b: string): boolean {
  const x = parseRepositoryUrl(a);
  const y = parseRepositoryUrl(b);
  return (
    typeof x !== 'string' && typeof y !== 'string' && isUnder(x, y) && x.segments.length === y.segments.length
  );
}

/**
 * Whether `url` lies under one of the `allowed` prefixes. Throws a StalledError naming `what` when `url` climbs (a
 * `..` segment, an encoded separator, a backslash); any other URL that does not parse (an `@alias`) is not
 * allowed. An allowed entry that does not parse allows nothing (the configuration schema refuses such entries).
 */
export function isAllowedRepositoryUrl(url: string, allowed: readonly string[], what: string): boolean {
  const target = parse(url);
  if ('reason' in target) {
    if (target.climbs) throw new StalledError(`${what} ${target.reason}`);
    return false;
  }
  return allowed.some((entry) => {
    const prefix = parseRepositoryUrl(entry);
    return typeof prefix !== 'string' && isUnder(target, prefix);
  });
}
