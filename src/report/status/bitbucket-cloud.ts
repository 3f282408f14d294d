// Bitbucket Cloud: "Create a build status for a commit",
// POST /2.0/repositories/{workspace}/{repo_slug}/commit/{commit}/statuses/build. A status with the same key is
// overwritten, so the key (our context, bounded) is what makes a later status replace an earlier one.
import { apiBase, postJson, requireCommit } from './http.ts';
import { ownerAndName, parseRepoUrl, statusSubject } from './repo-url.ts';
import { boundedKey } from './text.ts';
import type { CommitState, CommitStatusProvider, HttpOptions } from './types.ts';

export const BITBUCKET_CLOUD_API_URL = 'https://api.bitbucket.org/2.0';
/** Bitbucket Cloud refuses longer keys. */
export const BITBUCKET_CLOUD_MAX_KEY = 40;

/** STOPPED means a build was stopped before it ended (what a cancelled sync is); a deploy that erred has failed. */
export const BITBUCKET_CLOUD_STATES: Readonly<
  Record<CommitState, 'INPROGRESS' | 'SUCCESSFUL' | 'FAILED' | 'STOPPED'>
> = {
  pending: 'INPROGRESS',
  success: 'SUCCESSFUL',
  failure: 'FAILED',
  error: 'FAILED',
  cancelled: 'STOPPED',
};

export interface BitbucketCloudOptions {
  apiUrl?: string | undefined;
  http?: HttpOptions | undefined;
}

export function bitbucketCloudProvider(options: BitbucketCloudOptions = {}): CommitStatusProvider {
  const api = apiBase(options.apiUrl ?? BITBUCKET_CLOUD_API_URL);
  return {
    name: 'bitbucket-cloud',
    maxDescription: 255,
    async post(target, status, token) {
      const location = parseRepoUrl(target.repoUrl);
      const [workspace, slug] = ownerAndName(location, true, 'workspace/repository');
      const commit = requireCommit(target.commit);
      const path = `${encodeURIComponent(workspace)}/${encodeURIComponent(slug)}`;
      await postJson(
        {
          provider: 'bitbucket-cloud',
          url: `${api}/repositories/${path}/commit/${commit}/statuses/build`,
          headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
          body: {
            key: boundedKey(status.context, BITBUCKET_CLOUD_MAX_KEY),
            state: BITBUCKET_CLOUD_STATES[status.state],
            name: status.context,
            description: status.description,
            // Required by Bitbucket: without a target URL of our own, the commit's page.
            url: status.targetUrl || `${location.webOrigin}/${path}/commits/${commit}`,
          },
          subject: statusSubject(target),
        },
        options.http,
      );
    },
  };
}
