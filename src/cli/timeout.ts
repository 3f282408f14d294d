// `--timeout` of the commands that wait (deploy, run --watch, reconcile): a duration, where 0 means no limit, as
// for kubectl's `rollout status --timeout` and `wait --timeout` ("zero means never"). Waiting without a limit is
// a wait of about 24 days: the longest a Node timer holds.
import { parseDuration } from '../config/duration.ts';

export const NO_LIMIT_MS = 2 ** 31 - 1;

/** The timeout in milliseconds, NO_LIMIT_MS for 0, or undefined when the text is not a duration. */
export function waitTimeout(text: string): number | undefined {
  const ms = parseDuration(text);
  if (ms === undefined || ms < 0) return undefined;
  return ms === 0 ? NO_LIMIT_MS : Math.min(ms, NO_LIMIT_MS);
}
