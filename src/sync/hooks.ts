// Running a sync's hooks (src/render/hooks.ts says which objects are hooks of which phase, hook-order.ts in what
// order): each step (one Helm hook, or one Argo CD wave) applied, waited on (a Job until it completes, a Pod until
// it succeeds, any other kind until stable), and deleted per its policy as Helm's execHook does it: before-hook-
// creation just before the hook is written, hook-succeeded once the whole phase succeeded (so a ServiceAccount
// hook of weight -5 is there for the Job of weight 1 that runs under it), hook-failed when it failed. The first
// step that fails stops the phase: its error names the hook and why. Applying, waiting and deleting are the
// deploy's own (one Applier, one cluster cache), passed in.
// Hooks own only what they created (src/render/hook-owner.ts): every hook of the sync is checked before anything
// is written (checkHooks), and the actions refuse again, on the reads they make anyway, an object that took a
// hook's name since.

import type { HookRun } from '../contract.ts';
import { errorMessage, StalledError } from '../errors.ts';
import type { ApplyResult, ApplyTarget } from '../kube/apply.ts';
import { ApplyRejectedError } from '../kube/apply-errors.ts';
import { hookOrder } from '../render/hook-order.ts';
import { type HookOwner, refuseForeign } from '../render/hook-owner.ts';
import type { DeletePolicy, Hook } from '../render/hooks.ts';
import { describeObject, type KubeObject } from '../render/manifest.ts';
import { stabilityOf } from '../stability/rules.ts';
import type { Stability } from '../stability/verdict.ts';
import type { WaitResult } from '../stability/waiter.ts';

export interface HookTarget {
  target: ApplyTarget;
  hook: Hook;
}

/**
 * What the runner does to the cluster. Each action refuses, with `refuse`'s message, an object holding a hook's
 * name that `refuse` says is not the hook's own (the Applier's `refuse` option).
 */
export interface HookActions {
  /** Reads what holds each hook's name now; throws when one is not the hook's own. Writes nothing. */
  check(objects: KubeObject[]): Promise<void>;
  apply(targets: ApplyTarget[]): Promise<ApplyResult[]>;
  wait(results: ApplyResult[], rule: (object: KubeObject, now: Date) => Stability): Promise<WaitResult>;
  remove(object: KubeObject): Promise<boolean>;
}

/**
 * An Argo CD hook that ran, left for the sync's end: Argo CD deletes hooks when the sync operation ends, per its
 * outcome (`HookSucceeded` when it succeeded, `HookFailed` when it failed), not when their phase ends, so a
 * ServiceAccount made by a PreSync hook is still there for the PostSync Job that runs under it.
 */
export interface SyncEndHook {
  object: KubeObject;
  hook: Hook;
  /** Its run's record, told its deletion at the sync's end. */
  record: HookRun;
}

/** A hook failed: the sync stops (before any release object is written, for a pre hook). */
export class HookFailedError extends StalledError {}

/**
 * The sync was cancelled (superseded, the agent stopping) while a hook ran: not the hook's failure. The deploy
 * reports it as cancelled, as a cancelled wait for its objects (deploy.ts).
 */
export class HooksCancelledError extends Error {}

/** The rule every action of the runner applies to what holds a hook's name: only its earlier runs are its own. */
export function hookRefusal(owner: HookOwner): (live: KubeObject, wanted: KubeObject) => string | undefined {
  return (live, wanted) => refuseForeign(live, wanted, owner);
}

/**
 * Before anything of the sync is written: every hook it may run (all phases, SyncFail included) is refused when
 * its name is held by an object that is not an earlier run of it, whatever its delete policy.
 */
export async function checkHooks(actions: HookActions, hooks: readonly HookTarget[]): Promise<void> {
  // A hook of several phases is one object: checked once.
  const objects = [...new Set(hooks.map((h) => h.target.object))];
  if (objects.length > 0) await actions.check(objects);
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

/** A hook of the phase that ran: how, and what is left to say of it. */
interface Ran {
  target: ApplyTarget;
  hook: Hook;
  succeeded: boolean;
  /** The sync was cancelled while it ran. */
  cancelled?: boolean;
  why: string;
}

/**
 * Runs the hooks of one phase in their order; records each run with `onRun` once the phase is over (with whether
 * its policy deleted it). Throws HookFailedError.
 */
export async function runHooks(
  actions: HookActions,
  hooks: readonly HookTarget[],
  onRun: (run: HookRun) => void,
  atSyncEnd?: (hook: SyncEndHook) => void,
): Promise<void> {
  const phase = new PhaseRun(actions, onRun, atSyncEnd);
  await phase.run(hooks);
  await phase.end();
}

/**
 * One phase's hooks run in parts: Argo CD's Sync hooks run wave by wave between the waves of the release objects
 * (a hook of wave 1 after the objects of wave 0 are stable, before those of wave 2 are written), and the phase ends
 * once, after its last part or when the sync stops before it: only then are its hooks deleted per their policy and
 * their runs recorded, so a hook of an early wave that a later one needs (its ServiceAccount) is there for it.
 */
export class PhaseRun {
  private readonly actions: HookActions;
  private readonly onRun: (run: HookRun) => void;
  /** Where Argo CD's hooks go to be deleted at the sync's end (without it, they go at the phase's end as Helm's). */
  private readonly atSyncEnd: ((hook: SyncEndHook) => void) | undefined;
  private readonly ran: Ran[] = [];
  private failure: string | undefined;
  private cancelled: string | undefined;
  private ended = false;

  constructor(actions: HookActions, onRun: (run: HookRun) => void, atSyncEnd?: (hook: SyncEndHook) => void) {
    this.actions = actions;
    this.onRun = onRun;
    this.atSyncEnd = atSyncEnd;
  }

  /** Runs these hooks in their order; false once one failed or the sync was cancelled (nothing more runs then). */
  async run(hooks: readonly HookTarget[]): Promise<boolean> {
    const { actions, ran } = this;
    if (this.ended) throw new Error('hooks run after their phase ended');
    for (const step of hookOrder(hooks.map((h) => ({ ...h, object: h.target.object })))) {
      if (this.failure || this.cancelled) break;
      // Only an earlier run of the hook is deleted (remove refuses anything else); apply refuses, on the live read
      // it makes before its dry run, a name another object took since checkHooks.
      for (const { target, hook } of step)
        if (deletable(target.object, hook, 'before-hook-creation')) await actions.remove(target.object);
      let results: ApplyResult[];
      try {
        results = await actions.apply(step.map((h) => h.target));
      } catch (error) {
        // Refused by the API server (its dry run, or a kind it does not serve): the hook failed, as one whose Job
        // failed does; not a set refused whole with nothing applied (a post hook comes after the release objects).
        if (!(error instanceof ApplyRejectedError)) throw error;
        const why = `refused: ${error.problems.join('; ')}`;
        for (const { target, hook } of step) ran.push({ target, hook, succeeded: false, why });
        const first = step[0];
        this.failure ??= `${first?.hook.label} hook ${first ? describeObject(first.target.object) : ''} failed: ${why}`;
        break;
      }
      const wait = await actions.wait(results, hookStability);
      const verdicts = new Map(wait.verdicts.map((v) => [v.name, v.stability]));
      for (const { target, hook } of step) {
        const name = describeObject(target.object);
        const stability = verdicts.get(name);
        const succeeded = stability?.state === 'stable';
        // The sync was cancelled (superseded, the agent stopping) while the hook ran: it did not fail, and it is
        // left running (a migration killed halfway is worse than one that finishes); the next sync's
        // before-hook-creation replaces it.
        if (wait.outcome === 'cancelled' && !succeeded && stability?.state !== 'failed') {
          ran.push({
            target,
            hook,
            succeeded: false,
            cancelled: true,
            why: 'cancelled while it ran; left running',
          });
          this.cancelled ??= `${hook.label} hook ${name} was still running`;
          continue;
        }
        const message =
          stability?.message ?? (wait.outcome === 'cancelled' ? 'cancelled' : `${name}: not observed`);
        const why =
          succeeded || wait.outcome !== 'timed-out' || stability?.state === 'failed'
            ? message
            : `did not finish in time: ${message}`;
        ran.push({ target, hook, succeeded, why });
        if (!succeeded) this.failure ??= `${hook.label} hook ${name} failed: ${why}`;
      }
    }
    return !this.failure && !this.cancelled;
  }

  /**
   * Ends the phase: its hooks deleted per their policy and their runs recorded; throws HookFailedError or
   * HooksCancelledError for what stopped it. Once: a second end does nothing.
   */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    const { actions, ran } = this;
    // Helm deletes after the phase: hooks that succeeded per hook-succeeded (newest first, as Helm goes), one that
    // failed per hook-failed, whether the phase succeeded or not. Argo CD's wait for the sync's end.
    const deleted = new Map<Ran, string | boolean>();
    const later = (run: Ran) => this.atSyncEnd !== undefined && run.hook.flavor === 'argo' && !run.cancelled;
    for (const run of [...ran].reverse()) {
      if (run.cancelled || later(run)) continue;
      if (!deletable(run.target.object, run.hook, run.succeeded ? 'hook-succeeded' : 'hook-failed')) continue;
      // An object that took the hook's name during its run is not deleted: the run says why.
      deleted.set(
        run,
        await actions
          .remove(run.target.object)
          .catch((error: unknown) => `; not deleted: ${errorMessage(error)}`),
      );
    }
    for (const run of ran) {
      const gone = deleted.get(run);
      const record: HookRun = {
        object: describeObject(run.target.object),
        apiVersion: run.target.object.apiVersion,
        hook: run.hook.label,
        outcome: run.cancelled ? 'cancelled' : run.succeeded ? 'succeeded' : 'failed',
        message: run.why + (typeof gone === 'string' ? gone : ''),
        deleted: gone === true,
      };
      this.onRun(record);
      if (later(run)) this.atSyncEnd?.({ object: run.target.object, hook: run.hook, record });
    }
    if (this.failure) throw new HookFailedError(this.failure);
    if (this.cancelled) throw new HooksCancelledError(this.cancelled);
  }
}

/**
 * Argo CD's hooks of a sync that ended, deleted as Argo CD deletes them when its sync operation ends (newest first):
 * those with `HookSucceeded` when the sync succeeded, those with `HookFailed` when it failed (whether the hook itself
 * succeeded or not: the policy names the operation's outcome). A deletion refused is said in the hook's record.
 */
export async function endSyncHooks(
  actions: Pick<HookActions, 'remove'>,
  hooks: readonly SyncEndHook[],
  failed: boolean,
  onDeleted?: (record: HookRun) => void,
): Promise<void> {
  const policy: DeletePolicy = failed ? 'hook-failed' : 'hook-succeeded';
  for (const { object, hook, record } of [...hooks].reverse()) {
    if (!deletable(object, hook, policy) || record.deleted) continue;
    try {
      record.deleted = await actions.remove(object);
      if (record.deleted) onDeleted?.(record);
    } catch (error) {
      record.message += `; not deleted: ${errorMessage(error)}`;
    }
  }
}

/** Whether the policy deletes the hook. Helm never deletes a CustomResourceDefinition hook (its objects would go). */
function deletable(object: KubeObject, hook: Hook, policy: DeletePolicy): boolean {
  if (hook.flavor === 'helm' && object.kind === 'CustomResourceDefinition') return false;
  return hook.deletePolicies.has(policy);
}
