// Being a polite registry client: our own per-registry request rate (the one token bucket, src/http/token-bucket.ts),
// and what the registry says about its limits (Retry-After on 429, RateLimit-Remaining as Docker Hub sends it), read
// by the one parser (src/http/retry-after.ts).
import { type HeaderReader, readLimits } from '../../http/retry-after.ts';
import { type Clock, systemClock } from '../../http/token-bucket.ts';

export type { HeaderReader } from '../../http/retry-after.ts';
export { type Clock, systemClock } from '../../http/token-bucket.ts';

// When a 429 gives no hint, wait a minute: Docker Hub's windows are hours long, and hammering does not help.
export const DEFAULT_RETRY_AFTER_MS = 60_000;

export interface Pause {
  /** Epoch ms before which the registry should not be asked again. */
  until: number;
  /** What the registry said, for the log line: `HTTP 429, Retry-After: 120`, `RateLimit-Remaining: 0`. */
  reason: string;
}

/**
 * When a registry may be asked again, from what its answers said: a 429 (Retry-After as seconds or an HTTP date),
 * or no requests left in its window (RateLimit-Remaining: 0 with RateLimit-Reset, Docker Hub's `0;w=SECONDS`,
 * the drafts' combined RateLimit header). Polls of its sources are skipped until then, instead of spending
 * a request each interval on another refusal. Waits are bounded (an hour): a registry that still refuses then
 * sets the next pause.
 */
export class RegistryPause {
  readonly #clock: Clock;
  #pause: Pause | undefined;

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
  }

  /** Reads one answer of the registry. Any answer that is not limited lifts an earlier pause. */
  observe(status: number, header: HeaderReader): void {
    const now = this.#clock.now();
    const retryAfter = header('retry-after');
    const limits = readLimits(header, now);
    if (status === 429) {
      const ms = limits.retryAfterMs ?? limits.resetMs ?? DEFAULT_RETRY_AFTER_MS;
      const said = retryAfter ? `, Retry-After: ${retryAfter.trim().slice(0, 40)}` : '';
      this.#pause = { until: now + ms, reason: `HTTP 429${said}` };
      return;
    }
    if (limits.remaining === 0) {
      const ms = limits.resetMs ?? limits.retryAfterMs ?? limits.windowMs ?? DEFAULT_RETRY_AFTER_MS;
      this.#pause = { until: now + ms, reason: 'RateLimit-Remaining: 0' };
      return;
    }
    this.#pause = undefined;
  }

  /** The pause in force now, or undefined when the registry may be asked. */
  get current(): Pause | undefined {
    if (this.#pause !== undefined && this.#clock.now() >= this.#pause.until) this.#pause = undefined;
    return this.#pause;
  }
}
