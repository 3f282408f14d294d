// Whether a sync is a release's install or its upgrade, for Helm's hook events, decided as Helm decides it: an
// install when this release was never deployed before (Helm: no release record of that name), else an upgrade,
// whatever became of the earlier deploy (a failed install is followed by an upgrade). Pure.
//
// mooring's record of a release is its owner's inventory (the agent's deployment, `cli.<namespace>.<application>`
// for the CLI). An owner can hold more than one release: a CRD set deployed with `mooring deploy` into the namespace
// first, and then the chart that needs them, share the CLI's owner when no --application tells them apart. So the
// release was deployed before when the inventory holds one of the objects it renders now. CustomResourceDefinitions
// and Namespaces are no evidence: they are what is deployed first, and Helm keeps a chart's crds/ out of its release.
import { entryId, type InventoryEntry } from '../kube/inventory.ts';
import type { HookEvent } from '../render/hooks.ts';

const NO_EVIDENCE = new Set(['CustomResourceDefinition', 'Namespace']);

/**
 * `install` or `upgrade` for the release objects `release` (hooks left out), given what the owner's inventory held
 * before this sync (`undefined`: none was ever recorded).
 */
export function releaseEvent(
  previous: readonly InventoryEntry[] | undefined,
  release: readonly InventoryEntry[],
): HookEvent {
  if (!previous || previous.length === 0) return 'install';
  const own = release.filter((e) => !NO_EVIDENCE.has(e.kind));
  // A set of CRDs and Namespaces only (and its hooks): its owner's inventory is all there is to go by.
  if (own.length === 0) return 'upgrade';
  const held = new Set(previous.map(entryId));
  return own.some((e) => held.has(entryId(e))) ? 'upgrade' : 'install';
}
