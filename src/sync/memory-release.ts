// Giving memory back after a burst of syncs. Once the work is over, V8's heap shrinks to what is live again,
// but the pages it freed stay mapped and resident (pooled for reuse) until a memory-reducing collection, and V8
// starts one on its own only when allocation stops, which an agent that keeps polling never quite does: measured
// (bench/memory.ts), RSS stayed near its peak, about twice the idle level, for as long as one cared to watch.
// So when no sync has started for `quietMs` after one ended, one memory-reducing collection runs (a few tens of
// milliseconds for the agent's heap), then nothing until the next sync ends. A sync that starts meanwhile
// cancels it: no collection ever runs in the middle of a burst. Before it, the caches that served only the burst
// are emptied (quiet-caches.ts), so that the collection gives their memory back too.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { SyncReporter } from '../contract.ts';
import { clearQuietCaches } from '../quiet-caches.ts';

export interface MemoryRelease extends SyncReporter {
  stop(): void;
}

/** A reporter that runs `collect` once the syncs have been quiet for `quietMs` after the last one ended. */
export function memoryRelease(
  collect: (() => void) | undefined = reducingCollection(),
  quietMs = 15_000,
): MemoryRelease {
  let timer: NodeJS.Timeout | undefined;
  let running = 0;
  const disarm = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
  };
  return {
    started() {
      running++;
      disarm();
    },
    finished() {
      running = Math.max(0, running - 1);
      disarm();
      if (running > 0) return;
      timer = setTimeout(() => {
        timer = undefined;
        clearQuietCaches();
        collect?.();
      }, quietMs);
      timer.unref();
    },
    stop: disarm,
  };
}

/**
 * V8's collection of everything collectable, reducing its footprint (the `last-resort` flavor of the `gc`
 * function that --expose-gc installs, here obtained without the flag on the command line). Undefined if this
 * runtime offers none: then nothing is collected early, and V8 keeps its own pace.
 */
export function reducingCollection(): (() => void) | undefined {
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    if (typeof gc !== 'function') return undefined;
    return () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } catch {
    return undefined;
  }
}
