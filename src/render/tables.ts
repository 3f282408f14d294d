// The data tables of the render engine, in the spirit of kapp's reference rules: where each kind keeps its pod
// template, its images, and its references to ConfigMaps and Secrets. Config extends them for custom resources.

export interface KindRule {
  /** API group, '' for the core group. */
  group: string;
  kind: string;
  path: string;
}

export interface ReferenceRule extends KindRule {
  /**
   * The kind the selected name refers to; `*` means the kind named by the `kind` field beside the name (as in an
   * HPA's scaleTargetRef).
   */
  target: string;
}

/** Where each workload kind keeps its pod template (`metadata` + `spec`); a Pod is its own template. */
export const POD_TEMPLATE_RULES: readonly KindRule[] = [
  { group: '', kind: 'Pod', path: '' },
  { group: '', kind: 'PodTemplate', path: 'template' },
  { group: '', kind: 'ReplicationController', path: 'spec.template' },
  ...['apps', 'extensions'].flatMap((group) =>
    ['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet'].map((kind) => ({
      group,
      kind,
      path: 'spec.template',
    })),
  ),
  { group: 'batch', kind: 'Job', path: 'spec.template' },
  { group: 'batch', kind: 'CronJob', path: 'spec.jobTemplate.spec.template' },
];

const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'];

function under(prefix: string, path: string): string {
  return prefix ? `${prefix}.${path}` : path;
}

function podSpecOf(rule: KindRule): string {
  return under(rule.path, 'spec');
}

/** Every place a container image is named, derived from the pod templates. */
export const IMAGE_RULES: readonly KindRule[] = POD_TEMPLATE_RULES.flatMap((rule) =>
  CONTAINER_LISTS.map((list) => ({ ...rule, path: under(podSpecOf(rule), `${list}[*].image`) })),
);

/** References from a pod spec to ConfigMaps and Secrets, relative to the pod spec. */
const POD_SPEC_REFERENCES: readonly { path: string; target: string }[] = [
  { path: 'volumes[*].configMap.name', target: 'ConfigMap' },
  { path: 'volumes[*].secret.secretName', target: 'Secret' },
  { path: 'volumes[*].projected.sources[*].configMap.name', target: 'ConfigMap' },
  { path: 'volumes[*].projected.sources[*].secret.name', target: 'Secret' },
  { path: 'imagePullSecrets[*].name', target: 'Secret' },
  ...CONTAINER_LISTS.flatMap((list) => [
    { path: `${list}[*].env[*].valueFrom.configMapKeyRef.name`, target: 'ConfigMap' },
    { path: `${list}[*].env[*].valueFrom.secretKeyRef.name`, target: 'Secret' },
    { path: `${list}[*].envFrom[*].configMapRef.name`, target: 'ConfigMap' },
    { path: `${list}[*].envFrom[*].secretRef.name`, target: 'Secret' },
  ]),
];

export const REFERENCE_RULES: readonly ReferenceRule[] = [
  ...POD_TEMPLATE_RULES.flatMap((rule) =>
    POD_SPEC_REFERENCES.map((ref) => ({
      ...rule,
      path: under(podSpecOf(rule), ref.path),
      target: ref.target,
    })),
  ),
  { group: '', kind: 'ServiceAccount', path: 'secrets[*].name', target: 'Secret' },
  { group: '', kind: 'ServiceAccount', path: 'imagePullSecrets[*].name', target: 'Secret' },
  { group: 'networking.k8s.io', kind: 'Ingress', path: 'spec.tls[*].secretName', target: 'Secret' },
  { group: 'extensions', kind: 'Ingress', path: 'spec.tls[*].secretName', target: 'Secret' },
  { group: 'autoscaling', kind: 'HorizontalPodAutoscaler', path: 'spec.scaleTargetRef.name', target: '*' },
];

/** Kinds versioned unless an annotation or the deployment's config says otherwise (seed 001's table). */
export const VERSIONED_BY_DEFAULT: ReadonlySet<string> = new Set([
  '/ConfigMap',
  '/Secret',
  'apps/ReplicaSet',
  '/Pod',
]);

/**
 * Kinds that `versioning: referenced` (the default) versions only when a reference rule of the render set points at
 * the object: a ConfigMap or Secret that nothing in the set names is read by name by some program (an ingress
 * controller's `--configmap=ns/name`, a GitOps tool's `argocd-cm`), and keeps its name. The other kinds of
 * VERSIONED_BY_DEFAULT (ReplicaSet, Pod) are named by no program's flag and stay versioned.
 */
export const VERSIONED_WHEN_REFERENCED: ReadonlySet<string> = new Set(['/ConfigMap', '/Secret']);

/** Kinds whose replica count `strategy.spinnaker.io/use-source-capacity` may take from the live object. */
export const SOURCE_CAPACITY_KINDS: ReadonlySet<string> = new Set([
  'apps/Deployment',
  'apps/ReplicaSet',
  'apps/StatefulSet',
]);

export function rulesFor<T extends KindRule>(rules: readonly T[], group: string, kind: string): T[] {
  return rules.filter((r) => r.kind === kind && r.group === group);
}

/** The rules of one table by group, then kind. */
type RuleIndex<T> = Map<string, Map<string, T[]>>;

// A table's index, made once: every render of every deployment asks with the same built-in tables (at 1,000
// deployments, a new index per render was 8% of what the agent allocated).
const indexes = new WeakMap<readonly KindRule[], RuleIndex<KindRule>>();

function indexOf<T extends KindRule>(rules: readonly T[]): RuleIndex<T> {
  const index: RuleIndex<T> = new Map();
  for (const rule of rules) {
    let kinds = index.get(rule.group);
    if (!kinds) {
      kinds = new Map();
      index.set(rule.group, kinds);
    }
    const list = kinds.get(rule.kind);
    if (list) list.push(rule);
    else kinds.set(rule.kind, [rule]);
  }
  return index;
}

const NO_RULES: readonly never[] = [];

/**
 * The rules of each kind, looked up by group and kind (one table, or a built-in table and the config's). The tables
 * are read as they are now: one is not to be changed after it is indexed.
 */
export function indexRules<T extends KindRule>(
  ...tables: (readonly T[])[]
): (group: string, kind: string) => readonly T[] {
  const given = tables.filter((t) => t.length > 0);
  let index: RuleIndex<T>;
  if (given.length === 1) {
    const table = given[0] as readonly T[];
    const kept = indexes.get(table) as RuleIndex<T> | undefined;
    index = kept ?? indexOf(table);
    if (!kept) indexes.set(table, index as RuleIndex<KindRule>);
  } else index = indexOf(given.flat());
  return (group, kind) => index.get(group)?.get(kind) ?? NO_RULES;
}
