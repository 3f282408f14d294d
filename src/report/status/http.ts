// The one HTTP exchange every provider makes: POST a JSON body through the bounded request helper
// (src/http/request.ts), then turn the answer into the error taxonomy. Rate limits become WaitingError with the delay
// the server asked for, 5xx and network failures TransientError, every other refusal StalledError with the server's
// own message (bounded) and a hint at what to check.
import { StalledError, type Subject } from '../../errors.ts';
import { httpFailure, safeEndpoint, sendBounded } from '../../http/request.ts';
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
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const where = `POST ${safeEndpoint(request.url)}`;
  const response = await sendBounded({
    method: 'POST',
    url: request.url,
    headers: { 'Content-Type': 'application/json', 'User-Agent': USER_AGENT, ...request.headers },
    body: JSON.stringify(request.body),
    timeoutMs,
    maxBodyBytes: MAX_ERROR_BODY_BYTES,
    // Not followed: fetch would carry PRIVATE-TOKEN along to wherever a redirect points.
    redirect: 'manual',
    what: where,
    subject: request.subject,
    fetch: options.fetch,
  });
  if (response.ok) return;
  if (response.status >= 300 && response.status < 400) {
    const location = response.headers.get('location');
    throw new StalledError(
      `${where} was redirected${location ? ` to ${safeEndpoint(location, request.url)}` : ''}: ` +
        'the repository moved or apiUrl is wrong; update the configuration',
      { subject: request.subject },
    );
  }
  const message = serverMessage(response.body);
  if (request.alreadyDone?.(response.status, message)) return;
  const what = `${label(request.provider)} answered HTTP ${response.status}${message ? ` (${message})` : ''} to ${where}`;
  // GitHub signals its limits with 403 as well as 429 (primary: remaining 0; secondary: Retry-After).
  const rateLimited =
    response.status === 429 ||
    (response.status === 403 &&
      (response.headers.get('x-ratelimit-remaining') === '0' ||
        response.headers.get('retry-after') !== null));
  const failure = httpFailure(
    response,
    rateLimited ? `${what}: rate limited` : `${what}${hint(response.status)}`,
    {
      now: (options.now ?? Date.now)(),
      rateLimited,
      subject: request.subject,
    },
  );
  if (failure) throw failure;
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
