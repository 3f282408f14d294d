// Waiting for manifest stability (seed 001, "Accommodating level-based deployments"): every applied object is
// watched, its verdict re-evaluated on each change of that object, and the wait ends as soon as all are stable,
// one has failed, the timeout passes or the caller cancels. How an object is watched is passed in (src/kube's
// cluster cache provides it, one stream per resource type and namespace). The count of stable objects is kept
// as verdicts change, so an event costs the same for a wait of five objects as for one of five thousand.
// Objects are judged in time slices shared by every wait (time-slice.ts), so that rules near their CEL budget on
// many objects leave the agent answering; an object heard of again before it was judged is judged once, on the
// latest copy, in the place its first event took. A verdict the machine decided (a health rule out of time on a
// loaded node) is asked again of the last copy after Stability.againMs, since the object itself may never change.
// What the rules cannot see (a Pod refused by admission, an image that cannot be pulled) is in warning Events: while
// objects are not stable they are read now and then (warning-poll.ts), and each message of an object not stable
// ends with its warnings and those of what it owns (warning-notes.ts), in progress lines and in the final verdict.
import { errorMessage } from '../errors.ts';
import type { KubeObject } from '../render/manifest.ts';
import { type Stability, stabilityOf } from './rules.ts';
import { judging, type TimeSlice } from './time-slice.ts';
import { unsaid, type WarningNote, warningKey, withWarnings } from './warning-notes.ts';
import { WarningPoll, type WarningReader } from './warning-poll.ts';

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
  /** The rule's verdict; when not stable, its message ends with the warnings below. */
  stability: Stability;
  /** The warning Events of the object and of what it owns, newest first, while it is not stable. */
  warnings?: readonly WarningNote[];
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
  /** Where the warning Events of objects not stable are read (src/kube/warning-events.ts); none: not read. */
  warnings?: WarningReader;
}

/** The longest wait before an unchanged object whose verdict asked for it is judged again. */
const MAX_AGAIN_MS = 60_000;

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
  // What the rule said last, the warnings, and the last object seen, by target: a message is made of the first two.
  const ruled: Stability[] = verdicts.map((v) => v.stability);
  const notes: WarningNote[][] = targets.map(() => []);
  const said: string[] = verdicts.map((v) => `${v.stability.state}\u0000${v.stability.message}\u0000`);
  const seen: (KubeObject | undefined)[] = targets.map(() => undefined);
  /** Writes the verdict of `index` from the rule's and the warnings; true when a reader would see a change. */
  const compose = (index: number): boolean => {
    const verdict = verdicts[index] as ObjectVerdict;
    const stability = ruled[index] as Stability;
    const own = stability.state === 'stable' ? [] : unsaid(stability.message, notes[index] ?? []);
    verdict.stability = { state: stability.state, message: withWarnings(stability.message, own) };
    if (own.length > 0) verdict.warnings = own;
    else delete verdict.warnings;
    const key = `${stability.state}\u0000${stability.message}\u0000${warningKey(own)}`;
    const changed = key !== said[index];
    said[index] = key;
    return changed;
  };
  return new Promise<WaitResult>((resolve) => {
    let settled = false;
    const poll =
      options.warnings &&
      new WarningPoll(
        options.warnings,
        () =>
          verdicts.flatMap((v, index) => {
            const object = seen[index];
            return object && v.stability.state !== 'stable' ? [{ index, object }] : [];
          }),
        (index, found) => {
          notes[index] = found;
          if (!compose(index) || settled) return;
          try {
            options.onProgress?.(verdicts[index] as ObjectVerdict, verdicts);
          } catch {
            // A listener's fault on a line about warnings changes no verdict.
          }
        },
      );
    const finish = (outcome: WaitResult['outcome'], culprit?: ObjectVerdict) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const again of agains) clearTimeout(again);
      options.signal?.removeEventListener('abort', onAbort);
      controller.abort();
      const elapsedMs = Date.now() - started;
      const first = culprit ?? verdicts.find((v) => v.stability.state !== 'stable');
      const done = () =>
        resolve({ outcome, verdicts, culprit: outcome === 'stable' ? undefined : first, elapsedMs });
      // A wait that failed or ran out says the latest warnings: read once more (briefly) before it answers.
      if (poll && (outcome === 'failed' || outcome === 'timed-out')) void poll.last().finally(done);
      else {
        poll?.stop();
        done();
      }
    };
    const timer = setTimeout(() => finish('timed-out'), options.timeoutMs);
    /** By target: the timer that judges its object again (Stability.againMs). */
    const agains: (NodeJS.Timeout | undefined)[] = targets.map(() => undefined);
    /** By target: how many times in a row its unchanged object was asked again (each wait twice as long). */
    const asked: number[] = targets.map(() => 0);
    const onAbort = () => finish('cancelled');
    if (options.signal?.aborted) return finish('cancelled');
    options.signal?.addEventListener('abort', onAbort);
    if (targets.length === 0) return finish('stable');
    poll?.start();

    let stableCount = 0;
    targets.forEach((target, index) => {
      let pending: { object: KubeObject | undefined; note: string | undefined } | undefined;
      const judge = (object: KubeObject | undefined, note?: string) => {
        if (settled) return;
        clearTimeout(agains[index]);
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
        stableCount +=
          (stability.state === 'stable' ? 1 : 0) - (verdict.stability.state === 'stable' ? 1 : 0);
        ruled[index] = stability;
        // A copy of another uid (deleted and made again) is another object: its predecessor's warnings go.
        if (object && object.metadata.uid !== seen[index]?.metadata.uid) notes[index] = [];
        if (object) seen[index] = object;
        const changed = compose(index);
        if (changed) options.onProgress?.(verdict, verdicts);
        if (stability.state === 'failed') finish('failed', verdict);
        else if (stableCount === verdicts.length) finish('stable');
        // A verdict the machine decided (a rule out of time) is asked again of the same object, as it may never
        // change; twice as late each time it comes back the same, up to a minute, so that rules that always run
        // out of time on many objects cannot keep the agent's CPU busy.
        else if (stability.againMs !== undefined) {
          const delay = Math.min(MAX_AGAIN_MS, stability.againMs * 2 ** (asked[index] as number));
          agains[index] = setTimeout(() => {
            asked[index] = (asked[index] as number) + 1;
            onObject(object, note);
          }, delay);
        }
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
        ruled[index] = { state: 'failed', message };
        compose(index);
        finish('failed', verdicts[index] as ObjectVerdict);
      };
      // A change of the object starts its asking again from the first delay.
      const changed = (object: KubeObject | undefined, note?: string) => {
        asked[index] = 0;
        onObject(object, note);
      };
      target.watch(changed, controller.signal).catch((error: unknown) => {
        fail(`${target.name}: cannot watch: ${errorMessage(error)}`);
      });
    });
  });
}
