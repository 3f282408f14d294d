// The one place Secret values are hidden before a manifest is shown, logged or audited.
import { isObject, type JsonValue, type KubeObject } from './manifest.ts';

export const REDACTED = '<redacted>';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** A copy with every value of a Secret's data and stringData replaced (keys kept, so the shape stays visible). */
export function redactSecret(object: KubeObject): KubeObject {
  if (object.kind !== 'Secret' || object.apiVersion !== 'v1') return object;
  const copy = structuredClone(object);
  for (const field of ['data', 'stringData']) {
    const values = copy[field];
    if (isObject(values)) {
      copy[field] = Object.fromEntries(Object.keys(values).map((k) => [k, REDACTED])) as {
        [key: string]: JsonValue;
      };
    }
  }
  // kubectl's client-side apply keeps the whole Secret, values included, in this annotation.
  if (copy.metadata.annotations?.[LAST_APPLIED] !== undefined) {
    copy.metadata.annotations = { ...copy.metadata.annotations, [LAST_APPLIED]: REDACTED };
  }
  return copy;
}
