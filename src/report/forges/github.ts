// GitHub and GitHub Enterprise Server: "Create a commit status",
// POST /repos/{owner}/{repo}/statuses/{sha} (operationId repos/create-commit-status).
//
// GitHub and GitHub Enterprise Server: a PR's comments are its issue's comments. Operations (REST API 2022-11-28,
// docs.github.com/en/rest/issues/comments and /rest/pulls/pulls; @octokit/openapi operation ids):
//   issues/list-comments   GET   /repos/{owner}/{repo}/issues/{issue_number}/comments?per_page=100&page=N (Link: next)
//   issues/create-comment  POST  /repos/{owner}/{repo}/issues/{issue_number}/comments {body}
//   issues/update-comment  PATCH /repos/{owner}/{repo}/issues/comments/{comment_id} {body}
//   pulls/get              GET   /repos/{owner}/{repo}/pulls/{pull_number}
//   users/get-authenticated GET  /user (whose token: a user's; an app's installation token is refused with 403, and
//                                 its comments are then those of Bot users)

import { z } from 'zod';
import { apiBase, postJson, requireCommit } from './http.ts';
import {
  COMMENT_HINTS,
  type CommentApi,
  callList,
  checkBody,
  commentWrites,
  exchange,
  type ForgeComment,
  getPullRequest,
  nextLink,
  readTarget,
  tokenUser,
  upsertComment,
  viewerCache,
} from './protocol.ts';
import { ownerAndName, parseRepoUrl, statusSubject } from './repo-url.ts';
import type {
  CommitState,
  CommitStatusProvider,
  HttpOptions,
  PreviewCommentProvider,
  PullRequestInfo,
  PullRequestTarget,
} from './types.ts';

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

/** How every request to GitHub is made: the token as a bearer, and the version of the API this file speaks. */
function githubHeaders(token: string): Record<string, string> {
  return {
    Authorization: `Bearer ${token}`,
    Accept: 'application/vnd.github+json',
    'X-GitHub-Api-Version': GITHUB_API_VERSION,
  };
}

/** A repository's place in the API (`/repos/{owner}/{repo}`) and its `owner/repo` name. */
function githubRepository(api: string, repoUrl: string): { name: string; repo: string } {
  const [owner, repo] = ownerAndName(parseRepoUrl(repoUrl), true, 'owner/repo');
  return {
    name: `${owner}/${repo}`,
    repo: `${api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`,
  };
}

export function githubProvider(options: GitHubOptions): CommitStatusProvider {
  const api = apiBase(options.apiUrl);
  return githubShapedStatuses({
    name: 'github',
    // GitHub refuses longer descriptions with 422.
    maxDescription: 140,
    repo: (repoUrl) => githubRepository(api, repoUrl).repo,
    headers: githubHeaders,
    http: options.http,
  });
}

/**
 * Commit statuses in GitHub's shape, which Gitea and Forgejo kept: POST {repo}/statuses/{sha} with the state (our
 * four names; no cancelled state: `error`), target_url, description and context.
 */
export function githubShapedStatuses(shape: {
  name: 'github' | 'gitea';
  maxDescription: number;
  /** The repository's place in the API. */
  repo: (repoUrl: string) => string;
  headers: (token: string) => Record<string, string>;
  http: HttpOptions | undefined;
}): CommitStatusProvider {
  return {
    name: shape.name,
    maxDescription: shape.maxDescription,
    async post(target, status, token) {
      const url = `${shape.repo(target.repoUrl)}/statuses/${requireCommit(target.commit)}`;
      await postJson(
        {
          provider: shape.name,
          url,
          headers: shape.headers(token),
          body: {
            state: GITHUB_STATES[status.state],
            ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
            description: status.description,
            context: status.context,
          },
          subject: statusSubject(target),
        },
        shape.http,
      );
    },
  };
}

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

export function githubComments(options: GitHubOptions): PreviewCommentProvider {
  const api = apiBase(options.apiUrl, 'preview');
  const viewers = viewerCache();

  function open(target: PullRequestTarget, token: string) {
    const { name, repo } = githubRepository(api, target.repoUrl);
    const { x, number } = exchange('github', target, name, githubHeaders(token), options.http);
    return { x, number, repo };
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
            const me = await tokenUser(x, `${api}/user`, user);
            return me?.login;
          }),
        ours: (c, viewer) => (viewer === undefined ? c.bot === true : c.author === viewer),
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
