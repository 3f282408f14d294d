// A request budget: a token bucket of `ratePerSecond` tokens a second holding at most `burst`, as client-go's
// --kube-api-qps and --kube-api-burst. Each caller reserves its token at once (the balance may go negative) and
// sleeps until its turn, so callers are served in the order they asked, none can be overtaken forever, and no
// queue or timer is kept. Time comes from a Clock, so tests run it with one of their own.

export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', abort);
        resolve();
      }, ms);
      const abort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', abort, { once: true });
    }),
};

export interface TokenBucketOptions {
  ratePerSecond: number;
  /** Tokens held at most: requests sent at once after a quiet time. At least 1. */
  burst: number;
  clock?: Clock | undefined;
}

export class TokenBucket {
  #perMs: number;
  readonly #capacity: number;
  readonly #clock: Clock;
  #tokens: number;
  #updatedAt: number;

  constructor(options: TokenBucketOptions) {
    if (!(options.ratePerSecond > 0) || !Number.isFinite(options.ratePerSecond)) {
      throw new RangeError('ratePerSecond must be a positive number');
    }
    if (!(options.burst >= 1)) throw new RangeError('burst must be at least 1');
    this.#perMs = options.ratePerSecond / 1000;
    this.#capacity = options.burst;
    this.#clock = options.clock ?? systemClock;
    this.#tokens = this.#capacity;
    this.#updatedAt = this.#clock.now();
  }

  /** Requests a second now. */
  get rate(): number {
    return this.#perMs * 1000;
  }

  /**
   * Changes the rate from now on (an adaptive budget, adaptive-rate.ts): what accrued until now accrued at the old
   * rate; callers already waiting keep their turn.
   */
  setRate(ratePerSecond: number): void {
    if (!(ratePerSecond > 0) || !Number.isFinite(ratePerSecond))
      throw new RangeError('ratePerSecond must be a positive number');
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#capacity, this.#tokens + (now - this.#updatedAt) * this.#perMs);
    this.#updatedAt = now;
    this.#perMs = ratePerSecond / 1000;
  }

  /**
   * Resolves when the caller may send one request, with how long it waited (ms). An aborted wait rejects and
   * gives its token back.
   */
  async take(signal?: AbortSignal): Promise<number> {
    signal?.throwIfAborted();
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#capacity, this.#tokens + (now - this.#updatedAt) * this.#perMs);
    this.#updatedAt = now;
    this.#tokens -= 1;
    if (this.#tokens >= 0) return 0;
    const wait = Math.ceil(-this.#tokens / this.#perMs);
    try {
      await this.#clock.sleep(wait, signal);
    } catch (error) {
      this.#tokens += 1;
      throw error;
    }
    return wait;
  }
}
