// Turning failed requests to the API server (KubeRequestError from api.ts, or a network error) into mooring's
// taxonomy, with the API server's own message.
import { type MooringError, NotFoundError, StalledError, TransientError, WaitingError } from '../errors.ts';
import { MAX_SERVER_DELAY_MS, parseRetryAfter } from '../http/retry-after.ts';
import { parseJson } from '../json.ts';

interface ApiFailure {
  code?: unknown;
  body?: unknown;
  message?: unknown;
}

/** A 429 without a usable retry-after: wait this long, as the API server usually suggests (1 s). */
const DEFAULT_RETRY_AFTER_MS = 1000;

/** The response body as JSON when it is JSON text; a proxy in front of the API server may answer in plain text. */
export function bodyOf(error: unknown): unknown {
  const body = ((error ?? {}) as ApiFailure).body;
  if (typeof body !== 'string') return body;
  try {
    return parseJson(body);
  } catch {
    return body;
  }
}

/** The API server's explanation of a failed request: the Status message when there is one. */
export function serverMessage(error: unknown): string {
  const body = bodyOf(error);
  if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    return (body as { message: string }).message;
  }
  if (typeof body === 'string' && body.trim()) return body.trim().slice(0, 500);
  const message = ((error ?? {}) as ApiFailure).message;
  return typeof message === 'string' ? message : String(error);
}

/** The HTTP status of a failed request; undefined for a network error (whose `code` is a string). */
export function statusCode(error: unknown): number | undefined {
  const code = (error as ApiFailure | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/**
 * How long a rate-limited (429) request asks us to wait. The API server puts the same number of seconds in the
 * Retry-After header and in its Status body's details.retryAfterSeconds; KubeRequestError carries both, and the
 * header is read by the one Retry-After parser (src/http/retry-after.ts).
 */
export function retryAfterMs(error: unknown): number {
  const header = (error as { retryAfter?: unknown } | undefined)?.retryAfter;
  const fromHeader = typeof header === 'string' ? parseRetryAfter(header, Date.now()) : undefined;
  if (fromHeader !== undefined && fromHeader > 0) return fromHeader;
  const details = (bodyOf(error) as { details?: { retryAfterSeconds?: unknown } } | undefined)?.details;
  const seconds = details?.retryAfterSeconds;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0
    ? Math.min(seconds * 1000, MAX_SERVER_DELAY_MS)
    : DEFAULT_RETRY_AFTER_MS;
}

/**
 * What to do about a failed request: forbidden, invalid and not-found requests need the user (stalled); a rate
 * limit (429) waits as long as the server asks; the rest (network, 5xx, 409 conflicts) are retried with back-off.
 */
export function describeKubeError(error: unknown, action: string): MooringError {
  const code = statusCode(error);
  const message = `${action}: ${code ? `${code} ` : ''}${serverMessage(error)}`;
  if (code === 429) return new WaitingError(message, retryAfterMs(error), { cause: error });
  if (code !== undefined && code >= 400 && code < 500 && code !== 409) {
    return new StalledError(message, { cause: error });
  }
  return new TransientError(message, { cause: error });
}

/** Whether the object or resource asked for does not exist: a NotFoundError, or a 404 down the cause chain. */
export function isNotFound(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (e instanceof NotFoundError || statusCode(e) === 404) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Whether the API server refused the identity itself (401) or its rights (403), here or anywhere down the cause
 * chain: the user must change the credentials or the RBAC, so the CLI treats it as bad input (exit 2).
 */
export function isAccessDenied(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    const code = statusCode(e);
    if (code === 401 || code === 403) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
