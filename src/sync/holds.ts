// A hold (a dependency not stable, a rollout step not reached, a promotion not yet due) is a report like any other,
// and every hold goes through here: said once per reason, it is the deployment's `waiting` in the ledger (the
// status page and `mooring promote` read it) and every reporter hears it (a pending commit status, an Event);
// ended without a sync (dropped, passed over, stopped by a failure), every reporter hears its end, as the
// finalizer of a sync (sync-deployment.ts) tells them, so that every status gets its end. The SyncRequest a hold
// speaks of is made here too, once.
import type { Deployment, MooringConfig } from '../config/schema.ts';
import type { DeployReport, HoldReason, Logger, SyncReporter, SyncRequest, Trigger } from '../contract.ts';
import type { Ledger } from '../report/ledger.ts';
import type { DeploymentState } from './agent-sources.ts';
import { safely } from './sync-deployment.ts';

/** What a hold is said through. */
export interface HoldDeps {
  ledger: Ledger;
  reporters: readonly SyncReporter[];
  log: Logger;
}

/** The sync a hold speaks of, which has not run: no files, and the images the sync would deploy. */
export function heldSync(
  config: MooringConfig,
  deployment: Deployment,
  commit: string | undefined,
  options: {
    images?: SyncRequest['images'];
    revision?: string | undefined;
    trigger?: Trigger;
    /** Aborted with why the hold ended (Superseded, the agent stopping): the reporters tell a cancellation. */
    signal?: AbortSignal | undefined;
  } = {},
): SyncRequest {
  return {
    config,
    deployment,
    commit,
    files: [],
    images: options.images ?? {},
    revision: options.revision ?? commit ?? '',
    trigger: options.trigger ?? 'commit',
    ...(options.signal ? { signal: options.signal } : {}),
  };
}

/**
 * Says a hold, once per message: the ledger's `waiting` (naming `commit`) and, when `sync` is given, every
 * reporter's waiting (a pending status on its commit), with the kind of hold. False when this message was already
 * said.
 */
export async function sayHold(
  deps: HoldDeps,
  d: DeploymentState,
  message: string,
  commit: string | undefined,
  sync?: { request: SyncRequest; reason: HoldReason },
): Promise<boolean> {
  if (d.waiting === message) return false;
  d.waiting = message;
  await safely(deps.log, 'record the wait', () =>
    deps.ledger.setWaiting(d.spec.name, { message, commit, since: new Date().toISOString() }),
  );
  if (sync) await tellHold(deps, sync.request, capitalized(message), sync.reason);
  return true;
}

/**
 * Every reporter hears that `sync` is held (a pending commit status, an Event, a `held` notification), with
 * `description` saying why and what ends it. The suspension of a deployment is said through here too.
 */
export async function tellHold(
  deps: Pick<HoldDeps, 'reporters' | 'log'>,
  sync: SyncRequest,
  description: string,
  reason: HoldReason,
): Promise<void> {
  for (const r of deps.reporters)
    await safely(deps.log, 'report the wait', () => r.waiting?.(sync, description, reason));
}

/** The hold of `d` is over (it syncs, or deploys what it waited for): the ledger's `waiting` goes. */
export async function clearHold(deps: HoldDeps, d: DeploymentState): Promise<void> {
  if (d.waiting === undefined) return;
  d.waiting = undefined;
  await safely(deps.log, 'clear the wait', () => deps.ledger.setWaiting(d.spec.name, undefined));
}

/**
 * Ends a hold without a sync: every reporter hears its end, with a report of nothing applied (`cancelled`: it was
 * dropped or passed over; `failed`: what it waited for failed, so its commit fails). No release is recorded.
 */
export async function endHold(
  deps: HoldDeps,
  sync: SyncRequest,
  outcome: 'cancelled' | 'failed',
  summary: string,
): Promise<void> {
  const report = nothingApplied(outcome, summary);
  for (const r of deps.reporters)
    await safely(deps.log, 'report the end of the wait', () => r.finished?.(sync, report, undefined));
}

/** The end of a sync that applied nothing: cancelled while it waited, or stopped by what it waited for. */
function nothingApplied(outcome: 'cancelled' | 'failed', summary: string): DeployReport {
  return {
    outcome,
    summary,
    applied: [],
    wait: undefined,
    history: undefined,
    prune: undefined,
    error: undefined,
    elapsedMs: 0,
  };
}

export function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
