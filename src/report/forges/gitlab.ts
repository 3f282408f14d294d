// GitLab (gitlab.com and self-managed): "Set the pipeline status of a commit", POST /projects/:id/statuses/:sha,
// where :id is the URL-encoded full path of the project, subgroups included.
//
// GitLab (gitlab.com and self-managed): a merge request's comments are its notes. Operations (docs.gitlab.com/api/notes,
// "Merge requests"; docs.gitlab.com/api/merge_requests, "Get single MR"; docs.gitlab.com/api/rest, "Pagination"):
//   GET  /projects/:id/merge_requests/:merge_request_iid/notes?sort=asc&order_by=created_at&per_page=100&page=N
//        (X-Next-Page: the next page, empty on the last)
//   POST /projects/:id/merge_requests/:merge_request_iid/notes {body}
//   PUT  /projects/:id/merge_requests/:merge_request_iid/notes/:note_id {body}
//   GET  /projects/:id/merge_requests/:merge_request_iid
//   GET  /user (whose token: also a project or group access token's bot user)
// :id is the URL-encoded full path of the project, subgroups included. System notes ("added 1 commit") are skipped.

import { z } from 'zod';
import { StalledError } from '../../errors.ts';
import { commentForge, commentList, commentWrites, tokenOwner } from './comments.ts';
import { requireCommit, statusForge } from './http.ts';
import { getPullRequest } from './protocol.ts';
import { parseRepoUrl, type RepoLocation } from './repo-url.ts';
import type { CommitState } from './types.ts';

export const GITLAB_API_URL = 'https://gitlab.com/api/v4';

/** GitLab has no "error": both of our failures are its "failed"; a sync that was cut short is "canceled". */
export const GITLAB_STATES: Readonly<Record<CommitState, string>> = {
  pending: 'pending',
  success: 'success',
  failure: 'failed',
  error: 'failed',
  cancelled: 'canceled',
};

/** How every request to GitLab is made: the token in its own header. */
function gitlabHeaders(token: string): Record<string, string> {
  return { 'PRIVATE-TOKEN': token, Accept: 'application/json' };
}

/**
 * A project's place in the API (`/projects/{group%2Fproject}`) and its `group/project` name. A GitLab under a
 * relative URL root (https://host/gitlab/api/v4) serves its projects under that root too.
 */
function gitlabProject(
  api: string,
  repoUrl: string,
): { location: RepoLocation; name: string; project: string } {
  const root = new URL(api).pathname
    .replace(/\/api\/v4$/, '')
    .split('/')
    .filter(Boolean);
  const location = parseRepoUrl(repoUrl);
  const underRoot = root.length > 0 && root.every((segment, i) => location.segments[i] === segment);
  const path = underRoot ? location.segments.slice(root.length) : location.segments;
  if (path.length < 2)
    throw new StalledError(
      `repository ${location.hostname}/${path.join('/')} does not have the form group/project`,
    );
  const name = path.join('/');
  return { location, name, project: `${api}/projects/${encodeURIComponent(name)}` };
}

export const gitlabProvider = statusForge({
  name: 'gitlab',
  // GitLab refuses descriptions over 255 characters.
  maxDescription: 255,
  request(api, target, status, token) {
    const state = GITLAB_STATES[status.state];
    // GitLab answers 400 "Cannot transition status via :enqueue from :pending" when a status is posted in the
    // state it already has (after a restart, or when two agents share a context): the commit already says it.
    const sameState = new RegExp(`Cannot transition status via :\\w+ from :${state}\\b`);
    return {
      url: `${gitlabProject(api, target.repoUrl).project}/statuses/${requireCommit(target.commit)}`,
      headers: gitlabHeaders(token),
      body: {
        state,
        name: status.context,
        description: status.description,
        ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
      },
      alreadyDone: (code, message) => code === 400 && sameState.test(message),
    };
  },
});

/** GitLab's limit on a note's body. */
export const GITLAB_MAX_NOTE = 1_000_000;
const PER_PAGE = 100;

const note = z.object({
  id: z.number().int().positive(),
  body: z.string().nullish(),
  system: z.boolean().optional(),
  author: z.object({ id: z.number().int() }).nullish(),
});
const mergeRequest = z.object({
  iid: z.number().int(),
  state: z.enum(['opened', 'closed', 'locked', 'merged']),
  sha: z.string().nullable(),
  target_branch: z.string(),
  source_branch: z.string(),
  updated_at: z.string().optional(),
  source_project_id: z.number().int(),
  target_project_id: z.number().int(),
  author: z.object({ username: z.string() }).nullable(),
  labels: z.array(z.string()),
  web_url: z.string().optional(),
});

/** GitLab's merge-request comments: its notes, system notes ("added 1 commit") skipped. */
export const gitlabComments = commentForge({
  name: 'gitlab',
  maxBody: GITLAB_MAX_NOTE,
  repository: gitlabProject,
  headers: gitlabHeaders,
  places: ({ location, project }, number) => ({
    mr: `${project}/merge_requests/${number}`,
    // GitLab's notes carry no address of their own: the MR's page with the note's anchor.
    page: `${location.webOrigin}/${location.segments.map(encodeURIComponent).join('/')}/-/merge_requests/${number}`,
  }),
  thread: (x, { mr, page: mrPage }, api) => ({
    first: '1',
    async page(cursor) {
      const page = Number(cursor);
      const url = `${mr}/notes?sort=asc&order_by=created_at&per_page=${PER_PAGE}&page=${page}`;
      const answer = await commentList(x, url, 'notes', note);
      return {
        comments: answer.items
          .filter((n) => n.system !== true)
          .map((n) => ({
            id: String(n.id),
            body: n.body ?? '',
            author: n.author ? String(n.author.id) : undefined,
          })),
        next: nextPage(answer.headers.get('x-next-page'), page, answer.items.length),
      };
    },
    owner: tokenOwner(`${api}/user`, z.object({ id: z.number().int() }), (me) => String(me.id)),
    writes: commentWrites(x, {
      collection: `${mr}/notes`,
      item: (found) => `${mr}/notes/${found.id}`,
      update: 'PUT',
      body: (text) => ({ body: text }),
      what: 'a note',
      schema: note,
      url: (value) => `${mrPage}#note_${value.id}`,
    }),
  }),
  async pullRequest(x, { mr }) {
    const value = await getPullRequest(x, mr, mergeRequest, 'a merge request');
    if (value.sha === null) {
      throw new StalledError('GitLab gives the merge request no head commit yet', { subject: x.subject });
    }
    return {
      number: value.iid,
      // `locked` is the moment of a merge, before it is done.
      state: value.state === 'opened' || value.state === 'locked' ? 'open' : value.state,
      headSha: value.sha,
      baseRef: value.target_branch,
      headRef: value.source_branch,
      updatedAt: value.updated_at,
      fromFork: value.source_project_id !== value.target_project_id,
      author: value.author?.username ?? '',
      labels: value.labels,
    };
  },
});

/**
 * GitLab's X-Next-Page: the next page's number, empty on the last page. A proxy that drops the header leaves only
 * the count: a full page may have a successor.
 */
function nextPage(header: string | null, page: number, count: number): string | undefined {
  if (header === null) return count >= PER_PAGE ? String(page + 1) : undefined;
  const next = header.trim();
  return /^\d{1,9}$/.test(next) && Number(next) > page ? next : undefined;
}
