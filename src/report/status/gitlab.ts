// GitLab (gitlab.com and self-managed): "Set the pipeline status of a commit", POST /projects/:id/statuses/:sha,
// where :id is the URL-encoded full path of the project, subgroups included.
import { StalledError } from '../../errors.ts';
import { apiBase, postJson, requireCommit } from './http.ts';
import { parseRepoUrl, statusSubject } from './repo-url.ts';
import type { CommitState, CommitStatusProvider, HttpOptions } from './types.ts';

export const GITLAB_API_URL = 'https://gitlab.com/api/v4';

/** GitLab has no "error": both of our failures are its "failed"; a sync that was cut short is "canceled". */
export const GITLAB_STATES: Readonly<Record<CommitState, string>> = {
  pending: 'pending',
  success: 'success',
  failure: 'failed',
  error: 'failed',
  cancelled: 'canceled',
};

export interface GitLabOptions {
  /** https://gitlab.com/api/v4, or https://HOST[/relative-root]/api/v4. */
  apiUrl: string;
  http?: HttpOptions | undefined;
}

export function gitlabProvider(options: GitLabOptions): CommitStatusProvider {
  const api = apiBase(options.apiUrl);
  // A GitLab under a relative URL root (https://host/gitlab/api/v4) serves its projects under that root too.
  const root = new URL(api).pathname
    .replace(/\/api\/v4$/, '')
    .split('/')
    .filter(Boolean);
  return {
    name: 'gitlab',
    // GitLab refuses descriptions over 255 characters.
    maxDescription: 255,
    async post(target, status, token) {
      const location = parseRepoUrl(target.repoUrl);
      const underRoot = root.length > 0 && root.every((segment, i) => location.segments[i] === segment);
      const path = underRoot ? location.segments.slice(root.length) : location.segments;
      if (path.length < 2) {
        throw new StalledError(
          `repository ${location.hostname}/${path.join('/')} does not have the form group/project`,
        );
      }
      const sha = requireCommit(target.commit);
      const state = GITLAB_STATES[status.state];
      // GitLab answers 400 "Cannot transition status via :enqueue from :pending" when a status is posted in the
      // state it already has (after a restart, or when two agents share a context): the commit already says it.
      const sameState = new RegExp(`Cannot transition status via :\\w+ from :${state}\\b`);
      await postJson(
        {
          provider: 'gitlab',
          url: `${api}/projects/${encodeURIComponent(path.join('/'))}/statuses/${sha}`,
          headers: { 'PRIVATE-TOKEN': token, Accept: 'application/json' },
          body: {
            state,
            name: status.context,
            description: status.description,
            ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
          },
          subject: statusSubject(target),
          alreadyDone: (code, message) => code === 400 && sameState.test(message),
        },
        options.http,
      );
    },
  };
}
