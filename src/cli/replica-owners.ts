// Who syncs each deployment when replicas share the work, for `mooring status`: the live, verified members say
// which deployments they sync (src/kube/membership.ts). A deployment none of them names is not being synced: its
// owner is not a replica that runs (a Lease written by hand, a replica that cannot sync), or the owners are
// changing. Status says so, naming the member the assignment gives it to (src/shard/assign.ts) when the
// configuration is at hand, and since when that member has held its Lease.
import type { MooringConfig } from '../config/schema.ts';
import type { KubeApi } from '../kube/api.ts';
import { runningPods } from '../kube/member-pods.ts';
import type { Member } from '../kube/membership.ts';
import { assign } from '../shard/assign.ts';

/**
 * The members as replicas in Pods count them, as near as the CLI can tell without a Pod of its own: when some are
 * held by running Pods, those held by none are left out (a Lease written by hand). Pods it may not list: all.
 */
export async function heldByPods(api: KubeApi, namespace: string, members: Member[]): Promise<Member[]> {
  if (members.length === 0) return members;
  const pods = await runningPods(api, namespace).catch(() => undefined);
  if (!pods || !members.some((m) => pods.has(m.identity))) return members;
  return members.filter((m) => pods.has(m.identity));
}

/** The member each deployment is named by (the first, by identity, if two name it while owners change). */
export function reportedOwners(members: readonly Member[]): Map<string, string> {
  const owners = new Map<string, string>();
  for (const m of members)
    for (const name of m.deployments) if (!owners.has(name)) owners.set(name, m.identity);
  return owners;
}

/** The line of a deployment no member says it syncs. */
export function unreported(
  name: string,
  members: readonly Member[],
  config: MooringConfig | undefined,
): string {
  const ids = members.map((m) => m.identity);
  const owner = config
    ? assign(
        config.deployments.map((d) => d.name),
        ids,
        { loadFactor: config.leaderElection.loadFactor },
      ).get(name)
    : undefined;
  const member = members.find((m) => m.identity === owner);
  if (!member) return `no replica reports syncing it (replicas: ${ids.join(', ')})`;
  const since = new Date(member.since ?? member.renewed).toISOString();
  return `owner ${member.identity} has not reported it since ${since}`;
}
