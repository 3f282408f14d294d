// Judging objects in time slices, so that the agent answers /healthz while it judges. One verdict may take up
// to a CEL budget's work (about 100 ms, cel-budget.ts) per expression of a health rule, and a wait hears of many
// objects at once (a list of a kind delivers all of them in one synchronous loop): fifty custom resources of a
// kind with an expensive rule were seconds without a turn of the event loop. A TimeSlice runs judgements
// synchronously while the current turn has spent less than its slice (the normal case of cheap rules costs one
// clock reading per judgement and one setImmediate per burst), and past it queues them, in the order they came,
// for the next turns, after the loop has served what waits (I/O: the /healthz request). Judging is not cut
// short or given a smaller budget: a rule within its budget gets the same verdict, only later.
//
// Why a slice and not a budget per pass: a budget per pass would change verdicts (an object over it would have
// to stay unjudged or fail) with the number of objects a commit ships; a slice changes only when they come.

export type Clock = () => number;

/** Milliseconds of judging in one turn of the event loop before the rest waits for the next turn. */
export const JUDGING_SLICE_MS = 20;

export class TimeSlice {
  readonly #sliceMs: number;
  readonly #clock: Clock;
  readonly #defer: (run: () => void) => void;
  /** When this turn's first judgement started; undefined once the loop has had a turn since. */
  #turnStarted: number | undefined;
  readonly #queue: Array<() => void> = [];
  #draining = false;

  constructor(
    sliceMs: number = JUDGING_SLICE_MS,
    clock: Clock = () => performance.now(),
    defer: (run: () => void) => void = (run) => setImmediate(run),
  ) {
    this.#sliceMs = sliceMs;
    this.#clock = clock;
    this.#defer = defer;
  }

  /**
   * Runs `task` now if this turn has time left and nothing waits before it, else in a later turn, in order.
   * `task` must not throw.
   */
  run(task: () => void): void {
    if (this.#queue.length === 0 && this.#hasTime()) {
      task();
      return;
    }
    this.#queue.push(task);
    this.#scheduleDrain();
  }

  /** Tasks waiting for a later turn. */
  get waiting(): number {
    return this.#queue.length;
  }

  #hasTime(): boolean {
    const now = this.#clock();
    if (this.#turnStarted === undefined) {
      this.#turnStarted = now;
      // The next turn starts a new slice.
      this.#defer(() => {
        this.#turnStarted = undefined;
      });
      return true;
    }
    return now - this.#turnStarted < this.#sliceMs;
  }

  #scheduleDrain(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.#defer(() => this.#drain());
  }

  #drain(): void {
    this.#draining = false;
    // At least one task per turn, however long it takes: a single judgement is bounded by its own budget.
    this.#turnStarted = undefined;
    try {
      while (this.#queue.length > 0 && this.#hasTime()) (this.#queue.shift() as () => void)();
    } finally {
      // Tasks do not throw (the waiter turns a rule's error into a verdict); if one did, the rest still run.
      if (this.#queue.length > 0) this.#scheduleDrain();
    }
  }
}

/** The slice all waits of the process share: one turn's judging is bounded whatever number of waits run. */
export const judging = new TimeSlice();
