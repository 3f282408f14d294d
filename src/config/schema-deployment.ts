// A deployment of the configuration (schema.ts): what it deploys, where, how it reports, which clusters it goes to.
import { z } from 'zod';
import { duration, httpUrl, interval, name, secretRef } from './schema-fields.ts';
import { repositoryUrlText } from './schema-sources.ts';

export const commitStatus = z.strictObject({
  enabled: z.boolean().default(true),
  provider: z
    .enum(['auto', 'github', 'gitlab', 'gitea', 'bitbucket-cloud', 'bitbucket-server'])
    .default('auto'),
  /** API base URL for self-hosted providers (GitHub Enterprise, GitLab self-managed, …). */
  apiUrl: httpUrl.optional(),
  token: secretRef.optional(),
  /** Unique per cluster and deployment so that statuses of several clusters do not collide. */
  context: z.string().min(1).default('mooring/{cluster}/{deployment}'),
  targetUrl: z.string().optional(),
  /** How long a final status the API did not take is kept (in the cluster) and retried. */
  retryFor: duration.prefault('24h'),
});

/** What a notification is sent for (docs/notifications.md). */
export const NOTIFY_OUTCOMES = ['failed', 'stable', 'pruned', 'held'] as const;

export const notificationReceiver = z
  .strictObject({
    name,
    /** slack: an incoming webhook; teams: a workflow webhook (Adaptive Card); webhook: JSON signed with HMAC-SHA256. */
    type: z.enum(['slack', 'teams', 'webhook']),
    /** The receiver's URL: a secret (a Slack webhook URL grants posting), read from a file or a variable. */
    url: secretRef,
    /** webhook: the HMAC-SHA256 key of X-Mooring-Signature. */
    secret: secretRef.optional(),
    /** At most this many messages a minute to this receiver; more wait their turn (or are dropped past `queue`). */
    perMinute: z.number().int().min(1).max(600).default(20),
    /** Messages waiting for this receiver; past it the oldest is dropped (logged and counted). */
    queue: z.number().int().min(1).max(10_000).default(100),
    /** How long an undelivered message is retried (5xx, 429, network) before it is given up. */
    retryFor: duration.prefault('10m'),
  })
  .refine((r) => r.type !== 'webhook' || r.secret !== undefined, {
    message: 'a webhook receiver needs "secret" (the HMAC-SHA256 key of X-Mooring-Signature)',
  });

/** Labels of a cluster, as a deployment's cluster selector matches them (Kubernetes label syntax). */
export const clusterLabels = z.record(
  z
    .string()
    .max(253)
    .regex(/^([a-z0-9.-]+\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/, 'must be a label key (e.g. tier)'),
  z
    .string()
    .max(63)
    .regex(/^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/, 'must be a label value'),
);

/**
 * Which clusters (docs/clusters.md): one name, a list of names, or `{names, selector}` where a selector matches
 * the clusters whose labels have every key with its value (an empty selector: every cluster).
 */
export const clusterSelection = z.union([
  name,
  z.array(name).min(1),
  z
    .strictObject({ names: z.array(name).min(1).optional(), selector: clusterLabels.optional() })
    .refine((s) => s.names !== undefined || s.selector !== undefined, {
      message: 'give "names", "selector" or both',
    }),
]);
export type ClusterSelection = z.infer<typeof clusterSelection>;

/** Where the agent's request budget may grow when the configuration sets neither `qps` nor `qpsMax`. */
export const DEFAULT_QPS_MAX = 1000;

/**
 * The request budget of a cluster's client (KubeApi's qps, qpsMax and burst) from its settings. Left unset, it adapts:
 * from 200 requests a second up to DEFAULT_QPS_MAX, following the API server (docs/fleet.md). A `qps` set alone is
 * fixed: whoever set it chose that rate.
 */
export function requestBudget(limits: {
  qps?: number | undefined;
  qpsMax?: number | undefined;
  burst: number;
}) {
  if (limits.qps === undefined)
    return { qps: 200, qpsMax: limits.qpsMax ?? DEFAULT_QPS_MAX, burst: limits.burst };
  return { qps: limits.qps, qpsMax: limits.qpsMax ?? limits.qps, burst: limits.burst };
}

/** How the API server of a cluster is reached and what the agent may ask of it. */
export const clusterLimits = {
  /**
   * A request to the API server that receives nothing for this long is abandoned and retried (a stopped or
   * unreachable server); watch streams have their own, longer limit.
   */
  requestTimeout: duration.prefault('30s'),
  /**
   * The agent's request budget to the API server, shared by all syncs (watch streams are not counted), as
   * client-go's --kube-api-qps and --kube-api-burst: requests a second, and at once after a quiet time. With
   * `qpsMax` above `qps` it adapts (docs/fleet.md, "An adaptive request budget"): from `qps` up to `qpsMax` while
   * requests wait for it and the API server answers promptly, stepping down when answers slow and halving at each
   * 429. Neither set: it adapts from 200 up to 1,000 a second. `qps` set alone: fixed at it.
   */
  qps: z.number().positive().max(10_000).optional(),
  qpsMax: z.number().positive().max(10_000).optional(),
  burst: z.number().int().min(1).max(10_000).default(400),
};

/**
 * Another cluster the agent deploys to (docs/clusters.md): its kubeconfig from a file or a Secret of the agent's
 * own cluster, with a context, and labels that deployments select it by. Its ledgers, inventories, outbox and
 * control ConfigMap live in its own `namespace`.
 */
export const targetCluster = z
  .strictObject({
    name,
    inCluster: z.boolean().default(false),
    kubeconfig: z.string().min(1).optional(),
    /**
     * A kubeconfig kept in a Secret of the agent's own cluster (namespace: the agent's). It is data: inline
     * certificates, keys and tokens only (src/kube/kubeconfig-secret.ts; docs/security.md).
     */
    kubeconfigSecret: z
      .strictObject({
        name,
        key: z.string().min(1).max(253).default('value'),
        namespace: name.optional(),
        /**
         * Runs the kubeconfig's `exec` credential plugin: whoever may write the Secret runs code in the agent
         * (as Flux's --insecure-kubeconfig-exec).
         */
        allowExec: z.boolean().default(false),
        /** Takes `insecure-skip-tls-verify` and an `http:` server (as Flux's --insecure-kubeconfig-tls). */
        allowInsecureTLS: z.boolean().default(false),
      })
      .optional(),
    context: z.string().min(1).optional(),
    labels: clusterLabels.default({}),
    namespace: name.default('mooring'),
    ...clusterLimits,
  })
  .refine(
    (c) =>
      [c.inCluster, c.kubeconfig !== undefined, c.kubeconfigSecret !== undefined].filter(Boolean).length ===
      1,
    { message: 'give one of "inCluster: true", "kubeconfig" or "kubeconfigSecret"' },
  )
  .refine((c) => !(c.inCluster && c.context), { message: 'inCluster cannot be combined with context' });
export type TargetCluster = z.infer<typeof targetCluster>;

export const deployment = z.strictObject({
  name,
  namespace: name,
  /** The deployment set that made it (docs/deployment-sets.md): filled in by mooring, never written by hand. */
  set: name.optional(),
  /**
   * Removed from its set, which prunes on removal: its last sync deploys nothing, so that its objects are pruned,
   * and, for a pull request's environment, then deletes the namespace it created (docs/deployment-sets.md). Filled
   * in by mooring, never written by hand.
   */
  removing: z.enum(['objects', 'namespace']).optional(),
  /** The moniker application; the deployment's namespace when absent, as for the CLI (docs/cli.md). */
  application: name.optional(),
  /** A git or local source that holds the manifests. */
  source: name,
  paths: z.array(z.string().min(1)).min(1).default(['.']),
  exclude: z.array(z.string().min(1)).default([]),
  /**
   * Whether a folder among `paths` is read with its subfolders (the default, and how deployments have always been
   * read), or only the files directly in it, as `kubectl apply -f DIR` and the CLI without -R read one.
   */
  recursive: z.boolean().default(true),
  /** Registry sources whose images are bound into the manifests by digest. */
  images: z.array(name).default([]),
  stability: z.strictObject({ timeout: duration.prefault('30m') }).prefault({}),
  /** Per-kind default for versioning, overridden per object by strategy.spinnaker.io/versioned. */
  versioned: z.record(z.string(), z.boolean()).default({}),
  /**
   * What is versioned where neither the annotation nor `versioned` decides (docs/render.md): the ConfigMaps and
   * Secrets a reference in the set points at (`referenced`: those nothing names keep their names, for programs
   * that read them by name), every ConfigMap and Secret (`all`, Spinnaker's way), or nothing (`none`).
   */
  versioning: z.enum(['referenced', 'all', 'none']).default('referenced'),
  requireDigests: z.boolean().default(false),
  imageMatch: z.enum(['match-name-and-tag', 'match-name-only']).default('match-name-and-tag'),
  /** Namespaces besides its own that the deployment's objects may name; `*` matches any characters. */
  allowedNamespaces: z
    .array(z.string().regex(/^[a-z0-9*]([-a-z0-9*]*[a-z0-9*])?$/, 'must be a namespace name, "*" allowed'))
    .default([]),
  /** Cluster-scoped objects: none (false), all (true), or those of these kinds (`Kind` or `group/Kind`). */
  allowClusterScoped: z
    .union([
      z.boolean(),
      z.array(z.string().regex(/^([a-z0-9.-]*\/)?[A-Za-z0-9]+$/, 'must be Kind or group/Kind')),
    ])
    .default(false),
  commitStatus: commitStatus.prefault({}),
  /** Notifications of this deployment's outcomes: which receiver, for which outcomes. */
  notify: z
    .array(
      z.strictObject({
        receiver: name,
        on: z.array(z.enum(NOTIFY_OUTCOMES)).min(1).default(['failed', 'held']),
      }),
    )
    .default([]),
  /**
   * A Helm chart in the source, rendered with `helm template` before mooring's own render (docs/helm.md); its
   * paths are relative to the source's root. `paths` then only says which commits concern the deployment.
   */
  helm: z
    .strictObject({
      /** A chart folder in the deployment's source. */
      chart: z.string().min(1).optional(),
      /** Or a chart source (`sources.charts`): a chart from a chart repository or an OCI registry. */
      chartSource: name.optional(),
      /** The release name; the deployment's name when absent. */
      releaseName: name.optional(),
      valuesFiles: z.array(z.string().min(1)).default([]),
      /** Inline values, applied after the files. */
      values: z.record(z.string(), z.unknown()).default({}),
      /**
       * `key: value` pairs passed to helm as `--set key=value` (and `--set-string`), read by helm's rules (dotted
       * keys, `a[0]`, `{x,y}` lists, commas between assignments), after the files and the inline values.
       */
      set: z.record(z.string().min(1), z.string()).default({}),
      setString: z.record(z.string().min(1), z.string()).default({}),
      /**
       * URL prefixes a chart dependency may come from when it is not in the chart's charts/ folder, and that a
       * values schema's references may name (helm fetches them: src/sources/build/schema-references.ts), compared
       * parsed: same scheme, host and port, and the prefix's path segments (src/http/repository-url.ts).
       */
      allowedRepositories: z.array(repositoryUrlText).default([]),
    })
    .refine((h) => (h.chart === undefined) !== (h.chartSource === undefined), {
      message: 'give "chart" (a folder of the source) or "chartSource" (a chart source), not both',
    })
    .optional(),
  /** Delete what an earlier sync applied and the manifests no longer hold (objects annotated mooring.io/prune: disabled stay). */
  prune: z.boolean().default(true),
  /** Manifests that render no objects are an error while the deployment has objects, unless this is set. */
  allowEmpty: z.boolean().default(false),
  /** Versions kept of each versioned ConfigMap/Secret without strategy.spinnaker.io/max-version-history. */
  versionHistory: z.number().int().min(1).max(1000).default(10),
  /**
   * Create the deployment's namespace (with mooring's labels) when it does not exist, before the first write. It
   * is never pruned. Without it, a missing namespace fails the sync, which is retried.
   */
  createNamespace: z.boolean().default(false),
  /**
   * The longest wait between retries of a sync that failed for a reason that may pass (an unreachable API server,
   * a namespace not created yet); back-off with full jitter up to it. Default: the poll interval of its source.
   */
  retryInterval: interval.optional(),
  /**
   * Deployments that must be stable first (docs/agent.md): a revision is synced only once each one's current
   * release is stable, and after its sync of the same commit when a commit changes both.
   */
  dependsOn: z.array(name).default([]),
  /**
   * The clusters it is deployed to (docs/clusters.md), each as a unit of its own (render, apply, wait, ledger,
   * commit status). Default: the agent's own cluster (`cluster`).
   */
  clusters: clusterSelection.optional(),
  /**
   * Steps across its clusters: a step starts a revision only once every cluster of the step before is stable at
   * it; a failure stops the steps after. `maxParallel`: how many clusters of the step sync at once.
   */
  rollout: z
    .array(
      z.strictObject({
        clusters: clusterSelection,
        maxParallel: z.number().int().min(1).max(1000).optional(),
      }),
    )
    .min(1)
    .max(20)
    .optional(),
  /**
   * Promotion (docs/clusters.md): deploys only the revision (commit and images) that deployment `from` has had
   * stable in each of its clusters for `after`, never a newer one; `approval: manual` also waits for
   * `mooring promote`.
   */
  promote: z
    .strictObject({
      from: name,
      after: duration.optional(),
      approval: z.enum(['auto', 'manual']).default('auto'),
    })
    .optional(),
});
export type Deployment = z.infer<typeof deployment>;
