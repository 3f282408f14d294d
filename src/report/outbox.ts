// The commit-status outbox: final statuses (success, failure, error, cancelled) that the status API did not take
// (down, 5xx, rate limited, reset, no answer in time) are kept here and in the cluster (outbox-store.ts), so that
// they survive a restart, and delivered when the API answers again: after a back-off, never before a Retry-After,
// until delivered or expired (commitStatus.retryFor). Pending statuses are never kept: a late "pending" would
// only be wrong. The rules are in outbox-policy.ts; this file holds the state, the timer and the writes.

import { append } from '../arrays.ts';
import type { Logger } from '../contract.ts';
import { classify, errorMessage, type MooringError } from '../errors.ts';
import {
  afterFailure,
  due,
  expire,
  type Gate,
  isOpen,
  nextWake,
  type OutboxEntry,
  upsert,
} from './outbox-policy.ts';
import type { OutboxStore } from './outbox-store.ts';

export interface OutboxTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export interface OutboxDeps {
  store: OutboxStore;
  /** Posts one kept status: resolves when posted, false when it has nowhere to go any more; throws otherwise. */
  deliver: (entry: OutboxEntry) => Promise<boolean>;
  log: Logger;
  now?: () => number;
  random?: () => number;
  /** Tests pass timers that never fire and call flush() themselves. */
  timers?: OutboxTimers;
}

const RELOAD_MS = 10_000;

/**
 * With nothing kept, the store is read again this often: a status another writer kept there (`mooring rollback`
 * from a laptop, whose forge failed after its pending was posted) is delivered by the running agent, which read the
 * store only at its start before.
 */
export const IDLE_REREAD_MS = 60_000;

const realTimers: OutboxTimers = {
  set: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** A status kept (or replaced), or one delivered, dropped or expired. */
type Change = { put: OutboxEntry } | { drop: OutboxEntry };

/** The stored statuses with this agent's changes: a drop removes that entry or an older one of its key. */
export function applyChanges(stored: readonly OutboxEntry[], changes: readonly Change[]): OutboxEntry[] {
  let entries = [...stored];
  for (const change of changes) {
    if ('put' in change) entries = upsert(entries, change.put);
    else {
      const { key, at } = change.drop;
      entries = entries.filter((e) => e.key !== key || e.at > at);
    }
  }
  return entries;
}

export class StatusOutbox {
  readonly #deps: OutboxDeps;
  readonly #now: () => number;
  readonly #timers: OutboxTimers;
  #entries: OutboxEntry[] = [];
  readonly #gates = new Map<string, Gate>();
  // Until the stored entries are read, nothing is written: a write would replace them with the few in memory.
  #loaded = false;
  #closed = false;
  #timer: unknown;
  #flushing: Promise<void> | undefined;
  #flushAgain = false;
  #writing: Promise<void> | undefined;
  #dirty = false;
  /** The store is to be read again at the next flush (IDLE_REREAD_MS). */
  #rereadDue = false;
  /** The outbox of the configuration that replaced this one (handOver): what this one is given goes there. */
  #next: StatusOutbox | undefined;
  // What changed since the last write, in order: written as a change of what is stored, not as this agent's list,
  // so that statuses another agent kept or delivered meanwhile stay as it left them.
  #changes: Change[] = [];

  constructor(deps: OutboxDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    this.#timers = deps.timers ?? realTimers;
  }

  /** Reads what a previous agent kept and delivers it. Never throws: a failed read is tried again later. */
  async start(): Promise<void> {
    await this.#load();
    await this.flush();
  }

  /** The statuses kept now, oldest first. */
  get entries(): readonly OutboxEntry[] {
    return this.#entries;
  }

  /** Whether statuses may be posted to this API now (false while it is backing off). */
  isOpen(gate: string): boolean {
    if (this.#next) return this.#next.isOpen(gate);
    return isOpen(this.#gates.get(gate), this.#now());
  }

  /**
   * This outbox is replaced by `next` (a new configuration's reporters, cluster-stack.ts): what it keeps now goes to
   * `next`, and so does what it is given later. A sync started under the old configuration still holds this one,
   * and ends later: its final status, kept here after close, was written to the store but retried by no one (the
   * new outbox reads the store once, at its start), and stayed pending until the agent restarted.
   */
  handOver(next: StatusOutbox): void {
    this.#next = next;
    for (const entry of this.#entries) next.adopt(entry);
  }

  /** An entry another outbox kept (handOver): held, written, and retried here. */
  adopt(entry: OutboxEntry): void {
    if (this.#next) {
      this.#next.adopt(entry);
      return;
    }
    this.#entries = upsert(this.#entries, entry);
    this.#changes.push({ put: entry });
    void this.#persist();
    this.#schedule();
  }

  /** Keeps a final status for later; `error` is why it was not delivered (it closes the API's gate). */
  async keep(entry: OutboxEntry, error?: MooringError): Promise<void> {
    if (this.#next) return this.#next.keep(entry, error);
    // A writer that never started (the CLI) reads what is stored first: its write is a change of it.
    if (!this.#loaded) await this.#load();
    if (error) this.failed(entry.gate, error);
    const kept = { ...entry, lastError: error ? errorMessage(error) : entry.lastError };
    this.#entries = upsert(this.#entries, kept);
    this.#changes.push({ put: kept });
    this.#deps.log.info(
      { deployment: entry.deployment, commit: entry.commit, state: entry.state, kept: this.#entries.length },
      'commit status kept in the outbox, to be posted when the status API answers',
    );
    await this.#persist();
    this.#schedule();
  }

  /** A request to this API failed (a pending status, or a direct post): back off. */
  failed(gate: string, error: MooringError): void {
    if (this.#next) {
      this.#next.failed(gate, error);
      return;
    }
    const disposition = classify(error);
    if (disposition.action === 'stop') return;
    this.#gates.set(gate, afterFailure(this.#gates.get(gate), disposition, this.#now(), this.#deps.random));
  }

  /** A status reached this API: it answers again, and a kept status of `key` is outdated by the one posted. */
  async posted(gate: string, key?: string): Promise<void> {
    if (this.#next) return this.#next.posted(gate, key);
    const reopened = this.#gates.delete(gate);
    if (key !== undefined && this.#entries.some((e) => e.key === key)) {
      for (const e of this.#entries) if (e.key === key) this.#changes.push({ drop: e });
      this.#entries = this.#entries.filter((e) => e.key !== key);
      await this.#persist();
    }
    if (reopened) this.#schedule(0);
  }

  /** Delivers every status that is due; one runs at a time, and a call during a run makes it run again. */
  flush(): Promise<void> {
    if (this.#flushing) {
      this.#flushAgain = true;
      return this.#flushing;
    }
    this.#flushing = (async () => {
      try {
        do {
          this.#flushAgain = false;
          await this.#flushOnce();
        } while (this.#flushAgain && !this.#closed);
      } finally {
        this.#flushing = undefined;
        this.#schedule();
      }
    })();
    return this.#flushing;
  }

  /** Stops retrying; what is kept stays in the cluster for the next agent. Waits for the write under way. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) this.#timers.clear(this.#timer);
    this.#timer = undefined;
    await this.#flushing;
    await this.#writing;
  }

  async #load(again = false): Promise<void> {
    if (this.#loaded && !again) return;
    try {
      const stored = await this.#deps.store.read();
      const reread = again && this.#loaded;
      let merged = this.#entries;
      // Read again: only what another writer kept since is news (what this one holds is newer than the store).
      for (const e of stored)
        if (!reread || !merged.some((held) => held.key === e.key)) merged = upsert(merged, e);
      this.#entries = merged;
      if (reread) return;
      this.#loaded = true;
      if (stored.length > 0)
        this.#deps.log.info({ kept: stored.length }, 'commit statuses kept by a previous agent');
    } catch (error) {
      this.#deps.log.warn({ err: errorMessage(error) }, 'cannot read the commit-status outbox');
    }
  }

  async #flushOnce(): Promise<void> {
    if (!this.#loaded || this.#rereadDue) await this.#load(true);
    this.#rereadDue = false;
    if (this.#closed) return;
    const { expired, kept } = expire(this.#entries, this.#now());
    if (expired.length > 0) {
      this.#entries = kept;
      for (const e of expired) {
        this.#changes.push({ drop: e });
        this.#deps.log.warn(
          {
            deployment: e.deployment,
            commit: e.commit,
            state: e.state,
            attempts: e.attempts,
            error: e.lastError,
          },
          'commit status dropped: the status API did not take it within commitStatus.retryFor',
        );
      }
      this.#dirty = true;
    }
    for (const entry of due(this.#entries, this.#gates, this.#now())) {
      if (this.#closed) break;
      // A gate closed by an earlier entry of this round, or the entry replaced meanwhile: not now.
      if (!this.isOpen(entry.gate) || !this.#entries.includes(entry)) continue;
      let delivered: boolean;
      try {
        delivered = await this.#deps.deliver(entry);
      } catch (error) {
        const safe = error as MooringError;
        if (classify(error).action === 'stop') {
          this.#deps.log.warn(
            { deployment: entry.deployment, commit: entry.commit, error: errorMessage(error) },
            'commit status dropped: the status API refused it',
          );
          this.#remove(entry);
          continue;
        }
        this.failed(entry.gate, safe);
        this.#replace(entry, { ...entry, attempts: entry.attempts + 1, lastError: errorMessage(error) });
        continue;
      }
      if (delivered) {
        this.#gates.delete(entry.gate);
        this.#deps.log.info(
          {
            deployment: entry.deployment,
            commit: entry.commit,
            state: entry.state,
            attempts: entry.attempts + 1,
          },
          'kept commit status delivered',
        );
      }
      this.#remove(entry);
    }
    if (this.#dirty) await this.#persist();
  }

  #remove(entry: OutboxEntry): void {
    this.#entries = this.#entries.filter((e) => e !== entry);
    this.#changes.push({ drop: entry });
    this.#dirty = true;
  }

  #replace(entry: OutboxEntry, next: OutboxEntry): void {
    this.#entries = this.#entries.map((e) => (e === entry ? next : e));
    this.#changes.push({ put: next });
    this.#dirty = true;
  }

  // Writes are serialized and coalesced: the last state is what gets written.
  #persist(): Promise<void> {
    this.#dirty = true;
    if (!this.#loaded) return Promise.resolve();
    if (this.#writing) return this.#writing.then(() => (this.#dirty ? this.#persist() : undefined));
    this.#writing = (async () => {
      try {
        while (this.#dirty) {
          this.#dirty = false;
          const changes = this.#changes.splice(0);
          try {
            await this.#deps.store.update((stored) => applyChanges(stored, changes));
          } catch (error) {
            // Back in front of what came since, in order.
            const since = this.#changes.splice(0);
            append(append(this.#changes, changes), since);
            throw error;
          }
        }
      } catch (error) {
        this.#dirty = true;
        this.#deps.log.warn({ err: errorMessage(error) }, 'cannot write the commit-status outbox');
      } finally {
        this.#writing = undefined;
      }
    })();
    return this.#writing;
  }

  #schedule(delayMs?: number): void {
    if (this.#closed) return;
    if (this.#timer !== undefined) this.#timers.clear(this.#timer);
    this.#timer = undefined;
    const now = this.#now();
    let wait: number | undefined;
    if (delayMs !== undefined) wait = delayMs;
    else if (!this.#loaded || this.#dirty) wait = RELOAD_MS;
    else {
      const wake = nextWake(this.#entries, this.#gates, now);
      wait = wake === undefined ? undefined : wake - now;
    }
    // Nothing due: the store is looked at again later, for what another writer kept there.
    const reread = wait === undefined;
    if (reread) wait = IDLE_REREAD_MS;
    this.#timer = this.#timers.set(
      () => {
        this.#timer = undefined;
        if (reread) this.#rereadDue = true;
        void this.flush();
      },
      Math.max(0, wait as number),
    );
  }
}
