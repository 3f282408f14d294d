// How long a request to the API server may keep retrying: a sync sets its deadline once, and every request made on
// its behalf (reads, apply, the ledger) retries transient failures until then, without the deadline being passed
// through each call. Outside a sync (start-up, the CLI's reads) a request gets a short default budget.
import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

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

/**
 * Waits `ms` between two looks of a polling loop (a CRD until Established, its kinds until served, an object until
 * deleted), unless the sync the caller runs for is cancelled: then it rejects at once with the signal's reason, so
 * a cancelled sync does not poll on until the loop's own time runs out (a request alone does not stop it: one sent
 * after the cancel still goes out, only its retries stop).
 */
export async function pause(ms: number): Promise<void> {
  const signal = currentDeadline()?.signal;
  signal?.throwIfAborted();
  await sleep(ms, undefined, signal ? { signal } : {}).catch((error: unknown) => {
    throw signal?.aborted ? signal.reason : error;
  });
}

/** Runs `fn` outside any sync's deadline: for work that outlives the sync that started it (a shared informer). */
export function outsideDeadline<T>(fn: () => T): T {
  return scope.exit(fn);
}
