// What every webhook handler shares: the shapes of a request and of a result, header access, authentication
// (HMAC signatures and shared tokens, compared in constant time) and payload parsing with zod. Pure: no I/O.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { z } from 'zod';
import { parseJson } from '../json.ts';

/**
 * A source to poll now. A webhook never says what to deploy: it only names sources, and the sync loop polls
 * the configured ones that match (see source-match.ts). `url` is normalised with normaliseRepoUrl and `image`
 * is `domain/path` as repositoryOf gives it.
 */
export type PollTarget =
  | { kind: 'git'; url: string }
  | { kind: 'registry'; image: string }
  /** A pull or merge request of a repository: previewed by the sources that preview it (sync/previews.ts). */
  | { kind: 'pull'; url: string; number: number };

export type WebhookResult =
  | { status: 202; reason: string; targets: PollTarget[] }
  | { status: 204 | 400 | 401 | 413; reason: string };

export interface WebhookRequest {
  /** As node:http gives them: names in lowercase. */
  headers: IncomingHttpHeaders;
  /** The raw body: signatures are computed over these exact bytes. */
  body: Buffer;
}

// Reasons may quote names from an authenticated payload; a long one is cut so log lines stay short.
const MAX_QUOTED = 64;
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
const FORM = 'application/x-www-form-urlencoded';

/** One header's value; a repeated header counts as absent, since which copy to trust is not ours to guess. */
export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return typeof value === 'string' ? value : undefined;
}

export function quote(text: string): string {
  return JSON.stringify(text.length <= MAX_QUOTED ? text : `${text.slice(0, MAX_QUOTED)}…`);
}

export function unauthorized(reason: string): WebhookResult {
  return { status: 401, reason };
}

export function badRequest(reason: string): WebhookResult {
  return { status: 400, reason };
}

export function nothingToDo(reason: string): WebhookResult {
  return { status: 204, reason };
}

export function accepted(reason: string, targets: PollTarget[]): WebhookResult {
  return targets.length === 0 ? nothingToDo(`${reason}: no sources named`) : { status: 202, reason, targets };
}

/**
 * Checks `<prefix><hex HMAC-SHA256 of the body>` in the named header; undefined when it matches.
 * The reasons tell a missing header from a wrong one (useful in a provider's delivery log) but never echo it.
 */
export function checkSignature(
  request: WebhookRequest,
  options: { headers: readonly string[]; prefix: string; secret: string },
): WebhookResult | undefined {
  const name = options.headers.find((h) => header(request.headers, h) !== undefined);
  const given = name === undefined ? undefined : header(request.headers, name);
  const display = options.headers[0] ?? 'signature';
  if (name === undefined || given === undefined) return unauthorized(`${display} header is missing`);
  if (!given.startsWith(options.prefix)) {
    return unauthorized(`${name} must be ${options.prefix ? `"${options.prefix}" and ` : ''}64 hex digits`);
  }
  const hex = given.slice(options.prefix.length);
  // timingSafeEqual needs equal lengths; the length of a valid signature is public, so refusing others early
  // leaks nothing. Buffer.from(hex) would silently stop at the first non-hex character, hence the pattern.
  if (!SHA256_HEX.test(hex)) {
    return unauthorized(`${name} must be ${options.prefix ? `"${options.prefix}" and ` : ''}64 hex digits`);
  }
  const expected = createHmac('sha256', options.secret).update(request.body).digest();
  return timingSafeEqual(expected, Buffer.from(hex, 'hex'))
    ? undefined
    : unauthorized(`${name} does not match the body`);
}

/** Constant-time equality of two tokens, without leaking the length of either through timing. */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; result: WebhookResult };

/**
 * The body as JSON, checked against `schema` (only the fields a handler reads). GitHub and Gitea can also
 * send the same JSON form-encoded as `payload=…`, which is accepted the same way.
 */
export function parsePayload<T>(request: WebhookRequest, schema: z.ZodType<T>): Parsed<T> {
  let text = request.body.toString('utf8');
  const contentType = header(request.headers, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  if (contentType === FORM) {
    const payload = new URLSearchParams(text).get('payload');
    if (payload === null) return { ok: false, result: badRequest('form body has no "payload" field') };
    text = payload;
  }
  let json: unknown;
  try {
    json = parseJson(text);
  } catch {
    return { ok: false, result: badRequest('body is not JSON') };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
  return { ok: false, result: badRequest(`payload ${where}: ${issue?.message ?? 'invalid'}`) };
}
