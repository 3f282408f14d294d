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
