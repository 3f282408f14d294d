// Bitbucket Server and Data Center: the build-status REST resource, POST {base}/rest/build-status/1.0/commits/{id}.
// It is keyed by commit alone (a build status belongs to the commit in every repository that has it).
//
// Bitbucket Server and Data Center: a pull request's comments. Operations (developer.atlassian.com/server/bitbucket/
// rest, "Pull requests"; REST API 1.0):
//   GET  /rest/api/1.0/projects/{projectKey}/repos/{repositorySlug}/pull-requests/{pullRequestId}/activities
//        ?start=N&limit=100 ({values, isLastPage, nextPageStart}; COMMENTED activities carry the comment, newest first)
//   POST /rest/api/1.0/projects/{projectKey}/repos/{repositorySlug}/pull-requests/{pullRequestId}/comments {text}
//   PUT  .../pull-requests/{pullRequestId}/comments/{commentId} {text, version}: the comment's version is its lock
//   GET  .../pull-requests/{pullRequestId}/comments/{commentId} (the current version, after a 409)
//   GET  /rest/api/1.0/projects/{projectKey}/repos/{repositorySlug}/pull-requests/{pullRequestId}
// Whose token it is comes with every authenticated answer, in X-AUSERNAME. Bitbucket has no labels.

import { z } from 'zod';
import { StalledError } from '../../errors.ts';
import {
  type CommentCreateUpdate,
  commentForge,
  commentList,
  type ForgeComment,
  postedComment,
} from './comments.ts';
import { bearerHeaders, requireCommit, statusForge } from './http.ts';
import { COMMENT_HINTS, call, callUnless, type Exchange, getPullRequest } from './protocol.ts';
import { ownerAndName, parseRepoUrl } from './repo-url.ts';
import { boundedKey } from './text.ts';
import type { CommitState } from './types.ts';

/**
 * Bitbucket Server's build states are three: it has no STOPPED, so a cancelled sync (which did not succeed)
 * is FAILED, with a description that says why.
 */
export const BITBUCKET_SERVER_STATES: Readonly<Record<CommitState, 'INPROGRESS' | 'SUCCESSFUL' | 'FAILED'>> =
  {
    pending: 'INPROGRESS',
    success: 'SUCCESSFUL',
    failure: 'FAILED',
    error: 'FAILED',
    cancelled: 'FAILED',
  };

/** Bitbucket Server stores key and name in columns of 255. */
const MAX_KEY = 255;

export const bitbucketServerProvider = statusForge({
  name: 'bitbucket-server',
  maxDescription: 255,
  request(base, target, status, token) {
    const commit = requireCommit(target.commit);
    return {
      url: `${base}/rest/build-status/1.0/commits/${commit}`,
      headers: bearerHeaders(token),
      body: {
        state: BITBUCKET_SERVER_STATES[status.state],
        key: boundedKey(status.context, MAX_KEY),
        name: boundedKey(status.context, MAX_KEY),
        // Required: without a target URL of our own, the commit's page in the repository.
        url: status.targetUrl || `${base}/${bitbucketServerRepository(target.repoUrl).web}/commits/${commit}`,
        description: status.description,
      },
    };
  },
});

/**
 * A repository's place: `rest`, its path in the REST API (`projects/{KEY}/repos/{slug}`, a personal project's key
 * being `~user`), `web`, its path in the web interface (personal repositories live under `users/{user}`), and its
 * `KEY/slug` name. Clone URLs are {base}/scm/PROJECT/repo.git or ssh://host:7999/project/repo.git.
 */
function bitbucketServerRepository(repoUrl: string): { name: string; rest: string; web: string } {
  const [project, slug] = ownerAndName(parseRepoUrl(repoUrl), false, 'project/repository');
  const personal = project.startsWith('~');
  const key = personal ? project : project.toUpperCase();
  const repos = `repos/${encodeURIComponent(slug)}`;
  return {
    name: `${key}/${slug}`,
    rest: `projects/${encodeURIComponent(key)}/${repos}`,
    web: personal
      ? `users/${encodeURIComponent(project.slice(1))}/${repos}`
      : `projects/${encodeURIComponent(key)}/${repos}`,
  };
}

/** Bitbucket Server documents no limit for the API; 32,768 characters is what its comment editor allows. */
export const BITBUCKET_SERVER_MAX_COMMENT = 32_768;
const PAGE_LIMIT = 100;

const comment = z.object({
  id: z.number().int().positive(),
  version: z.number().int().nonnegative(),
  text: z.string().nullish(),
  author: z.object({ name: z.string() }).nullish(),
});
const activity = z.object({
  action: z.string(),
  commentAction: z.string().optional(),
  comment: comment.optional(),
  commentAnchor: z.unknown().optional(),
});
const paging = z.object({ isLastPage: z.boolean(), nextPageStart: z.number().int().nullish() });
const ref = z.object({
  displayId: z.string(),
  latestCommit: z.string(),
  repository: z.object({ id: z.number().int() }).nullable(),
});
const pull = z.object({
  id: z.number().int(),
  state: z.enum(['OPEN', 'DECLINED', 'MERGED']),
  fromRef: ref,
  toRef: ref,
  author: z.object({ user: z.object({ name: z.string() }) }).nullish(),
  updatedDate: z.number().optional(),
});

/** Bitbucket Server's pull-request comments, read from its activities; whose token it is, every answer says. */
export const bitbucketServerComments = commentForge({
  name: 'bitbucket-server',
  maxBody: BITBUCKET_SERVER_MAX_COMMENT,
  repository: (base, repoUrl) => ({ base, ...bitbucketServerRepository(repoUrl) }),
  headers: bearerHeaders,
  places: ({ base, rest, web }, number) => ({
    pr: `${base}/rest/api/1.0/${rest}/pull-requests/${number}`,
    page: `${base}/${web}/pull-requests/${number}/overview`,
  }),
  thread: (x, { pr, page }) => {
    const seen = new Set<string>();
    return {
      first: '0',
      async page(cursor) {
        const url = `${pr}/activities?start=${cursor}&limit=${PAGE_LIMIT}`;
        const answer = await commentList(x, url, 'activities', activity, (list) => (list as Paged).values);
        const paged = paging.safeParse(answer.body).data;
        const next =
          paged && !paged.isLastPage && paged.nextPageStart != null ? String(paged.nextPageStart) : undefined;
        const viewer = answer.headers.get('x-ausername')?.toLowerCase() || undefined;
        return { comments: commented(answer.items, seen), next, viewer };
      },
      writes: versionedWrites(x, pr, page),
    };
  },
  async pullRequest(x, { pr }) {
    const value = await getPullRequest(x, pr, pull);
    const from = value.fromRef.repository;
    const to = value.toRef.repository;
    return {
      number: value.id,
      state: value.state === 'OPEN' ? 'open' : value.state === 'MERGED' ? 'merged' : 'closed',
      headSha: value.fromRef.latestCommit,
      baseRef: value.toRef.displayId,
      headRef: value.fromRef.displayId,
      updatedAt: value.updatedDate === undefined ? undefined : new Date(value.updatedDate).toISOString(),
      fromFork: from === null || to === null || from.id !== to.id,
      author: value.author?.user.name ?? '',
      labels: [],
    };
  },
});

/** A Bitbucket list answer: its items are its `values`. */
type Paged = { values?: unknown };

/** The PR's own comments among a page of activities, each once (`seen` runs across the pages). */
function commented(activities: readonly z.infer<typeof activity>[], seen: Set<string>): ForgeComment[] {
  const comments: ForgeComment[] = [];
  for (const a of activities) {
    // File and line comments carry an anchor: not the preview's.
    if (a.action !== 'COMMENTED' || a.comment === undefined || a.commentAnchor) continue;
    const id = String(a.comment.id);
    // A deleted comment is listed as such; one comment may show in several activities (added, edited).
    if (a.commentAction === 'DELETED') seen.add(id);
    if (seen.has(id)) continue;
    seen.add(id);
    comments.push({
      id,
      body: a.comment.text ?? '',
      author: a.comment.author?.name.toLowerCase(),
      version: a.comment.version,
    });
  }
  return comments;
}

/** Create, and update under the comment's version (its optimistic lock): a 409 is retried once, at the version now. */
function versionedWrites(x: Exchange, pr: string, page: string): CommentCreateUpdate {
  const posted = (value: z.infer<typeof comment>, created: boolean) =>
    postedComment(value.id, created, `${page}?commentId=${value.id}`);
  const request = (method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown) => ({
    method,
    url,
    body,
    hints: COMMENT_HINTS,
    what: 'a comment',
  });
  const put = (found: ForgeComment, text: string, version: number) =>
    callUnless(
      x,
      request('PUT', `${pr}/comments/${found.id}`, { text, version }),
      comment,
      (status) => status === 409,
    );
  return {
    async create(text) {
      return posted(await call(x, request('POST', `${pr}/comments`, { text }), comment), true);
    },
    async update(found, text) {
      const first = await put(found, text, found.version ?? 0);
      if (first) return posted(first, false);
      // 409: the comment changed since it was listed; once more with the version it has now.
      const current = await call(x, request('GET', `${pr}/comments/${found.id}`), comment);
      const second = await put(found, text, current.version);
      if (!second) {
        throw new StalledError('the preview comment is being changed by someone else (HTTP 409 twice)', {
          subject: x.subject,
        });
      }
      return posted(second, false);
    },
  };
}
