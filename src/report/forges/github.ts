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
import {
  type CommentCreateUpdate,
  type CommentForge,
  commentForge,
  commentList,
  commentWrites,
  type ForgeComment,
  tokenOwner,
} from './comments.ts';
import { requireCommit, statusForge } from './http.ts';
import { type Exchange, getPullRequest, nextLink } from './protocol.ts';
import { ownerAndName, parseRepoUrl } from './repo-url.ts';
import type { CommitState } from './types.ts';

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

/** How every request to GitHub is made: the token as a bearer, and the version of the API this file speaks. */
function githubHeaders(token: string): Record<string, string> {
  return {
    Authorization: `Bearer ${token}`,
    Accept: 'application/vnd.github+json',
    'X-GitHub-Api-Version': GITHUB_API_VERSION,
  };
}

/**
 * A repository's place in an API of GitHub's shape (`/repos/{owner}/{repo}`) and its `owner/repo` name. `nested`:
 * the owner is the first path segment (GitHub); without, the last two segments are owner and repo, whatever
 * sub-path the server is under (Gitea has no nested groups).
 */
export function reposRepository(
  nested: boolean,
): (api: string, repoUrl: string) => { name: string; repo: string } {
  return (api, repoUrl) => {
    const [owner, repo] = ownerAndName(parseRepoUrl(repoUrl), nested, 'owner/repo');
    return {
      name: `${owner}/${repo}`,
      repo: `${api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`,
    };
  };
}

/** A forge of GitHub's API shape: its name, how its requests carry the token, where a repository is. */
export interface GitHubShape {
  name: 'github' | 'gitea';
  headers: (token: string) => Record<string, string>;
  repository: (api: string, repoUrl: string) => { name: string; repo: string };
}

const GITHUB: GitHubShape = { name: 'github', headers: githubHeaders, repository: reposRepository(true) };

// GitHub refuses longer descriptions with 422.
export const githubProvider = githubShapedStatuses(GITHUB, 140);

/**
 * Commit statuses in GitHub's shape, which Gitea and Forgejo kept: POST {repo}/statuses/{sha} with the state (our
 * four names; no cancelled state: `error`), target_url, description and context.
 */
export function githubShapedStatuses({ name, headers, repository }: GitHubShape, maxDescription: number) {
  return statusForge({
    name,
    maxDescription,
    request: (api, target, status, token) => ({
      url: `${repository(api, target.repoUrl).repo}/statuses/${requireCommit(target.commit)}`,
      headers: headers(token),
      body: {
        state: GITHUB_STATES[status.state],
        ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
        description: status.description,
        context: status.context,
      },
    }),
  });
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
  updated_at: z.string().optional(),
});

/** GitHub's pull-request comments: a PR's comments are its issue's. */
export const githubComments = githubShapedComments(GITHUB, GITHUB_MAX_COMMENT, {
  thread: (x, { repo, issue }, api) => ({
    first: '1',
    async page(cursor) {
      const page = Number(cursor);
      const answer = await commentList(
        x,
        `${issue}/comments?per_page=${PER_PAGE}&page=${page}`,
        'comments',
        comment,
      );
      return {
        comments: answer.items.map(toComment),
        next: nextLink(answer.headers.get('link')) ? String(page + 1) : undefined,
      };
    },
    owner: tokenOwner(`${api}/user`, user, (me) => me.login),
    // Without a user (an app's installation token), the comments of apps.
    ours: (c, viewer) => (viewer === undefined ? c.bot === true : c.author === viewer),
    writes: issueCommentWrites(x, repo, issue, comment),
  }),
  async pullRequest(x, { pull: url }) {
    const pr = await getPullRequest(x, url, pull);
    return {
      number: pr.number,
      state: pr.merged === true || pr.merged_at !== null ? 'merged' : pr.state,
      headSha: pr.head.sha,
      baseRef: pr.base.ref,
      headRef: pr.head.ref,
      updatedAt: pr.updated_at,
      // A deleted fork leaves no head repository: no more trusted than a fork.
      fromFork: pr.head.repo === null || pr.head.repo.id !== pr.base.repo.id,
      author: pr.user?.login ?? '',
      labels: pr.labels.map((l) => l.name),
    };
  },
});

/** The places of a PR in an API of GitHub's shape: the repository, the PR's issue, the PR. */
interface IssuePlaces {
  repo: string;
  issue: string;
  pull: string;
}

/**
 * Pull-request comments in GitHub's shape (Gitea and Forgejo kept it): a PR's comments are its issue's. How a page
 * reads and how the PR maps differ: `forge`.
 */
export function githubShapedComments(
  { name, headers, repository }: GitHubShape,
  maxBody: number,
  forge: Pick<CommentForge<{ name: string; repo: string }, IssuePlaces>, 'thread' | 'pullRequest'>,
) {
  return commentForge({
    name,
    maxBody,
    repository,
    headers,
    places: ({ repo }, number) => ({
      repo,
      issue: `${repo}/issues/${number}`,
      pull: `${repo}/pulls/${number}`,
    }),
    ...forge,
  });
}

/**
 * Issue comments written in GitHub's shape (Gitea and Forgejo kept it): POSTed to the issue's comments, PATCHed at
 * `{repo}/issues/comments/{id}`, the comment's page in `html_url`.
 */
export function issueCommentWrites(
  x: Exchange,
  repo: string,
  issue: string,
  schema: z.ZodType<{ id: number; html_url?: string | undefined }>,
): CommentCreateUpdate {
  return commentWrites(x, {
    collection: `${issue}/comments`,
    item: (found) => `${repo}/issues/comments/${found.id}`,
    update: 'PATCH',
    body: (text) => ({ body: text }),
    what: 'a comment',
    schema,
    url: (value) => value.html_url,
  });
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
