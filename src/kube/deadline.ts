// How long a request to the API server may keep retrying: a sync sets its deadline once, and every request made on
// its behalf (reads, apply, the ledger) retries transient failures until then, without the deadline being passed
// through each call. Outside a sync (start-up, the CLI's reads) a request gets a short default budget.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface Deadline {
  /** Epoch ms. */
  until: number;
  /** A cancelled sync stops retrying at once. */
  signal?: AbortSignal | undefined;
}

const scope = new AsyncLocalStorage<Deadline>();

/** Runs `fn` with requests retrying transient failures until the deadline, or until its signal aborts. */
export function withDeadline<T>(deadline: Deadline, fn: () => Promise<T>): Promise<T> {
  return scope.run(deadline, fn);
}

/** The deadline of the sync the caller runs for, if any. */
export function currentDeadline(): Deadline | undefined {
  return scope.getStore();
}

/** Runs `fn` outside any sync's deadline: for work that outlives the sync that started it (a shared informer). */
export function outsideDeadline<T>(fn: () => T): T {
  return scope.exit(fn);
}
