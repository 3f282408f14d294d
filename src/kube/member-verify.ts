// Whether one member Lease counts, and where its replica takes webhooks: the one rule every reader of member
// Leases applies (the replicas' membership, `mooring status`). A Lease is written by whoever may write Leases in
// the agent's namespace, so nothing in it is taken on trust:
// - it counts only while its renewTime is not in the future (beyond CLOCK_SKEW_MS, the clocks of two nodes) and
//   not older than the lease duration: the shorter of its own and the configured one;
// - its address must be a plain origin (`http://10.0.0.7:8080`: no path, query, fragment or credentials), which
//   is what a replica writes; webhooks go to that origin's `/hooks/<provider>` and nowhere else;
// - in a Pod, its holder must be a running Pod of the agent's own workload (member-pods.ts), and the address is
//   that Pod's IP from the API: the Lease's address is not read at all.
// A Lease that fails a rule is no member: it takes no deployment and is sent no webhook.

/** How far a replica's clock may be ahead of this one's: a renewTime further ahead is a forged one. */
export const CLOCK_SKEW_MS = 5_000;

export const ADDRESS_ANNOTATION = 'mooring.io/address';

export interface MemberLease {
  metadata: { annotations?: Record<string, string> };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string };
}

export type Verdict =
  | { member: true; identity: string; address: string | undefined; renewed: number }
  | { member: false; why: string };

/** A replica's address as an origin, or undefined when it is anything more (or less) than one. */
export function plainOrigin(address: string): string | undefined {
  // By the text: the URL parser would make `/x/..` or a bare `?` vanish, and they are not what a replica writes.
  if (!/^https?:\/\/[^/?#@\\]+\/?$/i.test(address)) return undefined;
  try {
    return new URL(address).origin;
  } catch {
    return undefined;
  }
}

export function verifiedMember(
  lease: MemberLease,
  options: { now: number; durationMs?: number | undefined; pods?: ReadonlyMap<string, string> | undefined },
): Verdict {
  const identity = lease.spec.holderIdentity;
  if (!identity) return { member: false, why: 'no holderIdentity' };
  const renewed = Date.parse(lease.spec.renewTime ?? '');
  if (!Number.isFinite(renewed)) return { member: false, why: 'no renewTime' };
  if (renewed > options.now + CLOCK_SKEW_MS) return { member: false, why: 'renewTime in the future' };
  const own = (lease.spec.leaseDurationSeconds ?? 0) * 1000;
  const duration = options.durationMs === undefined ? own : Math.min(own, options.durationMs);
  if (renewed + duration <= options.now) return { member: false, why: 'expired' };
  if (options.pods) {
    const address = options.pods.get(identity);
    if (!address) return { member: false, why: `no running Pod ${identity} of the agent's workload` };
    return { member: true, identity, address, renewed };
  }
  const written = lease.metadata.annotations?.[ADDRESS_ANNOTATION];
  if (written === undefined) return { member: true, identity, address: undefined, renewed };
  const address = plainOrigin(written);
  if (!address) return { member: false, why: 'its address is not a plain http(s) origin' };
  return { member: true, identity, address, renewed };
}
