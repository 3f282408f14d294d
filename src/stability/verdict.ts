// What a stability rule decides about one live object. Rules return a Verdict (the detail only); stabilityOf
// prefixes it with the object's name, so every message names the object and the rule's reason.
import type { KubeObject } from '../render/manifest.ts';

export type StabilityState = 'stable' | 'progressing' | 'failed';

export interface Stability {
  state: StabilityState;
  message: string;
}

export interface Verdict {
  state: StabilityState;
  /** Why, without the object's name: `1 of 3 updated replicas available`. */
  detail: string;
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
