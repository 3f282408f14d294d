// The one way mooring's requests leave the process for a server other than the API server: registries, chart
// repositories, forges, notifications, the audit webhook, forwards between replicas and the Git transport. One
// request on node:http or node:https (`exchange`), with keep-alive agents kept per CA (the public roots, and for a
// `caFile` the public roots and that CA), and a fetch on top of it (`fetchFor`) for the callers written against
// fetch's Request and Response.
//
// Not Node's own fetch, nor the undici package: both decode a Content-Encoding whatever the request asked, and a
// chart package or a blob must keep the bytes its digest names (as helm's client keeps them); and both parse HTTP
// in WebAssembly. Measured on the same 20 requests: node:http adds 3 MiB to the process, Node's fetch 19 MiB, the
// undici package 28 MiB (docs/memory.md). Bodies are taken as sent: `Accept-Encoding: identity` unless a caller
// asks otherwise. Redirects are the caller's (request.ts follows them within the origin, the registry client to
// blob storage without credentials): this fetch answers `manual` and `error`, and refuses to follow on its own.
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { rootCertificates } from 'node:tls';

/** fetch as mooring calls it: a URL and the init of a request. */
export type Fetch = (url: string | URL, init: RequestInit) => Promise<Response>;

export interface Exchange {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: Uint8Array | string | undefined;
  /** Aborts the request, or the reading of its answer, with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** The socket may stay silent this long before the exchange fails with a TimeoutError (default 300 s). */
  idleTimeoutMs?: number | undefined;
  /** PEM certificates trusted besides the public roots (`caFile`). */
  ca?: string | undefined;
}

interface Agents {
  http: http.Agent;
  https: https.Agent;
}

// Connections stay open between polls; an idle one is closed after this long (servers close theirs sooner).
const FREE_SOCKET_MS = 30_000;
const agents = new Map<string, Agents>();
// As long as a server may think before answering (a large Git pack) when the caller gave no bound of its own.
const DEFAULT_IDLE_MS = 300_000;

function agentsFor(ca: string | undefined): Agents {
  const key = ca ?? '';
  let pair = agents.get(key);
  if (!pair) {
    // No cap on connections per server (as fetch has none): a capped pool queues a request behind any answer
    // a caller left unread, where an uncapped one only keeps that connection until its idle timeout.
    const common = { keepAlive: true, timeout: FREE_SOCKET_MS };
    pair = {
      http: new http.Agent(common),
      // `ca` replaces Node's trust store: a server on a private CA may still send us to a public token service or
      // blob storage, so the public roots stay trusted alongside.
      https: new https.Agent({ ...common, ...(ca !== undefined ? { ca: [...rootCertificates, ca] } : {}) }),
    };
    agents.set(key, pair);
  }
  return pair;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

/**
 * Sends one request and resolves with the answer's head, its body still to read (a stream the caller consumes or
 * destroys). Rejects with the signal's reason when aborted, a TimeoutError DOMException when the socket was idle
 * too long, and Node's network error otherwise. A kept-alive connection the server closed as the request went out
 * is retried once on a new one, for an idempotent method.
 */
export function exchange(request: Exchange): Promise<http.IncomingMessage> {
  return attempt(request, IDEMPOTENT.has(request.method));
}

function attempt(request: Exchange, mayRetry: boolean): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const { signal } = request;
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const secure = request.url.protocol === 'https:';
    const idleMs = request.idleTimeoutMs ?? DEFAULT_IDLE_MS;
    const pair = agentsFor(request.ca);
    const body = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
    headers['accept-encoding'] ??= 'identity';
    if (body !== undefined) headers['content-length'] = String(body.byteLength);
    const req = (secure ? https : http).request(request.url, {
      method: request.method,
      headers,
      agent: secure ? pair.https : pair.http,
      timeout: idleMs,
    });
    let answered: http.IncomingMessage | undefined;
    const onAbort = (): void => {
      const reason = signal?.reason;
      req.destroy(reason);
      answered?.destroy(reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = (): void => signal?.removeEventListener('abort', onAbort);
    req.on('timeout', () => {
      const error = new DOMException(`no answer in ${idleMs} ms`, 'TimeoutError');
      req.destroy(error);
      answered?.destroy(error);
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (answered) return;
      done();
      if (mayRetry && req.reusedSocket && error.code === 'ECONNRESET' && !signal?.aborted) {
        resolve(attempt(request, false));
        return;
      }
      reject(error);
    });
    req.on('response', (res) => {
      answered = res;
      res.once('close', done);
      resolve(res);
    });
    req.end(body);
  });
}

// Node's codes for a certificate that does not verify: retrying cannot help, a caFile (or a renewed certificate) can.
const CERTIFICATE_ERRORS = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Whether a network error's code says the server's certificate does not verify (the user's to fix). */
export function isCertificateError(code: string | undefined): boolean {
  return code !== undefined && CERTIFICATE_ERRORS.has(code);
}

const NULL_BODY = new Set([101, 204, 205, 304]);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** fetch over `exchange`, trusting the public roots and, when given, the PEM certificates `ca`. */
export function fetchFor(ca?: string | undefined): Fetch {
  return async (input, init) => {
    const url = new URL(String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new TypeError('fetch failed', { cause: new Error(`unsupported scheme ${url.protocol}`) });
    if (url.username !== '' || url.password !== '')
      throw new TypeError('Request cannot be constructed from a URL that includes credentials');
    if (init.redirect !== 'manual' && init.redirect !== 'error')
      throw new TypeError('fetch: give redirect "manual" or "error"; redirects are followed by the caller');
    const method = (init.method ?? 'GET').toUpperCase();
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const signal = init.signal ?? undefined;
    let res: http.IncomingMessage;
    try {
      res = await exchange({ method, url, headers, body: bodyOf(init.body), signal, ca });
    } catch (error) {
      if (signal?.aborted && error === signal.reason) throw error;
      throw new TypeError('fetch failed', { cause: error });
    }
    const status = res.statusCode ?? 0;
    if (status < 200 || status > 599 || (init.redirect === 'error' && REDIRECTS.has(status))) {
      res.destroy();
      throw new TypeError('fetch failed', {
        cause: new Error(REDIRECTS.has(status) ? 'unexpected redirect' : `invalid status ${status}`),
      });
    }
    const answer = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) answer.append(name, one);
    }
    const empty = method === 'HEAD' || NULL_BODY.has(status);
    if (empty) res.resume();
    return new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
      status,
      statusText: res.statusMessage ?? '',
      headers: answer,
    });
  };
}

function bodyOf(body: RequestInit['body']): Uint8Array | string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError('fetch: a body is text or bytes');
}
