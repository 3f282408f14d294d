// One operation's signal from several: its own deadline and a long-lived one (the process's stop, a channel's or a
// sync's). AbortSignal.any would do it, but on Node 22 (inside `engines`) every composite it makes stays reachable
// from a source that lives on: measured on 22.19, 21 MB of heap per 100,000 composites, never collected, whether or
// not their listeners were removed (Node 24 collects them). An agent makes one per Git operation, registry request,
// notification and sync for as long as it runs. Here the listeners are plain ones, removed by `release()` when the
// operation ends, so that nothing of it is left on the long-lived source.

export interface LinkedSignal {
  /** Aborted (with that signal's reason) as soon as any of the signals is. */
  signal: AbortSignal;
  /** Detaches from the signals: call it once the operation has ended, whatever its end. */
  release: () => void;
}

const NOTHING = () => undefined;

/** The signals given (`undefined` ones left out) as one; see LinkedSignal. */
export function linkSignals(...given: (AbortSignal | undefined)[]): LinkedSignal {
  const signals = given.filter((s): s is AbortSignal => s !== undefined);
  if (signals.length === 1) return { signal: signals[0] as AbortSignal, release: NOTHING };
  const controller = new AbortController();
  const aborted = signals.find((s) => s.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return { signal: controller.signal, release: NOTHING };
  }
  const listeners = signals.map((source) => {
    const listener = () => {
      controller.abort(source.reason);
      release();
    };
    source.addEventListener('abort', listener, { once: true });
    return { source, listener };
  });
  const release = () => {
    for (const { source, listener } of listeners) source.removeEventListener('abort', listener);
  };
  return { signal: controller.signal, release };
}
