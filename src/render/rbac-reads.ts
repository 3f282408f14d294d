// Which ConfigMaps and Secrets a program of the render set may read through the Kubernetes API, by the set's own RBAC:
// a Role or ClusterRole granting get, list or watch on them (all, or by resourceNames), bound to a ServiceAccount by
// a RoleBinding (in its namespace) or a ClusterRoleBinding (everywhere). Such a program may read one by its name
// (Argo CD's server reads `argocd-cm`, which its Deployments also name in `configMapKeyRef`s), so versioning it
// under the default mode would leave the program without its configuration (docs/render.md, "Which objects are
// versioned"). Only what the set holds is read: bindings already in the cluster are not seen.
import type { KubeObject } from './manifest.ts';

const RBAC = 'rbac.authorization.k8s.io/';
const READ_VERBS = new Set(['get', 'list', 'watch', '*']);
// A Map: a kind is the manifest's to choose (`constructor` is no key of it).
const RESOURCES: ReadonlyMap<string, string> = new Map([
  ['ConfigMap', 'configmaps'],
  ['Secret', 'secrets'],
]);

interface Rule {
  apiGroups?: unknown;
  resources?: unknown;
  verbs?: unknown;
  resourceNames?: unknown;
}

/** What a role lets be read: by resource, every name (`*`) or these names. */
type Grants = Map<string, Set<string>>;

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];

function grantsOf(role: KubeObject): Grants {
  const grants: Grants = new Map();
  const rules = (role as { rules?: unknown }).rules;
  for (const rule of Array.isArray(rules) ? (rules as Rule[]) : []) {
    if (typeof rule !== 'object' || rule === null) continue;
    const groups = strings(rule.apiGroups);
    if (!groups.includes('') && !groups.includes('*')) continue;
    if (!strings(rule.verbs).some((v) => READ_VERBS.has(v))) continue;
    const names = strings(rule.resourceNames);
    for (const resource of strings(rule.resources)) {
      for (const wanted of RESOURCES.values()) {
        if (resource !== wanted && resource !== '*') continue;
        const held = grants.get(wanted) ?? new Set<string>();
        for (const name of names.length > 0 ? names : ['*']) held.add(name);
        grants.set(wanted, held);
      }
    }
  }
  return grants;
}

function boundToServiceAccount(binding: KubeObject): boolean {
  const subjects = (binding as { subjects?: unknown }).subjects;
  return (
    Array.isArray(subjects) &&
    subjects.some(
      (s) => typeof s === 'object' && s !== null && (s as { kind?: unknown }).kind === 'ServiceAccount',
    )
  );
}

/**
 * Whether a program of the set may read `object` (a ConfigMap or Secret, placed in its namespace) through the API,
 * by the set's RBAC. Roles are matched by name (a Role in the binding's namespace, a ClusterRole anywhere).
 */
export function apiReadable(objects: readonly KubeObject[]): (object: KubeObject) => boolean {
  const roles = new Map<string, Grants>();
  const clusterRoles = new Map<string, Grants>();
  for (const o of objects) {
    if (!o.apiVersion?.startsWith(RBAC)) continue;
    if (o.kind === 'Role') roles.set(`${o.metadata.namespace ?? ''}/${o.metadata.name}`, grantsOf(o));
    else if (o.kind === 'ClusterRole') clusterRoles.set(o.metadata.name, grantsOf(o));
  }
  // By namespace ('*' for a ClusterRoleBinding), what may be read there.
  const scopes: { namespace: string; grants: Grants }[] = [];
  for (const o of objects) {
    if (!o.apiVersion?.startsWith(RBAC) || (o.kind !== 'RoleBinding' && o.kind !== 'ClusterRoleBinding'))
      continue;
    if (!boundToServiceAccount(o)) continue;
    const ref = (o as { roleRef?: { kind?: unknown; name?: unknown } }).roleRef;
    if (typeof ref?.name !== 'string') continue;
    const namespace = o.kind === 'RoleBinding' ? (o.metadata.namespace ?? '') : '*';
    const grants =
      ref.kind === 'ClusterRole'
        ? clusterRoles.get(ref.name)
        : o.kind === 'RoleBinding' && ref.kind === 'Role'
          ? roles.get(`${namespace}/${ref.name}`)
          : undefined;
    if (grants && grants.size > 0) scopes.push({ namespace, grants });
  }
  return (object) => {
    const resource = RESOURCES.get(object.kind);
    if (resource === undefined || object.apiVersion !== 'v1') return false;
    const namespace = object.metadata.namespace ?? '';
    return scopes.some((scope) => {
      if (scope.namespace !== '*' && scope.namespace !== namespace) return false;
      const names = scope.grants.get(resource);
      return names !== undefined && (names.has('*') || names.has(object.metadata.name));
    });
  };
}
