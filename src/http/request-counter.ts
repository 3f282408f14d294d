// Counts a client's requests by verb, resource and status code, and the time they were held back by a rate limit
// (our own request budget, or a server's 429), for the metrics. Labels stay bounded: verbs are a fixed set, codes
// are numbers or `error`, and resources (which a CRD author names) are counted apart for the first
// MAX_RESOURCES seen, `other` after.
import { byCodeUnit } from '../arrays.ts';

export interface RequestCount {
  verb: string;
  /** What the request was about (KubeApi's kubeResource: `configmaps`, `deployments.apps`, `discovery`). */
  resource: string;
  /** The HTTP status, or `error` when no answer came (network failure, timeout). */
  code: string;
  count: number;
}

export interface RequestStats {
  /** Sorted by verb, resource, then code: the same counts read the same. */
  requests: RequestCount[];
  /** Time spent waiting for the request budget or a server's Retry-After, in seconds. */
  throttledSeconds: number;
  /** How many of those waits there were. */
  throttledWaits: number;
  /** The request budget's rate now, requests a second (it adapts: src/http/adaptive-rate.ts). */
  budgetRate?: number;
}

/** Resources counted apart; a client asked about more (many CRDs' kinds) counts the rest as `other`. */
export const MAX_RESOURCES = 200;

export class RequestCounter {
  readonly #counts = new Map<string, RequestCount>();
  readonly #resources = new Set<string>();
  #throttledMs = 0;
  #throttledWaits = 0;

  /** One request about `resource` that was answered with `code`, or that failed without an answer (`error`). */
  count(verb: string, code: number | 'error', resource = 'other'): void {
    if (!this.#resources.has(resource)) {
      if (this.#resources.size >= MAX_RESOURCES) resource = 'other';
      else this.#resources.add(resource);
    }
    const label = String(code);
    const key = `${verb} ${resource} ${label}`;
    const entry = this.#counts.get(key);
    if (entry) entry.count++;
    else this.#counts.set(key, { verb, resource, code: label, count: 1 });
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
      .sort(
        (a, b) =>
          byCodeUnit(a.verb, b.verb) || byCodeUnit(a.resource, b.resource) || byCodeUnit(a.code, b.code),
      );
    return { requests, throttledSeconds: this.#throttledMs / 1000, throttledWaits: this.#throttledWaits };
  }
}
