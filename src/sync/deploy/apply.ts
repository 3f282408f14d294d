// Writing the set (src/kube/apply.ts: a whole-set dry run, then the writes in kind order and sync waves). The
// inventory is recorded and the pre hooks run just before the first write; Sync hooks run once it is written.
import { Applier, type ApplyResult, type ApplyTarget } from '../../kube/apply.ts';
import { noteApplied } from '../../kube/drift-check.ts';
import { inventoryOf } from '../../kube/inventory.ts';
import type { KubeObject } from '../../render/manifest.ts';
import type { RenderResult } from '../../render/render.ts';
import { concurrencyOf, fieldManagerOf, type Stage } from './context.ts';
import { runPhase } from './hooks.ts';
import { waitFor } from './wait.ts';

export const applySet: Stage = async (run) => {
  const { request, deps } = run;
  const rendered = run.rendered as RenderResult;
  if (deps.beforeApply && !request.dryRun)
    await deps.beforeApply(
      rendered.objects.filter((_, i) => rendered.plan[i]?.version).map((o) => `${o.kind} ${o.metadata.name}`),
    );
  const targets: ApplyTarget[] = rendered.objects.map((object, i) => ({
    object,
    plan: rendered.plan[i] as ApplyTarget['plan'],
  }));
  const written: KubeObject[] = [];
  const fieldManager = fieldManagerOf(request);
  const owner = request.inventory?.owner;
  const applier = new Applier(run.api, run.discovery, {
    fieldManager,
    concurrency: concurrencyOf(request),
    dryRun: request.dryRun,
    // A drift pass writes back objects exactly as mooring wrote them before (their marks say so), or as the
    // dry run of drift.ts validated them just now: a second dry run of each would double what a pass costs.
    ...(request.drift ? { validateFirst: false } : {}),
    onWritten: (target, answer) => noteApplied(deps.cache, owner, target.object, answer, fieldManager),
    onResult: (result) => {
      written.push(result.target.object);
      if (!request.dryRun && result.action === 'unchanged')
        noteApplied(deps.cache, owner, result.target.object, result.live, fieldManager);
      deps.onEvent?.({ type: 'applied', result });
    },
    onPreview: deps.onPreview,
    absentNamespaces: run.absentNamespaces,
    // The inventory is written first; then the pre hooks run: one that fails stops the sync before any release
    // object is written.
    beforeWrite: async () => {
      await run.recordInventory?.(run.desired ?? []);
      await runPhase(run, 'pre');
    },
  });
  // Sync waves: each wave but the last is stable before the next is written; a wave that fails or times out
  // stops the deploy there, and its verdicts are the deploy's.
  const waves = new Set(targets.map((t) => t.plan.strategy.wave ?? 0));
  const afterWave =
    waves.size > 1 && !request.dryRun && request.wait !== false
      ? async (wave: number, results: ApplyResult[]) => {
          const result = await waitFor(run, results);
          if (result.outcome === 'stable') return true;
          run.wait = result;
          run.stoppedAtWave = { wave, left: [...waves].filter((w) => w > wave).length };
          return false;
        }
      : undefined;
  try {
    run.applied = await applier.apply(targets, { afterWave });
    // Waves after one that did not become stable were never written: they leave the inventory again.
    if (run.stoppedAtWave && run.recorded) await run.recordInventory?.(inventoryOf(written));
    // Argo CD's Sync hooks run with the release objects, once they are written.
    if (!run.stoppedAtWave && !request.dryRun) await runPhase(run, 'sync');
  } catch (error) {
    // The inventory names only what was applied: what this apply did not write comes out of it again. (A write
    // whose answer was lost is left out too; prune deletes only objects that carry mooring's field manager.)
    if (run.recorded && written.length < targets.length)
      await run.recordInventory?.(inventoryOf(written)).catch(() => undefined);
    throw error;
  }
};
