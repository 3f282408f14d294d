// The sync queue: one lane per deployment (syncs of a deployment never overlap), requests coalesced (many
// requests while a sync waits or runs give one sync of the newest revision: a request of the revision that runs or
// waits joins that sync, whatever asked for it), a global limit on syncs at once (taken in turn by the groups of syncs that one poll or drift pass asked for: fair queueing), a newer revision cancelling the
// stability wait of the sync in progress (told what superseded it), exponential back-off with jitter after
// failures that may pass (capped per deployment: its retryInterval), and no retry after a failure the user must
// fix until a new revision arrives.
import { setTimeout as sleep } from 'node:timers/promises';
import { fullJitter } from '../backoff.ts';
import { Superseded, type SyncTarget, supersedingReason } from '../contract.ts';
import { ReadyList } from './ready-list.ts';

export type SyncOutcome =
  | { result: 'done' }
  /**
   * May pass (network, 5xx, conflict, a namespace not there yet): retry the same revision after a back-off, or
   * after `delayMs` when the failure said when; never later than `maxDelayMs` (the deployment's retryInterval).
   */
  | { result: 'retry'; delayMs?: number | undefined; maxDelayMs?: number | undefined }
  /** The user must act (bad manifest, forbidden): wait for a new revision. */
  | { result: 'stalled' }
  | { result: 'cancelled' };

/**
 * One sync. `release` gives its worker slot back while it only waits (for stability: the watch cache does that
 * work), so that concurrency bounds render, dry runs, applies and prunes, never waits.
 */
export type SyncRun = (signal: AbortSignal, release: () => void) => Promise<SyncOutcome>;

/** A sync asked of the queue. */
export interface SyncJob<J = unknown> {
  /**
   * What is synced, as the queue compares it: a request of the revision that runs or waits joins that sync; a
   * different one replaces what waits and cancels what runs. It names the deployment's whole input (commit,
   * images, spec, ledger state), never why it was asked for.
   */
  revision: string;
  run: SyncRun;
  /** What the sync deploys and why: a sync this one cancels is told what superseded it. */
  target?: SyncTarget | undefined;
  /** Sync even when this revision already ended (a reconcile request, a drift correction, a changed spec). */
  force?: boolean | undefined;
  /**
   * What asked for it, as fair queueing sees it (the commit a poll found, a drift pass): ready syncs are started
   * one group after the other in turn, so that a change of one deployment never waits behind a commit that
   * queued a thousand.
   */
  group?: string | undefined;
  /**
   * A later request of the same revision (or one this job replaces while both wait) is joined to this job: it
   * takes over what the other was to answer. False when it cannot any more (its sync is ending): the later
   * request then runs after it, without cancelling it.
   */
  join?: ((other: J) => boolean) | undefined;
  /**
   * The job will not run again: replaced while it waited (to run, or to be retried) by a request of another
   * revision, or dropped by cancel(). What it told the world so far (a status that it waits) gets its end here.
   */
  dropped?: ((reason: unknown) => void | Promise<void>) | undefined;
}

/** What became of a request: queued (and `superseding` a running sync), joined to one, already done, or refused. */
export type RequestResult = 'queued' | 'superseding' | 'joined' | 'settled' | 'stopped';

interface Lane<J extends SyncJob<J>> {
  /** The sync to run next. */
  pending: J | undefined;
  running: { job: J; controller: AbortController } | undefined;
  /** The last revision that ended, and how, so a repeated request of it is ignored. */
  settled: { revision: string; result: SyncOutcome['result'] } | undefined;
  attempts: number;
  retryTimer: NodeJS.Timeout | undefined;
  /** The job the retry timer will run again. */
  retrying: J | undefined;
  /** Removed from the configuration while its sync ran (forget): the lane goes when that sync ends. */
  forgotten?: boolean;
}

export interface QueueOptions {
  concurrency: number;
  /** Back-off: base * 2^attempt, capped, with full jitter. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  random?: () => number;
  onEvent?: (event: {
    deployment: string;
    revision: string;
    type: 'start' | 'end' | 'retry-scheduled' | 'coalesced';
    detail?: string;
  }) => void;
}

export class SyncQueue<J extends SyncJob<J> = SyncJob> {
  private readonly lanes = new Map<string, Lane<J>>();
  /** The deployments whose sync is ready to start, in fair-queueing order (ready-list.ts). */
  private readonly ready = new ReadyList();
  /** Syncs holding a worker slot (not those that gave it back to wait). */
  private active = 0;
  /** Syncs running, waiting or not. */
  private inFlight = 0;
  private stopping = false;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly options: Required<Omit<QueueOptions, 'onEvent'>> & QueueOptions;

  constructor(options: QueueOptions) {
    this.options = { backoffBaseMs: 1000, backoffMaxMs: 5 * 60_000, random: Math.random, ...options };
  }

  private lane(deployment: string): Lane<J> {
    let lane = this.lanes.get(deployment);
    // Asked for again (the deployment is back): kept.
    if (lane) lane.forgotten = undefined;
    if (!lane) {
      lane = {
        pending: undefined,
        running: undefined,
        settled: undefined,
        attempts: 0,
        retryTimer: undefined,
        retrying: undefined,
      };
      this.lanes.set(deployment, lane);
    }
    return lane;
  }

  /**
   * Asks for `deployment` to be synced as `job` says. A request of the revision that runs or waits joins that
   * sync (no second sync, no cancel); one of another revision replaces what waits and cancels the running sync's
   * stability wait, telling it what superseded it; one of the revision that last ended is ignored unless forced.
   * `afterMs`: a job held before the queue (gates.ts) waits that long outside the ready list, as a retry does,
   * unless a sync of the deployment runs (it is then judged again when it runs next).
   */
  request(deployment: string, job: J, options: { afterMs?: number | undefined } = {}): RequestResult {
    if (this.stopping) return 'stopped';
    const lane = this.lane(deployment);
    const { pending, running } = lane;
    const event = (detail: string) =>
      this.options.onEvent?.({ deployment, revision: job.revision, type: 'coalesced', detail });
    if (pending?.revision === job.revision && (pending.join?.(job) ?? true)) {
      event(`joined the queued sync of ${pending.revision}`);
      return 'joined';
    }
    // A running sync that a newer request cancelled cannot be joined: this one runs after it.
    const live = running && !running.controller.signal.aborted ? running.job : undefined;
    if (live?.revision === job.revision && !pending) {
      if (live.join?.(job) ?? true) {
        event(`joined the running sync of ${live.revision}`);
        return 'joined';
      }
      lane.pending = job;
      return 'queued';
    }
    // A revision that waits for its retry or its hold's delay is that sync, unless asked for now.
    const later = lane.retrying;
    if (
      !running &&
      !pending &&
      !job.force &&
      later?.revision === job.revision &&
      (later.join?.(job) ?? true)
    ) {
      event(`joined the sync of ${later.revision} that waits to be tried again`);
      return 'joined';
    }
    // A revision that ended (done, or stalled on bad input) is not synced again unless asked to be.
    if (
      !running &&
      !pending &&
      !job.force &&
      lane.settled?.revision === job.revision &&
      lane.settled.result !== 'cancelled'
    ) {
      return 'settled';
    }
    if (pending) {
      // The newer request answers for the one it replaces (a reconcile request that waited with it).
      job.join?.(pending);
      event(`replaced the queued sync of ${pending.revision}`);
      pending.dropped?.(new Superseded(supersedingReason(pending.target, job.target)));
    }
    lane.pending = job;
    // Already ready: it keeps its place, in the group of the sync it now holds.
    this.ready.regroup(deployment, job.group ?? '');
    lane.attempts = lane.settled?.revision === job.revision ? lane.attempts : 0;
    if (lane.retryTimer) {
      clearTimeout(lane.retryTimer);
      lane.retryTimer = undefined;
      const retrying = lane.retrying;
      lane.retrying = undefined;
      if (retrying && retrying !== job)
        retrying.dropped?.(new Superseded(supersedingReason(retrying.target, job.target)));
    }
    // A newer revision makes the running sync's stability wait pointless: cancel it, saying what replaced it.
    let superseding = false;
    if (live && live.revision !== job.revision) {
      running?.controller.abort(new Superseded(supersedingReason(live.target, job.target)));
      superseding = true;
    }
    if (options.afterMs !== undefined && !running) {
      lane.pending = undefined;
      this.ready.delete(deployment);
      this.later(deployment, lane, job, options.afterMs);
    } else if (!running) this.ready.add(deployment, job.group ?? '');
    this.pump();
    return superseding ? 'superseding' : 'queued';
  }

  /**
   * Asks for `deployment` to be synced to `revision` by `run`, for a caller that knows only revisions (the watch
   * loop). Returns false when that revision needs nothing (it runs, waits, or ended).
   */
  trigger(deployment: string, revision: string, run: SyncRun): boolean {
    const result = this.request(deployment, { revision, run } as J);
    return result === 'queued' || result === 'superseding';
  }

  private pump(): void {
    while (this.active < this.options.concurrency && this.ready.size > 0) {
      const deployment = this.ready.next() as string;
      const lane = this.lanes.get(deployment);
      const next = lane?.pending;
      if (!lane || !next || lane.running) continue;
      lane.pending = undefined;
      const controller = new AbortController();
      lane.running = { job: next, controller };
      this.active++;
      this.inFlight++;
      this.options.onEvent?.({ deployment, revision: next.revision, type: 'start' });
      this.execute(deployment, lane, next, controller).catch((error: unknown) => {
        // execute() handles the run's failures itself; this only guards the queue's own bookkeeping.
        this.options.onEvent?.({ deployment, revision: next.revision, type: 'end', detail: String(error) });
      });
    }
    if (this.inFlight === 0 && this.ready.size === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  private async execute(deployment: string, lane: Lane<J>, job: J, controller: AbortController) {
    let outcome: SyncOutcome;
    let released = false;
    // The slot goes back once: the sync runs on (lane.running holds the deployment), and the next one may start.
    const release = () => {
      if (released) return;
      released = true;
      this.active--;
      this.pump();
    };
    try {
      outcome = await job.run(controller.signal, release);
    } catch (error) {
      // A run should classify its own failures; anything thrown is treated as transient.
      outcome = { result: 'retry' };
      this.options.onEvent?.({ deployment, revision: job.revision, type: 'end', detail: String(error) });
    }
    if (!released) this.active--;
    this.inFlight--;
    lane.running = undefined;
    lane.settled = { revision: job.revision, result: outcome.result };
    this.options.onEvent?.({ deployment, revision: job.revision, type: 'end', detail: outcome.result });
    if (outcome.result === 'retry' && !lane.pending && !this.stopping && !lane.forgotten) {
      const delay = this.retryDelay(lane.attempts++, outcome);
      this.options.onEvent?.({
        deployment,
        revision: job.revision,
        type: 'retry-scheduled',
        detail: `${delay}ms`,
      });
      this.later(deployment, lane, job, delay);
    } else if (outcome.result !== 'retry') {
      lane.attempts = 0;
    }
    if (lane.pending) this.ready.add(deployment, lane.pending.group ?? '');
    else if (lane.forgotten && lane.retryTimer === undefined && this.lanes.get(deployment) === lane)
      this.lanes.delete(deployment);
    this.pump();
  }

  /** `job` runs again after `delay` (a retry, or a job held before the queue), unless another is asked for first. */
  private later(deployment: string, lane: Lane<J>, job: J, delay: number): void {
    lane.retrying = job;
    lane.retryTimer = setTimeout(() => {
      lane.retryTimer = undefined;
      lane.retrying = undefined;
      if (lane.pending || lane.running || this.stopping) return;
      lane.pending = job;
      this.ready.add(deployment, job.group ?? '');
      this.ready.regroup(deployment, job.group ?? '');
      this.pump();
    }, delay);
  }

  /**
   * Drops what is queued for `deployment` and cancels its running sync's stability wait (its writes finish), as
   * for a deployment removed from the configuration. Later triggers of it are taken as usual.
   */
  cancel(deployment: string, reason?: unknown, options: { keepRunning?: boolean } = {}): void {
    const lane = this.lanes.get(deployment);
    if (!lane) return;
    const dropped = [lane.pending, lane.retrying].filter((j): j is J => j !== undefined);
    lane.pending = undefined;
    // Nothing left to start: it takes no turn.
    this.ready.delete(deployment);
    if (lane.retryTimer) clearTimeout(lane.retryTimer);
    lane.retryTimer = undefined;
    lane.retrying = undefined;
    if (!options.keepRunning) lane.running?.controller.abort(reason);
    for (const job of dropped) job.dropped?.(reason);
  }

  /**
   * cancel(), for a deployment removed from the configuration: its lane goes too, at once or when its running sync
   * ends (a fleet of pull-request environments opened and closed over months kept one lane each).
   */
  forget(deployment: string, reason?: unknown, options: { keepRunning?: boolean } = {}): void {
    this.cancel(deployment, reason, options);
    const lane = this.lanes.get(deployment);
    if (!lane) return;
    if (lane.running === undefined) this.lanes.delete(deployment);
    else lane.forgotten = true;
  }

  /** Resolves once `deployment` has no sync running (after cancel(), so that none starts meanwhile). */
  async quiet(deployment: string, pollMs = 100): Promise<void> {
    while (this.lanes.get(deployment)?.running) await sleep(pollMs);
  }

  /** Whether `deployment` has a sync running, queued, or waiting to be retried. */
  busy(deployment: string): boolean {
    const lane = this.lanes.get(deployment);
    return (
      lane !== undefined &&
      (lane.pending !== undefined || lane.running !== undefined || lane.retryTimer !== undefined)
    );
  }

  /** Whether syncs are ready to run and wait for a slot (every slot taken). */
  get waiting(): boolean {
    return this.ready.size > 0 && this.active >= this.options.concurrency;
  }

  /** The limit on syncs at once now. */
  get concurrency(): number {
    return this.options.concurrency;
  }

  /** A new limit on syncs at once (a reloaded configuration); running syncs above it finish as usual. */
  setConcurrency(concurrency: number): void {
    this.options.concurrency = concurrency;
    this.pump();
  }

  /** Full jitter: a random delay up to base * 2^attempt, capped (AWS's "exponential backoff and jitter"). */
  backoff(attempt: number, maxMs = this.options.backoffMaxMs): number {
    return fullJitter(attempt, {
      baseMs: this.options.backoffBaseMs,
      maxMs,
      minMs: 1,
      random: this.options.random,
    });
  }

  /**
   * When retry number `attempt` (from 0) of a failed sync runs: after the delay the failure asked for (a
   * WaitingError's), else after the back-off; never later than the outcome's cap (else the queue's).
   */
  retryDelay(
    attempt: number,
    outcome: { delayMs?: number | undefined; maxDelayMs?: number | undefined } = {},
  ): number {
    const cap = outcome.maxDelayMs ?? this.options.backoffMaxMs;
    if (outcome.delayMs !== undefined) return Math.max(1, Math.min(cap, Math.round(outcome.delayMs)));
    return this.backoff(attempt, cap);
  }

  /** Resolves when nothing runs and nothing is ready to run (scheduled retries do not count). */
  idle(): Promise<void> {
    if (this.inFlight === 0 && this.ready.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking triggers and cancels scheduled retries and stability waits; resolves when the syncs in progress
   * have ended (their writes finish: cancelling only ends waits).
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.ready.clear();
    const dropped: (void | Promise<void>)[] = [];
    for (const lane of this.lanes.values()) {
      for (const job of [lane.pending, lane.retrying]) if (job) dropped.push(job.dropped?.(undefined));
      lane.pending = undefined;
      lane.retrying = undefined;
      if (lane.retryTimer) clearTimeout(lane.retryTimer);
      lane.running?.controller.abort();
    }
    await Promise.all([this.idle(), ...dropped]);
  }
}
