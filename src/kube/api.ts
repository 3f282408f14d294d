// A small HTTP client for the Kubernetes API: authentication and TLS come from the ClusterConfig
// (src/kube/kubeconfig.ts: tokens, client certificates and exec plugins work as kubectl's do), connections are kept alive and shared, and
// failures carry the status code and the API server's Status body for describeKubeError.
// Ordinary requests and long-lived watch streams use two separate connection pools: requests share a bounded
// keep-alive pool, and every stream gets its own connection from an unbounded one, so a request never queues
// behind a stream that may hold its socket for minutes. Streams are few by design (src/kube/cache.ts opens one
// per resource type and namespace, never one per object).
// Every request (not the streams, as in client-go) takes a token from one request budget per client, QPS and burst
// like client-go's --kube-api-qps and --kube-api-burst (cluster.qps, cluster.burst), and is counted by verb and
// status code for the metrics. With `qpsMax` above `qps` the budget adapts (src/http/adaptive-rate.ts): it grows
// while requests wait for it and the server answers promptly, and halves at a 429.
// Every answer's Warning headers (deprecations, PodSecurity, unknown fields) go to the warning log of the work the
// request runs for (src/kube/warnings.ts), about the object the request names in `about`.
// A request's spec and path check are in api-request.ts, its failures and which are retried in api-errors.ts, the
// reading of a watch stream in watch-stream.ts.

import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { type BackoffOptions, fullJitter } from '../backoff.ts';
import { StalledError } from '../errors.ts';
import { AdaptiveRate } from '../http/adaptive-rate.ts';
import { RequestCounter, type RequestStats } from '../http/request-counter.ts';
import { type Clock, TokenBucket } from '../http/token-bucket.ts';
import { parseJson } from '../json.ts';
import { linkSignals } from '../signals.ts';
import {
  KubeRequestError,
  RequestTimeoutError,
  ResponseTooLargeError,
  rateLimited,
  retriable,
  retryAfterHeader,
  UnreachableError,
} from './api-errors.ts';
import {
  JsonText,
  kubeResource,
  kubeVerb,
  MAX_RESPONSE_BYTES,
  type RequestSpec,
  resolvedUrl,
} from './api-request.ts';
import { currentDeadline } from './deadline.ts';
import { retryAfterMs } from './errors.ts';
import type { ClusterConfig } from './kubeconfig.ts';
import { currentWarnings, parseWarningHeaders, warningHeaderValues } from './warnings.ts';
import { streamWatch } from './watch-stream.ts';

export {
  KubeRequestError,
  RequestTimeoutError,
  ResponseTooLargeError,
  StreamIdleError,
  UnreachableError,
} from './api-errors.ts';
export {
  JsonText,
  kubeResource,
  kubeVerb,
  METADATA_LIST,
  METADATA_OBJECT,
  type RequestSpec,
  resolvedUrl,
} from './api-request.ts';

// node:http as its CommonJS exports: an `import` of it makes an ES module namespace, which reads every export, and
// three of them (WebSocket, CloseEvent, MessageEvent) load Node's bundled undici, about 13 MiB resident.
const { request: httpRequest } = process.getBuiltinModule('node:http');

export interface KubeApiOptions {
  maxSockets?: number;
  /** A request answered with nothing for this long is abandoned (and retried). */
  requestTimeoutMs?: number;
  /** Outside a sync's deadline, how long a request keeps retrying transient failures. */
  retryForMs?: number;
  random?: () => number;
  /** The request budget: requests a second (cluster.qps, 200 by default) … */
  qps?: number | undefined;
  /** … and at once after a quiet time (cluster.burst, 400 by default). */
  burst?: number | undefined;
  /** Above `qps`: the budget adapts between a quarter of `qps` and this (src/http/adaptive-rate.ts). */
  qpsMax?: number | undefined;
  /** With `qpsMax`: the adaptive budget's first rate (`qps` by default; at most `qpsMax`). */
  qpsStart?: number | undefined;
  /** The budget's clock; the system's by default. */
  clock?: Clock | undefined;
}

export const DEFAULT_QPS = 200;
export const DEFAULT_BURST = 400;

/**
 * The budget of every command-line command (deploy, diff, rollback, delete, run --watch, …; not the agent of `run
 * --config`, whose budget is its configuration's): it starts at `qpsMax` and follows the
 * server down, a fifth at a time when its answers slow to four times their best and by half at each 429 (API
 * Priority and Fairness, the server's own protection), never below a quarter of `DEFAULT_QPS`. A command's
 * `--concurrency` bounds what it has in flight. The agent's fixed 200 a second is for a process that shares the
 * server with its controllers all day; a deploy a user waits for was held at it: a set of 1,000 objects (a dry run
 * and a write each) waited 8 s for the budget alone, as long as the server took to answer them (docs/apply.md).
 */
export const CLI_BUDGET: Pick<KubeApiOptions, 'qps' | 'qpsMax' | 'qpsStart' | 'burst'> = {
  qps: DEFAULT_QPS,
  qpsMax: 2000,
  qpsStart: 2000,
  burst: DEFAULT_BURST,
};
/**
 * The client of a command-line command: CLI_BUDGET, with the command's own options beside it (its sockets). The one
 * way src/cli makes a client (test/unit/cli/command-clients.test.ts), so that no command falls back to the agent's
 * fixed budget.
 */
export function commandKubeApi(
  config: ClusterConfig,
  options: Omit<KubeApiOptions, keyof typeof CLI_BUDGET> = {},
): KubeApi {
  return new KubeApi(config, { ...options, ...CLI_BUDGET });
}

// Retries back off with full jitter from this base to this cap; a 429 waits what the server asked, at most a minute.
const RETRY_BASE_MS = 250;
const RETRY_MAX_MS = 5000;
const RETRY_MIN_MS = 50;
const MAX_RETRY_AFTER_MS = 60_000;
/**
 * A 429's wait is spread over up to this much more than Retry-After. API Priority and Fairness refuses a burst's
 * requests together and says "1" to each; asked again all at once, a level whose seats one list fills (a list is
 * counted as wide as the objects of its type in the whole cluster) admitted one of them per second: forty lists took
 * forty seconds. Spread over the second after, each asks when the one before it may be done.
 */
const RETRY_AFTER_SPREAD_MS = 1000;

/** The client certificate the agents were built with: an exec plugin may hand out a new one. */
interface Identity {
  cert: RequestOptions['cert'];
  key: RequestOptions['key'];
}

function sameIdentity(a: Identity, b: Identity): boolean {
  const same = (x: unknown, y: unknown) =>
    x === y ||
    (Buffer.isBuffer(x) && Buffer.isBuffer(y) && x.equals(y)) ||
    (typeof x === 'string' && x === y);
  return same(a.cert, b.cert) && same(a.key, b.key);
}

/** An agent of an identity that is no longer used: its sockets close once their current request is done. */
function retire(agent: Agent | undefined): void {
  if (!agent) return;
  // Read by the agent when a request ends: the socket is then destroyed rather than pooled.
  (agent as Agent & { keepAlive: boolean }).keepAlive = false;
  for (const sockets of Object.values(agent.freeSockets))
    for (const socket of sockets ?? []) socket.destroy();
}

/** What onAnswer tells: an answer's latency, or a 429 (API Priority and Fairness refusing). */
export type ApiAnswer = { latencyMs: number; limited?: undefined } | { limited: true; latencyMs?: undefined };

export class KubeApi {
  readonly config: ClusterConfig;
  private readonly server: URL;
  private agent: Agent | undefined;
  private streamAgent: Agent | undefined;
  private identity: Identity | undefined;
  private readonly maxSockets: number;
  private openStreams = 0;
  private closed = false;
  private readonly requestTimeoutMs: number;
  private readonly retryForMs: number;
  private readonly random: () => number;
  private readonly budget: TokenBucket;
  /** The budget's rate, when it adapts to the server's answers. */
  private readonly adaptive: AdaptiveRate | undefined;
  private readonly counter = new RequestCounter();
  /** Told of every answer's latency and every 429 (onAnswer): the agent's number of syncs in flight follows them. */
  private readonly answerListeners = new Set<(answer: ApiAnswer) => void>();
  /** When the current run of failed requests began; undefined while the server answers. */
  private failingSince: number | undefined;
  /**
   * Whether the server ever answered this client. Until it has, a network failure is not retried: a wrong
   * address or a cluster that is down fails at once, as kubectl does, instead of after the retry budget.
   */
  private answered = false;

  constructor(config: ClusterConfig, options: KubeApiOptions = {}) {
    this.config = config;
    this.server = new URL(config.server);
    this.maxSockets = options.maxSockets ?? 16;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.retryForMs = options.retryForMs ?? 20_000;
    this.random = options.random ?? Math.random;
    const qps = options.qps ?? DEFAULT_QPS;
    if (options.qpsMax !== undefined && options.qpsMax > qps)
      this.adaptive = new AdaptiveRate({
        start: options.qpsStart ?? qps,
        min: qps / 4,
        max: options.qpsMax,
        clock: options.clock,
      });
    this.budget = new TokenBucket({
      ratePerSecond: this.adaptive?.rate ?? qps,
      burst: options.burst ?? DEFAULT_BURST,
      clock: options.clock,
    });
  }

  /**
   * Requests sent so far by verb and status code (`error` when no answer came; watch streams as `watch`), and the
   * time requests waited for the budget or a 429's Retry-After.
   */
  get requestStats(): RequestStats {
    return { ...this.counter.stats, budgetRate: this.budget.rate };
  }

  /**
   * Calls `listener` with the latency of every answer (from the request sent to its body read) and at every 429;
   * returns what stops it.
   */
  onAnswer(listener: (answer: ApiAnswer) => void): () => void {
    this.answerListeners.add(listener);
    return () => this.answerListeners.delete(listener);
  }

  /** Since when (epoch ms) requests have been failing without an answer, or undefined when the server answers. */
  get unreachableSince(): number | undefined {
    return this.failingSince;
  }

  get serverUrl(): string {
    return this.server.origin;
  }

  /** Watch streams open now: grows with resource types times namespaces watched, never with objects. */
  get streams(): number {
    return this.openStreams;
  }

  private tlsAgent(opts: RequestOptions, maxSockets: number): Agent {
    return new Agent({
      keepAlive: true,
      maxSockets,
      ca: opts.ca,
      cert: opts.cert,
      key: opts.key,
      pfx: opts.pfx,
      passphrase: opts.passphrase,
      rejectUnauthorized: opts.rejectUnauthorized,
      servername: opts.servername,
    });
  }

  /**
   * Request options with fresh credentials (tokens may rotate), on the bounded request pool or, for a stream, on
   * the stream pool.
   */
  private async options(
    method: string,
    path: string,
    spec: RequestSpec,
    payload: string | undefined,
    stream = false,
  ): Promise<RequestOptions> {
    const opts: RequestOptions = { method, headers: {} };
    await this.config.applyTo(opts);
    // A closed client opens no connection, or a late request would keep the process alive.
    if (this.closed) throw new Error(`${method} ${path}: the client is closed`);
    if (this.server.protocol === 'https:') {
      const identity = { cert: opts.cert, key: opts.key };
      if (this.identity && !sameIdentity(this.identity, identity)) {
        retire(this.agent);
        retire(this.streamAgent);
        this.agent = undefined;
        this.streamAgent = undefined;
      }
      this.identity = identity;
      if (stream) {
        this.streamAgent ??= this.tlsAgent(opts, Number.POSITIVE_INFINITY);
        opts.agent = this.streamAgent;
      } else {
        this.agent ??= this.tlsAgent(opts, this.maxSockets);
        opts.agent = this.agent;
      }
    } else {
      delete opts.agent;
    }
    const url = resolvedUrl(method, path, this.server);
    for (const [k, v] of Object.entries(spec.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    if (spec.stale) url.searchParams.set('resourceVersion', '0');
    opts.protocol = url.protocol;
    opts.hostname = url.hostname;
    opts.port = url.port;
    opts.path = `${url.pathname}${url.search}`;
    const headers: Record<string, string> = {
      ...(opts.headers as Record<string, string>),
      accept: spec.accept ?? 'application/json',
    };
    if (payload !== undefined) {
      headers['content-type'] = spec.contentType ?? 'application/json';
      // A length, not chunked encoding: the API server answers a chunked DELETE body with 400 on reuse.
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    opts.headers = headers;
    if (spec.signal) opts.signal = spec.signal;
    return opts;
  }

  /**
   * One request, retried with exponential back-off and full jitter while it fails transiently (network, 429 after
   * the server's Retry-After, 5xx), until the deadline of the sync it runs for, or the default budget.
   */
  async request<T = unknown>(method: string, path: string, spec: RequestSpec = {}): Promise<T> {
    resolvedUrl(method, path, this.server);
    if (spec.query?.resourceVersion !== undefined || spec.query?.resourceVersionMatch !== undefined)
      throw new StalledError(
        `${method} ${path}: refused, a read names its resourceVersion only through \`stale\` (resourceVersion=0)`,
      );
    const deadline = currentDeadline();
    const until = Math.min(
      deadline?.until ?? Date.now() + this.retryForMs,
      spec.retryForMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + spec.retryForMs,
    );
    const linked = spec.signal && deadline?.signal ? linkSignals(spec.signal, deadline.signal) : undefined;
    try {
      return await this.retried<T>(
        method,
        path,
        spec,
        until,
        linked?.signal ?? spec.signal ?? deadline?.signal,
      );
    } finally {
      linked?.release();
    }
  }

  /** request()'s attempts, until one is answered or the error is final; `stop` ends the retries. */
  private async retried<T>(
    method: string,
    path: string,
    spec: RequestSpec,
    until: number,
    stop: AbortSignal | undefined,
  ): Promise<T> {
    // The 500s this request met: a write is tried again after at most WRITE_500_RETRIES of them (api-errors.ts).
    let answered500 = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        const waited = await this.takeBudget(method, path, spec.signal);
        const sent = performance.now();
        const result = await this.send<T>(method, path, spec);
        const latencyMs = performance.now() - sent;
        this.adapt(this.adaptive?.answered(latencyMs, waited > 0));
        for (const listener of this.answerListeners) listener({ latencyMs });
        this.failingSince = undefined;
        this.answered = true;
        return result;
      } catch (error) {
        // An answer, even a refusal, means the server is there.
        if (error instanceof KubeRequestError) this.answered = true;
        if (error instanceof KubeRequestError && error.code !== 503) this.failingSince = undefined;
        else this.failingSince ??= Date.now();
        if (!this.answered && !(error instanceof KubeRequestError)) throw error;
        if (this.closed || stop?.aborted || !retriable(method, error, answered500)) throw error;
        if (error instanceof KubeRequestError && error.code === 500) answered500++;
        const limited = rateLimited(error);
        if (limited) {
          this.adapt(this.adaptive?.limited());
          for (const listener of this.answerListeners) listener({ limited: true });
        }
        const delay = this.retryDelay(error, attempt, {
          baseMs: RETRY_BASE_MS,
          maxMs: RETRY_MAX_MS,
          minMs: RETRY_MIN_MS,
        });
        if (Date.now() + delay >= until) {
          if (error instanceof KubeRequestError) throw error;
          throw new UnreachableError(
            method,
            path,
            this.failingSince ?? Date.now(),
            error,
            this.server.origin,
          );
        }
        await sleep(delay, undefined, stop ? { signal: stop } : {}).catch(() => {
          throw error;
        });
        if (limited) this.counter.throttled(delay);
      }
    }
  }

  /**
   * How long to wait before asking again after `error`, for every path to this server (these requests and the
   * cache's list and watch streams): what a 429 (API Priority and Fairness, a full queue) asks in Retry-After,
   * never less, at most a minute, and a random part of it up to a second more (RETRY_AFTER_SPREAD_MS); otherwise
   * the one back-off (src/backoff.ts) at this attempt.
   */
  retryDelay(error: unknown, attempt: number, backoff: BackoffOptions): number {
    if (rateLimited(error)) {
      const asked = Math.min(MAX_RETRY_AFTER_MS, retryAfterMs(error));
      return asked + Math.floor(this.random() * Math.min(asked, RETRY_AFTER_SPREAD_MS));
    }
    return fullJitter(attempt, { random: this.random, ...backoff });
  }

  /** Counts a wait a 429 asked for (the cache's streams wait themselves), for mooring_kube_throttled_seconds_total. */
  throttled(ms: number): void {
    if (ms > 0) this.counter.throttled(ms);
  }

  /** The budget's new rate, when the adaptive rate moved it. */
  private adapt(rate: number | undefined): void {
    if (rate !== undefined) this.budget.setRate(rate);
  }

  /** Waits for the request budget (how long it waited); the wait ends early only when the request is aborted. */
  private async takeBudget(method: string, path: string, signal: AbortSignal | undefined): Promise<number> {
    let waited: number;
    try {
      waited = await this.budget.take(signal);
    } catch (cause) {
      throw Object.assign(
        new Error(`${method} ${path}: aborted while waiting for the request budget`, { cause }),
        {
          name: 'AbortError',
          code: 'ABORT_ERR',
        },
      );
    }
    if (waited > 0) this.counter.throttled(waited);
    return waited;
  }

  private async send<T>(method: string, path: string, spec: RequestSpec): Promise<T> {
    const payload =
      spec.body === undefined
        ? undefined
        : spec.body instanceof JsonText
          ? spec.body.text
          : JSON.stringify(spec.body);
    const opts = await this.options(method, path, spec, payload);
    const limit = spec.maxBytes ?? MAX_RESPONSE_BYTES;
    const verb = kubeVerb(method, path);
    const resource = kubeResource(path);
    // Taken now: the answer's callbacks do not run in the caller's async scope.
    const warnings = currentWarnings();
    return new Promise<T>((resolve, reject) => {
      const send = opts.protocol === 'http:' ? httpRequest : httpsRequest;
      const req = send(opts, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limit) {
            req.destroy(new ResponseTooLargeError(method, path, limit));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? parseJson(text) : undefined;
          } catch {
            // not JSON: keep the text
          }
          const code = res.statusCode ?? 0;
          if (code >= 200 && code < 300) resolve(body as T);
          else reject(new KubeRequestError(method, path, code, body, retryAfterHeader(res.headers)));
        });
        res.on('error', reject);
      });
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        this.counter.count(verb, res.statusCode ?? 0, resource);
        // A refusal may carry warnings too (PodSecurity's beside a policy's denial): they are kept as well.
        const texts = warnings ? parseWarningHeaders(warningHeaderValues(res.rawHeaders)) : [];
        if (texts.length > 0) warnings?.add(texts, `${method} ${path.split('?')[0]}`, spec.about);
      });
      req.on('error', (error) => {
        if (!answered) this.counter.count(verb, 'error', resource);
        reject(error);
      });
      req.setTimeout(this.requestTimeoutMs, () =>
        req.destroy(
          new RequestTimeoutError(
            `${method} ${path}: no answer within ${Math.round(this.requestTimeoutMs / 1000)} s`,
          ),
        ),
      );
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /**
   * Streams a watch: calls `onEvent` for every event until the server closes the stream, the signal aborts, or
   * onEvent returns false. Resolves when the stream ends (callers re-watch from the last resourceVersion).
   */
  async watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (event: { type: string; object: unknown }) => boolean | undefined,
    options: {
      signal?: AbortSignal | undefined;
      /**
       * A stream silent for this long is given up (rejects), so a server that stopped answering without closing
       * the connection is noticed. Set it above the server-side timeout.
       */
      idleTimeoutMs?: number | undefined;
      accept?: string | undefined;
    } = {},
  ): Promise<void> {
    const { signal, idleTimeoutMs, accept } = options;
    const opts = await this.options(
      'GET',
      path,
      { query: { ...query, watch: true }, signal, accept },
      undefined,
      true,
    );
    this.openStreams++;
    try {
      await streamWatch(opts, path, onEvent, { signal, idleTimeoutMs, counter: this.counter });
    } finally {
      this.openStreams--;
    }
  }

  close(): void {
    this.closed = true;
    this.agent?.destroy();
    this.streamAgent?.destroy();
  }
}
