// The number of syncs in flight, following the API server (`concurrencyMax` above `concurrency`: docs/fleet.md,
// "Syncs in flight that follow the server"). A sync holds its slot through render, dry run and writes, never through
// its wait, so with a fixed number the server may idle between answers while a fleet's syncs queue for slots. The
// rule is the request budget's (src/http/adaptive-rate.ts), with slots for requests a second: in each window of
// answers the limit grows by a quarter while syncs waited for a slot and the server answered as fast as at its best,
// steps down by a fifth when its answers slow to four times their best (it queues), and halves at a 429. It stays
// between a quarter of `concurrency` (at least 1) and `concurrencyMax`.
import { AdaptiveRate } from '../http/adaptive-rate.ts';
import type { Clock } from '../http/token-bucket.ts';
import type { ApiAnswer } from '../kube/api.ts';

export interface Slots {
  /** Whether syncs wait for a slot now. */
  readonly waiting: boolean;
  setConcurrency(concurrency: number): void;
}

export interface AnswerSource {
  onAnswer(listener: (answer: ApiAnswer) => void): () => void;
}

/** Follows `api`'s answers and sets `slots`' limit; returns what stops it. */
export function adaptConcurrency(
  api: AnswerSource,
  slots: Slots,
  options: { concurrency: number; concurrencyMax: number; windowMs?: number; clock?: Clock },
  onChange?: (concurrency: number) => void,
): () => void {
  const rate = new AdaptiveRate({
    start: options.concurrency,
    min: Math.max(1, Math.floor(options.concurrency / 4)),
    max: options.concurrencyMax,
    ...(options.windowMs !== undefined ? { windowMs: options.windowMs } : {}),
    clock: options.clock,
  });
  let current = options.concurrency;
  return api.onAnswer((answer) => {
    const next = answer.limited ? rate.limited() : rate.answered(answer.latencyMs, slots.waiting);
    if (next === undefined) return;
    const slotsNow = Math.max(1, Math.round(next));
    if (slotsNow === current) return;
    current = slotsNow;
    slots.setConcurrency(slotsNow);
    onChange?.(slotsNow);
  });
}
