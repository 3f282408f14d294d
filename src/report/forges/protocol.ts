// What every request of a pull-request client shares: the PR as the subject of its errors, one JSON exchange with
// the forge (through http.ts, so the same bounded request, error mapping and refusal of redirects as commit
// statuses), answers read with a schema of only the fields used, and next-page links kept on the API's own origin.
// The comment thread and the one client built on these: comments.ts.
import type { z } from 'zod';
import { StalledError, type Subject, withSubject } from '../../errors.ts';
import type { HeaderValues } from '../../http/fetch.ts';
import { safeEndpoint } from '../../http/request.ts';
import { type FailureHints, label, requestJson } from './http.ts';
import { describeRepo } from './repo-url.ts';
import type { HttpOptions, ProviderName, PullRequestTarget } from './types.ts';

/** A page of comments: 100 bodies of up to GitHub's 64 KiB fit with room for their metadata. */
export const MAX_LIST_BYTES = 16 * 1024 * 1024;
/** One comment or pull request: GitLab's bodies reach 1,000,000 characters, escaped in JSON. */
export const MAX_OBJECT_BYTES = 8 * 1024 * 1024;

export const COMMENT_HINTS: FailureHints = {
  401: 'check the token',
  403: 'the token lacks the permission to comment on pull requests',
  404: 'the repository or pull request does not exist, or the token cannot see it',
};

export const PULL_REQUEST_HINTS: FailureHints = {
  401: 'check the token',
  403: 'the token lacks the permission to read pull requests',
  404: 'the repository or pull request does not exist, or the token cannot see it',
};

/** The PR's number, refused unless it is a positive integer (anything else would address another resource). */
export function pullNumber(target: PullRequestTarget): number {
  if (!Number.isSafeInteger(target.number) || target.number <= 0) {
    throw new StalledError(
      `pull request number ${String(target.number).slice(0, 40)} is not a positive integer`,
    );
  }
  return target.number;
}

/** What every error of a PR's comment or info is about: `owner/repo#12`. */
export function pullSubject(repoPath: string, number: number): Subject {
  return { describe: `${repoPath}#${number}` };
}

/**
 * Reads a target (repository URL, number) with `read`; an error in it (a URL that does not parse, a number that is
 * not one) is about the PR as well, named by the repository's host and path.
 */
export function readTarget<T>(target: PullRequestTarget, read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw withSubject(error, `${describeRepo(target.repoUrl)}#${String(target.number).slice(0, 40)}`);
  }
}

/**
 * What every request about one PR shares (see Exchange), made from the forge, the PR's repository name
 * (`owner/repo`) and the request headers, with the PR's number checked.
 */
export function exchange(
  provider: ProviderName,
  target: PullRequestTarget,
  name: string,
  headers: Record<string, string>,
  http: HttpOptions | undefined,
): { x: Exchange; number: number } {
  const number = pullNumber(target);
  return { x: { provider, headers, subject: pullSubject(name, number), http }, number };
}

/**
 * The token's own user, read from `url` (the forge's "who am I"), or undefined when the forge will not say (403 or
 * 404: an app's installation token, a project access token).
 */
export function tokenUser<T>(x: Exchange, url: string, schema: z.ZodType<T>): Promise<T | undefined> {
  return callUnless(
    x,
    { method: 'GET', url, hints: COMMENT_HINTS, what: 'a user' },
    schema,
    (status) => status === 403 || status === 404,
  );
}

/** The PR (or merge request) itself, as `schema` reads the forge's answer. */
export function getPullRequest<T>(
  x: Exchange,
  url: string,
  schema: z.ZodType<T>,
  what = 'a pull request',
): Promise<T> {
  return call(x, { method: 'GET', url, hints: PULL_REQUEST_HINTS, what }, schema);
}

/** One forge, one PR, one token: what every request of an upsert or a look-up shares. */
export interface Exchange {
  provider: ProviderName;
  headers: Record<string, string>;
  subject: Subject;
  http: HttpOptions | undefined;
}

export interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  url: string;
  body?: unknown;
  hints: FailureHints;
  /** What the answer is, for a message about an answer that cannot be read (`a comment`). */
  what: string;
  maxBytes?: number | undefined;
}

/** One request; its answer read with `schema`. */
export async function call<T>(x: Exchange, request: Call, schema: z.ZodType<T>): Promise<T> {
  const value = await callUnless(x, request, schema, () => false);
  return value as T;
}

/** One request whose refusals with a status `refused` accepts are answered as undefined (a look-up that may fail). */
export async function callUnless<T>(
  x: Exchange,
  request: Call,
  schema: z.ZodType<T>,
  refused: (status: number) => boolean,
): Promise<T | undefined> {
  const answer = await requestJson(
    {
      provider: x.provider,
      method: request.method,
      url: request.url,
      headers: x.headers,
      body: request.body,
      subject: x.subject,
      expectBody: true,
      maxBodyBytes: request.maxBytes ?? MAX_OBJECT_BYTES,
      hints: request.hints,
      allow: refused,
    },
    x.http,
  );
  if (!answer.ok) return undefined;
  const parsed = schema.safeParse(answer.body);
  if (!parsed.success) throw unreadable(x, request, parsed.error.issues[0]);
  return parsed.data;
}

/** A GET of one page of a list: `items` picks the array out of the answer (the answer itself, or its `values`). */
export async function callList<T>(
  x: Exchange,
  request: Omit<Call, 'method' | 'maxBytes'>,
  items: (body: unknown) => unknown,
  schema: z.ZodType<T>,
): Promise<{ items: T[]; headers: HeaderValues; body: unknown }> {
  const answer = await requestJson(
    {
      provider: x.provider,
      method: 'GET',
      url: request.url,
      headers: x.headers,
      subject: x.subject,
      expectBody: true,
      maxBodyBytes: MAX_LIST_BYTES,
      hints: request.hints,
    },
    x.http,
  );
  const list = answer.body === null || typeof answer.body !== 'object' ? undefined : items(answer.body);
  if (!Array.isArray(list)) {
    throw new StalledError(
      `${label(x.provider)} answered GET ${safeEndpoint(request.url)} with ${describeValue(list ?? answer.body)} ` +
        `where its API gives a list of ${request.what}; is apiUrl the address of the ${label(x.provider)} API?`,
      { subject: x.subject },
    );
  }
  const read: T[] = [];
  for (const item of list) {
    const parsed = schema.safeParse(item);
    if (!parsed.success) throw unreadable(x, { ...request, method: 'GET' }, parsed.error.issues[0]);
    read.push(parsed.data);
  }
  return { items: read, headers: answer.headers, body: answer.body };
}

function unreadable(x: Exchange, request: Call, issue: z.core.$ZodIssue | undefined): StalledError {
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  return new StalledError(
    `${label(x.provider)} answered ${request.method} ${safeEndpoint(request.url)} with ${request.what} that does ` +
      `not have the shape its API documents (${where}${issue?.message ?? 'unreadable'})`,
    { subject: x.subject },
  );
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/** The `rel="next"` target of a Link header (RFC 8288), as GitHub and Gitea send it. */
export function nextLink(header: string | null): string | undefined {
  for (const link of header?.split(/,(?=\s*<)/) ?? []) {
    const [target, ...params] = link.split(';');
    const url = /^\s*<([^>]*)>\s*$/.exec(target ?? '')?.[1];
    const rel = params
      .map((param) => /^\s*rel\s*=\s*"?([^"]*)"?\s*$/i.exec(param)?.[1])
      .find((value) => value !== undefined);
    // rel may hold several relation types, space-separated.
    if (url !== undefined && rel?.toLowerCase().split(/\s+/).includes('next')) return url;
  }
  return undefined;
}

/**
 * A next-page address the forge gave, accepted only on the API's own origin and under its path: the token goes
 * with it, so a list answer must not be able to send it elsewhere.
 */
export function sameApi(next: string, api: string, x: Exchange): string {
  let url: URL;
  const base = new URL(`${api}/`);
  try {
    url = new URL(next, base);
  } catch {
    throw new StalledError(`${label(x.provider)} gave a next page that is not a URL`, { subject: x.subject });
  }
  if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) {
    throw new StalledError(
      `${label(x.provider)} gave a next page outside apiUrl (${safeEndpoint(url.href)}); not followed with the token`,
      { subject: x.subject },
    );
  }
  return url.href;
}
