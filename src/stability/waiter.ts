// Waiting for manifest stability (seed 001, "Accommodating level-based deployments"): every applied object is
// watched, its verdict re-evaluated on each change of that object, and the wait ends as soon as all are stable,
// one has failed, the timeout passes or the caller cancels. How an object is watched is passed in (src/kube's
// cluster cache provides it, one stream per resource type and namespace). The count of stable objects is kept
// as verdicts change, so an event costs the same for a wait of five objects as for one of five thousand.
// Objects are judged in time slices shared by every wait (time-slice.ts), so that rules near their CEL budget on
// many objects leave the agent answering; an object heard of again before it was judged is judged once, on the
// latest copy, in the place its first event took.
import { errorMessage } from '../errors.ts';
import type { KubeObject } from '../render/manifest.ts';
import { type Stability, stabilityOf } from './rules.ts';
import { judging, type TimeSlice } from './time-slice.ts';

export interface Watchable {
  /** `Deployment prod/web` */
  name: string;
  /**
   * Calls `onObject` with the current object and again on every change, until `signal` aborts; `note` says why
   * the object is not known when that is not simply its absence. Rejects only for failures that retrying cannot
   * fix.
   */
  watch: (
    onObject: (object: KubeObject | undefined, note?: string) => void,
    signal: AbortSignal,
  ) => Promise<void>;
}

export interface ObjectVerdict {
  name: string;
  stability: Stability;
}

export interface WaitResult {
  outcome: 'stable' | 'failed' | 'timed-out' | 'cancelled';
  verdicts: ObjectVerdict[];
  /** The first failure (or, on a time-out, the first object not yet stable). */
  culprit: ObjectVerdict | undefined;
  elapsedMs: number;
}

export interface WaitOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (verdict: ObjectVerdict, all: readonly ObjectVerdict[]) => void;
  now?: () => Date;
  rule?: (object: KubeObject, now: Date) => Stability;
  /** Where judgements are run: the process's shared slice unless given. */
  slice?: TimeSlice;
}

export function waitForStability(targets: readonly Watchable[], options: WaitOptions): Promise<WaitResult> {
  const started = Date.now();
  const now = options.now ?? (() => new Date());
  const rule = options.rule ?? stabilityOf;
  const slice = options.slice ?? judging;
  const verdicts: ObjectVerdict[] = targets.map((t) => ({
    name: t.name,
    stability: { state: 'progressing', message: `${t.name}: not observed yet` },
  }));
  const controller = new AbortController();
  return new Promise<WaitResult>((resolve) => {
    let settled = false;
    const finish = (outcome: WaitResult['outcome'], culprit?: ObjectVerdict) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      controller.abort();
      const first = culprit ?? verdicts.find((v) => v.stability.state !== 'stable');
      resolve({
        outcome,
        verdicts,
        culprit: outcome === 'stable' ? undefined : first,
        elapsedMs: Date.now() - started,
      });
    };
    const timer = setTimeout(() => finish('timed-out'), options.timeoutMs);
    const onAbort = () => finish('cancelled');
    if (options.signal?.aborted) return finish('cancelled');
    options.signal?.addEventListener('abort', onAbort);
    if (targets.length === 0) return finish('stable');

    let stableCount = 0;
    targets.forEach((target, index) => {
      let pending: { object: KubeObject | undefined; note: string | undefined } | undefined;
      const judge = (object: KubeObject | undefined, note?: string) => {
        if (settled) return;
        let stability: Stability = object
          ? rule(object, now())
          : {
              state: 'progressing',
              message: `${target.name}: ${note ?? 'not found (deleted, or not yet visible)'}`,
            };
        // A state seen before the watch broke: say so, until the next event replaces it.
        if (object && note && stability.state !== 'stable')
          stability = { ...stability, message: `${stability.message} (last seen; since then ${note})` };
        const verdict = verdicts[index] as ObjectVerdict;
        const changed =
          verdict.stability.state !== stability.state || verdict.stability.message !== stability.message;
        stableCount +=
          (stability.state === 'stable' ? 1 : 0) - (verdict.stability.state === 'stable' ? 1 : 0);
        verdict.stability = stability;
        if (changed) options.onProgress?.(verdict, verdicts);
        if (stability.state === 'failed') finish('failed', verdict);
        else if (stableCount === verdicts.length) finish('stable');
      };
      const onObject = (object: KubeObject | undefined, note?: string) => {
        if (settled) return;
        if (pending) {
          pending = { object, note };
          return;
        }
        pending = { object, note };
        slice.run(() => {
          const latest = pending as NonNullable<typeof pending>;
          pending = undefined;
          try {
            judge(latest.object, latest.note);
          } catch (error) {
            // What a rule or a listener throws fails its object, as it failed the watch when judging ran inside it.
            fail(`${target.name}: cannot watch: ${errorMessage(error)}`);
          }
        });
      };
      const fail = (message: string) => {
        if (settled) return;
        const verdict = verdicts[index] as ObjectVerdict;
        verdict.stability = { state: 'failed', message };
        finish('failed', verdict);
      };
      target.watch(onObject, controller.signal).catch((error: unknown) => {
        fail(`${target.name}: cannot watch: ${errorMessage(error)}`);
      });
    });
  });
}
