// A reverse proxy of the test bed's own, put in front of one of its real servers (git http-backend, the
// distribution registry, the GitHub-shaped status receiver) to make that server fail on purpose: answer a status
// of our choosing, rate limit with Retry-After, reset the connection mid-request or mid-response (also after N bytes
// of the answer, or end the answer properly there), hang, or pass the request on with its path rewritten (a query parameter stripped, as a proxy that does not know it would) or its Accept header. Faults
// are switched at runtime, apply to every request or to those a predicate picks, for the next N requests or until
// changed, and every request is counted by the fault it met. Only node:http(s), so it adds nothing to install. In
// front of kube-apiserver (https), the client speaks plain http to the proxy and its token is passed on.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

export type Fault =
  | { kind: 'pass' }
  /** Answers this status without asking the server (e.g. 500, 503). */
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: string }
  /** 429 with Retry-After (seconds), and optionally the RateLimit-* headers registries and APIs send. */
  | {
      kind: 'rate-limit';
      retryAfterSeconds: number;
      rateLimit?: { limit: number; remaining: number; resetSeconds: number };
    }
  /**
   * Destroys the client's socket: before the request reaches the server, or after part of the answer (half its
   * first chunk, or exactly `afterBytes` bytes of its body: a chunked body left without its end).
   */
  | { kind: 'reset'; when: 'request' | 'response'; afterBytes?: number }
  /** Passes `afterBytes` bytes of the answer's body on, then ends the answer properly, as a server closing it. */
  | { kind: 'truncate'; afterBytes: number }
  /**
   * Passes `afterBytes` bytes of the answer's body on, then nothing more (the rest is read and dropped), leaving
   * the answer open: `stalled` is called then, so that a test can act on the server mid-answer (kill it).
   */
  | { kind: 'stall'; afterBytes: number; stalled?: () => void }
  /** Accepts the request and answers nothing until the fault is changed (then it is passed on) or closed. */
  | { kind: 'hang' }
  /**
   * Passes the request on with this path (and query) instead of the one the client sent, and with this Accept
   * header (a server that knows none of the media types the client prefers answers as with `accept`).
   */
  | { kind: 'rewrite'; path?: (path: string) => string; accept?: string };

export type FaultKind = Fault['kind'];

export interface RequestInfo {
  method: string;
  /** The path and query, as the client sent them. */
  path: string;
}

export interface FaultOptions {
  /** Only requests this predicate accepts meet the fault; the others pass. */
  match?: ((request: RequestInfo) => boolean) | undefined;
  /** The fault applies to this many (matching) requests, then the proxy passes again. */
  times?: number | undefined;
}

export interface SeenRequest extends RequestInfo {
  fault: FaultKind;
  at: number;
}

interface Rule {
  fault: Fault;
  match: ((request: RequestInfo) => boolean) | undefined;
  remaining: number;
}

interface Hung {
  req: http.IncomingMessage;
  res: http.ServerResponse;
}

export class FaultProxy {
  readonly url: string;
  /** Every request, in order of arrival, with the fault it met. */
  readonly requests: SeenRequest[] = [];
  readonly #server: http.Server;
  readonly #target: URL;
  readonly #agent: http.Agent;
  readonly #sockets = new Set<Socket>();
  #rules: Rule[] = [];
  #hung: Hung[] = [];

  private constructor(server: http.Server, target: URL, ca: string | Buffer | undefined) {
    this.#server = server;
    this.#target = target;
    this.#agent =
      target.protocol === 'https:'
        ? new https.Agent({ keepAlive: true, ca })
        : new http.Agent({ keepAlive: true });
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /**
   * A proxy on 127.0.0.1 (a free port) in front of `target` (http(s)://host:port, optionally with a base path);
   * `ca` verifies an https target.
   */
  static async start(target: string, options: { ca?: string | Buffer } = {}): Promise<FaultProxy> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new FaultProxy(server, new URL(target), options.ca);
    server.on('connection', (socket) => {
      proxy.#sockets.add(socket);
      socket.on('close', () => proxy.#sockets.delete(socket));
    });
    server.on('request', (req, res) => proxy.#handle(req, res));
    return proxy;
  }

  /** The proxy's host:port, as an image reference names a registry. */
  get host(): string {
    return new URL(this.url).host;
  }

  /** Replaces every fault with this one (`pass` lifts them). Requests left hanging are passed on. */
  set(fault: Fault, options: FaultOptions = {}): void {
    this.#rules = fault.kind === 'pass' ? [] : [rule(fault, options)];
    this.#release();
  }

  /** Adds a fault in front of those already set (the first rule that matches a request applies). */
  add(fault: Fault, options: FaultOptions = {}): void {
    this.#rules.unshift(rule(fault, options));
  }

  /** Lifts every fault; hanging requests are passed on to the server. */
  pass(): void {
    this.set({ kind: 'pass' });
  }

  /** How many requests met this fault (all requests when none is given), optionally only those matching. */
  count(kind?: FaultKind, match?: (request: SeenRequest) => boolean): number {
    return this.requests.filter((r) => (kind === undefined || r.fault === kind) && (!match || match(r)))
      .length;
  }

  /** Requests waiting in a hang right now. */
  get hanging(): number {
    return this.#hung.length;
  }

  /** Stops listening and ends every socket, client and server side. */
  async close(): Promise<void> {
    this.#rules = [];
    for (const { res } of this.#hung.splice(0)) res.destroy();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    this.#agent.destroy();
    await closed;
  }

  #faultFor(request: RequestInfo): Fault {
    for (const r of this.#rules) {
      if (r.remaining <= 0 || (r.match && !r.match(request))) continue;
      r.remaining -= 1;
      return r.fault;
    }
    return { kind: 'pass' };
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const info: RequestInfo = { method: req.method ?? 'GET', path: req.url ?? '/' };
    const fault = this.#faultFor(info);
    this.requests.push({ ...info, fault: fault.kind, at: Date.now() });
    switch (fault.kind) {
      case 'pass':
        this.#forward(req, res);
        return;
      case 'rewrite':
        if (fault.accept !== undefined) req.headers.accept = fault.accept;
        this.#forward(req, res, undefined, fault.path ? fault.path(info.path) : info.path);
        return;
      case 'status':
        req.resume();
        res.writeHead(fault.status, { 'content-type': 'text/plain', ...fault.headers });
        res.end(fault.body ?? `fault proxy: ${fault.status}\n`);
        return;
      case 'rate-limit': {
        req.resume();
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          'retry-after': String(fault.retryAfterSeconds),
        };
        if (fault.rateLimit) {
          headers['ratelimit-limit'] = String(fault.rateLimit.limit);
          headers['ratelimit-remaining'] = String(fault.rateLimit.remaining);
          headers['ratelimit-reset'] = String(fault.rateLimit.resetSeconds);
        }
        res.writeHead(429, headers);
        res.end('{"message":"rate limited by the fault proxy"}');
        return;
      }
      case 'reset':
        if (fault.when === 'request') req.socket.destroy();
        else this.#forward(req, res, { bytes: fault.afterBytes, how: 'reset' });
        return;
      case 'truncate':
        this.#forward(req, res, { bytes: fault.afterBytes, how: 'end' });
        return;
      case 'stall':
        this.#forward(req, res, { bytes: fault.afterBytes, how: 'stall', stalled: fault.stalled });
        return;
      case 'hang':
        // The body is held (not read) so that passing the request on later still has it.
        req.pause();
        this.#hung.push({ req, res });
        res.on('close', () => {
          this.#hung = this.#hung.filter((h) => h.res !== res);
        });
        return;
    }
  }

  #release(): void {
    for (const { req, res } of this.#hung.splice(0)) {
      if (!res.destroyed && !req.socket.destroyed) this.#forward(req, res);
    }
  }

  /**
   * Passes the request on; `cut` ends the answer early: after `bytes` of its body (half its first chunk when
   * unset), by destroying the client's socket or by ending the answer properly.
   */
  #forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    cut?: { bytes: number | undefined; how: 'reset' | 'end' | 'stall'; stalled?: (() => void) | undefined },
    path = req.url,
  ): void {
    const base = this.#target.pathname.replace(/\/+$/, '');
    const headers = { ...req.headers, host: this.#target.host };
    const send = this.#target.protocol === 'https:' ? https.request : http.request;
    const upstream = send(
      {
        agent: this.#agent,
        host: this.#target.hostname,
        port: this.#target.port,
        method: req.method,
        path: `${base}${path ?? '/'}`,
        headers,
      },
      (answer) => {
        // The server died mid-answer (killed, connection lost): the client's connection dies too, as behind a
        // load balancer, rather than waiting on an answer that will never end.
        let cutting = false;
        const died = () => cutting || res.socket?.destroy();
        answer.on('error', died);
        answer.on('aborted', died);
        res.writeHead(
          answer.statusCode ?? 502,
          answer.statusMessage,
          headersFor(answer.rawHeaders, cut?.how),
        );
        if (!cut) {
          answer.pipe(res);
          return;
        }
        res.flushHeaders();
        let left = cut.bytes;
        const stop = () => {
          // Stalled: the answer stays open and silent; what the server sends is dropped until it ends or dies.
          if (cut.how === 'stall') return cut.stalled?.();
          cutting = true;
          answer.destroy();
          if (cut.how === 'end') res.end();
          else setImmediate(() => res.socket?.destroy());
        };
        answer.on('data', (chunk: Buffer) => {
          if (left === undefined) {
            // Headers and at most half the first chunk, then the connection dies under the client.
            res.write(chunk.subarray(0, Math.max(1, Math.floor(chunk.length / 2))));
            return stop();
          }
          if (left <= 0) return;
          const part = chunk.subarray(0, left);
          left -= part.length;
          res.write(part);
          if (left <= 0) stop();
        });
        answer.once('end', () => (cut.how === 'reset' ? res.socket?.destroy() : res.end()));
      },
    );
    upstream.on('error', () => res.socket?.destroy());
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
    req.resume();
  }
}

/** The answer's headers; one to be ended early is sent chunked, without the length it will not have. */
function headersFor(raw: string[], how: 'reset' | 'end' | 'stall' | undefined): string[] {
  if (how !== 'end' && how !== 'stall') return raw;
  const kept: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2)
    if (raw[i]?.toLowerCase() !== 'content-length') kept.push(raw[i] as string, raw[i + 1] as string);
  return kept;
}

function rule(fault: Fault, options: FaultOptions): Rule {
  return { fault, match: options.match, remaining: options.times ?? Number.POSITIVE_INFINITY };
}
