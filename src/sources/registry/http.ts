// The registry client's HTTP layer on node:http/node:https: one request, redirects followed within the origin (or,
// for a registry's blobs, elsewhere without credentials), the body read into memory up to a limit. Not on fetch
// (src/http/fetch.ts, which every other outbound request goes through): fetch decodes a Content-Encoding however
// the request asked, and a chart package or a blob a server labels gzip must keep the bytes its digest names, as
// helm's own client keeps them. Failures come back as mooring errors: a refused connection is transient, a
// certificate we cannot verify is for the user to fix.
import http from 'node:http';
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import { StalledError, TransientError } from '../../errors.ts';

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

/** Keeps connections alive between polls; one per registry client, closed with it. */
export class HttpTransport {
  readonly #options: HttpTransportOptions;
  readonly #httpAgent: http.Agent;
  readonly #httpsAgent: https.Agent;

  constructor(options: HttpTransportOptions) {
    this.#options = options;
    this.#httpAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    // `ca` replaces Node's trust store; a registry on a private CA may still send us to a public token
    // service (or blob storage), so the public roots stay trusted alongside.
    this.#httpsAgent = new https.Agent({
      keepAlive: true,
      maxSockets: 4,
      ...(options.ca !== undefined ? { ca: [...rootCertificates, options.ca] } : {}),
    });
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

  close(): void {
    this.#httpAgent.destroy();
    this.#httpsAgent.destroy();
  }

  #checkScheme(url: URL): void {
    if (url.protocol === 'https:') return;
    if (url.protocol === 'http:' && this.#options.allowHttp) return;
    throw new StalledError(
      `refusing ${url.protocol.replace(':', '')} URL ${safeUrl(url)}: only https unless the source is insecure`,
    );
  }

  #once(method: Method, url: URL, headers: Record<string, string>, maxBytes: number): Promise<HttpResponse> {
    const secure = url.protocol === 'https:';
    const lib = secure ? https : http;
    return new Promise((resolve, reject) => {
      const req = lib.request(url, {
        method,
        // Identity, and what comes is taken as sent: a blob or a chart package is checked by the digest of its
        // bytes, as helm's client takes them (fetch would decode a Content-Encoding the server adds regardless).
        headers: { 'User-Agent': 'mooring', 'Accept-Encoding': 'identity', ...headers },
        agent: secure ? this.#httpsAgent : this.#httpAgent,
        timeout: this.#options.timeoutMs,
      });
      req.on('timeout', () =>
        req.destroy(
          new TransientError(`${method} ${safeUrl(url)}: no answer in ${this.#options.timeoutMs} ms`),
        ),
      );
      req.on('error', (error) => reject(networkError(method, url, error)));
      req.on('response', (res) => {
        const declared = Number(res.headers['content-length']);
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
        res.on('error', (error) => reject(networkError(method, url, error)));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), url }),
        );
      });
      req.end();
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

function networkError(method: Method, url: URL, error: Error): Error {
  if (error instanceof TransientError || error instanceof StalledError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && TLS_CODES.has(code)) {
    return new StalledError(
      `cannot verify the TLS certificate of ${url.host} (${code}); give the registry's CA in caFile`,
      { cause: error },
    );
  }
  return new TransientError(`${method} ${safeUrl(url)}: ${code ?? error.message}`, { cause: error });
}
