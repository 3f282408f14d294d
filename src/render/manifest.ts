// Manifests as the render engine sees them: plain JSON objects plus where they came from, and the identity
// (group, kind, namespace, name) by which duplicates are found and references are resolved.

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface Metadata {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: JsonValue | undefined;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: Metadata;
  [key: string]: JsonValue | Metadata | undefined;
}

/** Where an object was defined: the file and the 1-based line and column of its document (or list item). */
export interface Origin {
  file: string;
  line: number;
  column: number;
}

export interface SourcedObject {
  object: KubeObject;
  origin: Origin;
  /**
   * Where a field of the object was written, e.g. `['spec', 'template', 'spec', 'containers', 0, 'image']`;
   * the nearest enclosing field that exists in the file (at worst the object itself).
   */
  locate?: (path: readonly (string | number)[]) => Origin;
}

/** `spec.containers[2].image` as path segments. */
export function pathSegments(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const part of path.split('.')) {
    const match = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    if (!match) {
      out.push(part);
      continue;
    }
    if (match[1]) out.push(match[1]);
    for (const index of (match[2] ?? '').matchAll(/\[(\d+)\]/g)) out.push(Number(index[1]));
  }
  return out;
}

/** The position of a field of an object, or of the object when it has no locator. */
export function fieldOrigin(item: SourcedObject, path: string | readonly (string | number)[]): Origin {
  if (!item.locate) return item.origin;
  return item.locate(typeof path === 'string' ? pathSegments(path) : path);
}

export function describeOrigin(origin: Origin): string {
  return `${origin.file}:${origin.line}:${origin.column}`;
}

export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}

/** `Deployment prod/web`, `ClusterRole admin`: how messages name an object. */
export function describeObject(obj: Pick<KubeObject, 'kind' | 'metadata'>): string {
  const ns = obj.metadata.namespace;
  return `${obj.kind} ${ns ? `${ns}/` : ''}${obj.metadata.name}`;
}

/** The identity of an object: two definitions with the same key are the same object. */
export function objectKey(obj: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>): string {
  return `${groupOf(obj.apiVersion)}/${obj.kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

/**
 * Built-in cluster-scoped kinds, by group. Anything else is taken as namespaced; discovery extends the table
 * for custom resources (`clusterScoped` option of render).
 */
export const CLUSTER_SCOPED: ReadonlySet<string> = new Set([
  '/Namespace',
  '/Node',
  '/PersistentVolume',
  '/ComponentStatus',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'apiextensions.k8s.io/CustomResourceDefinition',
  'admissionregistration.k8s.io/MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
  'apiregistration.k8s.io/APIService',
  'scheduling.k8s.io/PriorityClass',
  'storage.k8s.io/StorageClass',
  'storage.k8s.io/CSIDriver',
  'storage.k8s.io/CSINode',
  'storage.k8s.io/VolumeAttachment',
  'node.k8s.io/RuntimeClass',
  'networking.k8s.io/IngressClass',
  'policy/PodSecurityPolicy',
  'certificates.k8s.io/CertificateSigningRequest',
  'flowcontrol.apiserver.k8s.io/FlowSchema',
  'flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration',
]);

export function isClusterScoped(
  apiVersion: string,
  kind: string,
  extra: ReadonlySet<string> = new Set(),
): boolean {
  const key = `${groupOf(apiVersion)}/${kind}`;
  return CLUSTER_SCOPED.has(key) || extra.has(key);
}

/**
 * The kinds that CustomResourceDefinitions of this set declare cluster-scoped (`scope: Cluster`), as `group/Kind`:
 * their objects are placed, and held to a deployment's boundary, as cluster-scoped before the CRD even exists.
 */
export function clusterScopedByDefinition(objects: readonly KubeObject[]): string[] {
  return objects.flatMap((o) => {
    if (o.kind !== 'CustomResourceDefinition' || !isObject(o.spec) || o.spec.scope !== 'Cluster') return [];
    const names = o.spec.names;
    const kind = isObject(names) ? names.kind : undefined;
    return typeof o.spec.group === 'string' && typeof kind === 'string' ? [`${o.spec.group}/${kind}`] : [];
  });
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
