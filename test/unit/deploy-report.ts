// A deploy's report as the sync hands it on (to the commit status, the retry policy), built for the unit tests.
import type { DeployReport } from '../../src/contract.ts';

/** The report of a deploy that ended with `outcome`, applied nothing and took no time, with `extra` over it. */
export function deployReport(
  outcome: DeployReport['outcome'],
  extra: Partial<DeployReport> = {},
): DeployReport {
  return {
    outcome,
    summary: '',
    applied: [],
    wait: undefined,
    history: undefined,
    prune: undefined,
    error: undefined,
    elapsedMs: 0,
    ...extra,
  };
}
