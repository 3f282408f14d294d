// The rules of the commit-status outbox, without I/O: which final statuses are kept (a newer one for the same
// commit and context replaces an older one; bounded in number), when they expire, and when a status API may be
// asked again after it failed (full-jitter back-off per failure in a row, at least what Retry-After asked for). Time is passed
// in, so the rules are tested with a clock of the test's own.
import { fullJitter } from '../backoff.ts';
import type { Disposition } from '../errors.ts';
import { MAX_SERVER_DELAY_MS } from '../http/retry-after.ts';
import type { CommitState } from './forges/types.ts';

/** A final status that could not be delivered yet. Nothing in it is secret: no URL with credentials, no token. */
export interface OutboxEntry {
  /** One entry per deployment, repository, commit and context: see entryKey. */
  key: string;
  deployment: string;
  /** Set for a status on an image's source repository; the deployment's own repository otherwise. */
  repository?: string | undefined;
  commit: string;
  context: string;
  state: CommitState;
  description: string;
  targetUrl?: string | undefined;
  /** Statuses that go to the same API share a gate: when it fails, all of them wait. */
  gate: string;
  /** When the sync decided this status (ms since the epoch). */
  at: number;
  /** Not delivered after this time, it is dropped (commitStatus.retryFor after `at`). */
  expiresAt: number;
  attempts: number;
  lastError?: string | undefined;
}

/** A status API that failed: not asked again before `until`. */
export interface Gate {
  until: number;
  failures: number;
}

export const MAX_ENTRIES = 400;
export const FIRST_BACKOFF_MS = 2_000;
export const MAX_BACKOFF_MS = 60_000;
/** A Retry-After longer than this is taken as this: the outbox asks again and is told again. */
export const MAX_RETRY_AFTER_MS = MAX_SERVER_DELAY_MS;
/** The shortest a gate stays closed after a failure, whatever the back-off's draw or the server said. */
export const MIN_WAIT_MS = 1_000;

export function entryKey(e: Pick<OutboxEntry, 'deployment' | 'repository' | 'commit' | 'context'>): string {
  return [e.deployment, e.repository ?? '', e.commit, e.context].join('\n');
}

/**
 * The entries with `entry` kept: it replaces an older entry of the same key (a newer decision about the same
 * commit and context), is ignored when the kept one is newer, and the oldest go first beyond `limit`.
 */
export function upsert(
  entries: readonly OutboxEntry[],
  entry: OutboxEntry,
  limit = MAX_ENTRIES,
): OutboxEntry[] {
  const existing = entries.find((e) => e.key === entry.key);
  if (existing && existing.at > entry.at) return [...entries];
  const kept = entries.filter((e) => e.key !== entry.key);
  kept.push(entry);
  kept.sort((a, b) => a.at - b.at);
  return kept.slice(Math.max(0, kept.length - limit));
}

/** Splits the entries into those still worth delivering and those past their expiry. */
export function expire(
  entries: readonly OutboxEntry[],
  now: number,
): { kept: OutboxEntry[]; expired: OutboxEntry[] } {
  const kept: OutboxEntry[] = [];
  const expired: OutboxEntry[] = [];
  for (const e of entries) (e.expiresAt <= now ? expired : kept).push(e);
  return { kept, expired };
}

/** Whether the gate lets a request through now. */
export function isOpen(gate: Gate | undefined, now: number): boolean {
  return gate === undefined || gate.until <= now;
}

/**
 * The gate after a failed delivery: closed for what the server asked (Retry-After) or, without that, for the
 * full-jitter back-off (src/backoff.ts) of the failures in a row, so that agents do not come back together.
 */
export function afterFailure(
  gate: Gate | undefined,
  disposition: Disposition,
  now: number,
  random: () => number = Math.random,
): Gate {
  const failures = (gate?.failures ?? 0) + 1;
  if (disposition.action === 'retry-after') {
    const wait = Math.min(MAX_RETRY_AFTER_MS, Math.max(MIN_WAIT_MS, disposition.delayMs));
    return { until: now + wait, failures };
  }
  const backoff = fullJitter(failures - 1, {
    baseMs: FIRST_BACKOFF_MS,
    maxMs: MAX_BACKOFF_MS,
    minMs: MIN_WAIT_MS,
    random,
  });
  return { until: now + backoff, failures };
}

/** The entries to deliver now, oldest first: not expired, behind an open gate. */
export function due(
  entries: readonly OutboxEntry[],
  gates: ReadonlyMap<string, Gate>,
  now: number,
): OutboxEntry[] {
  return entries.filter((e) => e.expiresAt > now && isOpen(gates.get(e.gate), now));
}

/** When the outbox should look again: the earliest time a gate holding entries opens (now if one is open). */
export function nextWake(
  entries: readonly OutboxEntry[],
  gates: ReadonlyMap<string, Gate>,
  now: number,
): number | undefined {
  let next: number | undefined;
  for (const e of entries) {
    const at = Math.max(now, Math.min(gates.get(e.gate)?.until ?? now, e.expiresAt));
    next = next === undefined ? at : Math.min(next, at);
  }
  return next;
}
