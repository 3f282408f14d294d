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

/**
 * What a few rules need to know of the cluster beyond the object itself, read once per deploy
 * (src/sync/deploy/wait.ts). Absent or partial when it could not be read: the rules then judge as without it.
 */
export interface ClusterFacts {
  /** `volumeBindingMode` of each StorageClass, by name (`Immediate`, `WaitForFirstConsumer`). */
  volumeBindingModes?: ReadonlyMap<string, string>;
}

/**
 * A per-kind rule. `now` is for rules that compare timestamps in the status with the present; `facts` what the
 * deploy read of the cluster for the rules that need it.
 */
export type StabilityRule = (object: KubeObject, now: Date, facts?: ClusterFacts) => Verdict;

export function stable(detail: string): Verdict {
  return { state: 'stable', detail };
}

export function progressing(detail: string): Verdict {
  return { state: 'progressing', detail };
}

export function failed(detail: string): Verdict {
  return { state: 'failed', detail };
}
