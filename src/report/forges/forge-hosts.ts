// Where a forge token may go: to the configured API (`apiUrl`), or to the API of a host the operator configured a
// Git source on. Never to a host that content names: an OCI artifact's or an image's
// `org.opencontainers.image.source` annotation is written by whoever can push to a followed registry, and the API
// of a forge is derived from a repository's host when apiUrl is not set. Such an annotation may name a commit and a
// repository on a configured host, nothing more; every forge client (commit statuses, pull-request comments) asks
// here, through forgeApiFor (provider.ts), before it is built.
import { StalledError, type Subject } from '../../errors.ts';
import { BITBUCKET_CLOUD_API_URL } from './bitbucket-cloud.ts';
import { GITHUB_API_URL } from './github.ts';
import { parseRepoUrl } from './repo-url.ts';
import type { ProviderName } from './types.ts';

/** The origins (`https://git.example.com`) of the configured Git sources, where their forges' web and API are. */
export type GitOrigins = ReadonlySet<string>;

// A public forge's API has its own host; a token configured for that API is for the forge's repositories too.
const WEB_OF_API: Readonly<Record<string, readonly string[]>> = {
  [new URL(GITHUB_API_URL).origin]: ['https://github.com', 'https://www.github.com'],
  [new URL(BITBUCKET_CLOUD_API_URL).origin]: ['https://bitbucket.org'],
};

/** A repository on a host that is not a configured forge: no request is made to it, with or without a token. */
export class UnconfiguredForgeHost extends StalledError {
  /** The host as the content named it (`attacker:8080`), for messages. */
  readonly host: string;

  constructor(host: string, options: { subject?: Subject | undefined } = {}) {
    super(`${host} is not a configured forge (apiUrl) or Git source host`, options);
    this.name = 'UnconfiguredForgeHost';
    this.host = host;
  }
}

/** What is read of the configuration here: the Git sources' names and URLs. */
type GitSources = { sources: { git: readonly { name: string; url: string }[] } };

/** The configured Git sources' web origins (an ssh source's forge is on https at the same host). */
export function gitOrigins(config: { sources: { git: readonly { url: string }[] } }): GitOrigins {
  const origins = new Set<string>();
  for (const source of config.sources.git) {
    const origin = webOrigin(source.url);
    if (origin !== undefined) origins.add(origin.origin);
  }
  return origins;
}

/**
 * Undefined when a forge client for `repoUrl` may be built: its web origin is a configured Git source's, or the
 * configured API's. Otherwise the error to refuse it with (naming the host, never the URL's credentials or path).
 */
export function unconfiguredForgeHost(
  repoUrl: string,
  apiUrl: string | undefined,
  origins: GitOrigins,
): UnconfiguredForgeHost | undefined {
  const origin = webOrigin(repoUrl);
  // A URL that does not parse is refused by the caller's own parse, with its message.
  if (origin === undefined) return undefined;
  if (origins.has(origin.origin) || apiOrigins(apiUrl).includes(origin.origin)) return undefined;
  return new UnconfiguredForgeHost(origin.host);
}

function apiOrigins(apiUrl: string | undefined): string[] {
  if (apiUrl === undefined) return [];
  let origin: string;
  try {
    origin = new URL(apiUrl).origin;
  } catch {
    return [];
  }
  return [origin, ...(WEB_OF_API[origin] ?? [])];
}

function webOrigin(repoUrl: string): URL | undefined {
  try {
    return new URL(parseRepoUrl(repoUrl).webOrigin);
  } catch {
    return undefined;
  }
}

/** The annotation content names a repository with; every refusal names it, so the user knows what to change. */
export const SOURCE_ANNOTATION = 'org.opencontainers.image.source';

/** What the log, the status board and the sync's report say about a status not posted to `error`'s host. */
export function describeUnconfigured(error: UnconfiguredForgeHost): string {
  return `commit status not posted: ${SOURCE_ANNOTATION} names host ${error.host}, which is not a configured forge (apiUrl) or Git source host`;
}

interface StatusSettings {
  commitStatus: {
    enabled: boolean;
    token?: unknown;
    provider: 'auto' | ProviderName;
    apiUrl?: string | undefined;
  };
  source: string;
}

/**
 * The forge settings a status on `repository` (named by an artifact's or image's annotation) is posted with: the
 * deployment's own where its provider settings apply (`own`: the repository an OCI artifact of manifests was built
 * from, like a Git source's; or a repository on the manifests' host), elsewhere the host decides (no apiUrl).
 */
export function settingsFor(
  config: GitSources,
  deployment: StatusSettings,
  repository: string,
  own: boolean,
): { provider: 'auto' | ProviderName; apiUrl: string | undefined } {
  const manifests = config.sources.git.find((s) => s.name === deployment.source)?.url;
  const at = webOrigin(repository)?.origin;
  const sameHost =
    own || (manifests !== undefined && at !== undefined && webOrigin(manifests)?.origin === at);
  return sameHost
    ? { provider: deployment.commitStatus.provider, apiUrl: deployment.commitStatus.apiUrl }
    : { provider: 'auto', apiUrl: undefined };
}

/**
 * Why the statuses of a sync's artifact and images are not posted to the repositories their source annotations
 * name (one line per refused host), as CommitStatusSync decides it, for the status board.
 */
export function unpostedStatuses(
  config: GitSources,
  deployment: StatusSettings,
  images: Readonly<Record<string, { kind?: string; source?: { repository: string } | undefined }>>,
): string[] {
  if (!deployment.commitStatus.enabled || !deployment.commitStatus.token) return [];
  const origins = gitOrigins(config);
  const lines = new Set<string>();
  for (const [name, image] of Object.entries(images)) {
    const repository = image.source?.repository;
    if (repository === undefined) continue;
    const own = name === deployment.source && image.kind === 'manifests';
    const { apiUrl } = settingsFor(config, deployment, repository, own);
    const refused = unconfiguredForgeHost(repository, apiUrl, origins);
    if (refused) lines.add(describeUnconfigured(refused));
  }
  return [...lines];
}
