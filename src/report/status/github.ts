// GitHub and GitHub Enterprise Server: "Create a commit status",
// POST /repos/{owner}/{repo}/statuses/{sha} (operationId repos/create-commit-status).
import { apiBase, postJson, requireCommit } from './http.ts';
import { ownerAndName, parseRepoUrl, statusSubject } from './repo-url.ts';
import type { CommitState, CommitStatusProvider, HttpOptions } from './types.ts';

export const GITHUB_API_URL = 'https://api.github.com';
/** The version of the REST API whose request shape this file builds. */
export const GITHUB_API_VERSION = '2022-11-28';

/** GitHub's four states; a cancelled sync is an `error` (not the commit's failure), its description says why. */
export const GITHUB_STATES: Readonly<Record<CommitState, 'pending' | 'success' | 'failure' | 'error'>> = {
  pending: 'pending',
  success: 'success',
  failure: 'failure',
  error: 'error',
  cancelled: 'error',
};

export interface GitHubOptions {
  /** https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise Server. */
  apiUrl: string;
  http?: HttpOptions | undefined;
}

export function githubProvider(options: GitHubOptions): CommitStatusProvider {
  const api = apiBase(options.apiUrl);
  return {
    name: 'github',
    // GitHub refuses longer descriptions with 422.
    maxDescription: 140,
    async post(target, status, token) {
      const [owner, repo] = ownerAndName(parseRepoUrl(target.repoUrl), true, 'owner/repo');
      const sha = requireCommit(target.commit);
      await postJson(
        {
          provider: 'github',
          url: `${api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/statuses/${sha}`,
          headers: {
            Authorization: `Bearer ${token}`,
            Accept: 'application/vnd.github+json',
            'X-GitHub-Api-Version': GITHUB_API_VERSION,
          },
          body: {
            state: GITHUB_STATES[status.state],
            ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
            description: status.description,
            context: status.context,
          },
          subject: statusSubject(target),
        },
        options.http,
      );
    },
  };
}
