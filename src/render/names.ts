// Object identity as Kubernetes validates it, checked where manifests are parsed and before any request: a name
// or namespace becomes a segment of a request path, and a segment such as `..` or one holding `/` or `%` would
// make the request reach another object (`/api/v1/namespaces/N/services/..` is the Namespace N). The rules are
// the API server's own, as a table keyed by kind: most objects are named by a DNS-1123 subdomain, Namespaces by
// a DNS-1123 label, Services by a DNS-1035 label, RBAC objects by any path segment (`system:controller:x`).
// Kinds the table does not know (custom resources) get the subdomain rule, as the API server gives them.

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export type NameRule = 'dns1123-label' | 'dns1035-label' | 'dns1123-subdomain' | 'path-segment';

const RBAC_GROUP = 'rbac.authorization.k8s.io';

/** Kinds whose rule is not the subdomain, by `group/Kind` ('' for the core group). */
const RULES: ReadonlyMap<string, NameRule> = new Map<string, NameRule>([
  ['/Namespace', 'dns1123-label'],
  ['/Service', 'dns1035-label'],
  [`${RBAC_GROUP}/Role`, 'path-segment'],
  [`${RBAC_GROUP}/ClusterRole`, 'path-segment'],
  [`${RBAC_GROUP}/RoleBinding`, 'path-segment'],
  [`${RBAC_GROUP}/ClusterRoleBinding`, 'path-segment'],
]);

function groupOfApiVersion(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

export function nameRuleOf(apiVersion: string, kind: string): NameRule {
  return RULES.get(`${groupOfApiVersion(apiVersion)}/${kind}`) ?? 'dns1123-subdomain';
}

const DESCRIBE: Record<NameRule, string> = {
  'dns1123-label':
    'a DNS-1123 label: at most 63 lowercase letters, digits and "-", starting and ending with a letter or digit',
  'dns1035-label':
    'a DNS-1035 label: at most 63 lowercase letters, digits and "-", starting with a letter and ending with a letter or digit',
  'dns1123-subdomain':
    'a DNS-1123 subdomain: at most 253 lowercase letters, digits, "-" and ".", each part starting and ending with a letter or digit',
  'path-segment': 'a path segment: not "." or "..", and without "/" or "%"',
};

/** Whether `name` satisfies `rule`. */
export function followsRule(name: string, rule: NameRule): boolean {
  switch (rule) {
    case 'dns1123-label':
      return name.length <= 63 && DNS1123_LABEL.test(name);
    case 'dns1035-label':
      return name.length <= 63 && DNS1035_LABEL.test(name);
    case 'dns1123-subdomain':
      return name.length <= 253 && DNS1123_SUBDOMAIN.test(name);
    case 'path-segment':
      return name !== '' && name !== '.' && name !== '..' && !/[/%]/.test(name) && name.length <= 253;
  }
}

/** Why an object's name is refused, or undefined when the API server would accept it. */
export function nameProblem(apiVersion: string, kind: string, name: string): string | undefined {
  const rule = nameRuleOf(apiVersion, kind);
  if (followsRule(name, rule)) return undefined;
  return `metadata.name ${JSON.stringify(name)} is not a valid ${kind} name: it must be ${DESCRIBE[rule]}`;
}

/** Why a namespace is refused (a namespace is a DNS-1123 label), or undefined. */
export function namespaceProblem(namespace: string): string | undefined {
  if (followsRule(namespace, 'dns1123-label')) return undefined;
  return `metadata.namespace ${JSON.stringify(namespace)} is not a valid namespace: it must be ${DESCRIBE['dns1123-label']}`;
}

/**
 * Whether a name is safe as one segment of a request path whatever its kind: the last line of defence for names
 * that did not come through a manifest (command-line arguments, stored inventories).
 */
export function isSafeSegment(name: string): boolean {
  return followsRule(name, 'path-segment');
}
