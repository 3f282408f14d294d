// The order in which a rendered set is written: phases of kinds (namespaces, CRDs, access, configuration,
// services, workloads, the rest), so that what an object needs exists before it.
const PHASES: readonly (readonly string[])[] = [
  ['Namespace'],
  ['CustomResourceDefinition'],
  [
    'ServiceAccount',
    'Role',
    'ClusterRole',
    'RoleBinding',
    'ClusterRoleBinding',
    'PriorityClass',
    'StorageClass',
    'LimitRange',
    'ResourceQuota',
    'PodSecurityPolicy',
    'NetworkPolicy',
  ],
  ['ConfigMap', 'Secret', 'PersistentVolume', 'PersistentVolumeClaim'],
  ['Service'],
  ['Pod', 'ReplicationController', 'ReplicaSet', 'Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob'],
];

/** The phase a kind is written in; kinds not named come last. */
export function phaseOf(kind: string): number {
  const index = PHASES.findIndex((kinds) => kinds.includes(kind));
  return index === -1 ? PHASES.length : index;
}

/** `items` in batches, one per phase present, earliest phase first; each batch keeps the order of `items`. */
export function inPhases<T>(items: readonly T[], kindOf: (item: T) => string): T[][] {
  const byPhase = new Map<number, T[]>();
  for (const item of items) {
    const phase = phaseOf(kindOf(item));
    const batch = byPhase.get(phase);
    if (batch) batch.push(item);
    else byPhase.set(phase, [item]);
  }
  return [...byPhase.keys()].sort((a, b) => a - b).map((phase) => byPhase.get(phase) ?? []);
}

interface Placed {
  object: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string | undefined };
    spec?: unknown;
  };
}

/**
 * The objects of `set` that `waiting` (objects that cannot be dry-run yet) need before their dry run: the set's own
 * Namespaces they are in and the set's CRDs that define their kinds. These are written first, alone, so that the
 * rest is validated whole before anything else is written.
 */
export function prerequisitesOf<T extends Placed>(waiting: readonly T[], set: readonly T[]): T[] {
  const namespaces = new Set(waiting.map((t) => t.object.metadata.namespace).filter((n) => n !== undefined));
  const kinds = new Set(waiting.map((t) => `${groupOf(t.object.apiVersion)}/${t.object.kind}`));
  return set.filter(({ object }) => {
    if (object.kind === 'Namespace' && object.apiVersion === 'v1')
      return namespaces.has(object.metadata.name);
    if (object.kind !== 'CustomResourceDefinition') return false;
    const spec = object.spec as { group?: unknown; names?: { kind?: unknown } } | undefined;
    return kinds.has(`${String(spec?.group)}/${String(spec?.names?.kind)}`);
  });
}

function groupOf(apiVersion: string): string {
  return apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '';
}
