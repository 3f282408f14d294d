// What a failed conversation with a Git server means for the sync: the user must act (credentials, a wrong URL,
// a server that is not a Git server) or the world failed for now (network, timeouts, 5xx). Messages name the
// repository by a URL stripped of credentials and query, never by what the config wrote.
import { formatDuration } from '../../config/duration.ts';
import { MooringError, StalledError, type Subject, TransientError } from '../../errors.ts';
import { isCertificateError } from '../../http/fetch.ts';
import { describeSshEndpoint, isSshUrl, parseSshUrl } from '../../http/ssh-url.ts';

/** The URL as it may appear in messages: no user, password, query or fragment. */
export function safeUrl(url: string): string {
  // An ssh URL's user is a login name (`git`), not a secret; it has no password, query or fragment.
  if (isSshUrl(url)) {
    const endpoint = parseSshUrl(url);
    return typeof endpoint === 'string' ? '<invalid url>' : describeSshEndpoint(endpoint);
  }
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    parsed.search = '';
    parsed.hash = '';
    return parsed.toString();
  } catch {
    // Not a URL at all: show nothing of it rather than risk showing a secret.
    return '<invalid url>';
  }
}

interface GitLibraryError {
  code?: unknown;
  data?: { statusCode?: unknown };
}

/**
 * Turns what isomorphic-git or the HTTP client threw into the error taxonomy. `timedOut` says whether the
 * operation's deadline passed, which makes any abort a timeout rather than a failure of the server.
 */
export function gitNetworkError(
  error: unknown,
  context: { url: string; timeoutMs: number; timedOut: boolean },
): MooringError {
  if (error instanceof MooringError) return error;
  const url = safeUrl(context.url);
  const subject: Subject = { describe: url };
  const options = { subject, cause: error };
  if (context.timedOut) {
    return new TransientError(`no answer within ${formatDuration(context.timeoutMs)} (timeout)`, options);
  }
  const { code, data } = (typeof error === 'object' && error !== null ? error : {}) as GitLibraryError;
  if (code === 'HttpError') {
    const status = typeof data?.statusCode === 'number' ? data.statusCode : 0;
    if (status === 401 || status === 403) {
      // The URL is in the message itself, so no subject repeats it.
      return new StalledError(`authentication failed for ${url} (HTTP ${status}): check the credentials`, {
        cause: error,
      });
    }
    if (status === 404) return new StalledError(`repository not found (HTTP 404)`, options);
    if (status === 408 || status === 429 || status >= 500) {
      return new TransientError(`the server answered HTTP ${status}`, options);
    }
    return new StalledError(`the server answered HTTP ${status}`, options);
  }
  if (code === 'SmartHttpError' || code === 'UnknownTransportError' || code === 'UrlParseError') {
    return new StalledError('not a Git smart-HTTP endpoint (is the URL that of a repository?)', options);
  }
  if (code === 'NotFoundError') {
    return new TransientError(
      'the server does not have what was asked for (did a ref move meanwhile?)',
      options,
    );
  }
  if (code === 'InternalError') {
    // What the server sent could not be read (a cut or malformed pack or advertisement): the library's own words,
    // bounded, say which. Transient: the next poll asks again.
    const said = typeof (data as { message?: unknown } | undefined)?.message === 'string';
    const what = said ? String((data as { message: string }).message).slice(0, 200) : 'internal error';
    return new TransientError(`the server's answer could not be read (${what})`, options);
  }
  if (code === 'RemoteCapabilityError') {
    return new StalledError('the server cannot serve shallow fetches', options);
  }
  // fetch() failures (connection refused, DNS, TLS, reset) and anything else that happened on the way.
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined;
  const detail =
    (cause as NodeJS.ErrnoException | undefined)?.code ?? (error instanceof Error ? error.name : 'error');
  if (isCertificateError(detail)) {
    return new StalledError(
      `cannot verify the server's TLS certificate (${detail}); give its CA in caFile`,
      options,
    );
  }
  return new TransientError(`cannot reach the server (${detail})`, options);
}
