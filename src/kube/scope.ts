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

/** The API groups built into Kubernetes: the scope of each of their kinds is in render's table. */
const BUILT_IN_GROUPS = new Set([
  '',
  'apps',
  'batch',
  'autoscaling',
  'policy',
  'extensions',
  ...[
    'admissionregistration',
    'apiextensions',
    'apiregistration',
    'authentication',
    'authorization',
    'certificates',
    'coordination',
    'discovery',
    'events',
    'networking',
    'node',
    'rbac.authorization',
    'resource',
    'scheduling',
    'storage',
    'storagemigration',
  ].map((g) => `${g}.k8s.io`),
  'flowcontrol.apiserver.k8s.io',
]);

/**
 * The kinds of these objects, as `group/Kind`, whose scope is guessed without a cluster: custom kinds that no CRD
 * of the set declares and `known` does not list. They are taken as namespaced, as most custom kinds are.
 */
export function guessedScopes(objects: readonly SourcedObject[], known: readonly string[] = []): string[] {
  const declared = new Set([
    ...known,
    ...clusterScopedByDefinition(objects.map(({ object }) => object)),
    ...objects.flatMap(({ object: o }) => {
      const spec =
        o.kind === 'CustomResourceDefinition' ? (o.spec as Record<string, unknown> | undefined) : undefined;
      const names = spec?.names as { kind?: unknown } | undefined;
      return typeof spec?.group === 'string' && typeof names?.kind === 'string'
        ? [`${spec.group}/${names.kind}`]
        : [];
    }),
  ]);
  const guessed = new Set<string>();
  for (const { object } of objects) {
    const group = groupOf(object.apiVersion);
    const key = `${group}/${object.kind}`;
    if (!BUILT_IN_GROUPS.has(group) && !declared.has(key)) guessed.add(key);
  }
  return [...guessed].sort();
}
