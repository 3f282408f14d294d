// Streaming lists (WatchList, KEP-3157): one watch with sendInitialEvents=true replaces an informer's initial
// LIST. The server sends the current objects as ADDED events, one at a time from its watch cache, then a BOOKMARK
// annotated `k8s.io/initial-events-end: "true"`; the same stream then goes on as the watch. Neither the server nor
// mooring ever holds the whole list as one response. This module owns what the informer needs to decide, per
// server and per resource type, whether to ask for it: the query, the end marker, and what each server said.
// A server without the feature answers 400 or 422 (the parameter is forbidden, or resourceVersionMatch is
// forbidden for a watch, as before 1.27), or ignores the parameter (an aggregated API server, a proxy that strips
// it): then no end marker ever comes, and a bounded silence before it says so. Either way the type falls back to
// LIST + WATCH for as long as the client lives. A stream cut before its end marker (a connection reset, a server
// shutting down, a proxy closing it) is none of these: what came is not the state, and the list is asked again.
import type { KubeObject } from '../render/manifest.ts';
import { serverMessage, statusCode } from './errors.ts';

export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** The query of a streaming list; resourceVersion stays unset (""), which asks for the current state. */
export const STREAMING_LIST_QUERY = {
  sendInitialEvents: true,
  resourceVersionMatch: 'NotOlderThan',
  allowWatchBookmarks: true,
} as const;

/** The server ignored sendInitialEvents: the stream went quiet, or ended, without the end-of-initial-events mark. */
export class InitialEventsMissing extends Error {}

/**
 * A streaming list ended before its end mark, early, as a cut stream ends (a connection reset, a server that shut
 * down, a proxy that closed it): what arrived is not the whole state. Retried with back-off, streaming still.
 */
export class InitialEventsCut extends Error {}

/** Streams in a row ended early without their end mark, after which the server is taken to ignore the ask. */
export const EARLY_ENDS_BEFORE_REFUSAL = 3;

/**
 * What a streaming list that ended without its end mark says about the server. One that ignores sendInitialEvents
 * serves a plain watch, which it ends at the request's timeout: a stream that ran that long says so. One that
 * ended sooner was cut, unless streams keep ending so (`earlyEnds` in a row, this one included): a proxy that
 * strips the ask and ends streams early must not keep the type from ever being listed.
 */
export function endedWithoutMark(
  elapsedMs: number,
  timeoutSeconds: number,
  earlyEnds: number,
): 'ignored' | 'cut' {
  if (elapsedMs >= (timeoutSeconds - 1) * 1000) return 'ignored';
  return earlyEnds >= EARLY_ENDS_BEFORE_REFUSAL ? 'ignored' : 'cut';
}

/** Whether a watch event is the bookmark that ends a streaming list's initial state. */
export function endsInitialEvents(event: { type: string; object: unknown }): boolean {
  if (event.type !== 'BOOKMARK') return false;
  const annotations = (event.object as { metadata?: { annotations?: Record<string, unknown> } } | undefined)
    ?.metadata?.annotations;
  return annotations?.[INITIAL_EVENTS_END] === 'true';
}

/**
 * Why a streaming list was refused for good, or undefined when the failure is something else (network, 429, 5xx:
 * retried; 401/403/404: the type cannot be watched at all, streaming or not).
 */
export function streamingRefusal(error: unknown): string | undefined {
  if (error instanceof InitialEventsMissing) return error.message;
  const code = statusCode(error);
  if (code === 400 || code === 422) return `${code} ${serverMessage(error)}`;
  return undefined;
}

/**
 * The initial state of one streaming list, gathered until the mark that ends it. Silence before the mark is
 * bounded: past `timeoutMs` without an event, `onSilence` hears that the server ignored the ask.
 */
export class InitialEvents {
  readonly objects = new Map<string, KubeObject>();
  readonly #timeoutMs: number;
  readonly #onSilence: (error: InitialEventsMissing) => void;
  readonly #path: string;
  #timer: NodeJS.Timeout | undefined;

  constructor(path: string, timeoutMs: number, onSilence: (error: InitialEventsMissing) => void) {
    this.#path = path;
    this.#timeoutMs = timeoutMs;
    this.#onSilence = onSilence;
    this.heard();
  }

  /** An event came: the silence bound starts again. */
  heard(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => this.#onSilence(this.missing(`no ${INITIAL_EVENTS_END} within ${this.#timeoutMs} ms`)),
      this.#timeoutMs,
    );
  }

  /** The error that says the server ignored sendInitialEvents, and how that showed. */
  missing(detail: string): InitialEventsMissing {
    return new InitialEventsMissing(`WATCH ${this.#path}: the server ignored sendInitialEvents (${detail})`);
  }

  stop(): void {
    clearTimeout(this.#timer);
  }
}

/**
 * What each resource type of one server said to a streaming list: shared by every cache of one client (the agent
 * holds one per cluster; a CLI deploy makes its own), so a type that refused is not asked again.
 */
export class StreamingSupport {
  readonly #refused = new Map<string, string>();
  readonly #enabled: boolean;

  constructor(enabled = true) {
    this.#enabled = enabled;
  }

  /** Whether to ask this type for a streaming list. */
  allowed(key: string): boolean {
    return this.#enabled && !this.#refused.has(key);
  }

  /** Remembers that this type answered a streaming list with `reason`: it is listed and watched from now on. */
  refuse(key: string, reason: string): void {
    this.#refused.set(key, reason);
  }

  /** The types that refused, with what they said (for tests, the log and the docs' examples). */
  get refusals(): ReadonlyMap<string, string> {
    return this.#refused;
  }
}

const SERVERS = new WeakMap<object, StreamingSupport>();

/** The record of one server (one client, as `src/kube/api.ts` builds one per server), made on first use. */
export function streamingSupportOf(server: object): StreamingSupport {
  let support = SERVERS.get(server);
  if (!support) {
    support = new StreamingSupport();
    SERVERS.set(server, support);
  }
  return support;
}
