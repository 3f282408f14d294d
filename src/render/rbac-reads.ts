// Which ConfigMaps and Secrets a program of the render set may read through the Kubernetes API, by the set's own RBAC:
// a Role or ClusterRole granting get, list or watch on them (all, or by resourceNames), bound to a ServiceAccount by
// a RoleBinding (in its namespace) or a ClusterRoleBinding (everywhere). Such a program may read one by its name
// (Argo CD's server reads `argocd-cm`, which its Deployments also name in `configMapKeyRef`s), so versioning it
// under the default mode would leave the program without its configuration (docs/render.md, "Which objects are
// versioned"). Roles are those of the set, the ClusterRoles every cluster has (`view`, `edit`, `admin`,
// `cluster-admin`), and ClusterRoles of the set built by aggregation (`aggregationRule`: the union of the set's
// ClusterRoles its selectors match, as the cluster's aggregation controller fills it). Only what the set holds is
// read: bindings already in the cluster are not seen.
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

/**
 * The cluster's own ClusterRoles (its bootstrap policy) by what they let be read: `view` reads ConfigMaps but not
 * Secrets; `edit` and `admin` (aggregated from it) and `cluster-admin` read both.
 */
const BOOTSTRAP: ReadonlyMap<string, readonly string[]> = new Map([
  ['cluster-admin', ['configmaps', 'secrets']],
  ['admin', ['configmaps', 'secrets']],
  ['edit', ['configmaps', 'secrets']],
  ['view', ['configmaps']],
]);

/**
 * Label comparisons spent on aggregation per render: a set that asks for more (thousands of aggregated roles over
 * thousands of ClusterRoles) gets no grants from the rest, which leaves their objects versioned.
 */
const AGGREGATION_BUDGET = 200_000;

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

function union(into: Grants, from: Grants): void {
  for (const [resource, names] of from) {
    const held = into.get(resource) ?? new Set<string>();
    for (const name of names) held.add(name);
    into.set(resource, held);
  }
}

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;

/**
 * Whether a label selector (matchLabels, matchExpressions) selects these labels, as the API's selectors do: an
 * empty selector selects everything; anything not a selector, or an unknown operator, selects nothing.
 */
export function selects(selector: unknown, labels: ReadonlyMap<string, string>): boolean {
  const s = record(selector);
  if (!s) return false;
  const matchLabels = s.matchLabels === undefined || s.matchLabels === null ? {} : record(s.matchLabels);
  if (!matchLabels) return false;
  for (const [key, value] of Object.entries(matchLabels)) if (labels.get(key) !== value) return false;
  const expressions = s.matchExpressions ?? [];
  if (!Array.isArray(expressions)) return false;
  for (const e of expressions) {
    const expression = record(e);
    if (!expression || typeof expression.key !== 'string') return false;
    const value = labels.get(expression.key);
    const values = strings(expression.values);
    switch (expression.operator) {
      case 'In':
        if (value === undefined || !values.includes(value)) return false;
        break;
      case 'NotIn':
        if (value !== undefined && values.includes(value)) return false;
        break;
      case 'Exists':
        if (value === undefined) return false;
        break;
      case 'DoesNotExist':
        if (value !== undefined) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

function labelsOf(o: KubeObject): Map<string, string> {
  const labels = new Map<string, string>();
  for (const [key, value] of Object.entries(record(o.metadata.labels) ?? {}))
    if (typeof value === 'string') labels.set(key, value);
  return labels;
}

/**
 * The grants of every ClusterRole of the set by name, aggregated ones filled from the ClusterRoles their
 * selectors match (transitively: an aggregated role may select another), then the cluster's own by name.
 */
function clusterRoleGrants(objects: readonly KubeObject[]): Map<string, Grants> {
  const roles = new Map<string, { own: Grants; labels: Map<string, string>; selectors?: unknown[] }>();
  for (const o of objects) {
    if (o.kind !== 'ClusterRole' || !o.apiVersion?.startsWith(RBAC)) continue;
    const rule = record((o as { aggregationRule?: unknown }).aggregationRule);
    const selectors =
      rule && Array.isArray(rule.clusterRoleSelectors) ? rule.clusterRoleSelectors : undefined;
    roles.set(o.metadata.name, {
      own: grantsOf(o),
      labels: labelsOf(o),
      ...(selectors ? { selectors } : {}),
    });
  }
  const resolved = new Map<string, Grants>();
  let budget = AGGREGATION_BUDGET;
  const resolve = (name: string, path: Set<string>): Grants => {
    const done = resolved.get(name);
    if (done) return done;
    const role = roles.get(name);
    if (!role) return new Map();
    if (!role.selectors) {
      resolved.set(name, role.own);
      return role.own;
    }
    // The controller replaces an aggregated role's rules with those of what it selects.
    const grants: Grants = new Map();
    if (path.has(name)) return grants; // a cycle: what is already being gathered
    path.add(name);
    for (const [other, candidate] of roles) {
      if (other === name) continue;
      budget -= role.selectors.length;
      if (budget < 0) break;
      if (role.selectors.some((selector) => selects(selector, candidate.labels)))
        union(grants, resolve(other, path));
    }
    path.delete(name);
    resolved.set(name, grants);
    return grants;
  };
  for (const name of roles.keys()) resolve(name, new Set());
  for (const [name, resources] of BOOTSTRAP) {
    if (roles.has(name)) continue;
    resolved.set(name, new Map(resources.map((resource) => [resource, new Set(['*'])])));
  }
  return resolved;
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
 * by the set's RBAC. Roles are matched by name (a Role in the binding's namespace, a ClusterRole anywhere: the
 * set's, aggregated or not, or one of the cluster's own).
 */
export function apiReadable(objects: readonly KubeObject[]): (object: KubeObject) => boolean {
  const roles = new Map<string, Grants>();
  for (const o of objects)
    if (o.kind === 'Role' && o.apiVersion?.startsWith(RBAC))
      roles.set(`${o.metadata.namespace ?? ''}/${o.metadata.name}`, grantsOf(o));
  const clusterRoles = clusterRoleGrants(objects);
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
