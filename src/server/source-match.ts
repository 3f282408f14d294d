// How a poll target named by a webhook is matched to the configured sources. Providers spell the same
// repository several ways (`https://Git.Example.com/team/app.git`, `…/team/app/`, with credentials, over ssh),
// so both sides are normalised the same way and compared for equality. Pure: no I/O.
import { repositoryOf, tryParseImageRef } from '../render/image-ref.ts';
import type { PollTarget } from './webhook-request.ts';

export interface ConfiguredSources {
  git: readonly { name: string; url: string }[];
  registry: readonly { name: string; image: string }[];
  /** Chart sources: those on an OCI registry (`oci://host/path` + chart) match a registry's push. */
  charts?: readonly { name: string; url: string; chart: string }[] | undefined;
  /** OCI artifact sources (`oci://host/path`). */
  oci?: readonly { name: string; url: string }[] | undefined;
}

/** The registry repository (`host/path`) of each chart source on a registry and each OCI artifact source. */
export function ociRepositories(sources: ConfiguredSources): { name: string; image: string }[] {
  const charts = (sources.charts ?? [])
    .filter((c) => c.url.startsWith('oci://'))
    .map((c) => ({ name: c.name, image: `${c.url.slice('oci://'.length).replace(/\/+$/, '')}/${c.chart}` }));
  const oci = (sources.oci ?? []).map((o) => ({ name: o.name, image: o.url.slice('oci://'.length) }));
  return [...charts, ...oci];
}

const MAX_URL_LENGTH = 2048;
// `git@host:owner/repo.git`: scp-like syntax, which is what ssh_url fields hold. Not `scheme://`.
const SCP_LIKE = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/\/)(.+)$/;
const DEFAULT_PORTS: Readonly<Record<string, string>> = {
  'http:': '80',
  'https:': '443',
  'ssh:': '22',
  'git:': '9418',
};

/**
 * `scheme://host[:port]/path` in lowercase, without credentials, query, fragment, default port, `.git` suffix
 * or trailing slash; undefined when the input is not a URL. The path is lowercased too: GitHub, GitLab, Gitea
 * and Bitbucket all resolve repository paths case-insensitively, and a false match costs one extra poll while
 * a missed one delays a deploy until the next interval.
 */
export function normaliseRepoUrl(input: string): string | undefined {
  const text = input.trim();
  if (text === '' || text.length > MAX_URL_LENGTH) return undefined;
  const scp = SCP_LIKE.exec(text);
  let url: URL;
  try {
    url = new URL(scp ? `ssh://${scp[1]}/${scp[2]}` : text);
  } catch {
    return undefined;
  }
  if (url.host === '') return undefined;
  const protocol = url.protocol.toLowerCase();
  // Non-special schemes (ssh:, git:) keep the host as written, so it is lowercased here.
  const host = url.hostname.toLowerCase();
  const port = url.port !== '' && url.port !== DEFAULT_PORTS[protocol] ? `:${url.port}` : '';
  let path = url.pathname.toLowerCase().replace(/\/+$/, '');
  if (path.endsWith('.git')) path = path.slice(0, -'.git'.length).replace(/\/+$/, '');
  return `${protocol}//${host}${port}${path}`;
}

/** `domain/path` of an image name as the rest of mooring matches images (`nginx` -> `docker.io/library/nginx`). */
export function normaliseImage(image: string): string | undefined {
  const ref = tryParseImageRef(image);
  return ref instanceof Error ? undefined : repositoryOf(ref);
}

/** The poll target of a configured source: what a webhook naming that source would produce. */
export function targetOf(
  source: { kind: 'git'; url: string } | { kind: 'registry'; image: string },
): PollTarget | undefined {
  if (source.kind === 'git') {
    const url = normaliseRepoUrl(source.url);
    return url === undefined ? undefined : { kind: 'git', url };
  }
  const image = normaliseImage(source.image);
  return image === undefined ? undefined : { kind: 'registry', image };
}

/**
 * `host/path` of a normalised URL: an SSH source is the repository a forge's webhook names by its https URL too
 * (Gitea's and GitLab's pushes carry no SSH URL); the SSH port says nothing about the web server's.
 */
function hostAndPath(normalised: string): string {
  return normalised.replace(/^[a-z][a-z0-9+.-]*:\/\//, '').replace(/^([^/:]+):\d+/, '$1');
}

/** Names of the configured sources that the targets point at, in configuration order (git first). */
export function selectSources(targets: readonly PollTarget[], sources: ConfiguredSources): string[] {
  const urls = new Set(targets.flatMap((t) => (t.kind === 'git' ? [t.url] : [])));
  const images = new Set(targets.flatMap((t) => (t.kind === 'registry' ? [t.image] : [])));
  const names: string[] = [];
  const hosted = new Set([...urls].map(hostAndPath));
  for (const source of sources.git) {
    const url = normaliseRepoUrl(source.url);
    if (url !== undefined && (urls.has(url) || (url.startsWith('ssh://') && hosted.has(hostAndPath(url)))))
      names.push(source.name);
  }
  for (const source of [...sources.registry, ...ociRepositories(sources)]) {
    const image = normaliseImage(source.image);
    if (image !== undefined && images.has(image)) names.push(source.name);
  }
  return names;
}

/** The pull requests the targets name, by the Git sources of their repositories. */
export function selectPulls(
  targets: readonly PollTarget[],
  sources: ConfiguredSources,
): { source: string; number: number }[] {
  const pulls: { source: string; number: number }[] = [];
  for (const t of targets) {
    if (t.kind !== 'pull') continue;
    for (const source of sources.git) {
      const url = normaliseRepoUrl(source.url);
      if (url === t.url || (url?.startsWith('ssh://') && hostAndPath(url) === hostAndPath(t.url)))
        pulls.push({ source: source.name, number: t.number });
    }
  }
  return pulls;
}

/** Targets for these repository URLs: normalised, without duplicates, unparseable ones dropped. */
export function gitTargets(urls: readonly (string | undefined)[]): PollTarget[] {
  const seen = new Set<string>();
  for (const raw of urls) {
    const url = raw === undefined ? undefined : normaliseRepoUrl(raw);
    if (url !== undefined) seen.add(url);
  }
  return [...seen].map((url) => ({ kind: 'git', url }));
}
