// Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does it: the holder renews the
// lease every `renewMs`; another candidate takes it over only when it has not been renewed for `durationMs`.
// Writes carry the resourceVersion they read, so two candidates never both win a race.
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

export class LeaderElector {
  private readonly api: KubeApi;
  private readonly options: LeaseOptions;
  private timer: NodeJS.Timeout | undefined;
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

  /** One round: take or renew the lease when possible. Returns whether this candidate leads now. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const now = (this.options.now ?? (() => new Date()))();
    const durationSeconds = Math.ceil(this.options.durationMs / 1000);
    let lease: Lease | undefined;
    try {
      lease = await this.api.request<Lease>('GET', this.path(this.options.name));
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
      if (lease) await this.api.request('PUT', this.path(this.options.name), { body });
      else await this.api.request('POST', this.path(), { body });
      return true;
    } catch (error) {
      // Another candidate wrote first: it leads.
      if (statusCode(error) === 409) return false;
      throw describeKubeError(error, `write Lease ${this.options.name}`);
    }
  }

  /**
   * Campaigns until stopped: calls `onLead` when this candidate becomes the leader and `onLose` when it stops being
   * one (it could not renew in time). Errors are reported through `onError` and retried.
   */
  run(handlers: { onLead: () => void; onLose: () => void; onError?: (error: unknown) => void }): void {
    let lastRenew = 0;
    const round = async () => {
      if (this.stopped) return;
      try {
        const leads = await this.tryAcquireOrRenew();
        // Stopped while the round was under way: no handler runs after the stop (a term begun then would never be
        // ended); a lease taken meanwhile is given up by stop, which waits for this round.
        if (this.stopped) {
          this.leading = leads;
          return;
        }
        if (leads) lastRenew = Date.now();
        if (leads && !this.leading) {
          this.leading = true;
          handlers.onLead();
        } else if (!leads && this.leading) {
          this.leading = false;
          handlers.onLose();
        }
      } catch (error) {
        if (this.stopped) return;
        handlers.onError?.(error);
        // A leader that cannot renew within the lease's duration must assume another has taken over.
        if (this.leading && Date.now() - lastRenew > this.options.durationMs) {
          this.leading = false;
          handlers.onLose();
        }
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
