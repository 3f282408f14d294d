// Replicas' membership: each replica holds a coordination.k8s.io Lease of its own (`<prefix>-<hash of identity>`,
// labelled `mooring.io/member: <prefix>`), renewed every `renewMs`. The live members are read with one list per
// round. A member's Lease also says where it takes forwarded webhooks and which deployments it syncs (for `mooring
// status`). A replica that has not renewed within the renewal deadline (two thirds of the duration, lease.ts) counts
// itself out at that moment, before the others can count it out (it syncs nothing until it can renew again); one
// that stops deletes its Lease, so the others take over at once.
//
// Whoever may write Leases in the agent's namespace can write a member Lease, so one counts only when it is
// verified (member-verify.ts): renewed not in the future, within the configured duration, with an address that is
// a plain origin; and, when the agent runs in a Pod, held by a Pod of the agent's own workload, whose IP from the
// API is where webhooks go (member-pods.ts).

import { createHash } from 'node:crypto';
import { byCodeUnit } from '../arrays.ts';
import type { KubeApi } from './api.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { renewDeadline } from './lease.ts';
import { eachListPage } from './list-pages.ts';
import type { MemberPods } from './member-pods.ts';
import { ADDRESS_ANNOTATION, type MemberLease, verifiedMember } from './member-verify.ts';
import { ensureNamespace } from './namespace.ts';

export const MEMBER_LABEL = 'mooring.io/member';
export { ADDRESS_ANNOTATION };
export const OWNS_ANNOTATION = 'mooring.io/deployments';

export interface Member {
  identity: string;
  /** Where it takes forwarded webhooks: `http://10.0.0.7:8080`. */
  address: string | undefined;
  /** The deployments it said it syncs, at its last renewal. */
  deployments: string[];
  renewed: number;
  /** When it joined (its Lease's acquireTime), if it says. */
  since?: number | undefined;
}

export interface MembershipOptions {
  namespace: string;
  /** The Lease name prefix, shared by the replicas of one agent: its leader Lease's name. */
  prefix: string;
  identity: string;
  address?: string | undefined;
  durationMs: number;
  renewMs: number;
  now?: () => number;
  /** In a Pod: the Pods of the agent's workload, which members must be (member-pods.ts). */
  pods?: MemberPods | undefined;
}

interface Lease extends MemberLease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string; acquireTime?: string };
}

function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** The Lease of one member: a name any identity maps to (pod names are valid, `host-1234` too, others hashed). */
export function memberLeaseName(prefix: string, identity: string): string {
  const hash = createHash('sha256').update(identity).digest('hex').slice(0, 10);
  return `${prefix}-member-${hash}`;
}

function leasesPath(namespace: string, name?: string): string {
  const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  return name ? `${base}/${encodeURIComponent(name)}` : base;
}

export interface ListOptions {
  now?: number | undefined;
  /** The configured lease duration: a Lease counts at most this long after its renewal, whatever it says. */
  durationMs?: number | undefined;
  /** In a Pod: the running Pods of the agent's workload by name, with their addresses (member-pods.ts). */
  pods?: ReadonlyMap<string, string> | undefined;
  /** Told of every Lease that is not counted, with why (an expired one is a replica that stopped: not told). */
  refused?: ((lease: string, why: string) => void) | undefined;
  /** Ends the list (it fails) when aborted. */
  signal?: AbortSignal | undefined;
}

/** The live, verified members of `prefix` (member-verify.ts), read with one list. */
export async function listMembers(
  api: KubeApi,
  namespace: string,
  prefix: string,
  options: ListOptions = {},
): Promise<Member[]> {
  const selector = `${MEMBER_LABEL}=${prefix}`;
  const now = options.now ?? Date.now();
  const members: Member[] = [];
  // A page at a time, keeping what each verified member says: whoever can write Leases in the namespace chooses
  // their number and size.
  const page = (leases: Lease[]) => {
    for (const lease of leases) {
      const verified = verifiedMember(lease, { now, durationMs: options.durationMs, pods: options.pods });
      if (!verified.member) {
        if (verified.why !== 'expired') options.refused?.(lease.metadata.name, verified.why);
        continue;
      }
      const owns = lease.metadata.annotations?.[OWNS_ANNOTATION];
      const since = Date.parse(lease.spec.acquireTime ?? '');
      members.push({
        identity: verified.identity,
        address: verified.address,
        deployments: owns ? owns.split(',') : [],
        renewed: verified.renewed,
        since: Number.isFinite(since) ? since : undefined,
      });
    }
  };
  try {
    await eachListPage<Lease>(
      api,
      leasesPath(namespace),
      { query: { labelSelector: selector }, restart: () => members.splice(0), signal: options.signal },
      page,
    );
  } catch (error) {
    throw describeKubeError(error, `list the member Leases of ${namespace}/${prefix}`);
  }
  return members.sort((a, b) => byCodeUnit(a.identity, b.identity));
}

export class Membership {
  private readonly api: KubeApi;
  private readonly options: MembershipOptions;
  private readonly name: string;
  private timer: NodeJS.Timeout | undefined;
  /** Counts this replica out when the renewal deadline passes with no renewal. */
  private watchdog: NodeJS.Timeout | undefined;
  private stopped = false;
  /**
   * When the last renewal that counted began, by a monotonic clock (performance.now()): the deadline is measured
   * by it, whatever the wall clock (this.now(), which the Lease's own times are written with) does meanwhile.
   */
  private lastRenew = 0;
  private members: Member[] = [];
  private owns = '';
  private written = '';
  private joined = false;
  /** The refusals already told, by Lease: each is told once, and again only when its reason changes. */
  private readonly told = new Map<string, string>();
  private onRefused: ((lease: string, why: string) => void) | undefined;

  constructor(api: KubeApi, options: MembershipOptions) {
    this.api = api;
    this.options = options;
    this.name = memberLeaseName(options.prefix, options.identity);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** The live members as last read (this replica among them while it renews in time). */
  get live(): readonly Member[] {
    return this.members;
  }

  /** Whether `identity` is a live member now. */
  isLive(identity: string): boolean {
    return this.members.some((m) => m.identity === identity);
  }

  /**
   * Whether `identity` is no member now, read afresh from its own Lease rather than from the last list (which lags a
   * member that joined or renewed since): gone when the Lease is missing or fails the member rules. A read that
   * fails, or does not answer within one renewal interval, answers false: nobody is taken for gone on a guess.
   */
  async gone(identity: string): Promise<boolean> {
    // Within one renewal interval, as the members' list: what waits on the answer (a sync's gate, a webhook passed on)
    // is not held by a read that does not answer.
    const signal = AbortSignal.timeout(this.options.renewMs);
    let lease: Lease;
    try {
      lease = await this.api.request<Lease>(
        'GET',
        leasesPath(this.options.namespace, memberLeaseName(this.options.prefix, identity)),
        { signal },
      );
    } catch (error) {
      return statusCode(error) === 404;
    }
    if (lease.spec.holderIdentity !== identity) return true;
    const pods = await this.options.pods?.addresses(signal).catch(() => undefined);
    if (this.options.pods && !pods) return false;
    return !verifiedMember(lease, { now: this.now(), durationMs: this.options.durationMs, pods }).member;
  }

  /** The deployments this replica syncs, written into its Lease at the next renewal. */
  announce(deployments: readonly string[]): void {
    this.owns = [...deployments].sort().join(',');
  }

  /**
   * One round: renew (or create) this replica's Lease, then list the members. The renewal's requests end at the
   * renewal deadline (lease.ts): one that went through only later did not count. The reading of the members that
   * follows (the workload's Pods, the member Leases) ends within one renewal interval, so that a list that does not
   * answer never holds back the next renewal: the members stay as last read, and this replica counts itself out
   * only when its renewals stop.
   */
  async round(): Promise<Member[]> {
    const now = this.now();
    const began = performance.now();
    const deadline = renewDeadline(this.options.durationMs);
    const signal = AbortSignal.timeout(deadline);
    const path = leasesPath(this.options.namespace, this.name);
    // Run from a laptop, the agent's namespace may not exist yet (as Agent.start makes it).
    if (!this.joined) await ensureNamespace(this.api, this.options.namespace);
    let lease: Lease | undefined;
    try {
      lease = await this.api.request<Lease>('GET', path, { signal });
    } catch (error) {
      if (statusCode(error) !== 404) throw describeKubeError(error, `read Lease ${this.name}`);
    }
    const body: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.name,
        namespace: this.options.namespace,
        resourceVersion: lease?.metadata.resourceVersion,
        labels: { ...lease?.metadata.labels, [MEMBER_LABEL]: this.options.prefix },
        annotations: {
          ...lease?.metadata.annotations,
          ...(this.options.address ? { [ADDRESS_ANNOTATION]: this.options.address } : {}),
          [OWNS_ANNOTATION]: this.owns,
        },
      },
      spec: {
        holderIdentity: this.options.identity,
        leaseDurationSeconds: Math.ceil(this.options.durationMs / 1000),
        acquireTime:
          lease?.spec.holderIdentity === this.options.identity ? lease.spec.acquireTime : microTime(now),
        renewTime: microTime(now),
      },
    };
    try {
      if (lease) await this.api.request('PUT', path, { body, signal });
      else await this.api.request('POST', leasesPath(this.options.namespace), { body, signal });
    } catch (error) {
      // A write that raced another round of our own (or a delete) is tried again next round.
      if (statusCode(error) !== 409) throw describeKubeError(error, `write Lease ${this.name}`);
    }
    if (performance.now() - began > deadline)
      throw new Error(`renewing Lease ${this.name} took past its deadline`);
    this.written = this.owns;
    this.lastRenew = began;
    this.joined = true;
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => this.countOut(), Math.max(0, began + deadline - performance.now()));
    const reading = AbortSignal.timeout(this.options.renewMs);
    const pods = await this.options.pods?.addresses(reading);
    const refused = new Map<string, string>();
    this.members = await listMembers(this.api, this.options.namespace, this.options.prefix, {
      now: this.now(),
      durationMs: this.options.durationMs,
      pods,
      refused: (lease, why) => refused.set(lease, why),
      signal: reading,
    });
    for (const [lease, why] of refused) {
      if (this.told.get(lease) !== why) this.onRefused?.(lease, why);
    }
    this.told.clear();
    for (const [lease, why] of refused) this.told.set(lease, why);
    // A list that raced our own first write still counts us: we have just renewed (in a Pod, while it runs).
    if (
      !this.members.some((m) => m.identity === this.options.identity) &&
      (!pods || pods.has(this.options.identity))
    )
      this.members = [
        ...this.members,
        {
          identity: this.options.identity,
          address: pods?.get(this.options.identity) ?? this.options.address,
          deployments: [],
          renewed: now,
        },
      ].sort((a, b) => (a.identity < b.identity ? -1 : 1));
    return this.members;
  }

  /**
   * Renews until stopped; `onChange` gets the live members' identities whenever they change (and first when this
   * replica has joined). A replica that has not renewed within the renewal deadline gets an empty list at that
   * moment (even while its request still waits on a server that does not answer): it counts itself out until a
   * renewal works again.
   */
  run(handlers: {
    onChange: (members: string[]) => void;
    onError?: (error: unknown) => void;
    /** A Lease labelled as a member that is not counted (member-verify.ts), told once per Lease and reason. */
    onRefused?: (lease: string, why: string) => void;
  }): void {
    this.onRefused = handlers.onRefused;
    let last = '';
    const tell = (members: readonly Member[]) => {
      const ids = members.map((m) => m.identity);
      const key = ids.join('\n');
      if (key !== last) {
        last = key;
        handlers.onChange(ids);
      }
    };
    this.countOut = () => {
      if (this.stopped || !this.joined) return;
      if (performance.now() - this.lastRenew < renewDeadline(this.options.durationMs)) return;
      this.members = [];
      tell([]);
    };
    // Rounds start every renewMs, counted from the start of the last one: a slow round does not push the next
    // renewal towards the deadline.
    const round = async () => {
      if (this.stopped) return;
      const began = performance.now();
      try {
        tell(await this.round());
      } catch (error) {
        handlers.onError?.(error);
        this.countOut();
      }
      if (!this.stopped)
        this.timer = setTimeout(round, Math.max(0, began + this.options.renewMs - performance.now()));
    };
    void round();
  }

  /** Counts this replica out once the renewal deadline has passed since its last renewal (set by run). */
  private countOut: () => void = () => undefined;

  /** Whether the deployments announced since the last renewal are written. */
  get announced(): boolean {
    return this.written === this.owns;
  }

  /** Stops renewing and deletes this replica's Lease, so that the others take its deployments at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    clearTimeout(this.watchdog);
    try {
      await this.api.request('DELETE', leasesPath(this.options.namespace, this.name));
    } catch {
      // Best effort: the Lease expires anyway.
    }
  }
}
