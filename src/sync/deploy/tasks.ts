// The writes of a deploy as one ordered list of tasks, run by one loop (as gitops-engine runs its sync tasks): the
// set validated whole first (src/kube/apply.ts: its server-side dry run, all or nothing), then the inventory, the
// pre hooks, the set's own Namespaces and CRDs that its other objects wait for, each sync wave (in kind phases,
// src/kube/apply-order.ts) with the Sync hooks of that wave (Argo CD's: hooks and objects of one wave together) and
// a wait for it to be stable before the next, the wait for the whole set, and the post hooks. Hooks of a phase run
// in their weights' order (src/sync/hooks.ts). The first task that fails, or a wait that does not end stable, stops
// the list; the tasks after it do not run.
import { Applier, type ApplyResult, type ApplyTarget, type SetWrite } from '../../kube/apply.ts';
import { cachedSinceWrite, noteApplied, unmovedSinceWrite } from '../../kube/drift-check.ts';
import { driftState } from '../../kube/drift-pass.ts';
import { inventoryOf } from '../../kube/inventory.ts';
import type { KubeObject } from '../../render/manifest.ts';
import type { RenderResult } from '../../render/render.ts';
import { judgedByMetadata } from '../../stability/rules.ts';
import type { PhaseRun } from '../hooks.ts';
import { concurrencyOf, type DeployRun, fieldManagerOf, type Stage, unservedKindOptions } from './context.ts';
import { phaseInParts, runPhase } from './hooks.ts';
import { waitFor } from './wait.ts';

/** One task of a deploy's writes. */
export type Task =
  | { step: 'inventory' }
  | { step: 'hooks'; phase: 'pre' | 'post' }
  /** The Sync hooks of one wave. */
  | { step: 'sync-hooks'; wave: number }
  | { step: 'prerequisites' }
  | { step: 'wave'; wave: number }
  /** The writes of `wave` stable; without a wave, the whole set. */
  | { step: 'wait'; wave?: number };

/**
 * The tasks of a deploy of a set with these sync waves and Sync hooks of these waves, in the order they run: each
 * wave's objects, then its Sync hooks (run to their end), then, when a later wave follows, a wait for its objects.
 * A dry run writes nothing (its waves are the dry run's answers); without waits (`--wait=false`) no wave is waited
 * for and no post hook runs.
 */
export function taskList(
  waves: readonly number[],
  options: { dryRun: boolean; waits: boolean },
  syncHookWaves: readonly number[] = [],
): Task[] {
  if (options.dryRun) return waves.map((wave): Task => ({ step: 'wave', wave }));
  const written = new Set(waves);
  const hooked = new Set(syncHookWaves);
  const all = [...new Set([...waves, ...syncHookWaves])].sort((a, b) => a - b);
  const tasks: Task[] = [{ step: 'inventory' }, { step: 'hooks', phase: 'pre' }, { step: 'prerequisites' }];
  for (const [index, wave] of all.entries()) {
    if (written.has(wave)) tasks.push({ step: 'wave', wave });
    if (hooked.has(wave)) tasks.push({ step: 'sync-hooks', wave });
    const later = index < all.length - 1;
    if (later && options.waits && written.has(wave)) tasks.push({ step: 'wait', wave });
  }
  if (options.waits) tasks.push({ step: 'wait' }, { step: 'hooks', phase: 'post' });
  return tasks;
}

/** Validates the rendered set whole, then runs its task list until the end, a failure or a wait not stable. */
export const runTasks: Stage = async (run) => {
  const { request } = run;
  const rendered = run.rendered as RenderResult;
  const targets: ApplyTarget[] = rendered.objects.map((object, i) => ({
    object,
    plan: rendered.plan[i] as ApplyTarget['plan'],
  }));
  const written: ApplyResult[] = [];
  const set = await setWriter(run, written).prepare(targets);
  const syncHooks = request.dryRun ? [] : (run.hooks?.sync ?? []);
  const tasks = taskList(set.waves, { dryRun: request.dryRun === true, waits: request.wait !== false }, [
    ...new Set(syncHooks.map((h) => h.hook.weight)),
  ]);
  // The Sync phase, run wave by wave, ends after its last wave or when the list stops before it (its hooks are then
  // deleted per their policy and their runs recorded).
  const lastSyncHooks = tasks.findLastIndex((t) => t.step === 'sync-hooks');
  let syncPhase: PhaseRun | undefined;
  // The set's writes are done after its last wave (or, with none, its prerequisites): what it wrote is then known.
  const lastWrite = tasks.findLastIndex((t) => t.step === 'wave' || t.step === 'prerequisites');
  if (lastWrite === -1) run.applied = set.results();
  try {
    for (const [index, task] of tasks.entries()) {
      let going: boolean;
      if (task.step === 'sync-hooks') {
        syncPhase ??= phaseInParts(run);
        going = await syncPhase.run(syncHooks.filter((h) => h.hook.weight === task.wave));
        // A Sync hook that failed ends the phase, which throws why.
        if (!going || index === lastSyncHooks) await syncPhase.end();
      } else going = await runTask(run, set, task);
      if (index === lastWrite) run.applied = set.results();
      if (going) continue;
      // Waves after one that did not become stable were never written: they leave the inventory again.
      const left = tasks.slice(index + 1).filter((t) => t.step === 'wave').length;
      if (task.step === 'wait' && task.wave !== undefined) {
        run.stoppedAtWave = { wave: task.wave, left };
        run.applied = set.results();
        if (run.recorded) await run.recordInventory?.(inventoryOf(written.map((r) => r.target.object)));
      }
      break;
    }
    // A wave that did not become stable stopped the list before the Sync phase's end.
    await syncPhase?.end();
  } catch (error) {
    // The Sync hooks that ran are recorded (and deleted per their policy) whatever stopped the list; its failure
    // is the deploy's.
    await syncPhase?.end().catch(() => undefined);
    // What was written before the failure is the release's too: its versions are named in the ledger (kept for a
    // rollback, and by the version history), where before a failure in a later wave recorded none.
    run.applied ??= [...written];
    // The inventory names only what was applied: what this apply did not write comes out of it again. (A write
    // whose answer was lost is left out too; prune deletes only objects that carry mooring's field manager.)
    if (run.recorded && written.length < targets.length)
      await run.recordInventory?.(inventoryOf(written.map((r) => r.target.object))).catch(() => undefined);
    throw error;
  }
};

/** Runs one task; false when it stops the list (a wait that did not end stable: its verdicts are the deploy's). */
async function runTask(run: DeployRun, set: SetWrite, task: Task): Promise<boolean> {
  switch (task.step) {
    case 'inventory':
      // Written once the whole set passed its dry run: a set refused whole records nothing, and a sync cut short
      // leaves no write unrecorded.
      await run.recordInventory?.(run.desired ?? [], run.request.inventory?.attempt?.note);
      // The sync is noted: its end will be reported whatever happens to this agent, so its start may be.
      await run.request.inventory?.attempt?.started();
      return true;
    case 'hooks':
      // A pre hook that fails stops the sync before any release object is written; post hooks run once the release
      // objects are stable. (Sync hooks run wave by wave with them: runTasks.)
      await runPhase(run, task.phase);
      return true;
    case 'sync-hooks':
      return true;
    case 'prerequisites':
      await set.prerequisites();
      return true;
    case 'wave':
      await set.writeWave(task.wave);
      return true;
    case 'wait': {
      if (task.wave === undefined) run.deps.beforeWait?.();
      const results =
        task.wave === undefined
          ? set.results()
          : set.results().filter((r) => (r.target.plan.strategy.wave ?? 0) === task.wave);
      const result = await waitFor(run, results);
      // A wave that is stable lets the next be written; the set's own wait is the deploy's verdict either way.
      if (task.wave === undefined || result.outcome !== 'stable') run.wait = result;
      return result.outcome === 'stable';
    }
  }
}

/** The Applier of the release objects: each result noted for drift checks and told to the caller. */
function setWriter(run: DeployRun, written: ApplyResult[]): Applier {
  const { request, deps } = run;
  const fieldManager = fieldManagerOf(request);
  const owner = request.inventory?.owner;
  const cache = deps.cache;
  // An agent's sync (not a drift pass, which checks its objects itself) leaves what is unmoved since its last
  // write as it is: no read, dry run or write of it. The marks of objects it no longer renders go.
  const unmovedBy =
    cache && owner !== undefined && !request.drift && !request.dryRun ? { cache, owner } : undefined;
  if (unmovedBy) driftState(unmovedBy.cache).marks.retain(unmovedBy.owner, run.rendered?.objects ?? []);
  const unmoved = new Set<KubeObject>();
  const record = request.drift ? undefined : run.record?.of;
  return new Applier(run.api, run.discovery, {
    fieldManager,
    concurrency: concurrencyOf(request),
    dryRun: request.dryRun,
    ...unservedKindOptions(request),
    // A drift pass writes back objects exactly as mooring wrote them before (their marks say so), or as the
    // dry run of drift.ts validated them just now: a second dry run of each would double what a pass costs.
    ...(request.drift ? { validateFirst: false } : {}),
    onWritten: (target, answer) => {
      deps.cache?.noteWrite(answer);
      noteApplied(deps.cache, owner, target.object, answer, fieldManager);
      record?.written(target.object, answer);
    },
    onResult: (result) => {
      written.push(result);
      if (!request.dryRun && result.action === 'unchanged' && !unmoved.has(result.target.object)) {
        noteApplied(deps.cache, owner, result.target.object, result.live, fieldManager);
        record?.found(result.target.object, result.live);
      }
      deps.onEvent?.({ type: 'applied', result });
    },
    // A deploy without the watch cache leaves what its record says it wrote, untouched since, as it is.
    ...(record && {
      unmovedLive: (target, live) => {
        const found = record.unmoved(target, live);
        if (found) unmoved.add(target.object);
        return found;
      },
    }),
    onPreview: deps.onPreview,
    absentNamespaces: run.absentNamespaces,
    // What the inventory does not hold is dry-run before it is read: a first deploy reads nothing it creates.
    known: run.appliedBefore,
    ...(unmovedBy && {
      unmoved: async (target, info) => {
        const found = await unmovedSinceWrite(unmovedBy.cache, unmovedBy.owner, info, target.object, {
          fieldManager,
          metadataOnly: judgedByMetadata(target.object),
        });
        if (found) unmoved.add(target.object);
        return found;
      },
      // A changed manifest of an object it wrote before: the cache's copy in place of a read.
      cachedLive: (target, info) =>
        cachedSinceWrite(unmovedBy.cache, unmovedBy.owner, info, target.object, {
          metadataOnly: judgedByMetadata(target.object),
        }),
    }),
  });
}
