// A pull request's preview comment, the same on every forge: the target read and checked, the body checked against
// its marker and the forge's limit, whose token it is asked once per token, the thread paged (bounded) to find our
// comment by its marker, then updated, left alone when it already says so, or created. A forge module describes only
// what differs (CommentForge): where its PR and comments are, how a page reads, how a comment is written, and how
// its answer about the PR maps to PullRequestInfo. commentForge makes the client from that.
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { StalledError, type Subject } from '../../errors.ts';
import type { HeaderValues } from '../../http/fetch.ts';
import { apiBase } from './http.ts';
import { COMMENT_HINTS, call, callList, type Exchange, exchange, readTarget, tokenUser } from './protocol.ts';
import type {
  HttpOptions,
  PostedComment,
  PreviewCommentProvider,
  ProviderName,
  PullRequestInfo,
  PullRequestTarget,
} from './types.ts';

/** Pages of comments read at most to find ours. */
export const MAX_PAGES = 20;

/** A comment as the upsert needs it. */
export interface ForgeComment {
  id: string;
  body: string;
  /** Who wrote it, in the terms the forge's "current user" gives (id, uuid or username). */
  author: string | undefined;
  /** The author is an app (GitHub's Bot users). */
  bot?: boolean | undefined;
  /** Bitbucket Server's optimistic lock. */
  version?: number | undefined;
  url?: string | undefined;
}

export interface CommentPage {
  comments: ForgeComment[];
  /** Where the next page is (a page number or an address); undefined on the last page. */
  next: string | undefined;
  /** Whose token this is, when the answer says (Bitbucket Server's X-AUSERNAME). */
  viewer?: string | undefined;
}

/** A forge's "who am I": where to ask, and the author id its comments carry for the answer's user. */
export interface TokenOwner {
  url: string;
  ask(x: Exchange): Promise<string | undefined>;
}

/** The token's user read from `url` with `schema`, named as the forge's comments name their authors (`id`). */
export function tokenOwner<U>(
  url: string,
  schema: z.ZodType<U>,
  id: (me: U) => string | undefined,
): TokenOwner {
  return {
    url,
    async ask(x) {
      const me = await tokenUser(x, url, schema);
      return me === undefined ? undefined : id(me);
    },
  };
}

/**
 * How a forge writes a comment, as data: where a new one is posted and the body it takes, how one is updated
 * (method, URL, body), what the API calls it, and the page its answer gives the comment.
 */
export interface CommentWrites<T extends { id: number }> {
  /** The comments' collection: a new comment is POSTed here. */
  collection: string;
  /** An existing comment's URL. */
  item: (found: ForgeComment) => string;
  update: 'PATCH' | 'PUT';
  /** The request body that carries `text`. */
  body: (text: string) => unknown;
  /** `a comment`, `a note`. */
  what: string;
  schema: z.ZodType<T>;
  /** The comment's page, when the answer (or the PR's page) tells it. */
  url: (value: T) => string | undefined;
}

/** What the upsert calls: create and update a comment. */
export interface CommentCreateUpdate {
  create(body: string): Promise<PostedComment>;
  update(comment: ForgeComment, body: string): Promise<PostedComment>;
}

/** One PR's comment thread on one forge. */
export interface CommentThread {
  /** The cursor of the first page: a page number, an offset or an address. */
  first: string;
  page(cursor: string): Promise<CommentPage>;
  /** Whose token it is, where one request tells; absent when the pages say it (CommentPage.viewer). */
  owner?: TokenOwner | undefined;
  /** Whether a comment is ours. The default: the token user's, or any when the forge will not say who that is. */
  ours?: ((comment: ForgeComment, viewer: string | undefined) => boolean) | undefined;
  /** From CommentWrites (commentWrites), or written out where the forge needs more (Bitbucket Server's versions). */
  writes: CommentCreateUpdate;
}

/**
 * What a forge module tells commentForge: everything that differs between forges. `R` is the repository's place
 * in the API (with its `owner/repo` name, the subject of errors), `P` the PR's addresses.
 */
export interface CommentForge<R extends { name: string }, P> {
  name: ProviderName;
  /** The longest comment body the API takes, in characters. */
  maxBody: number;
  repository(api: string, repoUrl: string): R;
  /** How every request is made: the token in the forge's own header. */
  headers(token: string): Record<string, string>;
  places(repo: R, number: number): P;
  thread(x: Exchange, at: P, api: string): CommentThread;
  /** The PR as the forge describes it. */
  pullRequest(x: Exchange, at: P): Promise<PullRequestInfo>;
}

/** The preview-comment client of one forge, from its description, for an API address and the HTTP options. */
export function commentForge<R extends { name: string }, P>(
  forge: CommentForge<R, P>,
): (options: { apiUrl: string; http?: HttpOptions | undefined }) => PreviewCommentProvider {
  return (options) => {
    const api = apiBase(options.apiUrl, 'preview');
    const viewers = viewerCache();
    // An error in the target (a URL that does not parse, a number that is not one) is about the PR as well.
    const open = (target: PullRequestTarget, token: string) =>
      readTarget(target, () => {
        const repo = forge.repository(api, target.repoUrl);
        const { x, number } = exchange(forge.name, target, repo.name, forge.headers(token), options.http);
        return { x, at: forge.places(repo, number) };
      });
    return {
      name: forge.name,
      maxBody: forge.maxBody,
      async upsert(target, body, marker, token) {
        const { x, at } = open(target, token);
        checkBody(body, marker, forge.maxBody, x.subject);
        const thread = forge.thread(x, at, api);
        const owner = thread.owner;
        return upsertComment(
          {
            first: thread.first,
            page: (cursor) => thread.page(cursor),
            viewer: owner ? () => viewers(token, () => owner.ask(x)) : undefined,
            ours: thread.ours ?? ((c, viewer) => viewer === undefined || c.author === viewer),
            create: (text) => thread.writes.create(text),
            update: (found, text) => thread.writes.update(found, text),
          },
          body,
          marker,
          x.subject,
        );
      },
      async pullRequest(target, token) {
        const { x, at } = open(target, token);
        return forge.pullRequest(x, at);
      },
    };
  };
}

/** One page of a thread's comments (or activities) read from `url`: `items` picks the list out of the answer. */
export function commentList<T>(
  x: Exchange,
  url: string,
  what: string,
  schema: z.ZodType<T>,
  items: (body: unknown) => unknown = (body) => body,
): Promise<{ items: T[]; headers: HeaderValues; body: unknown }> {
  return callList(x, { url, hints: COMMENT_HINTS, what }, items, schema);
}

/** The posted comment an answer names. */
export function postedComment(id: number, created: boolean, url: string | undefined): PostedComment {
  return { id: String(id), created, url };
}

interface CommentApi extends CommentCreateUpdate {
  first: string;
  page(cursor: string): Promise<CommentPage>;
  viewer: (() => Promise<string | undefined>) | undefined;
  ours(comment: ForgeComment, viewer: string | undefined): boolean;
}

/** A forge's comment create and update, made from its CommentWrites. */
export function commentWrites<T extends { id: number }>(
  x: Exchange,
  spec: CommentWrites<T>,
): CommentCreateUpdate {
  const send = async (method: 'POST' | 'PATCH' | 'PUT', url: string, text: string, created: boolean) => {
    const value = await call(
      x,
      { method, url, body: spec.body(text), hints: COMMENT_HINTS, what: spec.what },
      spec.schema,
    );
    return postedComment(value.id, created, spec.url(value));
  };
  return {
    create: (text) => send('POST', spec.collection, text, true),
    update: (found, text) => send(spec.update, spec.item(found), text, false),
  };
}

function checkBody(body: string, marker: string, maxBody: number, subject: Subject): void {
  if (marker.trim() === '') throw new StalledError('the preview comment has an empty marker', { subject });
  if (!body.includes(marker)) {
    // Without it the next upsert would not find this comment and would add another.
    throw new StalledError(`the preview comment does not hold its marker ${marker.slice(0, 80)}`, {
      subject,
    });
  }
  if (body.length > maxBody) {
    throw new StalledError(
      `the preview comment has ${body.length} characters, more than the ${maxBody} the API takes; cut it first`,
      { subject },
    );
  }
}

/** The oldest comment of ours holding `marker` updated to `body` (no request when it already says so), or a new one. */
async function upsertComment(
  api: CommentApi,
  body: string,
  marker: string,
  subject: Subject,
): Promise<PostedComment> {
  let viewer = api.viewer ? await api.viewer() : undefined;
  let cursor: string | undefined = api.first;
  for (let pages = 0; cursor !== undefined && pages < MAX_PAGES; pages += 1) {
    const page = await api.page(cursor);
    viewer ??= page.viewer;
    const found = page.comments.find((c) => c.body.includes(marker) && api.ours(c, viewer));
    if (found) {
      if (found.body === body) return { id: found.id, created: false, url: found.url };
      return api.update(found, body);
    }
    cursor = page.next;
  }
  if (cursor !== undefined) {
    // Creating one now would put it past the pages read, and every later push would add another.
    throw new StalledError(
      `the pull request has more than ${MAX_PAGES} pages of comments; the preview comment was not looked for ` +
        'beyond them',
      { subject },
    );
  }
  return api.create(body);
}

/**
 * Who a token belongs to, asked once per token (by its hash: the token itself is not kept) and provider. A few
 * tokens at most are in use at once; the oldest answer is forgotten first.
 */
function viewerCache(): (
  token: string,
  lookup: () => Promise<string | undefined>,
) => Promise<string | undefined> {
  const known = new Map<string, string | undefined>();
  return async (token, lookup) => {
    const key = createHash('sha256').update(token).digest('hex');
    if (known.has(key)) return known.get(key);
    const viewer = await lookup();
    if (known.size >= 8) known.delete(known.keys().next().value as string);
    known.set(key, viewer);
    return viewer;
  };
}
