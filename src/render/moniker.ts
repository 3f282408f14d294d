// Monikers and the recommended labels (seed 001 "Reserved annotations" and "Reserved labels"): the application
// and cluster annotations are written when absent (stack and detail are the user's), and the labels
// app.kubernetes.io/name and app.kubernetes.io/managed-by go on objects and pod templates, never on selectors.
// A workload that another tool applied keeps its pod template as it is when mooring adopts it (docs/adoption.md),
// unless render.podTemplateLabels is true: new labels there would roll every pod.
import { LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY, MONIKER, POD_TEMPLATE_LABELS } from './annotations.ts';
import { groupOf, isObject, type JsonValue, type KubeObject } from './manifest.ts';
import { select } from './path.ts';
import type { KindRule } from './tables.ts';

export interface MonikerOptions {
  application: string;
  applyAppLabels: boolean;
  podTemplates: (group: string, kind: string) => readonly KindRule[];
  /**
   * Whether the labels go on the object's pod templates too. Not on those of a workload adopted from another tool
   * (render.podTemplateLabels `auto`): a changed pod template restarts every pod.
   */
  templates: boolean;
}

/** How a live workload is named in the snapshot's `adopted` list. */
export function workloadKey(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ''}/${name}`;
}

/** Spinnaker's cluster of an object: `deployment web`, `configMap app-config` (the base name when versioned). */
export function defaultCluster(kind: string, baseName: string): string {
  return `${kind.charAt(0).toLowerCase()}${kind.slice(1)} ${baseName}`;
}

export function applyMoniker(object: KubeObject, baseName: string, options: MonikerOptions): void {
  const annotations = { ...object.metadata.annotations };
  annotations[MONIKER.application] ??= options.application;
  annotations[MONIKER.cluster] ??= defaultCluster(object.kind, baseName);
  object.metadata.annotations = annotations;
  if (!options.applyAppLabels) return;
  const application = annotations[MONIKER.application] ?? options.application;
  object.metadata.labels = withAppLabels(object.metadata.labels, application);
  if (!options.templates) {
    // Said on the object, so that later deploys (which see mooring's labels on it) keep its templates as they are.
    if (options.podTemplates(groupOf(object.apiVersion), object.kind).some((r) => r.path !== ''))
      object.metadata.annotations = { ...object.metadata.annotations, [POD_TEMPLATE_LABELS]: 'false' };
    return;
  }
  for (const rule of options.podTemplates(groupOf(object.apiVersion), object.kind)) {
    if (rule.path === '') continue; // a Pod is its own template: done above
    for (const template of select(object as unknown as JsonValue, rule.path)) {
      if (!isObject(template.value)) continue;
      const metadata = isObject(template.value.metadata) ? template.value.metadata : {};
      const labels = isObject(metadata.labels) ? (metadata.labels as Record<string, string>) : undefined;
      template.value.metadata = { ...metadata, labels: withAppLabels(labels, application) };
    }
  }
}

function withAppLabels(
  labels: Record<string, string> | undefined,
  application: string,
): Record<string, string> {
  return { ...labels, [LABEL_NAME]: labels?.[LABEL_NAME] ?? application, [LABEL_MANAGED_BY]: MANAGED_BY };
}
