// Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does it: the holder renews the
// lease every `renewMs`; another candidate takes it over only when it has not been renewed for `durationMs`.
// Writes carry the resourceVersion they read, so two candidates never both win a race. A holder that has not
// renewed within renewDeadline (two thirds of the duration) steps down by its own clock, whatever its request is
// still doing, so that it has stopped before another candidate may take the lease over.
import type { KubeApi } from './api.ts';
import { describeKubeError, statusCode } from './errors.ts';

export interface LeaseOptions {
  namespace: string;
  name: string;
  identity: string;
  durationMs: number;
  renewMs: number;
  /** For tests: the clock. */
  now?: () => Date;
}

interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** MicroTime, as the API server writes it. */
function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * How long after the start of its last successful renewal a holder keeps leading without another: two thirds of the
 * lease's duration (client-go's RenewDeadline, 10 s of 15). A round's requests end by then too. Another candidate
 * takes the lease over only once the duration has passed since it saw that renewal, so the holder has stepped down
 * a third of the duration before: time for its write in progress to end.
 */
export function renewDeadline(durationMs: number): number {
  return Math.floor((durationMs * 2) / 3);
}

export class LeaderElector {
  private readonly api: KubeApi;
  private readonly options: LeaseOptions;
  private timer: NodeJS.Timeout | undefined;
  /** Steps down when the renewal deadline passes with no renewal. */
  private watchdog: NodeJS.Timeout | undefined;
  /** The round under way or last run (it never rejects). */
  private round: Promise<void> | undefined;
  private leading = false;
  private stopped = false;
  /** The other holder's record as last read, and when (this candidate's clock) it was first seen so. */
  private observed: { record: string; at: number } | undefined;

  constructor(api: KubeApi, options: LeaseOptions) {
    this.api = api;
    this.options = options;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  private path(name?: string): string {
    const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.options.namespace)}/leases`;
    return name ? `${base}/${encodeURIComponent(name)}` : base;
  }

  /**
   * Whether another holder's lease is still valid. The record is written by whoever may write Leases in the agent's
   * namespace, so, as client-go does, a holder must be seen renewing: a record that has not changed for the
   * lease's duration, as measured here, has expired whatever its `renewTime` says (one far in the future, or a
   * clock ahead of ours). Its duration counts for at most this candidate's own (a `leaseDurationSeconds` of 68
   * years kept every replica on standby). A record whose own times say it expired has.
   */
  private heldByAnother(lease: Lease, now: Date): boolean {
    const ownMs = this.options.durationMs;
    const durationMs = Math.min((lease.spec.leaseDurationSeconds ?? ownMs / 1000) * 1000, ownMs);
    const record = JSON.stringify(lease.spec);
    if (this.observed?.record !== record) this.observed = { record, at: now.getTime() };
    if (this.observed.at + durationMs <= now.getTime()) return false;
    const renewed = Date.parse(lease.spec.renewTime ?? lease.spec.acquireTime ?? '');
    return Number.isFinite(renewed) && renewed + durationMs > now.getTime();
  }

  /**
   * One round: take or renew the lease when possible. Returns whether this candidate leads now. `signal` ends its
   * requests (and their retries).
   */
  async tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean> {
    const now = (this.options.now ?? (() => new Date()))();
    const durationSeconds = Math.ceil(this.options.durationMs / 1000);
    let lease: Lease | undefined;
    try {
      lease = await this.api.request<Lease>('GET', this.path(this.options.name), { signal });
    } catch (error) {
      if (statusCode(error) !== 404) throw describeKubeError(error, `read Lease ${this.options.name}`);
    }
    const mine = lease?.spec.holderIdentity === this.options.identity;
    if (lease && !mine && lease.spec.holderIdentity && this.heldByAnother(lease, now)) return false;
    const spec: Lease['spec'] = {
      holderIdentity: this.options.identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: mine ? lease?.spec.acquireTime : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: (lease?.spec.leaseTransitions ?? 0) + (lease && !mine ? 1 : 0),
    };
    const body: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.options.name,
        namespace: this.options.namespace,
        resourceVersion: lease?.metadata.resourceVersion,
      },
      spec,
    };
    try {
      if (lease) await this.api.request('PUT', this.path(this.options.name), { body, signal });
      else await this.api.request('POST', this.path(), { body, signal });
      return true;
    } catch (error) {
      // Another candidate wrote first: it leads.
      if (statusCode(error) === 409) return false;
      throw describeKubeError(error, `write Lease ${this.options.name}`);
    }
  }

  /**
   * Campaigns until stopped: calls `onLead` when this candidate becomes the leader and `onLose` when it stops being
   * one: another holds the lease, or it has not renewed within renewDeadline (then at that moment, even while its
   * request is still waiting on a server that does not answer). Errors are reported through `onError` and retried.
   */
  run(handlers: { onLead: () => void; onLose: () => void; onError?: (error: unknown) => void }): void {
    const deadline = renewDeadline(this.options.durationMs);
    // When the last renewal that counted began (a monotonic clock: the lease's times are not this process's to trust).
    let lastRenew = 0;
    const stepDown = () => {
      if (this.stopped || !this.leading) return;
      this.leading = false;
      handlers.onLose();
    };
    const round = async () => {
      if (this.stopped) return;
      const began = performance.now();
      try {
        const leads = await this.tryAcquireOrRenew(AbortSignal.timeout(deadline));
        // Stopped while the round was under way: no handler runs after the stop (a term begun then would never be
        // ended); a lease taken meanwhile is given up by stop, which waits for this round.
        if (this.stopped) {
          this.leading = leads;
          return;
        }
        // A write that went through only after the deadline renewed too late to count: the leader has stepped down
        // (or a candidate would lead on a renewal others may already have outlived); the next round decides.
        if (leads && performance.now() - began <= deadline) {
          lastRenew = began;
          clearTimeout(this.watchdog);
          this.watchdog = setTimeout(stepDown, Math.max(0, lastRenew + deadline - performance.now()));
          if (!this.leading) {
            this.leading = true;
            handlers.onLead();
          }
        } else if (!leads) stepDown();
      } catch (error) {
        if (this.stopped) return;
        handlers.onError?.(error);
        if (performance.now() - lastRenew > deadline) stepDown();
      }
    };
    const next = () => {
      this.round = round()
        .catch((error: unknown) => handlers.onError?.(error))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(next, this.options.renewMs);
        });
    };
    next();
  }

  /** Stops campaigning and, when leading, gives the lease up so that a standby takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    clearTimeout(this.watchdog);
    await this.round;
    if (!this.leading) return;
    this.leading = false;
    try {
      const lease = await this.api.request<Lease>('GET', this.path(this.options.name));
      if (lease.spec.holderIdentity !== this.options.identity) return;
      await this.api.request('PUT', this.path(this.options.name), {
        body: { ...lease, spec: { ...lease.spec, holderIdentity: '', renewTime: microTime(new Date(0)) } },
      });
    } catch {
      // Best effort: the lease expires anyway.
    }
  }
}
