// The one HTTP exchange every forge client makes (commit statuses, pull-request comments): a JSON request through the
// bounded request helper (src/http/request.ts), its answer parsed, and a refusal turned into the error taxonomy. Rate
// limits become WaitingError with the delay the server asked for, 5xx and network failures TransientError, every other
// refusal StalledError with the server's own message (bounded) and a hint at what to check. Redirects are never
// followed: the token would go along to wherever they point.
import { StalledError, type Subject } from '../../errors.ts';
import type { HeaderValues } from '../../http/fetch.ts';
import { httpFailure, safeEndpoint, sendBounded } from '../../http/request.ts';
import { parseJson } from '../../json.ts';
import { statusSubject } from './repo-url.ts';
import type { CommitStatus, CommitStatusProvider, HttpOptions, ProviderName, StatusTarget } from './types.ts';

const DEFAULT_TIMEOUT_MS = 15_000;
// Error bodies are read for their message only; anything longer is not a message.
const MAX_ERROR_BODY_BYTES = 64 * 1024;
const MAX_SERVER_MESSAGE = 300;

export const USER_AGENT = 'mooring';

/** What a refusal means for a kind of request, by status: appended to the message after a colon. */
export type FailureHints = Readonly<Partial<Record<number, string>>>;

/** The hints of a commit-status request. */
export const STATUS_HINTS: FailureHints = {
  401: 'check the token',
  403: 'the token lacks the permission to write commit statuses',
  404: 'the repository or commit does not exist, or the token cannot see it',
};

export interface JsonRequest {
  provider: ProviderName;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  url: string;
  headers: Record<string, string>;
  /** Sent as JSON; none for GET. */
  body?: unknown;
  subject: Subject;
  /** Read and parse the answer of a success (at most maxBodyBytes of it); otherwise only its status counts. */
  expectBody?: boolean | undefined;
  /** The most of a successful answer read; a longer one is refused, never parsed in part. */
  maxBodyBytes?: number | undefined;
  hints?: FailureHints | undefined;
  /** A refusal that means "already so" for this API (GitLab will not move a status to the state it is in). */
  alreadyDone?: ((status: number, message: string) => boolean) | undefined;
  /** Refusals the caller handles itself (a missing optional resource): returned, not thrown. Never a rate limit. */
  allow?: ((status: number) => boolean) | undefined;
}

export interface JsonAnswer {
  status: number;
  /** False only for a refusal `allow` let through. */
  ok: boolean;
  headers: HeaderValues;
  /** The parsed answer when `expectBody` and the answer was a success with a body; otherwise undefined. */
  body: unknown;
}

/** One JSON request; every refusal but those `allow` lets through is thrown as the error taxonomy. */
export async function requestJson(request: JsonRequest, options: HttpOptions = {}): Promise<JsonAnswer> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const where = `${request.method} ${safeEndpoint(request.url)}`;
  const limit = request.expectBody ? (request.maxBodyBytes ?? MAX_ERROR_BODY_BYTES) : MAX_ERROR_BODY_BYTES;
  const headers: Record<string, string> = { 'User-Agent': USER_AGENT, ...request.headers };
  if (request.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await sendBounded({
    method: request.method,
    url: request.url,
    headers,
    ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
    timeoutMs,
    maxBodyBytes: limit,
    // Not followed: fetch would carry PRIVATE-TOKEN along to wherever a redirect points.
    redirect: 'manual',
    what: where,
    subject: request.subject,
    fetch: options.fetch,
    signal: options.signal,
  });
  if (response.ok) {
    if (!request.expectBody)
      return { status: response.status, ok: true, headers: response.headers, body: undefined };
    if (response.truncated) {
      throw new StalledError(`${where}: the answer is longer than ${limit} bytes, more than mooring reads`, {
        subject: request.subject,
      });
    }
    return {
      status: response.status,
      ok: true,
      headers: response.headers,
      body: parseAnswer(response.body, where, request),
    };
  }
  if (response.status >= 300 && response.status < 400) {
    const location = response.headers.get('location');
    throw new StalledError(
      `${where} was redirected${location ? ` to ${safeEndpoint(location, request.url)}` : ''}: ` +
        'the repository moved or apiUrl is wrong; update the configuration',
      { subject: request.subject },
    );
  }
  const message = serverMessage(response.body);
  if (request.alreadyDone?.(response.status, message)) {
    return { status: response.status, ok: true, headers: response.headers, body: undefined };
  }
  // GitHub signals its limits with 403 as well as 429 (primary: remaining 0; secondary: Retry-After).
  const rateLimited =
    response.status === 429 ||
    (response.status === 403 &&
      (response.headers.get('x-ratelimit-remaining') === '0' ||
        response.headers.get('retry-after') !== null));
  if (!rateLimited && request.allow?.(response.status)) {
    return { status: response.status, ok: false, headers: response.headers, body: undefined };
  }
  const what = `${label(request.provider)} answered HTTP ${response.status}${message ? ` (${message})` : ''} to ${where}`;
  const hint = (request.hints ?? STATUS_HINTS)[response.status];
  const failure = httpFailure(
    response,
    rateLimited ? `${what}: rate limited` : `${what}${hint ? `: ${hint}` : ''}`,
    {
      now: (options.now ?? Date.now)(),
      rateLimited,
      subject: request.subject,
    },
  );
  if (failure) throw failure;
  // httpFailure has no verdict for 1xx, which fetch never hands over; kept total all the same.
  throw new StalledError(what, { subject: request.subject });
}

export interface JsonPost {
  provider: ProviderName;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  subject: Subject;
  /** A refusal that means "already so" for this API (GitLab will not move a status to the state it is in). */
  alreadyDone?: ((status: number, message: string) => boolean) | undefined;
}

/** POSTs a JSON body whose answer is not needed (a commit status). */
export async function postJson(request: JsonPost, options: HttpOptions = {}): Promise<void> {
  await requestJson({ ...request, method: 'POST', hints: STATUS_HINTS }, options);
}

/** What a forge module tells statusForge: its limits, and the one request that posts a status. */
export interface StatusForge {
  name: ProviderName;
  /** The longest description the API takes. */
  maxDescription: number;
  /** Where the status goes (`api` checked by apiBase), with what headers and body. */
  request(
    api: string,
    target: StatusTarget,
    status: CommitStatus,
    token: string,
  ): Pick<JsonPost, 'url' | 'headers' | 'body' | 'alreadyDone'>;
}

/** The commit-status client of one forge, from its description, for an API address and the HTTP options. */
export function statusForge(
  forge: StatusForge,
): (options: { apiUrl: string; http?: HttpOptions | undefined }) => CommitStatusProvider {
  return (options) => {
    const api = apiBase(options.apiUrl);
    return {
      name: forge.name,
      maxDescription: forge.maxDescription,
      async post(target, status, token) {
        const request = forge.request(api, target, status, token);
        await postJson({ provider: forge.name, subject: statusSubject(target), ...request }, options.http);
      },
    };
  };
}

/** How both kinds of Bitbucket are asked: the token as a bearer, JSON back. */
export function bearerHeaders(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, Accept: 'application/json' };
}

/**
 * An API base from configuration: http(s), no credentials (fetch refuses them), no query, no trailing slash.
 * `setting` names the configuration block in messages.
 */
export function apiBase(url: string, setting = 'commitStatus'): string {
  const key = `${setting}.`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StalledError(`${key}apiUrl is not a URL`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new StalledError(`${key}apiUrl ${safeEndpoint(url)} must be an http(s) URL`);
  }
  if (parsed.username || parsed.password) {
    throw new StalledError(`${key}apiUrl ${safeEndpoint(url)} must not hold credentials: use ${key}token`);
  }
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
}

/** Refuses a commit that is not a hash: a branch name or a path would address another resource. */
export function requireCommit(commit: string): string {
  if (!/^[0-9a-f]{7,64}$/i.test(commit)) {
    throw new StalledError(`"${commit.slice(0, 80)}" is not a commit hash`);
  }
  return commit;
}

// GitHub, GitLab and Gitea answer {message}, Bitbucket Cloud {error: {message}}, Bitbucket Server {errors: [{message}]}.
function serverMessage(text: string): string {
  let message: unknown = text;
  try {
    const json = parseJson(text) as Record<string, unknown>;
    const error = json.error as Record<string, unknown> | undefined;
    const errors = json.errors as Array<Record<string, unknown>> | undefined;
    message =
      json.message ?? error?.message ?? (Array.isArray(errors) ? errors[0]?.message : undefined) ?? '';
  } catch {
    // Not JSON (a proxy's HTML page): its text is the message.
  }
  const flat = (typeof message === 'string' ? message : JSON.stringify(message)).replace(/\s+/g, ' ').trim();
  return flat.length > MAX_SERVER_MESSAGE ? `${flat.slice(0, MAX_SERVER_MESSAGE)}…` : flat;
}

/** The parsed answer of a success; an empty answer (204) is undefined. A page that is not JSON is not the API. */
function parseAnswer(text: string, where: string, request: JsonRequest): unknown {
  if (text.trim() === '') return undefined;
  try {
    return parseJson(text) as unknown;
  } catch {
    throw new StalledError(
      `${where}: the answer is not JSON; is apiUrl the address of the ${label(request.provider)} API?`,
      {
        subject: request.subject,
      },
    );
  }
}

export function label(provider: ProviderName): string {
  const labels: Record<ProviderName, string> = {
    github: 'GitHub',
    gitlab: 'GitLab',
    gitea: 'Gitea',
    'bitbucket-cloud': 'Bitbucket Cloud',
    'bitbucket-server': 'Bitbucket Server',
  };
  return labels[provider];
}
