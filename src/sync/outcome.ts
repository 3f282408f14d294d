// How a deploy's report becomes a sync outcome for the queue: retry what may pass later, wait for a new
// revision when the user must act (bad input, a rollout that failed or timed out), cancelled when superseded.

import type { DeployReport } from '../contract.ts';
import { classify } from '../errors.ts';
import type { SyncOutcome } from './queue.ts';

export function outcomeOf(report: DeployReport): SyncOutcome {
  switch (report.outcome) {
    case 'stable':
    case 'applied':
    case 'dry-run':
      return { result: 'done' };
    case 'cancelled':
      return { result: 'cancelled' };
    case 'failed':
    case 'timed-out':
      // The manifests are wrong for this cluster, or the cluster cannot run them: a retry of the same revision
      // would fail the same way. A new revision (or a restart) tries again.
      return { result: 'stalled' };
    case 'error': {
      // A failure that said when to look again (a namespace not there yet) is retried then; others back off.
      const disposition = classify(report.error);
      if (disposition.action === 'stop') return { result: 'stalled' };
      return disposition.action === 'retry-after'
        ? { result: 'retry', delayMs: disposition.delayMs }
        : { result: 'retry' };
    }
  }
}
