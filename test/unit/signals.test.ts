// linkSignals (src/signals.ts): one operation's signal from its deadline and a long-lived one, detached from the
// long-lived one when the operation ends, so that an agent's requests leave nothing on the process's stop signal.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkSignals } from '../../src/signals.ts';

describe('linkSignals', () => {
  it('aborts with the reason of whichever signal aborts first', () => {
    const stop = new AbortController();
    const deadline = new AbortController();
    const { signal } = linkSignals(deadline.signal, stop.signal);
    expect(signal.aborted).toBe(false);
    stop.abort(new Error('stopping'));
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('stopping');
    deadline.abort(new Error('late'));
    expect((signal.reason as Error).message).toBe('stopping');
  });

  it('is aborted at once when a signal already is, and gives a single signal back as it is', () => {
    const done = AbortSignal.abort('gone');
    expect(linkSignals(new AbortController().signal, done).signal.reason).toBe('gone');
    const only = new AbortController().signal;
    expect(linkSignals(undefined, only).signal).toBe(only);
  });

  it('leaves nothing on a long-lived signal once released, however many operations came and went', () => {
    const stop = new AbortController();
    for (let i = 0; i < 10_000; i++) {
      const deadline = new AbortController();
      const { release } = linkSignals(deadline.signal, stop.signal);
      if (i % 2) deadline.abort();
      release();
    }
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    // One still running is attached, and aborted by the stop.
    const running = linkSignals(new AbortController().signal, stop.signal);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(1);
    stop.abort();
    expect(running.signal.aborted).toBe(true);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });
});
