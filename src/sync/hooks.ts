// Running a sync's hooks (src/render/hooks.ts says which objects are hooks, of which phase and order): each
// weight group applied together, waited on (a Job until it completes, a Pod until it succeeds, any other kind
// until stable), and deleted per its policy. The first group that fails stops the phase: its error names the hook
// and why. Applying, waiting and deleting are the deploy's own (one Applier, one cluster cache), passed in.

import type { HookRun } from '../contract.ts';
import { StalledError } from '../errors.ts';
import type { ApplyResult, ApplyTarget } from '../kube/apply.ts';
import { type Hook, hookOrder, isHookObject } from '../render/hooks.ts';
import { describeObject, type KubeObject } from '../render/manifest.ts';
import { stabilityOf } from '../stability/rules.ts';
import type { Stability } from '../stability/verdict.ts';
import type { WaitResult } from '../stability/waiter.ts';

export interface HookTarget {
  target: ApplyTarget;
  hook: Hook;
}

export interface HookActions {
  apply(targets: ApplyTarget[]): Promise<ApplyResult[]>;
  wait(results: ApplyResult[], rule: (object: KubeObject, now: Date) => Stability): Promise<WaitResult>;
  remove(object: KubeObject, refuse?: (live: KubeObject) => string | undefined): Promise<boolean>;
}

/** A hook failed: the sync stops (before any release object is written, for a pre hook). */
export class HookFailedError extends StalledError {}

/**
 * Only an earlier run of a hook is deleted before the hook is created again: an object of that name that is no
 * hook (another tool's, or a release object) is left alone, and the hook fails naming it.
 */
function notAHook(live: KubeObject): string | undefined {
  return isHookObject(live.metadata.annotations)
    ? undefined
    : 'exists and is no hook (no helm.sh/hook or argocd.argoproj.io/hook annotation): not deleted to make room for the hook';
}

/** A hook is done when it has run: a Pod that is running and ready is still running, not done. */
export function hookStability(object: KubeObject, now: Date): Stability {
  const verdict = stabilityOf(object, now);
  if (object.kind !== 'Pod' || verdict.state !== 'stable') return verdict;
  const phase = (object.status as { phase?: unknown } | undefined)?.phase;
  return phase === 'Succeeded'
    ? verdict
    : { state: 'progressing', message: `${describeObject(object)}: running` };
}

/** Runs the hooks of one phase in weight order; records each run with `onRun`. Throws HookFailedError. */
export async function runHooks(
  actions: HookActions,
  hooks: readonly HookTarget[],
  onRun: (run: HookRun) => void,
): Promise<void> {
  for (const group of hookOrder(hooks.map((h) => ({ ...h, object: h.target.object })))) {
    for (const { target, hook } of group)
      if (hook.deletePolicies.has('before-hook-creation')) await actions.remove(target.object, notAHook);
    const results = await actions.apply(group.map((h) => h.target));
    const wait = await actions.wait(results, hookStability);
    const verdicts = new Map(wait.verdicts.map((v) => [v.name, v.stability]));
    let failure: string | undefined;
    for (const { target, hook } of group) {
      const name = describeObject(target.object);
      const stability = verdicts.get(name);
      const succeeded = stability?.state === 'stable';
      const message =
        stability?.message ?? (wait.outcome === 'cancelled' ? 'cancelled' : `${name}: not observed`);
      const why =
        succeeded || wait.outcome !== 'timed-out' || stability?.state === 'failed'
          ? message
          : `did not finish in time: ${message}`;
      const policy = succeeded ? 'hook-succeeded' : 'hook-failed';
      const deleted = hook.deletePolicies.has(policy)
        ? await actions.remove(target.object).catch(() => false)
        : false;
      onRun({
        object: name,
        apiVersion: target.object.apiVersion,
        hook: hook.label,
        outcome: succeeded ? 'succeeded' : 'failed',
        message: why,
        deleted,
      });
      if (!succeeded) failure ??= `${hook.label} hook ${name} failed: ${why}`;
    }
    if (failure) throw new HookFailedError(failure);
  }
}
