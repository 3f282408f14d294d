// GitHub and GitHub Enterprise Server: a PR's comments are its issue's comments. Operations (REST API 2022-11-28,
// docs.github.com/en/rest/issues/comments and /rest/pulls/pulls; @octokit/openapi operation ids):
//   issues/list-comments   GET   /repos/{owner}/{repo}/issues/{issue_number}/comments?per_page=100&page=N (Link: next)
//   issues/create-comment  POST  /repos/{owner}/{repo}/issues/{issue_number}/comments {body}
//   issues/update-comment  PATCH /repos/{owner}/{repo}/issues/comments/{comment_id} {body}
//   pulls/get              GET   /repos/{owner}/{repo}/pulls/{pull_number}
//   users/get-authenticated GET  /user (whose token: a user's; an app's installation token is refused with 403, and
//                                 its comments are then those of Bot users)
import { z } from 'zod';
import { GITHUB_API_VERSION } from '../status/github.ts';
import { apiBase } from '../status/http.ts';
import { ownerAndName, parseRepoUrl } from '../status/repo-url.ts';
import type { HttpOptions } from '../status/types.ts';
import {
  COMMENT_HINTS,
  type CommentApi,
  call,
  callList,
  callUnless,
  checkBody,
  type Exchange,
  type ForgeComment,
  nextLink,
  PULL_REQUEST_HINTS,
  pullNumber,
  pullSubject,
  readTarget,
  upsertComment,
  viewerCache,
} from './forge.ts';
import type { PreviewCommentProvider, PullRequestInfo, PullRequestTarget } from './types.ts';

/** GitHub's limit on an issue comment's body. */
export const GITHUB_MAX_COMMENT = 65_536;
const PER_PAGE = 100;

const user = z.object({ login: z.string(), type: z.string().optional() });
const comment = z.object({
  id: z.number().int().positive(),
  body: z.string().nullish(),
  user: user.nullable(),
  html_url: z.string().optional(),
});
const repository = z.object({ id: z.number().int() });
const pull = z.object({
  number: z.number().int(),
  state: z.enum(['open', 'closed']),
  merged: z.boolean().nullish(),
  merged_at: z.string().nullable(),
  head: z.object({ sha: z.string(), ref: z.string(), repo: repository.nullable() }),
  base: z.object({ ref: z.string(), repo: repository }),
  user: user.nullable(),
  labels: z.array(z.object({ name: z.string() })),
});

export interface GitHubCommentOptions {
  /** https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise Server. */
  apiUrl: string;
  http?: HttpOptions | undefined;
}

export function githubComments(options: GitHubCommentOptions): PreviewCommentProvider {
  const api = apiBase(options.apiUrl, 'preview');
  const viewers = viewerCache();

  function open(target: PullRequestTarget, token: string) {
    const [owner, name] = ownerAndName(parseRepoUrl(target.repoUrl), true, 'owner/repo');
    const number = pullNumber(target);
    const x: Exchange = {
      provider: 'github',
      headers: {
        Authorization: `Bearer ${token}`,
        Accept: 'application/vnd.github+json',
        'X-GitHub-Api-Version': GITHUB_API_VERSION,
      },
      subject: pullSubject(`${owner}/${name}`, number),
      http: options.http,
    };
    return { x, number, repo: `${api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}` };
  }

  return {
    name: 'github',
    maxBody: GITHUB_MAX_COMMENT,
    async upsert(target, body, marker, token) {
      const { x, number, repo } = readTarget(target, () => open(target, token));
      checkBody(body, marker, GITHUB_MAX_COMMENT, x.subject);
      const comments = `${repo}/issues/${number}/comments`;
      const posted = (value: z.infer<typeof comment>, created: boolean) => ({
        id: String(value.id),
        created,
        url: value.html_url,
      });
      const commentApi: CommentApi = {
        first: '1',
        async page(cursor) {
          const page = Number(cursor);
          const answer = await callList(
            x,
            { url: `${comments}?per_page=${PER_PAGE}&page=${page}`, hints: COMMENT_HINTS, what: 'comments' },
            (list) => list,
            comment,
          );
          return {
            comments: answer.items.map(toComment),
            next: nextLink(answer.headers.get('link')) ? String(page + 1) : undefined,
          };
        },
        viewer: () =>
          viewers(token, async () => {
            const me = await callUnless(
              x,
              { method: 'GET', url: `${api}/user`, hints: COMMENT_HINTS, what: 'a user' },
              user,
              (status) => status === 403 || status === 404,
            );
            return me?.login;
          }),
        ours: (c, viewer) => (viewer === undefined ? c.bot === true : c.author === viewer),
        async create(text) {
          const answer = await call(
            x,
            { method: 'POST', url: comments, body: { body: text }, hints: COMMENT_HINTS, what: 'a comment' },
            comment,
          );
          return posted(answer, true);
        },
        async update(found, text) {
          const answer = await call(
            x,
            {
              method: 'PATCH',
              url: `${repo}/issues/comments/${found.id}`,
              body: { body: text },
              hints: COMMENT_HINTS,
              what: 'a comment',
            },
            comment,
          );
          return posted(answer, false);
        },
      };
      return upsertComment(commentApi, body, marker, x.subject);
    },

    async pullRequest(target, token) {
      const { x, number, repo } = readTarget(target, () => open(target, token));
      const pr = await call(
        x,
        { method: 'GET', url: `${repo}/pulls/${number}`, hints: PULL_REQUEST_HINTS, what: 'a pull request' },
        pull,
      );
      return {
        number: pr.number,
        state: pr.merged === true || pr.merged_at !== null ? 'merged' : pr.state,
        headSha: pr.head.sha,
        baseRef: pr.base.ref,
        // A deleted fork leaves no head repository: no more trusted than a fork.
        fromFork: pr.head.repo === null || pr.head.repo.id !== pr.base.repo.id,
        author: pr.user?.login ?? '',
        labels: pr.labels.map((l) => l.name),
      } satisfies PullRequestInfo;
    },
  };
}

function toComment(value: z.infer<typeof comment>): ForgeComment {
  return {
    id: String(value.id),
    body: value.body ?? '',
    author: value.user?.login,
    bot: value.user?.type === 'Bot',
    url: value.html_url,
  };
}
