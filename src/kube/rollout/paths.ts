// Where the rollout operations send their requests: the apps/v1 paths of the workload kinds, their scale
// subresource, and label selectors in the syntax of the list API's labelSelector parameter.
import type { LabelSelector } from './types.ts';

/** The apps/v1 resource (plural) of each kind the rollout operations act on. */
const APPS_RESOURCES: Readonly<Record<string, string>> = {
  Deployment: 'deployments',
  StatefulSet: 'statefulsets',
  DaemonSet: 'daemonsets',
  ReplicaSet: 'replicasets',
  ControllerRevision: 'controllerrevisions',
};

/** `/apis/apps/v1/namespaces/NS/deployments`: the collection of an apps/v1 kind in a namespace. */
export function appsCollectionPath(kind: string, namespace: string): string {
  const plural = APPS_RESOURCES[kind];
  if (!plural) throw new Error(`${kind} is not an apps/v1 kind that mooring acts on`);
  return `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/${plural}`;
}

/** `/apis/apps/v1/namespaces/NS/deployments/NAME`, or one of its subresources (`scale`). */
export function workloadPath(
  ref: { kind: string; namespace: string; name: string },
  subresource?: 'scale',
): string {
  const path = `${appsCollectionPath(ref.kind, ref.namespace)}/${encodeURIComponent(ref.name)}`;
  return subresource ? `${path}/${subresource}` : path;
}

/**
 * A label selector in the syntax of the list API's labelSelector parameter. An empty selector is refused: it
 * would list every object of the namespace.
 */
export function selectorString(selector: LabelSelector | undefined): string {
  const terms = Object.entries(selector?.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const { key, operator, values = [] } of selector?.matchExpressions ?? []) {
    if (operator === 'In') terms.push(`${key} in (${values.join(',')})`);
    else if (operator === 'NotIn') terms.push(`${key} notin (${values.join(',')})`);
    else if (operator === 'Exists') terms.push(key);
    else if (operator === 'DoesNotExist') terms.push(`!${key}`);
    else throw new Error(`selector operator ${operator} is not one of In, NotIn, Exists, DoesNotExist`);
  }
  if (terms.length === 0) throw new Error('has an empty selector');
  return terms.join(',');
}
