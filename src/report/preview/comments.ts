// Pull-request comments and pull-request information, one client per kind of forge (github.ts, gitlab.ts, gitea.ts,
// bitbucket-cloud.ts, bitbucket-server.ts beside this file), chosen as commit statuses choose theirs: the configured
// provider, or the repository's host when it is one whose API is known for certain, with the API where that kind of
// forge usually has it unless apiUrl says otherwise (status/provider.ts).
import type { GitOrigins } from '../status/forge-hosts.ts';
import { forgeApiFor } from '../status/provider.ts';
import type { HttpOptions, ProviderName } from '../status/types.ts';
import { bitbucketCloudComments } from './bitbucket-cloud.ts';
import { bitbucketServerComments } from './bitbucket-server.ts';
import { giteaComments } from './gitea.ts';
import { githubComments } from './github.ts';
import { gitlabComments } from './gitlab.ts';
import type { PreviewCommentProvider } from './types.ts';

export type { PostedComment, PreviewCommentProvider, PullRequestInfo, PullRequestTarget } from './types.ts';

/** Throws StalledError when the forge cannot be told or the URLs are unusable: a configuration error. */
export function commentProviderFor(
  repoUrl: string,
  config: { provider: 'auto' | ProviderName; apiUrl?: string | undefined },
  origins: GitOrigins,
  http?: HttpOptions,
): PreviewCommentProvider {
  const { name, apiUrl } = forgeApiFor(
    repoUrl,
    config,
    { api: 'pull-request API', setting: 'preview' },
    origins,
  );
  switch (name) {
    case 'github':
      return githubComments({ apiUrl, http });
    case 'gitlab':
      return gitlabComments({ apiUrl, http });
    case 'gitea':
      return giteaComments({ apiUrl, http });
    case 'bitbucket-cloud':
      return bitbucketCloudComments({ apiUrl, http });
    case 'bitbucket-server':
      return bitbucketServerComments({ apiUrl, http });
  }
}
