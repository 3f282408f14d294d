// The one HTTP exchange every provider makes: POST a JSON body, then turn the answer into the error taxonomy.
// Rate limits become WaitingError with the delay the server asked for, 5xx and network failures TransientError,
// every other refusal StalledError with the server's own message (bounded) and a hint at what to check.
import { StalledError, type Subject, TransientError, WaitingError } from '../../errors.ts';
import type { HttpOptions, ProviderName } from './types.ts';

const DEFAULT_TIMEOUT_MS = 15_000;
// Error bodies are read for their message only; anything longer is not a message.
const MAX_ERROR_BODY_BYTES = 64 * 1024;
const MAX_SERVER_MESSAGE = 300;

export const USER_AGENT = 'mooring';

export interface JsonPost {
  provider: ProviderName;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  subject: Subject;
  /** A refusal that means "already so" for this API (GitLab will not move a status to the state it is in). */
  alreadyDone?: ((status: number, message: string) => boolean) | undefined;
}

export async function postJson(request: JsonPost, options: HttpOptions = {}): Promise<void> {
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const where = `POST ${safeEndpoint(request.url)}`;
  let response: Response;
  try {
    response = await doFetch(request.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'User-Agent': USER_AGENT, ...request.headers },
      body: JSON.stringify(request.body),
      signal: AbortSignal.timeout(timeoutMs),
      // Not followed: fetch would carry PRIVATE-TOKEN along to wherever a redirect points.
      redirect: 'manual',
    });
  } catch (error) {
    throw networkError(error, where, timeoutMs, request.subject);
  }
  if (response.ok) {
    await discard(response);
    return;
  }
  if (response.status >= 300 && response.status < 400) {
    await discard(response);
    const location = response.headers.get('location');
    throw new StalledError(
      `${where} was redirected${location ? ` to ${safeEndpoint(location, request.url)}` : ''}: ` +
        'the repository moved or apiUrl is wrong; update the configuration',
      { subject: request.subject },
    );
  }
  const message = serverMessage(await readBounded(response));
  if (request.alreadyDone?.(response.status, message)) return;
  const what = `${label(request.provider)} answered HTTP ${response.status}${message ? ` (${message})` : ''} to ${where}`;
  const now = (options.now ?? Date.now)();
  const remaining = response.headers.get('x-ratelimit-remaining');
  const retryAfter = response.headers.get('retry-after');
  // GitHub signals its limits with 403 as well as 429 (primary: remaining 0; secondary: Retry-After).
  if (response.status === 429 || (response.status === 403 && (remaining === '0' || retryAfter !== null))) {
    const delay = retryDelayMs(response.headers, now, true);
    // Without a time to wait for, the caller's own back-off is the best guess.
    if (delay === undefined) throw new TransientError(`${what}: rate limited`, { subject: request.subject });
    throw new WaitingError(`${what}: rate limited`, delay, { subject: request.subject });
  }
  if (response.status >= 500) {
    const delay = retryDelayMs(response.headers, now, false);
    if (delay !== undefined) throw new WaitingError(what, delay, { subject: request.subject });
    throw new TransientError(what, { subject: request.subject });
  }
  throw new StalledError(`${what}${hint(response.status)}`, { subject: request.subject });
}

/**
 * The wait a server asked for: Retry-After (seconds or an HTTP date), or for rate limits the time the window
 * resets (X-RateLimit-Reset on GitHub and Gitea, RateLimit-Reset on GitLab: Unix seconds; a small number is
 * taken as seconds from now, as the IETF draft defines it).
 */
export function retryDelayMs(headers: Headers, now: number, rateLimited: boolean): number | undefined {
  const retryAfter = headers.get('retry-after');
  if (retryAfter !== null) {
    const seconds = Number(retryAfter);
    if (retryAfter.trim() !== '' && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
    const date = Date.parse(retryAfter);
    if (!Number.isNaN(date)) return Math.max(0, date - now);
  }
  if (!rateLimited) return undefined;
  const reset = headers.get('x-ratelimit-reset') ?? headers.get('ratelimit-reset');
  if (reset === null || reset.trim() === '') return undefined;
  const value = Number(reset);
  if (!Number.isFinite(value)) return undefined;
  return value > 1_000_000_000 ? Math.max(0, value * 1000 - now) : Math.max(0, value * 1000);
}

/** Origin and path only: an apiUrl written with credentials or a query must not show them. */
export function safeEndpoint(url: string, base?: string): string {
  try {
    const parsed = new URL(url, base);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '<invalid url>';
  }
}

/** An API base from configuration: http(s), no credentials (fetch refuses them), no query, no trailing slash. */
export function apiBase(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StalledError('commitStatus.apiUrl is not a URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new StalledError(`commitStatus.apiUrl ${safeEndpoint(url)} must be an http(s) URL`);
  }
  if (parsed.username || parsed.password) {
    throw new StalledError(
      `commitStatus.apiUrl ${safeEndpoint(url)} must not hold credentials: use commitStatus.token`,
    );
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

// A body that fails to close changes nothing about the answer; above all it must not make a post look failed.
async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => undefined);
}

async function readBounded(response: Response): Promise<string> {
  const body = response.body;
  if (!body) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ERROR_BODY_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
    if (size >= MAX_ERROR_BODY_BYTES) await reader.cancel();
  } catch {
    // A body cut short still leaves the status code, which is what matters.
  }
  return Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY_BYTES).toString('utf8');
}

// GitHub, GitLab and Gitea answer {message}, Bitbucket Cloud {error: {message}}, Bitbucket Server {errors: [{message}]}.
function serverMessage(text: string): string {
  let message: unknown = text;
  try {
    const json = JSON.parse(text) as Record<string, unknown>;
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

function hint(status: number): string {
  if (status === 401) return ': check the token';
  if (status === 403) return ': the token lacks the permission to write commit statuses';
  if (status === 404) return ': the repository or commit does not exist, or the token cannot see it';
  return '';
}

function networkError(error: unknown, where: string, timeoutMs: number, subject: Subject): TransientError {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return new TransientError(`${where}: no answer in ${timeoutMs} ms`, { subject });
  }
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const code =
    typeof cause?.code === 'string' ? cause.code : error instanceof Error ? error.message : 'failed';
  return new TransientError(`${where}: ${code}`, { subject });
}

function label(provider: ProviderName): string {
  const labels: Record<ProviderName, string> = {
    github: 'GitHub',
    gitlab: 'GitLab',
    gitea: 'Gitea',
    'bitbucket-cloud': 'Bitbucket Cloud',
    'bitbucket-server': 'Bitbucket Server',
  };
  return labels[provider];
}
