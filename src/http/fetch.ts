// The one way mooring's requests leave the process for a server other than the API server: registries, chart
// repositories, forges, notifications, the audit webhook, forwards between replicas and the Git transport. One
// request on Node's own HTTP client (`exchange`), with keep-alive agents kept per CA (the public roots, and for a
// `caFile` the public roots and that CA), and a fetch on top of it (`fetchFor`) for the callers written against
// fetch's Request and Response.
//
// Node's http and https, not a fetch (neither Node's nor the undici package's): fetch decodes a Content-Encoding
// whatever the request asked, and a chart package or a blob must keep the bytes its digest names (as helm's client
// keeps them); http hands the bytes over as sent. The API server's client (kube/api.ts) and the agent's servers
// already load http, https and tls, so this client adds nothing to the process: the undici package it replaced
// loaded 25 more modules, Node's http2 and assert, and a WebAssembly HTTP parser, about 6 MiB resident in every
// process that made one request (docs/memory.md). Bodies are taken as sent: `Accept-Encoding: identity` unless a
// caller asks otherwise. Redirects are the caller's (request.ts follows them within the origin, the registry client
// to blob storage without credentials): this fetch answers `manual` and `error`, and refuses to follow on its own.
import type { ClientRequest, Agent as HttpAgent, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { rootCertificates } from 'node:tls';

// node:http and node:https as their CommonJS exports: an `import` of node:http makes an ES module namespace, which
// reads every export, and three of them (WebSocket, CloseEvent, MessageEvent) load Node's bundled undici, about
// 13 MiB resident.
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

/**
 * fetch as mooring calls it: a URL and the init of a request, answered with what its callers read of a Response.
 * Node's own fetch, Request, Response and Headers are not used: the first of them loads Node's bundled copy of
 * undici, about 14 MiB resident in every process that touches it (docs/memory.md).
 */
export type Fetch = (url: string | URL, init: FetchInit) => Promise<FetchAnswer>;

export interface FetchInit {
  method?: string | undefined;
  /** Names and values; a name given twice in pairs is sent as one header of both values, as fetch does. */
  headers?: Record<string, string> | [string, string][] | undefined;
  body?: Uint8Array | ArrayBuffer | string | null | undefined;
  /** Redirects are the caller's: `manual` returns them, `error` makes one a network error; no other is taken. */
  redirect?: RequestInit['redirect'] | undefined;
  signal?: AbortSignal | null | undefined;
}

/** What a Response says, as far as mooring reads it (a Response is one). */
export interface FetchAnswer {
  status: number;
  statusText: string;
  ok: boolean;
  headers: HeaderValues;
  body: ReadableStream<Uint8Array> | null;
}

/** Header values by case-insensitive name, as fetch's Headers gives them (several values joined by `, `). */
export interface HeaderValues {
  get(name: string): string | null;
  forEach(callback: (value: string, name: string) => void): void;
}

/** An answer's headers (Node's `IncomingHttpHeaders`, names already in lower case) read as fetch reads them. */
export class AnswerHeaders implements HeaderValues {
  readonly #values = new Map<string, string>();

  constructor(headers: IncomingHttpHeaders) {
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined) continue;
      this.#values.set(name.toLowerCase(), Array.isArray(value) ? value.join(', ') : value);
    }
  }

  get(name: string): string | null {
    return this.#values.get(name.toLowerCase()) ?? null;
  }

  forEach(callback: (value: string, name: string) => void): void {
    for (const name of [...this.#values.keys()].sort()) callback(this.#values.get(name) as string, name);
  }
}

export interface Exchange {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: Uint8Array | string | undefined;
  /** Aborts the request, or the reading of its answer, with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** The server may stay silent this long, before its head or between two parts of its body (default 300 s). */
  idleTimeoutMs?: number | undefined;
  /** PEM certificates trusted besides the public roots (`caFile`). */
  ca?: string | undefined;
}

/** An answer's head, and its body still to read: a stream the caller consumes or destroys. */
export interface Answer {
  statusCode: number;
  statusMessage: string;
  headers: IncomingHttpHeaders;
  body: Readable;
}

// Connections stay open between polls; an idle one is closed after this long (Node's agent honours a shorter
// `Keep-Alive: timeout` a server announces, and closes its own sockets a second before it).
const FREE_SOCKET_MS = 30_000;
const agents = new Map<string, HttpAgent>();
// As long as a server may think before answering (a large Git pack) when the caller gave no bound of its own.
const DEFAULT_IDLE_MS = 300_000;

function agentFor(protocol: string, ca: string | undefined): HttpAgent {
  const key = `${protocol}${ca ?? ''}`;
  let agent = agents.get(key);
  if (!agent) {
    // No cap on connections per server (as fetch has none): a capped pool queues a request behind any answer
    // a caller left unread, where an uncapped one only keeps that connection until its idle timeout. A free
    // connection does not keep the process alive (the agent unrefs it).
    const options = { keepAlive: true, timeout: FREE_SOCKET_MS, scheduling: 'lifo' as const };
    agent =
      protocol === 'https:'
        ? // `ca` replaces Node's trust store: a server on a private CA may still send us to a public token service
          // or blob storage, so the public roots stay trusted alongside.
          new https.Agent({ ...options, ...(ca !== undefined ? { ca: [...rootCertificates, ca] } : {}) })
        : new http.Agent(options);
    agents.set(key, agent);
  }
  return agent;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
// A connection that closed under a request before any answer came (a kept-alive one the server had just closed).
const DROPPED = new Set(['ECONNRESET', 'EPIPE']);

/** Whether an error of an exchange, or of the reading of its body, says the server was silent too long. */
export function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === 'TimeoutError';
}

function silence(idleMs: number): DOMException {
  return new DOMException(`no answer in ${idleMs} ms`, 'TimeoutError');
}

/** One request on one connection: the answer's head, or the error that ended the request before it. */
function sendOnce(options: Exchange, headers: Record<string, string>, idleMs: number): Promise<Answer> {
  const { url, signal } = options;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<Answer>((resolve, reject) => {
    let answer: IncomingMessage | undefined;
    const req: ClientRequest = client.request(url, {
      method: options.method,
      headers,
      agent: agentFor(url.protocol, options.ca),
    });
    const abort = () => {
      const reason: unknown = signal?.reason;
      if (answer) answer.destroy(reason as Error);
      else req.destroy(reason as Error);
    };
    const done = () => signal?.removeEventListener('abort', abort);
    signal?.addEventListener('abort', abort, { once: true });
    // Silence before the head, and between two parts of the body: the socket's idle time, while this request holds it.
    req.setTimeout(idleMs, () => {
      const error = silence(idleMs);
      if (answer) answer.destroy(error);
      else req.destroy(error);
    });
    req.on('error', (error) => {
      done();
      if (!answer) reject(signal?.aborted ? signal.reason : error);
    });
    req.on('response', (res: IncomingMessage) => {
      answer = res;
      // A caller lets an answer go by destroying its body: one listener here keeps a destroy with an error from
      // being an uncaught error (a reader still gets every error through its own listener or stream).
      res.on('error', () => undefined);
      res.once('close', done);
      resolve({
        statusCode: res.statusCode ?? 0,
        statusMessage: res.statusMessage ?? '',
        headers: res.headers,
        body: res,
      });
    });
    req.end(options.body);
  });
}

/**
 * Sends one request and resolves with the answer's head, its body still to read. Rejects with the signal's reason
 * when aborted, a TimeoutError DOMException when the server was silent too long before its head (a silence within
 * the body fails the body with one too: `isTimeout` knows it), and the network error otherwise. A connection the
 * server closed as the request went out is tried once more on a new one, for an idempotent method.
 */
export async function exchange(options: Exchange): Promise<Answer> {
  const { signal } = options;
  if (signal?.aborted) throw signal.reason;
  const idleMs = options.idleTimeoutMs ?? DEFAULT_IDLE_MS;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers)) headers[name.toLowerCase()] = value;
  headers['accept-encoding'] ??= 'identity';
  try {
    return await sendOnce(options, headers, idleMs);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (!IDEMPOTENT.has(options.method) || !DROPPED.has(code) || signal?.aborted) throw closedSaid(error);
    return sendOnce(options, headers, idleMs).catch((again: unknown) => {
      throw closedSaid(again);
    });
  }
}

/** Node's "socket hang up" said as what it is, with the code every caller's message shows. */
function closedSaid(error: unknown): unknown {
  if (!(error instanceof Error) || (error as NodeJS.ErrnoException).code !== 'ECONNRESET') return error;
  if (error.message !== 'socket hang up') return error;
  return Object.assign(new Error('the server closed the connection (socket hang up)', { cause: error }), {
    code: 'ECONNRESET',
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
  const send = streamFetchFor(ca);
  return async (input, init) => {
    const answer = await send(input, init);
    return { ...answer, body: answer.body && (Readable.toWeb(answer.body) as ReadableStream<Uint8Array>) };
  };
}

/** A FetchAnswer whose body is Node's stream (null for HEAD, 204, 205, 304): what the Git transport reads. */
export interface StreamAnswer extends Omit<FetchAnswer, 'body'> {
  body: Readable | null;
}

/**
 * fetchFor's requests with the body left a Node stream: a caller that reads chunks needs no web stream around it
 * (the Git transport, every poll). fetchFor is this with `Readable.toWeb` on the body.
 */
export function streamFetchFor(
  ca?: string | undefined,
): (url: string | URL, init: FetchInit) => Promise<StreamAnswer> {
  return async (input, init) => {
    const url = new URL(String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new TypeError('fetch failed', { cause: new Error(`unsupported scheme ${url.protocol}`) });
    if (url.username !== '' || url.password !== '')
      throw new TypeError('Request cannot be constructed from a URL that includes credentials');
    if (init.redirect !== 'manual' && init.redirect !== 'error')
      throw new TypeError('fetch: give redirect "manual" or "error"; redirects are followed by the caller');
    const method = (init.method ?? 'GET').toUpperCase();
    const headers = headerRecord(init.headers);
    const signal = init.signal ?? undefined;
    let res: Answer;
    try {
      res = await exchange({ method, url, headers, body: bodyOf(init.body), signal, ca });
    } catch (error) {
      if (signal?.aborted && error === signal.reason) throw error;
      throw new TypeError('fetch failed', { cause: error });
    }
    const status = res.statusCode;
    if (status < 200 || status > 599 || (init.redirect === 'error' && REDIRECTS.has(status))) {
      res.body.destroy();
      throw new TypeError('fetch failed', {
        cause: new Error(REDIRECTS.has(status) ? 'unexpected redirect' : `invalid status ${status}`),
      });
    }
    const empty = method === 'HEAD' || NULL_BODY.has(status);
    if (empty) res.body.resume();
    return {
      status,
      statusText: res.statusMessage,
      ok: status >= 200 && status < 300,
      headers: new AnswerHeaders(res.headers),
      body: empty ? null : res.body,
    };
  };
}

/** A request's headers as one value per lower-case name; a name given twice is sent as both values, `, `-joined. */
export function headerRecord(headers: FetchInit['headers']): Record<string, string> {
  const record: Record<string, string> = {};
  const pairs = headers === undefined ? [] : Array.isArray(headers) ? headers : Object.entries(headers);
  for (const [name, value] of pairs) {
    const key = name.toLowerCase();
    if (!/^[!#$%&'*+.^`|~\w-]+$/.test(key))
      throw new TypeError(`fetch: invalid header name ${JSON.stringify(name)}`);
    const text = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
    if (/[\0\r\n]/.test(text)) throw new TypeError(`fetch: invalid value for header ${key}`);
    record[key] = key in record ? `${record[key]}, ${text}` : text;
  }
  return record;
}

function bodyOf(body: FetchInit['body']): Uint8Array | string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError('fetch: a body is text or bytes');
}
