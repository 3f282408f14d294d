// The one finalizer of a deploy: whatever happened, the report says it (outcome, a one-line summary, and all that
// the stages found).
import type { DeployReport } from '../../contract.ts';
import { classify, errorMessage } from '../../errors.ts';
import type { DeployRun } from './context.ts';

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms / 1000)}s`;
}

/** `(sync wave 1; 2 later waves not applied)`, when a wave stopped the deploy. */
function waveNote(run: DeployRun): string {
  const stopped = run.stoppedAtWave;
  if (!stopped) return '';
  return ` (sync wave ${stopped.wave}; ${stopped.left} later wave${stopped.left === 1 ? '' : 's'} not applied)`;
}

export function finalize(run: DeployRun, error: unknown, elapsedMs: number): DeployReport {
  const applied = run.applied ?? [];
  const base = {
    applied,
    wait: run.wait,
    history: run.history,
    prune: run.prune,
    drift: run.drift,
    ...(run.hookRuns.length > 0 ? { hooks: run.hookRuns } : {}),
    ...(run.warnings.size > 0 ? { warnings: run.warnings.list() } : {}),
    error,
    elapsedMs,
  };
  const pruned = run.prune?.deleted.length ? `, ${run.prune.deleted.length} pruned` : '';
  if (error !== undefined) {
    const retry = classify(error).action !== 'stop';
    return {
      ...base,
      outcome: 'error',
      summary: `${retry ? 'failed (transient)' : 'failed'}: ${errorMessage(error)}`,
    };
  }
  if (run.cancelled !== undefined) {
    return { ...base, outcome: 'cancelled', summary: `cancelled while a hook ran: ${run.cancelled}` };
  }
  if (run.request.dryRun) {
    return {
      ...base,
      outcome: 'dry-run',
      summary: `dry run: ${applied.length} objects valid${run.prune?.planned.length ? `, ${run.prune.planned.length} to prune` : ''}, nothing applied`,
    };
  }
  if (run.request.wait === false) {
    const changed = applied.filter((r) => r.action !== 'unchanged').length;
    return {
      ...base,
      outcome: 'applied',
      summary: `${applied.length} objects applied (${changed} changed) in ${seconds(elapsedMs)}${pruned}, not waited on`,
    };
  }
  const wait = run.wait;
  const watched = wait?.verdicts.length ?? 0;
  const stable = wait?.verdicts.filter((v) => v.stability.state === 'stable').length ?? 0;
  switch (wait?.outcome) {
    case 'stable':
      return {
        ...base,
        outcome: 'stable',
        summary: `${stable}/${watched} stable in ${seconds(elapsedMs)}${pruned}`,
      };
    case 'failed':
      return {
        ...base,
        outcome: 'failed',
        summary: `failed: ${wait.culprit?.stability.message ?? 'unknown'}${waveNote(run)}`,
      };
    case 'timed-out':
      return {
        ...base,
        outcome: 'timed-out',
        summary: `timed out after ${seconds(elapsedMs)} with ${stable}/${watched} stable: ${wait.culprit?.stability.message ?? ''}${waveNote(run)}`,
      };
    default:
      return { ...base, outcome: 'cancelled', summary: `cancelled with ${stable}/${watched} stable` };
  }
}
