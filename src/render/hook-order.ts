// The order in which the hooks of one phase run (src/render/hooks.ts says which objects are hooks of which phase):
// Helm's, one hook at a time, and Argo CD's, a wave at a time. Pure.
import { byCodeUnit } from '../arrays.ts';
import type { Hook } from './hooks.ts';
import type { KubeObject } from './manifest.ts';

/**
 * Helm's InstallOrder (pkg/release/v1/util/kind_sorter.go): the order in which it lists hooks of one weight and
 * name. Kinds it does not list come after, alphabetically.
 */
const INSTALL_ORDER: readonly string[] = [
  'PriorityClass',
  'Namespace',
  'NetworkPolicy',
  'ResourceQuota',
  'LimitRange',
  'PodSecurityPolicy',
  'PodDisruptionBudget',
  'ServiceAccount',
  'Secret',
  'SecretList',
  'ConfigMap',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleList',
  'ClusterRoleBinding',
  'ClusterRoleBindingList',
  'Role',
  'RoleList',
  'RoleBinding',
  'RoleBindingList',
  'Service',
  'DaemonSet',
  'Pod',
  'ReplicationController',
  'ReplicaSet',
  'Deployment',
  'HorizontalPodAutoscaler',
  'StatefulSet',
  'Job',
  'CronJob',
  'IngressClass',
  'Ingress',
  'APIService',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
];

/** Helm's kind order: listed kinds by their place, then the others alphabetically. */
export function compareInstallOrder(a: string, b: string): number {
  const ia = INSTALL_ORDER.indexOf(a);
  const ib = INSTALL_ORDER.indexOf(b);
  if (ia >= 0 && ib >= 0) return ia - ib;
  if (ia >= 0) return -1;
  if (ib >= 0) return 1;
  return byCodeUnit(a, b);
}

/**
 * The steps of one phase, in the order they run. Helm (pkg/action/hooks.go) runs its hooks one at a time: by
 * weight, then name, then kind in InstallOrder; each is created and waited on before the next. Argo CD runs the
 * hooks of one wave together, by kind and name within it. Deletion per hook-succeeded comes after the whole
 * phase (src/sync/hooks.ts), never between steps.
 */
export function hookOrder<T extends { object: KubeObject; hook: Hook }>(hooks: readonly T[]): T[][] {
  const sorted = [...hooks].sort((a, b) => {
    const weight = a.hook.weight - b.hook.weight;
    if (weight !== 0) return weight;
    if (a.hook.flavor !== b.hook.flavor) return a.hook.flavor === 'helm' ? -1 : 1;
    if (a.hook.flavor === 'helm')
      return (
        byCodeUnit(a.object.metadata.name, b.object.metadata.name) ||
        compareInstallOrder(a.object.kind, b.object.kind)
      );
    return (
      byCodeUnit(a.object.kind, b.object.kind) || byCodeUnit(a.object.metadata.name, b.object.metadata.name)
    );
  });
  const steps: T[][] = [];
  for (const item of sorted) {
    const last = steps.at(-1);
    const first = last?.[0];
    if (
      last &&
      first &&
      item.hook.flavor === 'argo' &&
      first.hook.flavor === 'argo' &&
      first.hook.weight === item.hook.weight
    )
      last.push(item);
    else steps.push([item]);
  }
  return steps;
}
