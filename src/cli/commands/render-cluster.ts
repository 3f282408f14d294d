// What `mooring render` reads from the cluster when it is not --offline: the cluster's capabilities for a chart,
// the scope of custom kinds, existing versions and live objects, the hash key of versioned Secrets, and the
// warnings the API server gives on the way. Its own module, loaded only when there is a cluster: the cluster client
// is most of what the CLI would otherwise load before rendering a byte offline.
import { commandKubeApi } from '../../kube/api.ts';
import { loadKubeConfig } from '../../kube/client.ts';
import { hearKindWarnings } from '../../kube/deprecations.ts';
import { Discovery } from '../../kube/discovery.ts';
import { readHashKey } from '../../kube/hash-key.ts';
import { chartLookup } from '../../kube/lookup-server.ts';
import { discoverClusterScoped } from '../../kube/scope.ts';
import { assertServed } from '../../kube/served.ts';
import { readSnapshot } from '../../kube/snapshot.ts';
import { describeWarning, WarningLog, withWarnings } from '../../kube/warnings.ts';
import { isClusterScoped, type KubeObject } from '../../render/manifest.ts';
import { assertWithinBoundary } from '../../render/namespace-boundary.ts';
import { type ManifestFile, type ParseLimits, parseManifestFiles } from '../../render/parse.ts';
import type { ClusterSnapshot, RenderOptions } from '../../render/render.ts';
import type { ChartLookup } from '../../sources/build/lookup.ts';
import type { ClusterCapabilities } from '../../sources/deployment-manifests.ts';
import { type ClusterFlags, clusterAccess, manifestBoundary } from '../cluster-flags.ts';

export { HASH_KEY_SECRET } from '../../kube/hash-key.ts';

/** The kubeconfig's namespace, for objects and a chart when -n is not given. */
export function kubeconfigNamespace(flags: ClusterFlags): string | undefined {
  return loadKubeConfig(clusterAccess(flags)).namespace;
}

export interface ClusterReading {
  /** The namespace objects without one go to: -n, else the kubeconfig's. */
  namespace: string | undefined;
  capabilities: () => Promise<ClusterCapabilities>;
  /** Serves a chart's `lookup` of live objects (the agent's namespace, with the hash key, left out). */
  lookup: ChartLookup;
  /**
   * Reads what render needs of the cluster for `files`: the scope of their custom kinds (added to `known`), the
   * snapshot, and the hash key when `keyNeeded` and none was given.
   */
  read(
    files: readonly ManifestFile[],
    options: {
      limits: ParseLimits | undefined;
      known: string[];
      settings: Partial<Pick<RenderOptions, 'applyAppLabels' | 'podTemplateLabels' | 'referenceRules'>>;
      keyNeeded: boolean;
      agentNamespace: string;
    },
  ): Promise<{ snapshot: ClusterSnapshot; hashKey: Uint8Array | undefined }>;
  /** The API server's warnings heard so far, as lines. */
  warnings(): string[];
  close(): void;
}

export function clusterReading(flags: ClusterFlags & { agentNamespace: string }): ClusterReading {
  const clusterConfig = loadKubeConfig(clusterAccess(flags));
  const api = commandKubeApi(clusterConfig);
  const discovery = new Discovery(api);
  // What the API server warns about while it is read (a deprecated kind) is printed with the rest.
  const warnings = new WarningLog();
  const namespace = flags.namespace ?? clusterConfig.namespace;
  return {
    namespace,
    capabilities: () => discovery.capabilities(),
    lookup: chartLookup(api, { exclude: [flags.agentNamespace] }),
    read: (files, options) =>
      withWarnings(warnings, async () => {
        const ns = namespace ?? 'default';
        // Render reports parse problems itself; the lookup only needs the objects that parse.
        const { objects } = parseManifestFiles(files, options.limits);
        const placed = new Set<KubeObject>();
        const scoped = new Set(options.known);
        for (const { object } of objects) {
          if (isClusterScoped(object.apiVersion, object.kind, scoped) || object.metadata.namespace) continue;
          object.metadata.namespace = ns;
          placed.add(object);
        }
        // Objects outside -n are refused before the cluster is asked anything about them.
        assertWithinBoundary({ objects, errors: [] }, manifestBoundary(flags, ns));
        // A version the cluster no longer serves is named with its replacement, as a deploy would.
        await assertServed(discovery, objects);
        // The scope of each custom kind from the cluster's discovery, as deploy places objects.
        const served = new Set(await discoverClusterScoped(discovery, objects, options.known));
        options.known.push(...served);
        for (const object of placed)
          if (isClusterScoped(object.apiVersion, object.kind, served)) delete object.metadata.namespace;
        const snapshot = await readSnapshot(api, objects, discovery, {
          adopted: options.settings.applyAppLabels !== false && options.settings.podTemplateLabels === 'auto',
          referenceRules: options.settings.referenceRules,
        });
        const hashKey = options.keyNeeded ? await readHashKey(api, options.agentNamespace) : undefined;
        // No dry run here: what the server says of the set's kinds (a deprecated version) is asked once a kind.
        await hearKindWarnings(api, discovery, objects);
        return { snapshot, hashKey };
      }),
    warnings: () => warnings.list().map(describeWarning),
    close: () => api.close(),
  };
}
