// What the per-kind stability tables share: the shape of a case, and conditions as controllers write them.
import type { JsonObject, KubeObject } from '../../../src/render/manifest.ts';
import type { StabilityState } from '../../../src/stability/rules.ts';

/** When the conditions of the tables last changed: ten minutes before the tests' clock. */
export const EARLIER = '2025-06-01T11:50:00Z';

/** One row of a table: the object, and the state and message its rule gives. */
export interface StabilityCase {
  name: string;
  object: KubeObject;
  state: StabilityState;
  message: string;
}

/** A status condition changed at EARLIER, with its reason, message and observedGeneration when given. */
export function condition(
  type: string,
  status: string,
  reason?: string,
  message?: string,
  observedGeneration?: number,
): JsonObject {
  return {
    type,
    status,
    lastTransitionTime: EARLIER,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
}
