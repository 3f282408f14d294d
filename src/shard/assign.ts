// Which replica syncs which deployment: consistent hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam,
// 2018; the algorithm Argo CD measured for its application controller's shards). Each member has VNODES points on
// a ring of 2^48; each deployment, taken in the order of its own point, goes to the first member clockwise from its
// point that has fewer than ceil(loadFactor * deployments / members) deployments. Every replica computes the same
// assignment from the same members and deployments (nothing is stored), no member gets more than the bound, and a
// member that comes or goes moves about 1/members of the deployments (docs/replicas.md has the measured figures).

import { createHash } from 'node:crypto';
import { byCodeUnit, lowerBound } from '../arrays.ts';

/** Points per member: enough that members' arcs of the ring differ little in length. */
const VNODES = 100;

export interface AssignOptions {
  /** How far above the mean a member's load may go: 1.25 lets a member hold 25 % more than its share. */
  loadFactor?: number | undefined;
}

function point(key: string): number {
  return createHash('sha256').update(key).digest().readUIntBE(0, 6);
}

interface RingPoint {
  at: number;
  member: string;
}

/** The members' points, in ring order (a member's name breaks a tie, so that every replica sorts alike). */
function ring(members: readonly string[]): RingPoint[] {
  const points: RingPoint[] = [];
  for (const member of members)
    for (let i = 0; i < VNODES; i++) points.push({ at: point(`${member}#${i}`), member });
  return points.sort((a, b) => a.at - b.at || byCodeUnit(a.member, b.member));
}

/** The first ring position at or after `at` (wrapping to 0). */
function firstAtOrAfter(points: readonly RingPoint[], at: number): number {
  const first = lowerBound(0, points.length, (i) => (points[i] as RingPoint).at < at);
  return first === points.length ? 0 : first;
}

/** The most deployments one member is given. */
export function capacity(deployments: number, members: number, loadFactor = 1.25): number {
  if (members === 0) return 0;
  return Math.max(1, Math.ceil((loadFactor * deployments) / members));
}

/**
 * The member of each deployment. Empty when there are no members. The result depends only on the sets given, not
 * on their order.
 */
export function assign(
  deployments: readonly string[],
  members: readonly string[],
  options: AssignOptions = {},
): Map<string, string> {
  const owners = new Map<string, string>();
  const unique = [...new Set(members)];
  if (unique.length === 0) return owners;
  const points = ring(unique);
  const bound = capacity(deployments.length, unique.length, options.loadFactor);
  const load = new Map<string, number>(unique.map((m) => [m, 0]));
  const ordered = [...new Set(deployments)]
    .map((name) => ({ name, at: point(name) }))
    .sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : 1));
  for (const { name, at } of ordered) {
    let i = firstAtOrAfter(points, at);
    // bound * members >= deployments, so some member has room and the walk ends within one turn.
    for (let step = 0; step < points.length; step++, i = (i + 1) % points.length) {
      const member = (points[i] as RingPoint).member;
      const held = load.get(member) ?? 0;
      if (held < bound) {
        owners.set(name, member);
        load.set(member, held + 1);
        break;
      }
    }
  }
  return owners;
}

/** How many deployments changed member between two assignments (those in both). */
export function moved(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): number {
  let count = 0;
  for (const [name, member] of after) if (before.has(name) && before.get(name) !== member) count++;
  return count;
}
