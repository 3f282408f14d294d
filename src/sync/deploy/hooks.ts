// Hooks in a deploy: they run in their phases (src/sync/hooks.ts) with the deploy's own apply, wait and delete,
// each of which refuses an object a hook does not own. Their names are checked before anything is written.
import { Applier } from '../../kube/apply.ts';
import type { HookPhase } from '../../render/hooks.ts';
import { checkHooks, endSyncHooks, type HookActions, hookRefusal, PhaseRun, runHooks } from '../hooks.ts';
import { concurrencyOf, type DeployRun, fieldManagerOf, type Stage, unservedKindOptions } from './context.ts';
import { waitFor } from './wait.ts';

/** The deploy's own apply, wait and delete for hooks: each refuses an object a hook does not own. */
function hookActions(run: DeployRun): HookActions {
  const applier = new Applier(run.api, run.discovery, {
    fieldManager: fieldManagerOf(run.request),
    concurrency: concurrencyOf(run.request),
    refuse: hookRefusal(run.hookOwner),
    onWritten: (_target, answer) => run.deps.cache?.noteWrite(answer),
    ...unservedKindOptions(run.request),
  });
  return {
    check: (objects) => applier.check(objects),
    apply: (targets) => applier.apply(targets),
    wait: (results, rule) => waitFor(run, results, rule),
    remove: (object) => applier.remove(object),
  };
}

/**
 * Before anything is written (in a dry run too, so a preview says it): every hook whose name another object
 * holds fails the sync, and no hook runs, SyncFail's included.
 */
export const checkHookNames: Stage = async (run) => {
  const hooks = Object.values(run.hooks ?? {}).flat();
  try {
    await checkHooks(hookActions(run), hooks);
  } catch (error) {
    run.hooks = undefined;
    throw error;
  }
};

/** Runs the hooks of a phase (src/sync/hooks.ts); none in a dry run. */
export async function runPhase(run: DeployRun, phase: HookPhase): Promise<void> {
  const hooks = run.hooks?.[phase] ?? [];
  if (hooks.length === 0 || run.request.dryRun) return;
  await runHooks(
    hookActions(run),
    hooks,
    (hookRun) => {
      run.hookRuns.push(hookRun);
      run.deps.onEvent?.({ type: 'hook', run: hookRun });
    },
    (hook) => run.syncEndHooks.push(hook),
  );
}

/**
 * The sync's end: Argo CD's hooks that ran are deleted per its outcome (src/sync/hooks.ts, endSyncHooks); none in a
 * dry run, and none of a sync cancelled (its hooks may still run).
 */
export async function endHooks(run: DeployRun, failed: boolean): Promise<void> {
  const cancelled =
    run.cancelled !== undefined || run.wait?.outcome === 'cancelled' || run.request.signal?.aborted;
  if (run.syncEndHooks.length === 0 || run.request.dryRun || cancelled) return;
  await endSyncHooks(hookActions(run), run.syncEndHooks.splice(0), failed, (record) =>
    run.deps.onEvent?.({ type: 'hook-deleted', run: record }),
  );
}

/**
 * A phase run in parts (Argo CD's Sync hooks, wave by wave between the release objects' waves: tasks.ts), its runs
 * recorded as runPhase records them once it ends.
 */
export function phaseInParts(run: DeployRun): PhaseRun {
  return new PhaseRun(
    hookActions(run),
    (hookRun) => {
      run.hookRuns.push(hookRun);
      run.deps.onEvent?.({ type: 'hook', run: hookRun });
    },
    (hook) => run.syncEndHooks.push(hook),
  );
}
