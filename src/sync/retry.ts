// How long a deployment's sync that failed for a reason that may pass (classify(): waiting or transient) waits at
// most before the queue retries it at the same revision: its retryInterval, else the poll interval of its source
// (as Flux's retryInterval defaults to its interval). A failure the user must fix is not retried (outcome.ts).
import type { Deployment, MooringConfig } from '../config/schema.ts';
import type { SyncOutcome } from './queue.ts';

/** A source polled on a cron schedule, or a local folder, has no interval: its retries wait at most this. */
export const DEFAULT_RETRY_INTERVAL_MS = 5 * 60_000;

export function retryIntervalOf(config: MooringConfig, deployment: Deployment): number {
  if (deployment.retryInterval !== undefined) return deployment.retryInterval;
  const source = config.sources.git.find((s) => s.name === deployment.source);
  return source?.interval ?? DEFAULT_RETRY_INTERVAL_MS;
}

/** The outcome with the deployment's cap on its retry delay. */
export function cappedRetry(outcome: SyncOutcome, maxDelayMs: number): SyncOutcome {
  return outcome.result === 'retry' ? { ...outcome, maxDelayMs } : outcome;
}
