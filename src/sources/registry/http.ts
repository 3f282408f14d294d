// The registry client's HTTP layer (registries and chart repositories): one request through the one fetch
// (src/http/fetch.ts: Node's own, or undici's trusting a caFile), redirects followed within the origin (or, for a
// registry's blobs, elsewhere without credentials), the body read into memory up to a limit, and a server silent
// for the timeout given up. Failures come back as mooring errors: a refused connection is transient, a
// certificate we cannot verify is for the user to fix.
import type http from 'node:http';
import { StalledError, TransientError } from '../../errors.ts';
import { type Fetch, fetchFor } from '../../http/fetch.ts';

export type Method = 'GET' | 'HEAD';

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Where the answer came from, after redirects. */
  url: URL;
}

export interface HttpRequest {
  method: Method;
  url: URL;
  headers: Record<string, string>;
  maxBytes: number;
}

export interface HttpTransportOptions {
  /** Extra PEM certificates trusted besides the public roots (`caFile`). */
  ca?: string | undefined;
  /** Allow plain http, for registries configured `insecure` on purpose. */
  allowHttp: boolean;
  timeoutMs: number;
  /**
   * Where a redirect may lead. `same-origin` (the default): nowhere else than the request's own scheme, host and
   * port, as every request of a chart repository carries its credentials and what comes back is trusted as the
   * repository's. `anywhere-without-credentials`: a registry's blobs live in object storage (S3, GCS) the
   * registry redirects to with a signed URL; the registry's credentials are dropped on the way, and the content
   * is checked against its digest.
   */
  redirects?: 'same-origin' | 'anywhere-without-credentials' | undefined;
}

const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
// Node's error codes for a certificate that does not verify: retrying cannot help, a caFile can.
const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** One per registry client; connections are kept alive between polls by the fetch it sends through. */
export class HttpTransport {
  readonly #options: HttpTransportOptions;
  readonly #fetch: Fetch;

  constructor(options: HttpTransportOptions) {
    this.#options = options;
    this.#fetch = fetchFor(options.ca);
  }

  /**
   * Sends the request, following redirects within its origin; one that leaves it is refused, or followed without
   * Authorization when the transport is made for `anywhere-without-credentials`.
   */
  async send(request: HttpRequest): Promise<HttpResponse> {
    let url = request.url;
    let headers = request.headers;
    for (let hop = 0; ; hop++) {
      this.#checkScheme(url);
      const response = await this.#once(request.method, url, headers, request.maxBytes);
      const location = response.headers.location;
      if (!REDIRECTS.has(response.status) || location === undefined) return response;
      if (hop >= MAX_REDIRECTS) {
        throw new StalledError(`${safeUrl(request.url)}: more than ${MAX_REDIRECTS} redirects`);
      }
      const next = new URL(String(location), url);
      if (next.origin !== url.origin) {
        if (this.#options.redirects !== 'anywhere-without-credentials')
          throw new StalledError(
            `${request.method} ${safeUrl(url)} was redirected to ${safeUrl(next)}, outside its origin ${url.origin}; redirects are followed only within the origin`,
          );
        // Blob storage (S3, GCS) gets a signed URL; our registry credentials are not for it.
        headers = withoutAuthorization(headers);
      }
      url = next;
    }
  }

  /** Nothing of its own to close: the fetch it sends through keeps its connections for every client. */
  close(): void {}

  #checkScheme(url: URL): void {
    if (url.protocol === 'https:') return;
    if (url.protocol === 'http:' && this.#options.allowHttp) return;
    throw new StalledError(
      `refusing ${url.protocol.replace(':', '')} URL ${safeUrl(url)}: only https unless the source is insecure`,
    );
  }

  /**
   * One request, no redirect followed. The timeout is of silence, as a socket's: it starts again with the
   * answer's headers and with each part of its body, so a large blob that keeps coming is not cut off.
   */
  async #once(
    method: Method,
    url: URL,
    headers: Record<string, string>,
    maxBytes: number,
  ): Promise<HttpResponse> {
    const timeoutMs = this.#options.timeoutMs;
    const silence = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const quiet = () => {
      clearTimeout(timer);
      timer = setTimeout(() => silence.abort(new SilenceError()), timeoutMs);
    };
    quiet();
    try {
      let response: Response;
      try {
        response = await this.#fetch(url, {
          method,
          // Identity: a blob or a chart package is checked by the digest of the bytes as sent, never as decoded.
          headers: { 'User-Agent': 'mooring', 'Accept-Encoding': 'identity', ...headers },
          redirect: 'manual',
          signal: silence.signal,
        });
      } catch (error) {
        throw networkError(method, url, error, silence.signal.aborted, timeoutMs);
      }
      quiet();
      const declared = Number(response.headers.get('content-length') ?? Number.NaN);
      if (method === 'HEAD' || response.body === null) {
        await response.body?.cancel().catch(() => undefined);
        return { status: response.status, headers: headersOf(response.headers), body: Buffer.alloc(0), url };
      }
      if (Number.isFinite(declared) && declared > maxBytes) {
        await response.body.cancel().catch(() => undefined);
        throw tooLarge(method, url, maxBytes);
      }
      const chunks: Uint8Array[] = [];
      let size = 0;
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          quiet();
          size += value.byteLength;
          if (size > maxBytes) {
            await reader.cancel().catch(() => undefined);
            throw tooLarge(method, url, maxBytes);
          }
          chunks.push(value);
        }
      } catch (error) {
        if (error instanceof StalledError) throw error;
        throw networkError(method, url, error, silence.signal.aborted, timeoutMs);
      }
      return {
        status: response.status,
        headers: headersOf(response.headers),
        body: Buffer.concat(chunks),
        url,
      };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The abort of a request whose server said nothing for the timeout. */
class SilenceError extends Error {}

/** An answer's headers as Node names them: lower-case, repeated ones joined. */
function headersOf(headers: Headers): http.IncomingHttpHeaders {
  const out: http.IncomingHttpHeaders = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

/** The URL without credentials and query: safe for messages (signed blob URLs carry secrets in the query). */
export function safeUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/** One header value: Node joins most repeated headers, but the type still allows arrays. */
export function header(headers: http.IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function withoutAuthorization(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([key]) => key.toLowerCase() !== 'authorization'));
}

function tooLarge(method: Method, url: URL, maxBytes: number): StalledError {
  return new StalledError(`${method} ${safeUrl(url)}: the answer is larger than ${maxBytes} bytes`);
}

function networkError(method: Method, url: URL, error: unknown, silent: boolean, timeoutMs: number): Error {
  if (error instanceof TransientError || error instanceof StalledError) return error;
  if (silent) return new TransientError(`${method} ${safeUrl(url)}: no answer in ${timeoutMs} ms`);
  // fetch fails with "fetch failed" and the socket's error as its cause.
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  if (code !== undefined && TLS_CODES.has(code)) {
    return new StalledError(
      `cannot verify the TLS certificate of ${url.host} (${code}); give the registry's CA in caFile`,
      { cause },
    );
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  return new TransientError(`${method} ${safeUrl(url)}: ${code ?? message}`, { cause });
}
