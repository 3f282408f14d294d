// The prune step of a sync, from the inventories: what a sync of `objects` would delete (the `diff` and dry-run
// preview) and the guard that keeps a broken or empty render from deleting everything.
import { StalledError } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { Discovery } from '../kube/discovery.ts';
import { type InventoryEntry, InventoryStore, inventoryOf } from '../kube/inventory.ts';
import { describeOwner, type PrunePlan, pruneTargets } from '../kube/prune.ts';
import type { KubeObject } from '../render/manifest.ts';
import type { NamespaceBoundary } from '../render/namespace-boundary.ts';

export { cliOwner } from '../kube/inventory.ts';

export interface PruneDeps {
  api: KubeApi;
  discovery: Discovery;
}

/** What a sync of `objects` by `owner` would prune, and what it would keep and why. */
export async function planPrune(
  deps: PruneDeps,
  input: {
    owner: string;
    inventoryNamespace: string;
    objects: readonly KubeObject[];
    fieldManager?: string | undefined;
    boundary?: NamespaceBoundary | undefined;
  },
): Promise<{ delete: string[]; kept: { object: string; reason: string }[] }> {
  const store = new InventoryStore(deps.api, input.inventoryNamespace);
  const previous = (await store.read(input.owner)) ?? [];
  const plan = await pruneTargets(deps.api, deps.discovery, {
    owner: input.owner,
    previous,
    desired: inventoryOf(input.objects),
    others: () => store.all(),
    fieldManager: input.fieldManager,
    boundary: input.boundary,
  });
  return { delete: plan.targets.map((t) => t.object), kept: plan.kept };
}

/**
 * Refuses a render with no objects for an owner whose inventory holds some: a wrong path or a deleted folder must
 * not delete an application. `allowEmpty` says it is meant.
 */
export function assertNotEmpty(
  owner: string,
  objects: readonly KubeObject[],
  previous: readonly InventoryEntry[] | undefined,
  allowEmpty: boolean,
  advice: string,
): void {
  if (objects.length > 0 || allowEmpty || !previous || previous.length === 0) return;
  throw new StalledError(
    `${describeOwner(owner)} renders no objects, while it has ${previous.length}: nothing applied or pruned. ${advice}`,
  );
}

export type { PrunePlan };
