// Counts a client's requests by verb and status code, and the time they were held back by a rate limit (our own
// request budget, or a server's 429), for the metrics. Labels stay bounded: verbs are a fixed set and codes are
// numbers or `error`.
import { byCodeUnit } from '../arrays.ts';

export interface RequestCount {
  verb: string;
  /** The HTTP status, or `error` when no answer came (network failure, timeout). */
  code: string;
  count: number;
}

export interface RequestStats {
  /** Sorted by verb, then code: the same counts read the same. */
  requests: RequestCount[];
  /** Time spent waiting for the request budget or a server's Retry-After, in seconds. */
  throttledSeconds: number;
  /** How many of those waits there were. */
  throttledWaits: number;
  /** The request budget's rate now, requests a second (it adapts: src/http/adaptive-rate.ts). */
  budgetRate?: number;
}

export class RequestCounter {
  readonly #counts = new Map<string, RequestCount>();
  #throttledMs = 0;
  #throttledWaits = 0;

  /** One request that was answered with `code`, or that failed without an answer (`error`). */
  count(verb: string, code: number | 'error'): void {
    const label = String(code);
    const key = `${verb} ${label}`;
    const entry = this.#counts.get(key);
    if (entry) entry.count++;
    else this.#counts.set(key, { verb, code: label, count: 1 });
  }

  /** A request waited `ms` because of a rate limit. */
  throttled(ms: number): void {
    if (!(ms > 0)) return;
    this.#throttledMs += ms;
    this.#throttledWaits++;
  }

  get stats(): RequestStats {
    const requests = [...this.#counts.values()]
      .map((c) => ({ ...c }))
      .sort((a, b) => byCodeUnit(a.verb, b.verb) || byCodeUnit(a.code, b.code));
    return { requests, throttledSeconds: this.#throttledMs / 1000, throttledWaits: this.#throttledWaits };
  }
}
