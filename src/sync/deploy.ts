// One deploy, as an ordered list of stages with one signature (src/sync/deploy/, one file each), run until the
// first error or a wait that did not end stable, and one finalizer that writes the report (the shape of Flux's
// reconcilers): read the cluster -> render -> namespaces -> inventory and hook names -> drift -> the writes (one
// ordered task list of hooks, waves and waits: deploy/tasks.ts) -> prune -> history. A sync that failed runs its
// SyncFail hooks after the loop, with time of their own.
import type { DeployReport } from '../contract.ts';
import { TransientError } from '../errors.ts';
import { withDeadline } from '../kube/deadline.ts';
import { DriftRun } from '../kube/drift-check.ts';
import { cliOwner } from '../kube/inventory.ts';
import { WarningEvents } from '../kube/warning-events.ts';
import { WarningLog, withWarnings } from '../kube/warnings.ts';
import { collectHistory, pruneLeftovers } from './deploy/cleanup.ts';
import {
  type DeployDeps,
  type DeployRequest,
  type DeployRun,
  fieldManagerOf,
  type Stage,
} from './deploy/context.ts';
import { checkDrift, cutToDrift } from './deploy/drift.ts';
import { finalize } from './deploy/finalize.ts';
import { checkHookNames, endHooks, runPhase } from './deploy/hooks.ts';
import { readInventory, saveRecord } from './deploy/inventory.ts';
import { ensureNamespaces } from './deploy/namespaces.ts';
import { readCluster } from './deploy/read-cluster.ts';
import { renderSet } from './deploy/render-set.ts';
import { runTasks } from './deploy/tasks.ts';
import { HooksCancelledError } from './hooks.ts';

export type { DeployDeps, DeployEvent, DeployRequest } from './deploy/context.ts';
export { MISSING_NAMESPACE_RETRY_MS } from './deploy/namespaces.ts';

/** The stages of a deploy, in order. */
const STAGES: readonly Stage[] = [
  readCluster,
  renderSet,
  checkDrift,
  ensureNamespaces,
  readInventory,
  checkHookNames,
  cutToDrift,
  runTasks,
  saveRecord,
  pruneLeftovers,
  collectHistory,
];

/** Warning Events last seen this long before a deploy started are not said by its waits. */
const WARNINGS_SINCE_MS = 10 * 60_000;

/** How long the deletion of Argo CD's hooks at the sync's end may take (the sync's own time may be spent). */
const HOOK_DELETE_TIMEOUT_MS = 60_000;

/** How long SyncFail hooks may run, after a sync that failed (its own time may be spent). */
const FAIL_HOOK_TIMEOUT_MS = 5 * 60_000;

export async function deploy(deps: DeployDeps, request: DeployRequest): Promise<DeployReport> {
  const started = Date.now();
  // A drift pass reads the watch cache first and counts its requests (src/kube/drift-check.ts).
  const driftRun = request.drift ? new DriftRun(deps) : undefined;
  const api = driftRun?.api ?? deps.api;
  const run: DeployRun = {
    request,
    deps,
    api,
    discovery: deps.discovery,
    started,
    driftRun,
    hookOwner: {
      deployment: request.inventory?.owner ?? cliOwner(request.namespace, request.application),
      application: request.application,
      fieldManager: fieldManagerOf(request),
    },
    // Those last seen long before the deploy are taken for an earlier rollout's (a controller says it again when
    // the object changes, and as it retries).
    warningEvents: new WarningEvents(api, { sinceMs: started - WARNINGS_SINCE_MS }),
    hookRuns: [],
    syncEndHooks: [],
    warnings: new WarningLog(),
  };
  let error: unknown;
  let report: DeployReport | undefined;
  // What the API server warns about, in any request made for this deploy, is reported with it.
  const warned = <T>(fn: () => Promise<T>) => withWarnings(run.warnings, fn);
  try {
    // Requests made for this deploy retry transient failures (a restarting API server) until its deadline.
    await withDeadline({ until: started + request.timeoutMs, signal: request.signal }, () =>
      warned(async () => {
        for (const stage of STAGES) {
          await stage(run);
          if (run.wait && (run.wait.outcome !== 'stable' || stage === checkDrift)) break;
        }
      }),
    );
    // A wait that ran out while the API server was unreachable says nothing about the commit: the agent's error.
    // A server that stopped answering without closing its streams is found by asking it once.
    if (run.wait?.outcome === 'timed-out' && api.unreachableSince === undefined)
      await withDeadline({ until: Date.now() }, () => api.request('GET', '/version')).catch(() => undefined);
    const since = api.unreachableSince;
    if (run.wait?.outcome === 'timed-out' && since !== undefined) {
      const last = run.wait.culprit?.stability.message;
      error = new TransientError(
        `API server unreachable since ${new Date(since).toISOString().slice(11, 19)} UTC${last ? `; last seen: ${last}` : ''}`,
      );
    }
  } catch (e) {
    // A hook still running when the sync was cancelled: the deploy was cancelled, not failed.
    if (e instanceof HooksCancelledError) run.cancelled = e.message;
    else error = e;
  }
  try {
    // A sync that failed runs its SyncFail hooks (with time of their own: the deploy's may be spent); how they
    // ran is recorded, and the sync's failure stands whatever they do.
    const failed =
      error !== undefined ||
      (run.wait !== undefined && run.wait.outcome !== 'stable' && run.wait.outcome !== 'cancelled');
    if (failed && run.hooks?.fail.length && !request.signal?.aborted)
      await withDeadline({ until: Date.now() + FAIL_HOOK_TIMEOUT_MS }, () =>
        warned(() => runPhase(run, 'fail')),
      ).catch(() => undefined);
    // Argo CD's hooks go when the sync ends, per its outcome (a refused deletion is in the hook's record).
    await withDeadline({ until: Date.now() + HOOK_DELETE_TIMEOUT_MS }, () =>
      warned(() => endHooks(run, failed)),
    ).catch(() => undefined);
  } finally {
    // The one finalizer: whatever happened above, the report says it.
    report = finalize(run, error, Date.now() - started);
    driftRun?.end(request.inventory?.owner);
  }
  return report;
}
