// What a stable deploy leaves behind is deleted: objects the inventory held that the render no longer has
// (src/kube/prune.ts decides what may go; what could not be deleted stays in the inventory for the next sync), and
// versions of versioned objects past their history limit.

import { collectVersionHistory, currentReferences } from '../../kube/history.ts';
import { entryId, type InventoryEntry, InventoryStore, unionOf } from '../../kube/inventory.ts';
import { executePrune, pruneTargets } from '../../kube/prune.ts';
import type { Stage } from './context.ts';

export const pruneLeftovers: Stage = async (run) => {
  const { request, api, discovery, deps } = run;
  const inventory = request.inventory;
  if (!inventory?.prune || !run.desired) return;
  if (!request.dryRun && request.wait !== false && run.wait?.outcome !== 'stable') return;
  const store = new InventoryStore(api, inventory.namespace);
  const plan = await pruneTargets(api, discovery, {
    owner: inventory.owner,
    previous: run.previous ?? [],
    desired: run.desired,
    others: () => store.all(),
    fieldManager: request.fieldManager,
    boundary: request.renderOptions?.boundary,
    removal: inventory.removal,
  });
  if (request.dryRun) {
    run.prune = { deleted: [], planned: plan.targets.map((t) => t.object), kept: plan.kept };
    return;
  }
  const result = await executePrune(api, plan, {
    references: (namespace) =>
      currentReferences(api, discovery, namespace, request.renderOptions?.referenceRules),
  });
  run.prune = {
    deleted: result.deleted,
    planned: [],
    kept: [...plan.kept, ...(result.held ?? []).map((h) => ({ object: h.target.object, reason: h.reason }))],
    ...(result.lingering ? { lingering: result.lingering } : {}),
  };
  for (const d of result.deleted) deps.onEvent?.({ type: 'pruned', object: d });
  // What could not be deleted, and versions still referred to, stay in the inventory: the next sync looks again.
  // (Several versions of one artifact are one entry.)
  const left = new Map<string, InventoryEntry>();
  for (const entry of [...result.failed, ...(result.held ?? [])].map((f) => f.target.entry))
    if (!left.has(entryId(entry))) left.set(entryId(entry), entry);
  const recorded = unionOf(run.desired, [...left.values()]);
  await store.record(inventory.owner, recorded, run.recorded ?? run.previous ?? []);
  const failed = result.failed[0];
  if (failed) throw failed.error;
};

/** Once stable: the versions of versioned objects beyond their history limit are collected (src/kube/history.ts). */
export const collectHistory: Stage = async (run) => {
  const { request } = run;
  if (request.dryRun || run.wait?.outcome !== 'stable' || !run.rendered) return;
  // The ledger could not be read: which versions its releases need is unknown, and the next sync collects them.
  if (request.keepVersions === 'unknown') return;
  run.history = await collectVersionHistory(run.api, run.discovery, run.rendered.plan, run.rendered.objects, {
    defaultLimit: request.versionHistory,
    keep: request.keepVersions,
    referenceRules: request.renderOptions?.referenceRules,
    // Read from the agent's watch cache when it holds the collection and has shown this sync's writes there.
    cached:
      run.deps.cache &&
      ((info, ns, concerns, select) => run.deps.cache?.listedObjects(info, ns, concerns, select)),
  });
};
