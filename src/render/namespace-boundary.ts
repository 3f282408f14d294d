// The namespace boundary of a deployment: the namespaces its objects may go to, and whether (or which)
// cluster-scoped objects it may hold. Checked on the parsed manifests, before any request to the cluster, so that
// a manifest naming `namespace: kube-system` fails its own deployment's render instead of being written there
// with whatever rights the agent has. Like an Argo CD AppProject (destinations, clusterResourceWhitelist) and
// unlike kubectl with -n, objects are never moved: a manifest that names a namespace outside is refused, naming
// the object, the file and line, and how to widen the boundary.
import { RenderError, throwIfAny } from './errors.ts';
import {
  clusterScopedByDefinition,
  describeObject,
  fieldOrigin,
  groupOf,
  isClusterScoped,
  type KubeObject,
  type SourcedObject,
} from './manifest.ts';

export interface NamespaceBoundary {
  /** The namespaces objects may be in, the deployment's own first; `*` in a name matches any characters. */
  namespaces: readonly string[];
  /**
   * Cluster-scoped objects: all (true), none (false), or those of these kinds, written `Kind` (any group) or
   * `group/Kind` (`/Namespace` for the core group).
   */
  clusterScoped: boolean | readonly string[];
  /** How the user widens the boundary, ending the messages: e.g. `list it in allowedNamespaces`. */
  advice?: {
    namespace?: (namespace: string) => string;
    clusterScoped?: (object: KubeObject) => string;
  };
}

function pattern(name: string): RegExp {
  const escaped = name.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`);
}

/** Whether a namespace is inside the boundary. */
export function namespaceAllowed(boundary: NamespaceBoundary, namespace: string): boolean {
  return boundary.namespaces.some((n) => (n.includes('*') ? pattern(n).test(namespace) : n === namespace));
}

/** Whether a cluster-scoped object of this apiVersion and kind is inside the boundary. */
export function clusterScopedAllowed(boundary: NamespaceBoundary, apiVersion: string, kind: string): boolean {
  if (typeof boundary.clusterScoped === 'boolean') return boundary.clusterScoped;
  const group = groupOf(apiVersion);
  return boundary.clusterScoped.some((k) => (k.includes('/') ? k === `${group}/${kind}` : k === kind));
}

/** Why a cluster-scoped `object` is outside the boundary, with the advice, or undefined when it is inside. */
export function clusterScopedRefusal(boundary: NamespaceBoundary, object: KubeObject): string | undefined {
  if (clusterScopedAllowed(boundary, object.apiVersion, object.kind)) return undefined;
  const advice =
    boundary.advice?.clusterScoped?.(object) ??
    `allow it with allowClusterScoped (true, or kinds such as ${object.kind})`;
  return `cluster-scoped, outside this deployment's namespaces (${boundary.namespaces.join(', ')}); ${advice}`;
}

/**
 * The objects outside the boundary, one error each. Objects must already be placed: namespaced objects without
 * a namespace were given the deployment's, cluster-scoped ones lost theirs (render's first stage, or the same
 * placement done before the cluster lookup).
 */
export function boundaryErrors(
  items: readonly SourcedObject[],
  boundary: NamespaceBoundary,
  clusterScoped: ReadonlySet<string> = new Set(),
): RenderError[] {
  const errors: RenderError[] = [];
  const own = boundary.namespaces.join(', ');
  for (const item of items) {
    const { object } = item;
    if (isClusterScoped(object.apiVersion, object.kind, clusterScoped)) {
      const refusal = clusterScopedRefusal(boundary, object);
      if (refusal === undefined) continue;
      errors.push(
        new RenderError(refusal, {
          origin: item.origin,
          // Named without the namespace a manifest (or the placement of an unknown kind) may have given it.
          object: `${object.kind} ${object.metadata.name}`,
        }),
      );
      continue;
    }
    const namespace = object.metadata.namespace;
    if (namespace === undefined || namespaceAllowed(boundary, namespace)) continue;
    const advice = boundary.advice?.namespace?.(namespace) ?? 'list it in allowedNamespaces';
    errors.push(
      new RenderError(`namespace ${namespace} is outside this deployment's namespaces (${own}); ${advice}`, {
        origin: fieldOrigin(item, ['metadata', 'namespace']),
        object: describeObject(object),
      }),
    );
  }
  return errors;
}

/**
 * Throws when an object is outside the boundary (with the parse problems, so that all are fixed in one go); for
 * callers that look the objects up in the cluster before render, which would otherwise ask about namespaces the
 * deployment may not touch. The objects must be placed, as for boundaryErrors.
 */
export function assertWithinBoundary(
  parsed: { objects: readonly SourcedObject[]; errors: readonly RenderError[] },
  boundary: NamespaceBoundary | undefined,
  clusterScoped: readonly string[] = [],
): void {
  if (!boundary) return;
  const scoped = new Set([
    ...clusterScoped,
    ...clusterScopedByDefinition(parsed.objects.map(({ object }) => object)),
  ]);
  const outside = boundaryErrors(parsed.objects, boundary, scoped);
  if (outside.length > 0) throwIfAny([...parsed.errors, ...outside]);
}
