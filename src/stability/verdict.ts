// What a stability rule decides about one live object. Rules return a Verdict (the detail only); stabilityOf
// prefixes it with the object's name, so every message names the object and the rule's reason.
import type { KubeObject } from '../render/manifest.ts';

export type StabilityState = 'stable' | 'progressing' | 'failed';

export interface Stability {
  state: StabilityState;
  message: string;
  /**
   * Milliseconds after which the object is to be judged again though it did not change: the verdict depended on
   * the machine (a CEL evaluation that ran out of time), not on the object alone.
   */
  againMs?: number;
}

export interface Verdict {
  state: StabilityState;
  /** Why, without the object's name: `1 of 3 updated replicas available`. */
  detail: string;
  /** See Stability.againMs. */
  againMs?: number;
}

/** A per-kind rule. `now` is for rules that compare timestamps in the status with the present. */
export type StabilityRule = (object: KubeObject, now: Date) => Verdict;

export function stable(detail: string): Verdict {
  return { state: 'stable', detail };
}

export function progressing(detail: string): Verdict {
  return { state: 'progressing', detail };
}

export function failed(detail: string): Verdict {
  return { state: 'failed', detail };
}
