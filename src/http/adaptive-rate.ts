// An adaptive request budget: the rate of a TokenBucket follows what the server can take, as a TCP window follows
// the network (additive increase in the form of a steady multiplicative step, multiplicative decrease). It grows
// while requests wait for the budget (the agent asks for more than it allows) and the server answers as fast as
// it did at its best; it halves at a 429 (API Priority and Fairness refusing: the server says it is full) and steps
// down when the answers slow to several times their best (the server queues). It stays between `min` and `max`.
// Each decision looks at one window of answers (a second, with at least a few answers in it), so a burst of 429s is
// one halving, not twenty. No timer: decisions are made as answers arrive, on the bucket's clock.
import { type Clock, systemClock } from './token-bucket.ts';

export interface AdaptiveRateOptions {
  /** Requests a second at the start. */
  start: number;
  min: number;
  max: number;
  /** How long a window of answers lasts before a decision. */
  windowMs?: number;
  clock?: Clock | undefined;
}

/** Answers a window needs before a decision on latency or demand (a 429 needs only itself). */
const MIN_ANSWERS = 10;
/** Latencies kept per window for its median: the first ones (enough for a median, bounded memory). */
const SAMPLES = 256;
const GROW = 1.25;
const SLOWED = 0.8;
const LIMITED = 0.5;
/** Answers this many times slower than the best window's median mean the server queues... */
const SLOW_FACTOR = 4;
/** ...unless they are still this fast (a best of 2 ms under no load says little about 8 ms). */
const SLOW_FLOOR_MS = 250;

export class AdaptiveRate {
  readonly #min: number;
  readonly #max: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  #rate: number;
  #windowStart: number;
  #latencies: number[] = [];
  #answers = 0;
  #waited = false;
  #limited = false;
  /** The lowest median of a window so far: how fast the server answers when it is not queueing. */
  #best: number | undefined;

  constructor(options: AdaptiveRateOptions) {
    this.#min = options.min;
    this.#max = Math.max(options.min, options.max);
    this.#rate = Math.min(this.#max, Math.max(this.#min, options.start));
    this.#windowMs = options.windowMs ?? 1000;
    this.#clock = options.clock ?? systemClock;
    this.#windowStart = this.#clock.now();
  }

  get rate(): number {
    return this.#rate;
  }

  /** An answer came after `latencyMs`; `waited`: the request had waited for the budget. The new rate, if it moved. */
  answered(latencyMs: number, waited: boolean): number | undefined {
    this.#answers++;
    if (this.#latencies.length < SAMPLES) this.#latencies.push(latencyMs);
    if (waited) this.#waited = true;
    return this.#decide();
  }

  /** The server refused a request with 429 (too many requests). The new rate, if it moved. */
  limited(): number | undefined {
    this.#limited = true;
    return this.#decide();
  }

  #decide(): number | undefined {
    const now = this.#clock.now();
    if (now - this.#windowStart < this.#windowMs) return undefined;
    if (!this.#limited && this.#answers < MIN_ANSWERS) return undefined;
    const before = this.#rate;
    const median = this.#median();
    if (this.#limited) this.#rate *= LIMITED;
    else if (median !== undefined) {
      const best = this.#best ?? median;
      if (median > Math.max(best * SLOW_FACTOR, SLOW_FLOOR_MS)) this.#rate *= SLOWED;
      else if (this.#waited) this.#rate *= GROW;
      this.#best = Math.min(best, median);
    }
    this.#rate = Math.min(this.#max, Math.max(this.#min, this.#rate));
    this.#windowStart = now;
    this.#latencies = [];
    this.#answers = 0;
    this.#waited = false;
    this.#limited = false;
    return this.#rate === before ? undefined : this.#rate;
  }

  #median(): number | undefined {
    if (this.#latencies.length === 0) return undefined;
    const sorted = this.#latencies.toSorted((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  }
}
