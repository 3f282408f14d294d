// What a request to the API server fails with, and which failures are tried again (src/kube/api.ts retries them
// with the one back-off, src/backoff.ts, and a 429's Retry-After).
import type { IncomingHttpHeaders } from 'node:http';

export class KubeRequestError extends Error {
  readonly code: number;
  readonly body: unknown;
  /** The answer's Retry-After header, when it had one. */
  readonly retryAfter: string | undefined;
  constructor(method: string, path: string, code: number, body: unknown, retryAfter?: string) {
    const message =
      body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string'
        ? (body as { message: string }).message
        : `HTTP ${code}`;
    super(`${method} ${path}: ${message}`);
    this.code = code;
    this.body = body;
    this.retryAfter = retryAfter;
  }
}

/** A watch stream that stayed silent past its idle limit: the server stopped answering on it. */
export class StreamIdleError extends Error {}

/**
 * An answer larger than the request's byte bound (RequestSpec.maxBytes): cut off unread, never retried as it is. A
 * paged list asks again for fewer objects (src/kube/list-pages.ts).
 */
export class ResponseTooLargeError extends Error {
  readonly limit: number;
  constructor(method: string, path: string, limit: number) {
    super(`${method} ${path}: response larger than ${limit} bytes`);
    this.limit = limit;
  }
}

/** A request that received nothing within the request timeout: the server is stopped, hung or unreachable. */
export class RequestTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
}

/**
 * Retrying stopped before the deadline of the sync (or the default budget) without one answer from the API
 * server: the message says since when it has been unreachable.
 */
export class UnreachableError extends Error {
  readonly since: number;
  /**
   * The server's address (scheme, host and port), kept apart from the message: the command line names it, while the
   * agent's messages, which go to commit statuses any reader of the repository sees, do not.
   */
  readonly server: string | undefined;
  constructor(method: string, path: string, since: number, cause: unknown, server?: string) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      `${method} ${path}: API server unreachable since ${new Date(since).toISOString().slice(11, 19)} UTC (${detail})`,
      { cause },
    );
    this.since = since;
    this.server = server;
  }
}

/**
 * `message` with the API server named, for the command line: when `error` (or a cause of it) is an UnreachableError
 * or `server` is given, and the message does not already name the server's host and port.
 */
export function namingServer(message: string, error: unknown, server?: string): string {
  let named = server;
  for (let e: unknown = error, depth = 0; named === undefined && e instanceof Error && depth < 8; depth++) {
    if (e instanceof UnreachableError) named = e.server;
    e = e.cause;
  }
  if (named === undefined) return message;
  let host = named;
  try {
    host = new URL(named).host;
  } catch {
    // named as given
  }
  return message.includes(host) ? message : `${message} (API server ${named})`;
}

/** How many times a PUT or PATCH answered 500 is tried again without a Retry-After (retriable). */
export const WRITE_500_RETRIES = 2;

/** Network failures after which the request may have reached the server. */
const NOT_SENT = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

function networkCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause === undefined || cause === error ? undefined : networkCode(cause);
}

/**
 * Whether a failed request is tried again: network failures and the server's 429/5xx answers. A POST creates
 * something, so it is repeated only when it surely did not arrive (refused connection, 429, 503); a repeated PUT
 * or PATCH writes the same thing again (a stale resourceVersion gives 409, which callers handle).
 */
export function retriable(method: string, error: unknown, earlier500s = 0): boolean {
  const status = error instanceof KubeRequestError ? error.code : undefined;
  if (status !== undefined) {
    if (status === 429 || status === 503) return true;
    // A 500 to a write may be the server refusing the object for good (server-side apply's conversion errors), or
    // a moment of its storage ("etcdserver: leader changed", a timeout): a PUT or PATCH is tried again a few
    // times, or for as long as the server's Retry-After asks, then the refusal stands. Reads always repeat it.
    if (status === 500)
      return (
        method === 'GET' ||
        (method !== 'POST' &&
          (earlier500s < WRITE_500_RETRIES || (error as KubeRequestError).retryAfter !== undefined))
      );
    return method !== 'POST' && (status === 502 || status === 504);
  }
  const code = networkCode(error);
  if (code === undefined) return false;
  return method !== 'POST' || NOT_SENT.has(code);
}

/** A 429: the server (API Priority and Fairness, or a proxy) asks us to come back later. */
export function rateLimited(error: unknown): error is KubeRequestError {
  return error instanceof KubeRequestError && error.code === 429;
}

/** One header value (Node joins repeated ones, but the type allows an array). */
export function retryAfterHeader(headers: IncomingHttpHeaders): string | undefined {
  const value = headers['retry-after'];
  return Array.isArray(value) ? value[0] : value;
}
