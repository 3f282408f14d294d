// The agent's HTTP endpoint: liveness (/healthz), readiness (/readyz), metrics (/metrics) and webhooks
// (POST /hooks/<provider>). It reads bodies with a hard limit, hands them to the pure handlers of webhooks.ts
// and passes the sources they name to `onTrigger`; it decides nothing about syncing itself.
import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import { errorMessage } from '../errors.ts';
import { acceptForwarded, wasForwarded } from './forwarded.ts';
import {
  type ConfiguredSources,
  handleWebhook,
  isWebhookProvider,
  type PollTarget,
  type WebhookProvider,
} from './webhooks.ts';

// node:http as its CommonJS exports: an `import` of it makes an ES module namespace, which reads every export, and
// three of them (WebSocket, CloseEvent, MessageEvent) load Node's bundled undici, about 13 MiB resident.
const { createServer: createHttpServer } = process.getBuiltinModule('node:http');

export interface Check {
  ok: boolean;
  detail?: string | undefined;
}

/** The part of a pino logger this module uses. Fields never include a signature, token or body. */
export interface ServerLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** A webhook as it arrived: its headers and body, which another replica can verify again when passed on. */
export interface WebhookDelivery {
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** Resolved secrets (not secretRefs). A provider without one, or with an empty one, is not enabled: 404. */
export type WebhookSecrets = Partial<Record<WebhookProvider, string | undefined>>;

export interface ServerOptions {
  maxBodyBytes: number;
  secrets: WebhookSecrets;
  /** Queues the polls; false: this replica does not take webhooks now (a standby), answered 503. */
  onTrigger: (
    targets: PollTarget[],
    provider: WebhookProvider,
    request: WebhookDelivery,
  ) => boolean | undefined;
  health: () => Check;
  ready: () => Check;
  metrics?: () => string | Promise<string>;
  /** The configured sources the generic hook can name; a function so that a reloaded config is seen. */
  sources?: () => ConfiguredSources;
  log: ServerLogger;
  /** More read-only pages (the status page): answers a request and returns true, or returns false. */
  pages?: ((req: IncomingMessage, res: ServerResponse, path: string) => boolean) | undefined;
  /** Whole-request limit, headers and body included: a slow client cannot hold a connection forever. */
  requestTimeoutMs?: number;
}

const HOOKS_PREFIX = '/hooks/';
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const HEADERS_TIMEOUT_MS = 10_000;
const BASE_HEADERS: OutgoingHttpHeaders = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
};
const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function createServer(options: ServerOptions): Server {
  const requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const server = createHttpServer(
    { requestTimeout, headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeout) },
    (req, res) => {
      route(options, req, res).catch((error: unknown) => {
        options.log.warn({ path: pathOf(req.url), err: errorMessage(error) }, 'http request failed');
        if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
        else res.destroy();
      });
    },
  );
  return server;
}

async function route(options: ServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = pathOf(req.url);
  if (path.startsWith(HOOKS_PREFIX)) {
    const name = path.slice(HOOKS_PREFIX.length);
    const secret = isWebhookProvider(name) ? options.secrets[name] : undefined;
    if (!isWebhookProvider(name) || secret === undefined || secret === '') {
      return sendJson(res, 404, { error: 'not found' });
    }
    if (req.method !== 'POST') return methodNotAllowed(res, 'POST');
    return webhook(options, name, secret, req, res);
  }
  if (path === '/healthz' || path === '/readyz' || (path === '/metrics' && options.metrics)) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(res, 'GET, HEAD');
    if (path === '/metrics' && options.metrics) {
      const text = await options.metrics();
      res.writeHead(200, { ...BASE_HEADERS, 'Content-Type': METRICS_TYPE });
      res.end(text);
      return;
    }
    return probe(options, path === '/healthz' ? 'health' : 'ready', res);
  }
  if (options.pages?.(req, res, path)) return;
  sendJson(res, 404, { error: 'not found' });
}

function probe(options: ServerOptions, which: 'health' | 'ready', res: ServerResponse): void {
  let check: Check;
  try {
    check = which === 'health' ? options.health() : options.ready();
  } catch (error) {
    // A probe that throws is a failing probe, not a crashed server.
    options.log.warn({ probe: which, err: errorMessage(error) }, 'probe failed');
    check = { ok: false, detail: `${which} check failed` };
  }
  const body = check.detail === undefined ? { ok: check.ok } : { ok: check.ok, detail: check.detail };
  sendJson(res, check.ok ? 200 : 503, body);
}

async function webhook(
  options: ServerOptions,
  provider: WebhookProvider,
  secret: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const declared = Number(req.headers['content-length']);
  const read = declared > options.maxBodyBytes ? tooLarge : await readBody(req, options.maxBodyBytes);
  if (read === aborted) {
    options.log.info({ provider }, 'webhook body not received: the client went away');
    return;
  }
  if (read === tooLarge) {
    const reason = `body is over the limit of ${options.maxBodyBytes} bytes`;
    options.log.warn({ provider, status: 413, sources: 0, reason }, 'webhook');
    // The rest of the body is never read: the connection goes once the answer is out.
    res.on('finish', () => req.destroy());
    sendJson(res, 413, { error: reason }, { Connection: 'close' });
    return;
  }
  const sources = options.sources?.() ?? { git: [], registry: [] };
  // Passed on by another replica: its own signature is checked, and the provider's token put back from this
  // replica's secret, so that the provider's handler checks the delivery as it came (src/server/forwarded.ts).
  let headers = req.headers;
  if (wasForwarded(req.headers)) {
    const forwarded = acceptForwarded(provider, req.headers, read, secret);
    if (!forwarded.ok) {
      options.log.warn({ provider, status: 401, sources: 0, reason: forwarded.reason }, 'webhook');
      sendJson(res, 401, { error: forwarded.reason });
      return;
    }
    headers = forwarded.headers;
  }
  const result = handleWebhook(
    provider,
    { headers, body: read },
    { secret, sources, maxBodyBytes: options.maxBodyBytes },
  );
  let status: number = result.status;
  let reason = result.reason;
  const count = result.status === 202 ? result.targets.length : 0;
  if (result.status === 202) {
    try {
      if (options.onTrigger(result.targets, provider, { headers, body: read }) === false) {
        status = 503;
        reason = 'standby: this replica does not hold the leader lease; retry';
      }
    } catch (error) {
      options.log.warn({ provider, err: errorMessage(error) }, 'webhook trigger failed');
      status = 500;
      reason = 'could not queue the polls';
    }
  }
  const fields = { provider, status, sources: status === 202 ? count : 0, reason };
  if (status >= 400) options.log.warn(fields, 'webhook');
  else options.log.info(fields, 'webhook');
  if (status === 204) {
    res.writeHead(204, BASE_HEADERS);
    res.end();
  } else if (status === 202) {
    sendJson(res, 202, { reason, sources: count });
  } else if (status === 503) {
    sendJson(res, 503, { error: reason }, { 'Retry-After': '5' });
  } else {
    sendJson(res, status, { error: reason });
  }
}

const tooLarge = Symbol('too large');
const aborted = Symbol('aborted');

/** The whole body, or `tooLarge` as soon as more than `limit` bytes have arrived (nothing past it is kept). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | typeof tooLarge | typeof aborted> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (value: Buffer | typeof tooLarge | typeof aborted) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAbort);
      req.off('close', onAbort);
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        chunks.length = 0;
        done(tooLarge);
      } else chunks.push(chunk);
    };
    const onEnd = () => done(Buffer.concat(chunks, size));
    const onAbort = () => done(aborted);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('close', onAbort);
  });
}

function methodNotAllowed(res: ServerResponse, allow: string): void {
  sendJson(res, 405, { error: 'method not allowed' }, { Allow: allow });
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: OutgoingHttpHeaders = {},
): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    ...BASE_HEADERS,
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** The path without the query: a query may carry a token, and it never selects a route. */
function pathOf(url: string | undefined): string {
  const raw = url ?? '/';
  if (!raw.startsWith('/')) {
    try {
      return new URL(raw).pathname;
    } catch {
      return raw;
    }
  }
  const query = raw.search(/[?#]/);
  return query === -1 ? raw : raw.slice(0, query);
}
