// The reserved annotations and labels mooring reads and writes: Spinnaker's Kubernetes provider's, so that
// manifests written for Spinnaker work unchanged, plus mooring's own content hash.

export const MONIKER = {
  application: 'moniker.spinnaker.io/application',
  cluster: 'moniker.spinnaker.io/cluster',
  stack: 'moniker.spinnaker.io/stack',
  detail: 'moniker.spinnaker.io/detail',
  sequence: 'moniker.spinnaker.io/sequence',
} as const;

export const ARTIFACT = {
  name: 'artifact.spinnaker.io/name',
  type: 'artifact.spinnaker.io/type',
  location: 'artifact.spinnaker.io/location',
  version: 'artifact.spinnaker.io/version',
} as const;

export const STRATEGY = {
  versioned: 'strategy.spinnaker.io/versioned',
  useSourceCapacity: 'strategy.spinnaker.io/use-source-capacity',
  maxVersionHistory: 'strategy.spinnaker.io/max-version-history',
  recreate: 'strategy.spinnaker.io/recreate',
  replace: 'strategy.spinnaker.io/replace',
  serverSideApply: 'strategy.spinnaker.io/server-side-apply',
} as const;

/**
 * On a workload mooring adopted from another tool: `"false"`, its pod templates are left without mooring's labels
 * (render.podTemplateLabels auto), on this deploy and every later one.
 */
export const POD_TEMPLATE_LABELS = 'mooring.io/pod-template-labels';

/** The wave an object is applied in (lowest first, each stable before the next): Argo CD's and mooring's names. */
export const SYNC_WAVE = ['argocd.argoproj.io/sync-wave', 'mooring.io/sync-wave'] as const;

/**
 * Argo CD's per-object sync options (`Prune=false,Replace=true`): mooring reads `Prune=false` and `Delete=false`
 * (src/kube/prune.ts), `Replace=true`, with `Force=true`, and `SkipDryRunOnMissingResource=true`
 * (src/render/strategy.ts); the others ask for what mooring does anyway (server-side apply) or concern Argo CD alone.
 */
export const ARGO_SYNC_OPTIONS = 'argocd.argoproj.io/sync-options';

/** The options of an `argocd.argoproj.io/sync-options` value, as Argo CD splits it (commas, spaces trimmed). */
export function argoSyncOptions(value: unknown): Set<string> {
  if (typeof value !== 'string') return new Set();
  return new Set(
    value
      .split(',')
      .map((o) => o.trim())
      .filter((o) => o !== ''),
  );
}

/**
 * Flux's apply behaviour of one object: `IfNotPresent` (created when absent, never written again) and `Ignore`
 * (never written); `Override` and `Merge` ask for what server-side apply does anyway.
 */
export const FLUX_SSA = 'kustomize.toolkit.fluxcd.io/ssa';

/**
 * Flux's `kustomize.toolkit.fluxcd.io/reconcile: disabled`, read on the live object (added by hand during an
 * incident, or brought by the manifest and so on the object from its creation): the object is no longer written
 * nor pruned, and a drift pass leaves it, as Flux's controllers leave it.
 */
export const FLUX_RECONCILE = 'kustomize.toolkit.fluxcd.io/reconcile';

/** Whether an object's annotations say Flux's reconcile is disabled on it (FLUX_RECONCILE). */
export function reconcileDisabled(annotations: Record<string, unknown> | undefined): boolean {
  const value = annotations?.[FLUX_RECONCILE];
  return typeof value === 'string' && value.trim().toLowerCase() === 'disabled';
}

/** The object is written at most once (FLUX_SSA), or not at all: the annotation's value, else undefined. */
export function writeOnceBy(
  annotations: Readonly<Record<string, string>> | undefined,
): 'IfNotPresent' | 'Ignore' | undefined {
  const value = annotations?.[FLUX_SSA]?.trim();
  return value === 'IfNotPresent' || value === 'Ignore' ? value : undefined;
}

export const TRAFFIC_LOAD_BALANCERS = 'traffic.spinnaker.io/load-balancers';
export const CACHING_IGNORE = 'caching.spinnaker.io/ignore';

/** sha256 of a versioned object's content: how an unchanged object finds the version it already has. */
export const CONTENT_HASH = 'mooring.io/content-hash';

export const LABEL_NAME = 'app.kubernetes.io/name';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'mooring';

/** `kubernetes/configMap`: Spinnaker's artifact type for a kind. */
export function artifactType(kind: string): string {
  return `kubernetes/${kind.charAt(0).toLowerCase()}${kind.slice(1)}`;
}
