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
import { githubShapedStatuses } from './github.ts';
import { apiBase } from './http.ts';
import {
  COMMENT_HINTS,
  type CommentApi,
  callList,
  checkBody,
  commentWrites,
  exchange,
  getPullRequest,
  nextLink,
  readTarget,
  sameApi,
  tokenUser,
  upsertComment,
  viewerCache,
} from './protocol.ts';
import { ownerAndName, parseRepoUrl } from './repo-url.ts';
import type {
  CommitStatusProvider,
  HttpOptions,
  PostedComment,
  PreviewCommentProvider,
  PullRequestInfo,
  PullRequestTarget,
} from './types.ts';

export interface GiteaOptions {
  /** https://HOST/api/v1, or with the sub-path Gitea is served under. */
  apiUrl: string;
  http?: HttpOptions | undefined;
}

/** How every request to Gitea is made: its own `token` scheme. */
function giteaHeaders(token: string): Record<string, string> {
  return { Authorization: `token ${token}`, Accept: 'application/json' };
}

/**
 * A repository's place in the API (`/repos/{owner}/{repo}`) and its `owner/repo` name. Gitea has no nested groups:
 * the last two segments are owner and repo, whatever sub-path comes before.
 */
function giteaRepository(api: string, repoUrl: string): { name: string; repo: string } {
  const [owner, repo] = ownerAndName(parseRepoUrl(repoUrl), false, 'owner/repo');
  return {
    name: `${owner}/${repo}`,
    repo: `${api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`,
  };
}

export function giteaProvider(options: GiteaOptions): CommitStatusProvider {
  const api = apiBase(options.apiUrl);
  return githubShapedStatuses({
    name: 'gitea',
    // Gitea stores descriptions as TEXT; 255 keeps them readable in its commit list and matches the others.
    maxDescription: 255,
    repo: (repoUrl) => giteaRepository(api, repoUrl).repo,
    headers: giteaHeaders,
    http: options.http,
  });
}

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
});

export function giteaComments(options: GiteaOptions): PreviewCommentProvider {
  const api = apiBase(options.apiUrl, 'preview');
  const viewers = viewerCache();

  function open(target: PullRequestTarget, token: string) {
    const { name, repo } = giteaRepository(api, target.repoUrl);
    const { x, number } = exchange('gitea', target, name, giteaHeaders(token), options.http);
    return { x, number, repo };
  }

  return {
    name: 'gitea',
    maxBody: GITEA_MAX_COMMENT,
    async upsert(target, body, marker, token) {
      const { x, number, repo } = readTarget(target, () => open(target, token));
      checkBody(body, marker, GITEA_MAX_COMMENT, x.subject);
      const comments = `${repo}/issues/${number}/comments`;
      const posted = (value: z.infer<typeof comment>, created: boolean): PostedComment => ({
        id: String(value.id),
        created,
        url: value.html_url,
      });
      const commentApi: CommentApi = {
        first: comments,
        async page(url) {
          const answer = await callList(
            x,
            { url, hints: COMMENT_HINTS, what: 'comments' },
            (list) => list,
            comment,
          );
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
        viewer: () =>
          viewers(token, async () => {
            const me = await tokenUser(x, `${api}/user`, user);
            return me === undefined ? undefined : String(me.id);
          }),
        ours: (c, viewer) => viewer === undefined || c.author === viewer,
        ...commentWrites(x, {
          collection: comments,
          item: (found) => `${repo}/issues/comments/${found.id}`,
          update: 'PATCH',
          body: (text) => ({ body: text }),
          what: 'a comment',
          schema: comment,
          posted,
        }),
      };
      return upsertComment(commentApi, body, marker, x.subject);
    },

    async pullRequest(target, token) {
      const { x, number, repo } = readTarget(target, () => open(target, token));
      const pr = await getPullRequest(x, `${repo}/pulls/${number}`, pull);
      return {
        number: pr.number,
        state: pr.merged === true ? 'merged' : pr.state,
        headSha: pr.head.sha,
        baseRef: pr.base.ref,
        fromFork: pr.head.repo_id !== pr.base.repo_id,
        author: pr.user?.login ?? '',
        labels: (pr.labels ?? []).map((l) => l.name),
      } satisfies PullRequestInfo;
    },
  };
}
