// The registry client's HTTP layer: one request through the one outbound client (src/http/fetch.ts `exchange`),
// redirects followed within the origin (or, for a registry's blobs, elsewhere without credentials), the body read
// into memory up to a limit and kept as sent: a chart package or a blob a server labels gzip must keep the bytes its
// digest names, as helm's own client keeps them. Failures come back as mooring errors: a refused connection is
// transient, a certificate we cannot verify is for the user to fix.
import type http from 'node:http';
import { StalledError, TransientError } from '../../errors.ts';
import { type Answer, exchange, isCertificateError, isTimeout } from '../../http/fetch.ts';
import { linkSignals } from '../../signals.ts';

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
  /** Gives up every request under way, and refuses new ones, once aborted: the agent is stopping. */
  signal?: AbortSignal | undefined;
}

const MAX_REDIRECTS = 5;

/**
 * The slowest a body may come on average: past `4 × timeoutMs + maxBytes / MIN_BYTES_PER_SECOND` a request is given
 * up whole, however steadily its bytes trickle. The timeout alone is one of silence: a server (a token realm, the
 * storage a registry redirects to, a chart repository) sending a byte every 25 s held a poll, and every sync that
 * shares its download, for as long as it liked.
 */
export const MIN_BYTES_PER_SECOND = 256 * 1024;

/** The whole time one request (its head and its body) may take. */
export function requestDeadlineMs(timeoutMs: number, maxBytes: number): number {
  return 4 * timeoutMs + Math.ceil((maxBytes / MIN_BYTES_PER_SECOND) * 1000);
}
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** A registry's or chart repository's requests (connections are kept alive between polls by the one client). */
export class HttpTransport {
  readonly #options: HttpTransportOptions;

  constructor(options: HttpTransportOptions) {
    this.#options = options;
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
      const next = new URL(location, url);
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

  #checkScheme(url: URL): void {
    if (url.protocol === 'https:') return;
    if (url.protocol === 'http:' && this.#options.allowHttp) return;
    throw new StalledError(
      `refusing ${url.protocol.replace(':', '')} URL ${safeUrl(url)}: only https unless the source is insecure`,
    );
  }

  async #once(
    method: Method,
    url: URL,
    headers: Record<string, string>,
    maxBytes: number,
  ): Promise<HttpResponse> {
    const timeoutMs = this.#options.timeoutMs;
    const deadlineMs = requestDeadlineMs(timeoutMs, maxBytes);
    const deadline = AbortSignal.timeout(deadlineMs);
    const stop = this.#options.signal;
    // Held until the answer is read whole (or refused): the stop may come while its body arrives.
    const { signal, release } = linkSignals(deadline, stop);
    try {
      return await this.#exchange(method, url, headers, maxBytes, signal, (error) =>
        stop?.aborted && !deadline.aborted
          ? new TransientError(`${method} ${safeUrl(url)}: given up: the agent is stopping`)
          : deadline.aborted && error === deadline.reason
            ? new TransientError(
                `${method} ${safeUrl(url)}: not answered whole within ${deadlineMs} ms (the answer came slower than ${MIN_BYTES_PER_SECOND / 1024} KiB/s)`,
              )
            : networkError(method, url, error, timeoutMs),
      );
    } finally {
      release();
    }
  }

  async #exchange(
    method: Method,
    url: URL,
    headers: Record<string, string>,
    maxBytes: number,
    signal: AbortSignal,
    failed: (error: Error) => Error,
  ): Promise<HttpResponse> {
    const timeoutMs = this.#options.timeoutMs;
    let answer: Answer;
    try {
      // What comes is taken as sent: a blob or a chart package is checked by the digest of its bytes.
      answer = await exchange({
        method,
        url,
        headers: { 'User-Agent': 'mooring', 'Accept-Encoding': 'identity', ...headers },
        idleTimeoutMs: timeoutMs,
        ca: this.#options.ca,
        signal,
      });
    } catch (error) {
      throw failed(error as Error);
    }
    const res = answer.body;
    return new Promise((resolve, reject) => {
      const declared = Number(answer.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes && method !== 'HEAD') {
        res.destroy();
        reject(tooLarge(method, url, maxBytes));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          res.destroy();
          reject(tooLarge(method, url, maxBytes));
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', (error) => reject(failed(error)));
      res.on('end', () =>
        resolve({ status: answer.statusCode, headers: answer.headers, body: Buffer.concat(chunks), url }),
      );
    });
  }
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

function networkError(method: Method, url: URL, error: Error, timeoutMs: number): Error {
  if (error instanceof TransientError || error instanceof StalledError) return error;
  if (isTimeout(error)) {
    return new TransientError(`${method} ${safeUrl(url)}: no answer in ${timeoutMs} ms`);
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (isCertificateError(code)) {
    return new StalledError(
      `cannot verify the TLS certificate of ${url.host} (${code}); give the registry's CA in caFile`,
      { cause: error },
    );
  }
  return new TransientError(`${method} ${safeUrl(url)}: ${code ?? error.message}`, { cause: error });
}
