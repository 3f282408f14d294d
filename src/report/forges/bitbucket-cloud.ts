// Bitbucket Cloud: "Create a build status for a commit",
// POST /2.0/repositories/{workspace}/{repo_slug}/commit/{commit}/statuses/build. A status with the same key is
// overwritten, so the key (our context, bounded) is what makes a later status replace an earlier one.
//
// Bitbucket Cloud: a pull request's comments. Operations (developer.atlassian.com/cloud/bitbucket/rest/
// api-group-pullrequests; paging: developer.atlassian.com/cloud/bitbucket/rest/intro/#pagination):
//   GET  /2.0/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/comments?pagelen=50
//        ({values, next}: `next` is the next page's address, absent on the last)
//   POST /2.0/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/comments {content: {raw}}
//   PUT  /2.0/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/comments/{comment_id} {content: {raw}}
//   GET  /2.0/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}
//   GET  /2.0/user (whose token; an access token of a repository or workspace may not say: then any comment)
// Inline comments, replies and deleted comments are not the preview's and are skipped.

import { z } from 'zod';
import { StalledError } from '../../errors.ts';
import { commentForge, commentList, commentWrites, tokenOwner } from './comments.ts';
import { bearerHeaders, requireCommit, statusForge } from './http.ts';
import { getPullRequest, sameApi } from './protocol.ts';
import { ownerAndName, parseRepoUrl, type RepoLocation } from './repo-url.ts';
import { boundedKey } from './text.ts';
import type { CommitState } from './types.ts';

export const BITBUCKET_CLOUD_API_URL = 'https://api.bitbucket.org/2.0';
/** Bitbucket Cloud refuses longer keys. */
export const BITBUCKET_CLOUD_MAX_KEY = 40;

/** STOPPED means a build was stopped before it ended (what a cancelled sync is); a deploy that erred has failed. */
export const BITBUCKET_CLOUD_STATES: Readonly<
  Record<CommitState, 'INPROGRESS' | 'SUCCESSFUL' | 'FAILED' | 'STOPPED'>
> = {
  pending: 'INPROGRESS',
  success: 'SUCCESSFUL',
  failure: 'FAILED',
  error: 'FAILED',
  cancelled: 'STOPPED',
};

/** A repository's place in the API (`/repositories/{workspace}/{slug}`), its encoded path and its name. */
function bitbucketCloudRepository(
  api: string,
  repoUrl: string,
): { location: RepoLocation; name: string; path: string; repo: string } {
  const location = parseRepoUrl(repoUrl);
  const [workspace, slug] = ownerAndName(location, true, 'workspace/repository');
  const path = `${encodeURIComponent(workspace)}/${encodeURIComponent(slug)}`;
  return { location, name: `${workspace}/${slug}`, path, repo: `${api}/repositories/${path}` };
}

export const bitbucketCloudProvider = statusForge({
  name: 'bitbucket-cloud',
  maxDescription: 255,
  request(api, target, status, token) {
    const { location, path, repo } = bitbucketCloudRepository(api, target.repoUrl);
    const commit = requireCommit(target.commit);
    return {
      url: `${repo}/commit/${commit}/statuses/build`,
      headers: bearerHeaders(token),
      body: {
        key: boundedKey(status.context, BITBUCKET_CLOUD_MAX_KEY),
        state: BITBUCKET_CLOUD_STATES[status.state],
        name: status.context,
        description: status.description,
        // Required by Bitbucket: without a target URL of our own, the commit's page.
        url: status.targetUrl || `${location.webOrigin}/${path}/commits/${commit}`,
      },
    };
  },
});

/** Bitbucket Cloud documents no limit; 32,768 characters is well within what it takes and shows. */
export const BITBUCKET_CLOUD_MAX_COMMENT = 32_768;
// "Individual APIs may enforce different values" than the documented maximum of 100; the pull-request resources
// are known to stop at 50.
const PAGE_LENGTH = 50;

const account = z.object({
  uuid: z.string().optional(),
  account_id: z.string().optional(),
  nickname: z.string().optional(),
  display_name: z.string().optional(),
});
const comment = z.object({
  id: z.number().int().positive(),
  content: z.object({ raw: z.string().nullish() }).nullish(),
  user: account.nullish(),
  deleted: z.boolean().optional(),
  inline: z.unknown().optional(),
  parent: z.unknown().optional(),
  links: z.object({ html: z.object({ href: z.string() }).optional() }).optional(),
});
const page = z.object({ values: z.array(z.unknown()), next: z.string().optional() });
const repository = z.object({ uuid: z.string() });
const pull = z.object({
  id: z.number().int(),
  state: z.enum(['OPEN', 'MERGED', 'DECLINED', 'SUPERSEDED']),
  author: account.nullish(),
  source: z.object({
    branch: z.object({ name: z.string() }),
    commit: z.object({ hash: z.string() }).nullable(),
    repository: repository.nullable(),
  }),
  destination: z.object({ branch: z.object({ name: z.string() }), repository }),
  updated_on: z.string().optional(),
});

/** Bitbucket Cloud's pull-request comments; inline comments, replies and deleted ones are not the preview's. */
export const bitbucketCloudComments = commentForge({
  name: 'bitbucket-cloud',
  maxBody: BITBUCKET_CLOUD_MAX_COMMENT,
  repository: bitbucketCloudRepository,
  headers: bearerHeaders,
  places: ({ repo }, number) => ({ pr: `${repo}/pullrequests/${number}` }),
  thread: (x, { pr }, api) => ({
    first: `${pr}/comments?pagelen=${PAGE_LENGTH}`,
    async page(url) {
      const answer = await commentList(x, url, 'comments', comment, (body) => (body as Paged).values);
      const next = page.safeParse(answer.body).data?.next;
      return {
        comments: answer.items
          .filter((c) => c.deleted !== true && !c.inline && !c.parent)
          .map((c) => ({
            id: String(c.id),
            body: c.content?.raw ?? '',
            author: c.user?.uuid,
            url: c.links?.html?.href,
          })),
        next: next === undefined ? undefined : sameApi(next, api, x),
      };
    },
    owner: tokenOwner(`${api}/user`, account, (me) => me.uuid),
    writes: commentWrites(x, {
      collection: `${pr}/comments`,
      item: (found) => `${pr}/comments/${found.id}`,
      update: 'PUT',
      body: (text) => ({ content: { raw: text } }),
      what: 'a comment',
      schema: comment,
      url: (value) => value.links?.html?.href,
    }),
  }),
  async pullRequest(x, { pr }) {
    const value = await getPullRequest(x, pr, pull);
    if (value.source.commit === null) {
      throw new StalledError('Bitbucket gives the pull request no head commit', { subject: x.subject });
    }
    const from = value.source.repository;
    return {
      number: value.id,
      state: value.state === 'OPEN' ? 'open' : value.state === 'MERGED' ? 'merged' : 'closed',
      headSha: value.source.commit.hash,
      baseRef: value.destination.branch.name,
      headRef: value.source.branch.name,
      updatedAt: value.updated_on,
      // A deleted fork leaves no source repository: no more trusted than a fork.
      fromFork: from === null || from.uuid !== value.destination.repository.uuid,
      author: value.author?.nickname ?? value.author?.account_id ?? value.author?.display_name ?? '',
      // Bitbucket has no labels.
      labels: [],
    };
  },
});

/** A Bitbucket list answer: its items are its `values`. */
type Paged = { values?: unknown };
