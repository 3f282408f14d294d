// What the waiter's tests share: objects whose history is a script, in place of a watch.
import type { KubeObject } from '../../../src/render/manifest.ts';
import type { Watchable } from '../../../src/stability/waiter.ts';

/** A watchable that reports the given states, one every `stepMs`, and then stays quiet until aborted. */
export function scripted(name: string, states: (KubeObject | undefined)[], stepMs = 5): Watchable {
  return {
    name,
    watch: async (onObject, signal) => {
      for (const state of states) {
        if (signal.aborted) return;
        onObject(state);
        await new Promise((r) => setTimeout(r, stepMs));
      }
      await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
    },
  };
}
