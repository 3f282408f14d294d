// Gitea and Forgejo: "Create a commit status" (repoCreateStatus), POST /repos/{owner}/{repo}/statuses/{sha}
// with a CreateStatusOption body. Both share this API; Forgejo kept Gitea's v1 paths and fields.
//
// Gitea and Forgejo: a PR's comments are its issue's comments. Operations (the swagger of Gitea's API, served at
// /api/swagger and kept in Gitea's templates/swagger/v1_json.tmpl; docs.gitea.com/api):
//   issueGetComments   GET   /repos/{owner}/{repo}/issues/{index}/comments  (not paged: every comment in one answer,
//                            X-Total-Count; a Link rel="next", should a server page it, is followed)
//   issueCreateComment POST  /repos/{owner}/{repo}/issues/{index}/comments {body}   (CreateIssueCommentOption)
//   issueEditComment   PATCH /repos/{owner}/{repo}/issues/comments/{id} {body}      (EditIssueCommentOption)
//   repoGetPullRequest GET   /repos/{owner}/{repo}/pulls/{index}
//   userGetCurrent     GET   /user

import { z } from 'zod';
import { commentList, tokenOwner } from './comments.ts';
import {
  type GitHubShape,
  githubShapedComments,
  githubShapedStatuses,
  issueCommentWrites,
  reposRepository,
} from './github.ts';
import { getPullRequest, nextLink, sameApi } from './protocol.ts';

/** How every request to Gitea is made: its own `token` scheme. */
function giteaHeaders(token: string): Record<string, string> {
  return { Authorization: `token ${token}`, Accept: 'application/json' };
}

/** Gitea has no nested groups: the last two segments are owner and repo, whatever sub-path comes before. */
const GITEA: GitHubShape = { name: 'gitea', headers: giteaHeaders, repository: reposRepository(false) };

// Gitea stores descriptions as TEXT; 255 keeps them readable in its commit list and matches the others.
export const giteaProvider = githubShapedStatuses(GITEA, 255);

/**
 * Gitea documents no limit on a comment (its column is LONGTEXT); 65,535 characters, MySQL's TEXT, is what older
 * installations stored and what renders without trouble.
 */
export const GITEA_MAX_COMMENT = 65_535;

const user = z.object({ id: z.number().int(), login: z.string() });
const comment = z.object({
  id: z.number().int().positive(),
  body: z.string().nullish(),
  user: user.nullable(),
  html_url: z.string().optional(),
});
const branch = z.object({ ref: z.string(), sha: z.string(), repo_id: z.number().int() });
const pull = z.object({
  number: z.number().int(),
  state: z.enum(['open', 'closed']),
  merged: z.boolean().nullish(),
  head: branch,
  base: branch.partial({ sha: true }),
  user: user.nullable(),
  labels: z.array(z.object({ name: z.string() })).nullable(),
  updated_at: z.string().optional(),
});

/** Gitea's pull-request comments: a PR's comments are its issue's, in one answer (a next link followed). */
export const giteaComments = githubShapedComments(GITEA, GITEA_MAX_COMMENT, {
  thread: (x, { repo, issue }, api) => ({
    first: `${issue}/comments`,
    async page(url) {
      const answer = await commentList(x, url, 'comments', comment);
      const next = nextLink(answer.headers.get('link'));
      return {
        comments: answer.items.map((c) => ({
          id: String(c.id),
          body: c.body ?? '',
          author: c.user ? String(c.user.id) : undefined,
          url: c.html_url,
        })),
        next: next === undefined ? undefined : sameApi(next, api, x),
      };
    },
    owner: tokenOwner(`${api}/user`, user, (me) => String(me.id)),
    writes: issueCommentWrites(x, repo, issue, comment),
  }),
  async pullRequest(x, { pull: url }) {
    const pr = await getPullRequest(x, url, pull);
    return {
      number: pr.number,
      state: pr.merged === true ? 'merged' : pr.state,
      headSha: pr.head.sha,
      baseRef: pr.base.ref,
      headRef: pr.head.ref,
      updatedAt: pr.updated_at,
      fromFork: pr.head.repo_id !== pr.base.repo_id,
      author: pr.user?.login ?? '',
      labels: (pr.labels ?? []).map((l) => l.name),
    };
  },
});
