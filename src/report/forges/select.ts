// Which forge serves a repository, and where its API is: from the configuration when it says, otherwise from the
// repository's host; its client (one module per kind of forge beside this file: github.ts, gitlab.ts, gitea.ts,
// bitbucket-cloud.ts, bitbucket-server.ts) posts commit statuses and pull-request comments alike. Only hosts whose API is known for
// certain are recognised by name; every other host needs `commitStatus.provider`, since guessing would send the token
// to the wrong kind of API.
import type { Deployment } from '../../config/schema.ts';
import { StalledError } from '../../errors.ts';
import {
  BITBUCKET_CLOUD_API_URL,
  bitbucketCloudComments,
  bitbucketCloudProvider,
} from './bitbucket-cloud.ts';
import { bitbucketServerComments, bitbucketServerProvider } from './bitbucket-server.ts';
import { type GitOrigins, unconfiguredForgeHost } from './forge-hosts.ts';
import { giteaComments, giteaProvider } from './gitea.ts';
import { GITHUB_API_URL, githubComments, githubProvider } from './github.ts';
import { gitlabComments, gitlabProvider } from './gitlab.ts';
import { describeRepo, parseRepoUrl, type RepoLocation } from './repo-url.ts';
import type { CommitStatusProvider, HttpOptions, PreviewCommentProvider, ProviderName } from './types.ts';

export type CommitStatusConfig = Deployment['commitStatus'];

const KNOWN_HOSTS: Readonly<Record<string, ProviderName>> = {
  'github.com': 'github',
  'www.github.com': 'github',
  'gitlab.com': 'gitlab',
  'bitbucket.org': 'bitbucket-cloud',
};

/** What each kind of forge is to mooring: its commit statuses and its pull-request comments, from one module. */
const FORGES: Readonly<
  Record<
    ProviderName,
    {
      statuses: (options: { apiUrl: string; http?: HttpOptions | undefined }) => CommitStatusProvider;
      comments: (options: { apiUrl: string; http?: HttpOptions | undefined }) => PreviewCommentProvider;
    }
  >
> = {
  github: { statuses: githubProvider, comments: githubComments },
  gitlab: { statuses: gitlabProvider, comments: gitlabComments },
  gitea: { statuses: giteaProvider, comments: giteaComments },
  'bitbucket-cloud': { statuses: bitbucketCloudProvider, comments: bitbucketCloudComments },
  'bitbucket-server': { statuses: bitbucketServerProvider, comments: bitbucketServerComments },
};

/** What each client of a forge is called, and the configuration block that sets it, in messages. */
const PURPOSES = {
  statuses: { api: 'commit-status API', setting: 'commitStatus' },
  comments: { api: 'pull-request API', setting: 'preview' },
} as const;

/** A client of a repository's forge, chosen by forgeApiFor: its commit statuses, or its pull requests. */
function clientFor<K extends keyof typeof PURPOSES>(
  kind: K,
  repoUrl: string,
  config: { provider: 'auto' | ProviderName; apiUrl?: string | undefined },
  origins: GitOrigins,
  http: HttpOptions | undefined,
): ReturnType<(typeof FORGES)[ProviderName][K]> {
  const { name, apiUrl } = forgeApiFor(repoUrl, config, PURPOSES[kind], origins);
  return FORGES[name][kind]({ apiUrl, http }) as ReturnType<(typeof FORGES)[ProviderName][K]>;
}

/**
 * The commit-status client of a repository's forge. Throws StalledError when the provider cannot be told or the
 * URLs are unusable: a configuration error.
 */
export function providerFor(
  repoUrl: string,
  config: Pick<CommitStatusConfig, 'provider' | 'apiUrl'>,
  origins: GitOrigins,
  http?: HttpOptions,
): CommitStatusProvider {
  return clientFor('statuses', repoUrl, config, origins, http);
}

/**
 * The pull-request client (comments, the PR's description) of a repository's forge, chosen as commit statuses
 * choose theirs. Throws StalledError when the forge cannot be told or the URLs are unusable.
 */
export function commentProviderFor(
  repoUrl: string,
  config: { provider: 'auto' | ProviderName; apiUrl?: string | undefined },
  origins: GitOrigins,
  http?: HttpOptions,
): PreviewCommentProvider {
  return clientFor('comments', repoUrl, config, origins, http);
}

export interface ForgeApi {
  name: ProviderName;
  /** As configured, or where the API usually is on the repository's host (defaultApiUrl). */
  apiUrl: string;
}

/**
 * Which kind of forge serves a repository and where its API is, for every client of a forge (commit statuses,
 * pull-request comments). `purpose` names the API and the configuration block (`commitStatus`, `preview`) in the
 * message about a host that is not known. `origins`: the configured Git sources' (forge-hosts.ts); a repository
 * on any other host than theirs and apiUrl's is refused with UnconfiguredForgeHost, as the API (and the token
 * sent to it) would otherwise be chosen by whoever wrote the URL.
 */
export function forgeApiFor(
  repoUrl: string,
  config: { provider: 'auto' | ProviderName; apiUrl?: string | undefined },
  purpose: { api: string; setting: string },
  origins: GitOrigins,
): ForgeApi {
  const location = parseRepoUrl(repoUrl);
  const unconfigured = unconfiguredForgeHost(repoUrl, config.apiUrl, origins);
  if (unconfigured) throw unconfigured;
  const name = config.provider === 'auto' ? KNOWN_HOSTS[location.hostname] : config.provider;
  if (name === undefined) {
    const key = `${purpose.setting}.`;
    throw new StalledError(
      `cannot tell which ${purpose.api} ${location.hostname} has (only github.com, gitlab.com and ` +
        `bitbucket.org are recognised): set ${key}provider to github, gitlab, gitea or bitbucket-server, ` +
        `and ${key}apiUrl if the API is not at its usual place`,
      { subject: { describe: describeRepo(repoUrl) } },
    );
  }
  return { name, apiUrl: config.apiUrl ?? defaultApiUrl(name, location) };
}

/** Where each API lives on a host when the configuration does not say. */
export function defaultApiUrl(name: ProviderName, location: RepoLocation): string {
  switch (name) {
    case 'github':
      return location.hostname === 'github.com' || location.hostname === 'www.github.com'
        ? GITHUB_API_URL
        : `${location.webOrigin}/api/v3`;
    case 'gitlab':
      return `${location.webOrigin}/api/v4`;
    case 'gitea':
      return `${location.webOrigin}/api/v1`;
    case 'bitbucket-cloud':
      return BITBUCKET_CLOUD_API_URL;
    case 'bitbucket-server': {
      // https clone URLs are {base}/scm/PROJECT/repo.git, and base may have a context path.
      const scm = location.segments.indexOf('scm');
      const contextPath =
        scm > 0 ? `/${location.segments.slice(0, scm).map(encodeURIComponent).join('/')}` : '';
      return `${location.webOrigin}${contextPath}`;
    }
  }
}

export type {
  PostedComment,
  PreviewCommentProvider,
  PullRequestInfo,
  PullRequestTarget,
} from './types.ts';
