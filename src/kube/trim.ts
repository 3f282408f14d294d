// What the cluster cache keeps of an object: what no stability rule reads and most of an object's bytes are is
// dropped (managedFields, kubectl's last-applied annotation, pod templates, ConfigMap/Secret data), whether the
// object came from a list page, a streaming list's initial events or a watch event.
import type { KubeObject } from '../render/manifest.ts';
import type { ResourceInfo } from './discovery.ts';
import { keepFieldOwners } from './field-owners.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Trims `object` in place (it was just parsed and is held by nothing else) and returns it. With `keepOwnersOf` (a
 * field manager, while drift passes run), an object that manager wrote keeps who owns its fields, compact
 * (field-owners.ts).
 */
export function trimObject(object: KubeObject, info: ResourceInfo, keepOwnersOf?: string): KubeObject {
  const metadata = object.metadata as KubeObject['metadata'] & { managedFields?: unknown };
  if (keepOwnersOf) keepFieldOwners(object, keepOwnersOf);
  delete metadata.managedFields;
  if (metadata.annotations?.[LAST_APPLIED] !== undefined) delete metadata.annotations[LAST_APPLIED];
  const raw = object as Record<string, unknown>;
  delete raw.data;
  delete raw.binaryData;
  delete raw.stringData;
  const spec = raw.spec as Record<string, unknown> | undefined;
  if (spec && typeof spec === 'object') {
    delete spec.template;
    delete spec.jobTemplate;
    // A Pod's rule reads only its restart policies (the pod's, and its init containers' for sidecars); its
    // containers, volumes and scheduling are most of its bytes, kept for every Pod of every watched namespace.
    if (info.kind === 'Pod' && info.apiVersion === 'v1') {
      const init = Array.isArray(spec.initContainers)
        ? (spec.initContainers as Record<string, unknown>[])
        : [];
      raw.spec = {
        ...(spec.restartPolicy !== undefined ? { restartPolicy: spec.restartPolicy } : {}),
        ...(spec.nodeName !== undefined ? { nodeName: spec.nodeName } : {}),
        ...(init.length > 0
          ? { initContainers: init.map((c) => ({ name: c.name, restartPolicy: c.restartPolicy })) }
          : {}),
      };
    }
  }
  // Items of a list carry no apiVersion and kind, metadata-only ones say PartialObjectMetadata: the rules are
  // chosen by the real ones.
  object.apiVersion = info.apiVersion;
  object.kind = info.kind;
  return object;
}
