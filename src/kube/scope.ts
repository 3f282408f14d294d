// Which kinds of a manifest set the cluster serves cluster-scoped. Render's table knows the built-in kinds and the
// CRDs of the set declare their own; the custom resources of CRDs already installed are known only to discovery,
// and a deployment's namespace boundary must hold for them too (a cluster-scoped custom resource in a manifest
// without a namespace would otherwise pass as an object of the deployment's namespace).
import { StalledError } from '../errors.ts';
import {
  clusterScopedByDefinition,
  groupOf,
  isClusterScoped,
  type SourcedObject,
} from '../render/manifest.ts';
import type { Discovery } from './discovery.ts';

/**
 * The kinds of these objects, as `group/Kind`, that discovery says are cluster-scoped and that neither render's
 * table nor `known` lists. A kind the cluster does not serve (yet) is left out: apply reports it, or waits for
 * its CRD. Discovery caches per group-version, so apply's own lookups that follow cost nothing more.
 */
export async function discoverClusterScoped(
  discovery: Discovery,
  objects: readonly SourcedObject[],
  known: readonly string[] = [],
): Promise<string[]> {
  const scoped = new Set([...known, ...clusterScopedByDefinition(objects.map(({ object }) => object))]);
  const unknown = new Map<string, { apiVersion: string; kind: string }>();
  for (const { object } of objects) {
    if (isClusterScoped(object.apiVersion, object.kind, scoped)) continue;
    unknown.set(`${object.apiVersion}|${object.kind}`, { apiVersion: object.apiVersion, kind: object.kind });
  }
  const found = await Promise.all(
    [...unknown.values()].map(async ({ apiVersion, kind }) => {
      try {
        const info = await discovery.resource(apiVersion, kind);
        return info.namespaced ? [] : [`${groupOf(apiVersion)}/${kind}`];
      } catch (error) {
        if (error instanceof StalledError) return [];
        throw error;
      }
    }),
  );
  return [...new Set(found.flat())].sort();
}
