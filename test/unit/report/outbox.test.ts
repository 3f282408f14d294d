// The commit-status outbox with a clock of the test's own: what is kept and replaced, the back-off after
// failures, Retry-After honoured, expiry after retryFor, bounded size, and what a new outbox reads back.
// The store here is an array behind the outbox's own store interface (the ConfigMap store is exercised against
// the real API server by the fault tests); delivery is a function that fails the way the status API would.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { StalledError, TransientError, WaitingError } from '../../../src/errors.ts';
import { describeCancelled } from '../../../src/report/commit-status-sync.ts';
import { IDLE_REREAD_MS, StatusOutbox } from '../../../src/report/outbox.ts';
import {
  afterFailure,
  FIRST_BACKOFF_MS,
  MAX_BACKOFF_MS,
  MAX_ENTRIES,
  MIN_WAIT_MS,
  type OutboxEntry,
  upsert,
} from '../../../src/report/outbox-policy.ts';
import type { OutboxStore } from '../../../src/report/outbox-store.ts';
import { outboxEntries } from './outbox-entries.ts';

const HOUR = 60 * 60_000;

const entry = outboxEntries('mooring/prod/web', 24 * HOUR);

function harness(initial: OutboxEntry[] = []) {
  let now = 1_000_000;
  const stored: { entries: OutboxEntry[]; writes: number } = { entries: initial, writes: 0 };
  const store: OutboxStore = {
    read: async () => stored.entries.map((e) => ({ ...e })),
    update: async (change) => {
      stored.entries = change(stored.entries.map((e) => ({ ...e }))).map((e) => ({ ...e }));
      stored.writes += 1;
    },
  };
  const delivered: string[] = [];
  const attempts: { commit: string; at: number }[] = [];
  let fail: (() => Error) | undefined;
  const lines: string[] = [];
  const log = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _e, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  const make = () =>
    new StatusOutbox({
      store,
      log,
      now: () => now,
      random: () => 1,
      timers: { set: () => 0, clear: () => undefined },
      deliver: async (e) => {
        attempts.push({ commit: e.commit, at: now });
        if (fail) throw fail();
        delivered.push(`${e.commit}:${e.state}`);
        return true;
      },
    });
  const outbox = make();
  return {
    outbox,
    /** Another outbox on the same store (a new configuration's). */
    make,
    stored,
    delivered,
    attempts,
    lines,
    advance: (ms: number) => (now += ms),
    now: () => now,
    failWith: (f: (() => Error) | undefined) => (fail = f),
  };
}

describe('outbox rules', () => {
  it('a newer status for the same commit and context replaces the older one; an older one does not', () => {
    const first = entry('aaaaaaa', 1, { state: 'error', description: 'first' });
    const second = entry('aaaaaaa', 2, { state: 'success', description: 'second' });
    expect(upsert([first], second).map((e) => e.description)).toEqual(['second']);
    expect(upsert([second], first).map((e) => e.description)).toEqual(['second']);
    const other = entry('bbbbbbb', 3);
    expect(upsert([second], other).map((e) => e.commit)).toEqual(['aaaaaaa', 'bbbbbbb']);
  });

  it('keeps at most MAX_ENTRIES, dropping the oldest', () => {
    let entries: OutboxEntry[] = [];
    for (let i = 0; i < MAX_ENTRIES + 5; i++) entries = upsert(entries, entry(`c${i}`, i));
    expect(entries).toHaveLength(MAX_ENTRIES);
    expect(entries[0]?.commit).toBe('c5');
  });

  it('backs off doubling to a cap, and waits what Retry-After asks', () => {
    let gate = afterFailure(undefined, { action: 'back-off' }, 0, () => 1);
    expect(gate.until).toBe(FIRST_BACKOFF_MS);
    gate = afterFailure(gate, { action: 'back-off' }, 0, () => 1);
    expect(gate.until).toBe(2 * FIRST_BACKOFF_MS);
    for (let i = 0; i < 20; i++) gate = afterFailure(gate, { action: 'back-off' }, 0, () => 1);
    expect(gate.until).toBe(MAX_BACKOFF_MS);
    // Full jitter: a random share of the doubling delay, never below the floor.
    let third = afterFailure(undefined, { action: 'back-off' }, 0, () => 1);
    third = afterFailure(third, { action: 'back-off' }, 0, () => 1);
    expect(afterFailure(third, { action: 'back-off' }, 0, () => 0.25).until).toBe(FIRST_BACKOFF_MS);
    expect(afterFailure(undefined, { action: 'back-off' }, 0, () => 0).until).toBe(MIN_WAIT_MS);
    expect(afterFailure(gate, { action: 'retry-after', delayMs: 30_000 }, 100, () => 1).until).toBe(30_100);
  });
});

describe('StatusOutbox', () => {
  it('retries with back-off until the API answers, then delivers and forgets', async () => {
    const h = harness();
    await h.outbox.start();
    h.failWith(() => new TransientError('GitHub answered HTTP 503'));
    await h.outbox.keep(entry('aaaaaaa', h.now()), new TransientError('GitHub answered HTTP 503'));
    expect(h.stored.entries.map((e) => e.commit)).toEqual(['aaaaaaa']);
    expect(h.outbox.isOpen('api')).toBe(false);
    // Before the back-off ends, nothing is tried.
    await h.outbox.flush();
    expect(h.attempts).toHaveLength(0);
    h.advance(FIRST_BACKOFF_MS);
    await h.outbox.flush();
    expect(h.attempts).toHaveLength(1);
    expect(h.outbox.entries[0]?.attempts).toBe(1);
    // The second failure doubles the wait.
    h.advance(FIRST_BACKOFF_MS);
    await h.outbox.flush();
    expect(h.attempts).toHaveLength(1);
    h.advance(FIRST_BACKOFF_MS);
    h.failWith(undefined);
    await h.outbox.flush();
    expect(h.delivered).toEqual(['aaaaaaa:success']);
    expect(h.outbox.entries).toEqual([]);
    expect(h.stored.entries).toEqual([]);
    expect(h.outbox.isOpen('api')).toBe(true);
  });

  it('honours Retry-After: nothing is sent to that API before it, every kept status after it', async () => {
    const h = harness();
    await h.outbox.start();
    h.failWith(() => new WaitingError('rate limited', 30_000));
    await h.outbox.keep(entry('aaaaaaa', h.now()), new WaitingError('rate limited', 30_000));
    await h.outbox.keep(entry('bbbbbbb', h.now() + 1));
    for (let t = 0; t < 29; t++) {
      h.advance(1_000);
      await h.outbox.flush();
    }
    expect(h.attempts).toHaveLength(0);
    h.failWith(undefined);
    h.advance(1_000);
    await h.outbox.flush();
    expect(h.delivered).toEqual(['aaaaaaa:success', 'bbbbbbb:success']);
  });

  it('one failure in a round closes the gate for the rest of that API', async () => {
    const h = harness();
    await h.outbox.start();
    await h.outbox.keep(entry('aaaaaaa', 1));
    await h.outbox.keep(entry('bbbbbbb', 2));
    await h.outbox.keep(entry('ccccccc', 3, { gate: 'other-api' }));
    h.failWith(() => new TransientError('reset'));
    await h.outbox.flush();
    // One request to the failing API (then it backs off), one to the other.
    expect(h.attempts.map((a) => a.commit)).toEqual(['aaaaaaa', 'ccccccc']);
  });

  it('drops a status the API refuses for good, and one past retryFor', async () => {
    const h = harness();
    await h.outbox.start();
    await h.outbox.keep(entry('aaaaaaa', h.now(), { expiresAt: h.now() + HOUR }));
    h.failWith(() => new StalledError('HTTP 404: the repository or commit does not exist'));
    await h.outbox.keep(entry('bbbbbbb', h.now() + 1, { gate: 'other' }));
    h.advance(HOUR);
    await h.outbox.flush();
    expect(h.attempts.map((a) => a.commit)).toEqual(['bbbbbbb']);
    expect(h.outbox.entries).toEqual([]);
    expect(h.stored.entries).toEqual([]);
    expect(h.lines.join('')).toContain('did not take it within commitStatus.retryFor');
    expect(h.lines.join('')).toContain('the status API refused it');
  });

  it('a status posted directly outdates the kept one of the same key and reopens the API', async () => {
    const h = harness();
    await h.outbox.start();
    const old = entry('aaaaaaa', h.now(), { state: 'error' });
    await h.outbox.keep(old, new TransientError('HTTP 500'));
    await h.outbox.posted('api', old.key);
    expect(h.outbox.entries).toEqual([]);
    expect(h.outbox.isOpen('api')).toBe(true);
    await h.outbox.flush();
    expect(h.attempts).toEqual([]);
  });

  it('a new outbox reads what the previous one kept, and delivers it on start', async () => {
    const first = harness();
    await first.outbox.start();
    await first.outbox.keep(entry('aaaaaaa', 1, { state: 'cancelled' }), new TransientError('reset'));
    await first.outbox.close();
    const second = harness(first.stored.entries);
    await second.outbox.start();
    expect(second.delivered).toEqual(['aaaaaaa:cancelled']);
    expect(second.stored.entries).toEqual([]);
  });

  it("a configuration's new outbox takes what the old one keeps after it was replaced, and delivers it", async () => {
    const h = harness();
    await h.outbox.start();
    h.failWith(() => new TransientError('GitHub answered HTTP 503'));
    // One kept before the new configuration; the new outbox has started (read the store) already.
    await h.outbox.keep(entry('aaaaaaa', h.now()), new TransientError('GitHub answered HTTP 503'));
    const next = h.make();
    await next.start();
    h.outbox.handOver(next);
    await h.outbox.close();
    // A sync begun under the old configuration ends now, the status API still failing: kept by the old one.
    await h.outbox.keep(entry('bbbbbbb', h.now()), new TransientError('GitHub answered HTTP 503'));
    expect(next.entries.map((e) => e.commit).sort()).toEqual(['aaaaaaa', 'bbbbbbb']);
    expect(h.stored.entries.map((e) => e.commit).sort()).toEqual(['aaaaaaa', 'bbbbbbb']);
    expect(next.isOpen('api')).toBe(false);
    h.failWith(undefined);
    // Past the back-off (its start's delivery failed too, and the forwarded failure doubled it).
    h.advance(HOUR);
    await next.flush();
    expect(h.delivered.sort()).toEqual(['aaaaaaa:success', 'bbbbbbb:success']);
    expect(h.stored.entries).toEqual([]);
  });

  it('a writer that never started (the CLI) keeps its status in the store, and an idle agent reads it and delivers it', async () => {
    const h = harness();
    // The running agent: started on an empty store; its timers are fired by the test.
    const timers: { run: () => void; ms: number }[] = [];
    const delivered: string[] = [];
    const agent = new StatusOutbox({
      store: {
        read: async () => h.stored.entries.map((e) => ({ ...e })),
        update: async (change) => {
          h.stored.entries = change(h.stored.entries.map((e) => ({ ...e })));
        },
      },
      log: pino({ level: 'silent' }),
      now: h.now,
      timers: {
        set: (run, ms) => timers.push({ run, ms }),
        clear: () => undefined,
      },
      deliver: async (e) => {
        delivered.push(`${e.commit}:${e.state}`);
        return true;
      },
    });
    await agent.start();
    // `mooring rollback` on a laptop: its final status fails to post and is kept (it never read the store before:
    // the write was skipped, and the status stayed pending).
    h.failWith(() => new TransientError('GitHub answered HTTP 503'));
    const cli = h.make();
    await cli.keep(entry('ccccccc', h.now()), new TransientError('GitHub answered HTTP 503'));
    expect(h.stored.entries.map((e) => e.commit)).toEqual(['ccccccc']);
    // The agent, idle, looks at the store again after IDLE_REREAD_MS and delivers it.
    const idle = timers.at(-1);
    expect(idle?.ms).toBe(IDLE_REREAD_MS);
    idle?.run();
    await agent.flush();
    expect(delivered).toEqual(['ccccccc:success']);
    expect(h.stored.entries).toEqual([]);
  });

  it('does not write before it has read what is stored (a failed read keeps the stored entries)', async () => {
    const h = harness([entry('aaaaaaa', 1)]);
    const failing = new StatusOutbox({
      store: {
        read: async () => {
          throw new TransientError('API server unreachable');
        },
        update: async () => {
          h.stored.writes += 1;
        },
      },
      log: pino({ level: 'silent' }),
      timers: { set: () => 0, clear: () => undefined },
      deliver: async () => true,
    });
    await failing.start();
    await failing.keep(entry('bbbbbbb', 2));
    expect(h.stored.writes).toBe(0);
  });
});

describe('cancelled statuses', () => {
  it('name the commit that replaced the sync', () => {
    expect(describeCancelled({ by: 'commit', commit: 'b'.repeat(40) })).toEqual({
      state: 'cancelled',
      description: 'Superseded by commit bbbbbbb before it was stable',
    });
  });
  it('name the image when a newer image of the same commit replaced it', () => {
    expect(describeCancelled({ by: 'image', images: ['example/web@sha256:0123456789ab'] }).description).toBe(
      'Superseded by a newer image example/web@sha256:0123456789ab before it was stable',
    );
  });
  it('say the agent stopped when nothing replaced it', () => {
    expect(describeCancelled(undefined).description).toBe(
      'Agent stopped before the deployment was stable; it resumes on restart',
    );
  });
});
