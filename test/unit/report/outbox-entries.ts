// What the outbox tests share: kept commit statuses, built.
import { entryKey, type OutboxEntry } from '../../../src/report/outbox-policy.ts';

/**
 * A builder of kept statuses of deployment web under `context`, each expiring `ttlMs` after it was kept: the
 * success of `commit` kept at `at`, with `extra` over it.
 */
export function outboxEntries(context: string, ttlMs: number) {
  return (commit: string, at: number, extra: Partial<OutboxEntry> = {}): OutboxEntry => {
    const base = { deployment: 'web', commit, context };
    return {
      ...base,
      key: entryKey(base),
      state: 'success',
      description: `${commit} stable`,
      gate: 'api',
      at,
      expiresAt: at + ttlMs,
      attempts: 0,
      ...extra,
    };
  };
}
