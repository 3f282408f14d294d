// Gitea and Forgejo: "Create a commit status" (repoCreateStatus), POST /repos/{owner}/{repo}/statuses/{sha}
// with a CreateStatusOption body. Both share this API; Forgejo kept Gitea's v1 paths and fields.
import { GITHUB_STATES } from './github.ts';
import { apiBase, postJson, requireCommit } from './http.ts';
import { ownerAndName, parseRepoUrl, statusSubject } from './repo-url.ts';
import type { CommitStatusProvider, HttpOptions } from './types.ts';

export interface GiteaOptions {
  /** https://HOST/api/v1, or with the sub-path Gitea is served under. */
  apiUrl: string;
  http?: HttpOptions | undefined;
}

export function giteaProvider(options: GiteaOptions): CommitStatusProvider {
  const api = apiBase(options.apiUrl);
  return {
    name: 'gitea',
    // Gitea stores descriptions as TEXT; 255 keeps them readable in its commit list and matches the others.
    maxDescription: 255,
    async post(target, status, token) {
      // Gitea has no nested groups: the last two segments are owner and repo, whatever sub-path comes before.
      const [owner, repo] = ownerAndName(parseRepoUrl(target.repoUrl), false, 'owner/repo');
      const sha = requireCommit(target.commit);
      await postJson(
        {
          provider: 'gitea',
          url: `${api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/statuses/${sha}`,
          headers: { Authorization: `token ${token}`, Accept: 'application/json' },
          body: {
            // Gitea's CommitStatusState has our four names (and `warning`); no cancelled state: `error`.
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
