// The one outbound HTTP exchange (commit statuses, notifications, the audit webhook): one request, bounded in time
// and in the answer read, and its failure put in errors.ts's taxonomy. A network failure or timeout is a
// TransientError; an answer is returned as it is, and httpFailure() says what a refusal means: a rate limit or an
// unavailable server with a delay it asked for is a WaitingError, 408/429/5xx otherwise TransientError, any other
// refusal StalledError (a retry cannot help). Retrying is the caller's: it knows its budget.
// Requests go through the one outbound client (fetch.ts; the Git transport's and the registry client's too); the
// registry client reads its answers with the same httpVerdict().
import { type MooringError, StalledError, type Subject, TransientError, WaitingError } from '../errors.ts';
import { linkSignals } from '../signals.ts';
import { type Fetch, type FetchAnswer, fetchFor, type HeaderValues, isTimeout } from './fetch.ts';
import { fetchHeaders, type HeaderReader, MAX_SERVER_DELAY_MS, serverDelayMs } from './retry-after.ts';

/** An answer's body is read up to this by default: enough for any error message or small JSON document. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

export interface OutboundRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers?: Record<string, string> | undefined;
  /** Text, or bytes sent as they are (a webhook passed on, whose signature covers its exact bytes). */
  body?: string | Uint8Array | undefined;
  timeoutMs: number;
  /** Read this much of the answer at most; the rest is discarded (`truncated`). */
  maxBodyBytes?: number | undefined;
  /**
   * `same-origin` (the default): redirects are followed within the request's origin (scheme, host, port) only;
   * one that leaves it is refused with a StalledError naming both, as fetch would carry along any header but
   * Authorization (GitLab's PRIVATE-TOKEN, a webhook's signature) and the answer would be another host's.
   * `manual`: the redirect is returned as the answer; `error`: any redirect is a network error.
   */
  redirect?: 'same-origin' | 'manual' | 'error' | undefined;
  signal?: AbortSignal | undefined;
  /** How the request is named in errors (`POST https://api.github.com/repos/o/r/statuses`): no secret in it. */
  what: string;
  subject?: Subject | undefined;
  /** The client the request goes through: the one outbound client (fetch.ts) unless given. */
  fetch?: Fetch | undefined;
}

const outbound = fetchFor();

export interface OutboundResponse {
  status: number;
  ok: boolean;
  headers: HeaderValues;
  /** The answer's first maxBodyBytes, as text. */
  body: string;
  truncated: boolean;
}

/** Sends one request. Throws TransientError when no answer came (network, timeout); an answer is returned. */
export async function sendBounded(request: OutboundRequest): Promise<OutboundResponse> {
  const timeout = AbortSignal.timeout(request.timeoutMs);
  // Held until the answer is read: the caller's signal (a channel's stop) outlives every request it is given to.
  const { signal, release } = linkSignals(request.signal, timeout);
  try {
    return await sendLinked(request, timeout, signal);
  } finally {
    release();
  }
}

async function sendLinked(
  request: OutboundRequest,
  timeout: AbortSignal,
  signal: AbortSignal,
): Promise<OutboundResponse> {
  const mode = request.redirect ?? 'same-origin';
  let url = request.url;
  let method = request.method;
  let body = request.body;
  for (let hop = 0; ; hop++) {
    let response: FetchAnswer;
    try {
      response = await (request.fetch ?? outbound)(url, {
        method,
        ...(request.headers ? { headers: request.headers } : {}),
        ...(body !== undefined ? { body } : {}),
        redirect: mode === 'same-origin' ? 'manual' : mode,
        signal,
      });
    } catch (error) {
      if (request.signal?.aborted) throw error;
      throw networkError(error, request.what, request.timeoutMs, request.subject, timeout.aborted);
    }
    const location = response.headers.get('location');
    if (mode === 'same-origin' && REDIRECTS.has(response.status) && location !== null) {
      await response.body?.cancel().catch(() => undefined);
      const next = sameOriginRedirect(url, location, request);
      if (hop >= MAX_REDIRECTS)
        throw new StalledError(`${request.what}: more than ${MAX_REDIRECTS} redirects`, {
          subject: request.subject,
        });
      // As fetch does: 303, and 301/302 after a POST, go on as a GET without the body.
      if (
        response.status === 303 ||
        ((response.status === 301 || response.status === 302) && method === 'POST')
      ) {
        method = 'GET';
        body = undefined;
      }
      url = next;
      continue;
    }
    const { text, truncated } = await readBounded(response, request.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
    return { status: response.status, ok: response.ok, headers: response.headers, body: text, truncated };
  }
}

const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Where a redirect leads, when it stays in the request's origin; a StalledError naming both otherwise. */
function sameOriginRedirect(from: string, location: string, request: OutboundRequest): string {
  const origin = new URL(from).origin;
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw new StalledError(`${request.what}: redirected to an invalid URL`, { subject: request.subject });
  }
  if (next.origin !== origin)
    throw new StalledError(
      `${request.what}: redirected to ${safeEndpoint(next.href)}, outside its origin ${origin}; redirects are followed only within the origin`,
      { subject: request.subject },
    );
  return next.href;
}

export type HttpVerdict =
  | { kind: 'ok' }
  | { kind: 'waiting'; delayMs: number }
  | { kind: 'transient' }
  | { kind: 'stalled' };

/**
 * What an answer's status means for a retry. 429 and 503 wait as long as the server asked (Retry-After, or a
 * rate limit's reset); `rateLimited` marks other answers that are rate limits by the API's own rules (GitHub's 403).
 */
export function httpVerdict(
  status: number,
  header: HeaderReader,
  options: { now: number; rateLimited?: boolean | undefined; capMs?: number | undefined },
): HttpVerdict {
  if (status >= 200 && status < 300) return { kind: 'ok' };
  const rateLimited = status === 429 || options.rateLimited === true;
  if (rateLimited || status === 503 || status === 408 || status >= 500) {
    const delayMs = serverDelayMs(header, options.now, {
      rateLimited,
      capMs: options.capMs ?? MAX_SERVER_DELAY_MS,
    });
    return delayMs === undefined ? { kind: 'transient' } : { kind: 'waiting', delayMs };
  }
  return { kind: 'stalled' };
}

/** A refusal as a mooring error with `message`; undefined for a 2xx answer. */
export function httpFailure(
  response: Pick<OutboundResponse, 'status' | 'headers'>,
  message: string,
  options: { now: number; rateLimited?: boolean | undefined; subject?: Subject | undefined },
): MooringError | undefined {
  const verdict = httpVerdict(response.status, fetchHeaders(response.headers), options);
  const subject = { subject: options.subject };
  switch (verdict.kind) {
    case 'ok':
      return undefined;
    case 'waiting':
      return new WaitingError(message, verdict.delayMs, subject);
    case 'transient':
      return new TransientError(message, subject);
    case 'stalled':
      return new StalledError(message, subject);
  }
}

/** Origin and path only: a URL written with credentials or a query (a key, a signature) must not show them. */
export function safeEndpoint(url: string, base?: string): string {
  try {
    const parsed = new URL(url, base);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '<invalid url>';
  }
}

async function readBounded(
  response: FetchAnswer,
  limit: number,
): Promise<{ text: string; truncated: boolean }> {
  const body = response.body;
  if (!body) return { text: '', truncated: false };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
    if (size >= limit) {
      truncated = true;
      await reader.cancel();
    }
  } catch {
    // A body cut short still leaves the status code, which is what matters.
    await reader.cancel().catch(() => undefined);
  }
  return { text: Buffer.concat(chunks).subarray(0, limit).toString('utf8'), truncated };
}

function networkError(
  error: unknown,
  what: string,
  timeoutMs: number,
  subject: Subject | undefined,
  timedOut: boolean,
): TransientError {
  if (timedOut || isTimeout(error)) {
    return new TransientError(`${what}: no answer in ${timeoutMs} ms`, { subject });
  }
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const code =
    typeof cause?.code === 'string' ? cause.code : error instanceof Error ? error.message : 'failed';
  // fetch's messages may quote the URL, which may carry a secret (a Slack webhook's path): no cause kept either.
  return new TransientError(`${what}: ${code.replace(/https?:\/\/\S+/g, '<url>')}`, { subject });
}
