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
import { apiBase, bearerHeaders, postJson, requireCommit } from './http.ts';
import {
  COMMENT_HINTS,
  type CommentApi,
  call,
  callList,
  callUnless,
  checkBody,
  exchange,
  type ForgeComment,
  getPullRequest,
  readTarget,
  upsertComment,
} from './protocol.ts';
import { ownerAndName, parseRepoUrl, statusSubject } from './repo-url.ts';
import { boundedKey } from './text.ts';
import type {
  CommitState,
  CommitStatusProvider,
  HttpOptions,
  PostedComment,
  PreviewCommentProvider,
  PullRequestInfo,
  PullRequestTarget,
} from './types.ts';

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

export interface BitbucketServerOptions {
  /** The server's base URL (with its context path, if any), e.g. https://bitbucket.example.com. */
  apiUrl: string;
  http?: HttpOptions | undefined;
}

export function bitbucketServerProvider(options: BitbucketServerOptions): CommitStatusProvider {
  const base = apiBase(options.apiUrl);
  return {
    name: 'bitbucket-server',
    maxDescription: 255,
    async post(target, status, token) {
      const commit = requireCommit(target.commit);
      await postJson(
        {
          provider: 'bitbucket-server',
          url: `${base}/rest/build-status/1.0/commits/${commit}`,
          headers: bearerHeaders(token),
          body: {
            state: BITBUCKET_SERVER_STATES[status.state],
            key: boundedKey(status.context, MAX_KEY),
            name: boundedKey(status.context, MAX_KEY),
            // Required: without a target URL of our own, the commit's page in the repository.
            url:
              status.targetUrl ||
              `${base}/${bitbucketServerRepository(target.repoUrl).web}/commits/${commit}`,
            description: status.description,
          },
          subject: statusSubject(target),
        },
        options.http,
      );
    },
  };
}

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
});

export function bitbucketServerComments(options: BitbucketServerOptions): PreviewCommentProvider {
  const base = apiBase(options.apiUrl, 'preview');

  function open(target: PullRequestTarget, token: string) {
    const { name, rest, web } = bitbucketServerRepository(target.repoUrl);
    const { x, number } = exchange('bitbucket-server', target, name, bearerHeaders(token), options.http);
    return {
      x,
      pr: `${base}/rest/api/1.0/${rest}/pull-requests/${number}`,
      page: `${base}/${web}/pull-requests/${number}/overview`,
    };
  }

  return {
    name: 'bitbucket-server',
    maxBody: BITBUCKET_SERVER_MAX_COMMENT,
    async upsert(target, body, marker, token) {
      const { x, pr, page } = readTarget(target, () => open(target, token));
      checkBody(body, marker, BITBUCKET_SERVER_MAX_COMMENT, x.subject);
      const posted = (value: z.infer<typeof comment>, created: boolean): PostedComment => ({
        id: String(value.id),
        created,
        url: `${page}?commentId=${value.id}`,
      });
      const put = (found: ForgeComment, text: string, version: number) =>
        callUnless(
          x,
          {
            method: 'PUT',
            url: `${pr}/comments/${found.id}`,
            body: { text, version },
            hints: COMMENT_HINTS,
            what: 'a comment',
          },
          comment,
          (status) => status === 409,
        );
      const seen = new Set<string>();
      const commentApi: CommentApi = {
        first: '0',
        async page(cursor) {
          const answer = await callList(
            x,
            {
              url: `${pr}/activities?start=${cursor}&limit=${PAGE_LIMIT}`,
              hints: COMMENT_HINTS,
              what: 'activities',
            },
            (list) => (list as { values?: unknown }).values,
            activity,
          );
          const comments: ForgeComment[] = [];
          for (const a of answer.items) {
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
          const paged = paging.safeParse(answer.body).data;
          const next =
            paged && !paged.isLastPage && paged.nextPageStart != null
              ? String(paged.nextPageStart)
              : undefined;
          return { comments, next, viewer: answer.headers.get('x-ausername')?.toLowerCase() || undefined };
        },
        ours: (c, viewer) => viewer === undefined || c.author === viewer,
        async create(text) {
          const value = await call(
            x,
            {
              method: 'POST',
              url: `${pr}/comments`,
              body: { text },
              hints: COMMENT_HINTS,
              what: 'a comment',
            },
            comment,
          );
          return posted(value, true);
        },
        async update(found, text) {
          const first = await put(found, text, found.version ?? 0);
          if (first) return posted(first, false);
          // 409: the comment changed since it was listed; once more with the version it has now.
          const current = await call(
            x,
            { method: 'GET', url: `${pr}/comments/${found.id}`, hints: COMMENT_HINTS, what: 'a comment' },
            comment,
          );
          const second = await put(found, text, current.version);
          if (!second) {
            throw new StalledError('the preview comment is being changed by someone else (HTTP 409 twice)', {
              subject: x.subject,
            });
          }
          return posted(second, false);
        },
      };
      return upsertComment(commentApi, body, marker, x.subject);
    },

    async pullRequest(target, token) {
      const { x, pr } = readTarget(target, () => open(target, token));
      const value = await getPullRequest(x, pr, pull);
      return {
        number: value.id,
        state: value.state === 'OPEN' ? 'open' : value.state === 'MERGED' ? 'merged' : 'closed',
        headSha: value.fromRef.latestCommit,
        baseRef: value.toRef.displayId,
        fromFork:
          value.fromRef.repository === null ||
          value.toRef.repository === null ||
          value.fromRef.repository.id !== value.toRef.repository.id,
        author: value.author?.user.name ?? '',
        labels: [],
      } satisfies PullRequestInfo;
    },
  };
}
