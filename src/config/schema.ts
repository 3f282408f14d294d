// The agent's configuration: one zod schema for the whole product, with its defaults, built from its sections
// (schema-fields.ts, schema-sources.ts, schema-deployment.ts; references.ts checks what crosses them). Parsed once at
// start (see load.ts); every other module receives the typed result.
import { z } from 'zod';
import { plainOrigin } from '../kube/member-verify.ts';
import { healthProblems } from '../stability/health.ts';
import { RENDER_DEFAULTS as D, MIN_TOOL_OUTPUT_BYTES } from './render-defaults.ts';
import {
  clusterLabels,
  clusterLimits,
  deployment,
  notificationReceiver,
  targetCluster,
} from './schema-deployment.ts';
import { duration, httpUrl, interval, name, secretRef } from './schema-fields.ts';
import { deploymentSet } from './schema-sets.ts';
import { chartSource, gitSource, localSource, ociSource, registrySource } from './schema-sources.ts';

export { checkReferences, pathProblem, type ReferenceProblem } from './references.ts';
export {
  type ClusterSelection,
  clusterSelection,
  type Deployment,
  deployment,
  NOTIFY_OUTCOMES,
  type TargetCluster,
} from './schema-deployment.ts';
export {
  duration,
  interval,
  isSecretRef,
  MIN_INTERVAL_MS,
  type SecretRef,
  secretRef,
} from './schema-fields.ts';
export {
  type ChartSource,
  chartSource,
  type GitSource,
  gitSource,
  type LocalSource,
  localSource,
  type OciSource,
  ociSource,
  type RegistrySource,
  registrySource,
} from './schema-sources.ts';

const cluster = z
  .strictObject({
    /** Names this cluster in commit-status contexts and the ledger. */
    name: name.default('default'),
    inCluster: z.boolean().default(false),
    kubeconfig: z.string().optional(),
    context: z.string().optional(),
    /** The agent's own namespace: where it keeps its release ledger. */
    namespace: name.default('mooring'),
    /** What deployments select this cluster by, beside its name (docs/clusters.md). */
    labels: clusterLabels.default({}),
    ...clusterLimits,
  })
  .refine((c) => !(c.inCluster && (c.kubeconfig || c.context)), {
    message: 'inCluster cannot be combined with kubeconfig or context',
  });

const server = z.strictObject({
  port: z.number().int().min(0).max(65535).default(8080),
  address: z.string().default('0.0.0.0'),
  maxBodyBytes: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  webhooks: z
    .strictObject({
      github: z.strictObject({ secret: secretRef }).optional(),
      gitlab: z.strictObject({ token: secretRef }).optional(),
      gitea: z.strictObject({ secret: secretRef }).optional(),
      /** Bitbucket Cloud and Data Center: the webhook's secret (X-Hub-Signature). */
      bitbucket: z.strictObject({ secret: secretRef }).optional(),
      generic: z.strictObject({ secret: secretRef }).optional(),
      registry: z.strictObject({ token: secretRef }).optional(),
    })
    .default({}),
  /**
   * The read-only status page at /status (docs/status-page.md): off by default; its data needs the bearer token
   * `token` unless `anonymous` (only behind an authenticating proxy).
   */
  statusPage: z
    .strictObject({
      enabled: z.boolean().default(false),
      token: secretRef.optional(),
      anonymous: z.boolean().default(false),
      /** Releases listed per deployment. */
      releases: z.number().int().min(1).max(50).default(10),
    })
    .refine((p) => !p.enabled || p.anonymous || p.token !== undefined, {
      message:
        'an enabled status page needs "token" (a bearer token from a Secret), or "anonymous: true" behind an authenticating proxy',
    })
    .refine((p) => !(p.anonymous && p.token !== undefined), {
      message: 'give "token" or "anonymous: true", not both',
    })
    .prefault({}),
});

const render = z.strictObject({
  /** Extra places where custom resources hold images or references, as data (absolute paths, `[*]` for arrays). */
  imagePaths: z
    .array(z.strictObject({ kind: z.string(), group: z.string().default(''), path: z.string() }))
    .default([]),
  referencePaths: z
    .array(
      z.strictObject({
        kind: z.string(),
        group: z.string().default(''),
        path: z.string(),
        target: z.enum(['ConfigMap', 'Secret']),
      }),
    )
    .default([]),
  maxFileBytes: z.number().int().positive().default(D.maxFileBytes),
  maxDocumentsPerFile: z.number().int().positive().default(D.maxDocumentsPerFile),
  /** Alias expansions one YAML document may make (and aliases it may hold), for every YAML text read. */
  maxAliasCount: z.number().int().min(0).default(D.maxAliasCount),
  /** Nodes one YAML document may hold, counted before it is composed (src/yaml/count.ts; docs/security.md). */
  maxYamlNodes: z.number().int().min(1000).default(D.maxYamlNodes),
  /**
   * Nodes of all the documents of one YAML text together (a manifest file, a chart's output): bounds the memory a
   * file's values take, whatever its number of documents. Never less than maxYamlNodes in effect.
   */
  maxYamlFileNodes: z.number().int().min(1000).default(D.maxYamlFileNodes),
  /** How deep one YAML document's collections may nest. */
  maxYamlDepth: z.number().int().min(16).max(512).default(D.maxYamlDepth),
  /** The labels app.kubernetes.io/name and managed-by (Spinnaker's kubernetes.v2.applyAppLabels). */
  applyAppLabels: z.boolean().default(D.applyAppLabels),
  /**
   * With applyAppLabels, whether pod templates get the labels too: true (always), false (never), or `auto`: not on
   * a workload first adopted from another tool, whose pods would all restart (docs/adoption.md).
   */
  podTemplateLabels: z.union([z.literal('auto'), z.boolean()]).default(D.podTemplateLabels),
  /** Cluster-scoped custom kinds as `group/Kind`, until discovery tells. */
  clusterScoped: z.array(z.string().regex(/^[a-z0-9.-]*\/[A-Za-z0-9]+$/, 'must be group/Kind')).default([]),
  /** The kubectl whose kustomize builds kustomizations; MOORING_KUBECTL, else `kubectl` on PATH, when absent. */
  kubectl: z.string().min(1).optional(),
  /** Kustomizations (docs/kustomize.md): remote bases (URLs in resources/bases) are refused unless allowed. */
  kustomize: z
    .strictObject({ allowRemoteBases: z.boolean().default(D.kustomize.allowRemoteBases) })
    .prefault({}),
  /** Each run of kubectl kustomize or helm template is stopped after this long. */
  toolTimeout: duration.prefault(`${D.toolTimeout / 1000}s`),
  /** Each run of kubectl kustomize or helm template is stopped when it prints more than this. */
  toolMaxOutputBytes: z.number().int().min(MIN_TOOL_OUTPUT_BYTES).default(D.toolMaxOutputBytes),
  /** The memory (RLIMIT_DATA) each run may allocate; a tool past it fails its build. 0: no limit. */
  toolMemoryBytes: z
    .number()
    .int()
    .refine((n) => n === 0 || n >= 64 * 1024 * 1024, 'must be 0 (no limit) or at least 67108864 (64 MiB)')
    .default(D.toolMemoryBytes),
});

const apply = z.strictObject({
  concurrency: z.number().int().min(1).max(64).default(8),
  fieldManager: z.string().min(1).default('mooring'),
});

const ledger = z.strictObject({ historyLimit: z.number().int().min(1).max(1000).default(50) });

const audit = z.strictObject({
  file: z.string().optional(),
  stdout: z.boolean().default(false),
  url: httpUrl.optional(),
  token: secretRef.optional(),
});

/**
 * A health rule in CEL for one kind, in the shape of Flux's healthCheckExprs (docs/stability.md, "Health you can
 * program"). Expressions are compiled here, so a bad one is a configuration error naming the rule.
 */
export const healthRule = z.strictObject({
  apiVersion: z.string().min(1),
  kind: z.string().regex(/^[A-Za-z][A-Za-z0-9]*$/, 'must be a Kind (e.g. Certificate)'),
  current: z.string().min(1),
  inProgress: z.string().min(1).optional(),
  failed: z.string().min(1).optional(),
});

export const healthRules = z.array(healthRule).superRefine((rules, ctx) => {
  for (const problem of healthProblems(rules))
    ctx.addIssue({
      code: 'custom',
      path: [problem.index, ...(problem.field ? [problem.field] : [])],
      message: problem.message,
    });
});

export const configSchema = z.strictObject({
  apiVersion: z.literal('mooring.io/v1alpha1').default('mooring.io/v1alpha1'),
  kind: z.literal('AgentConfig').default('AgentConfig'),
  cluster: cluster.prefault({}),
  /** More clusters to deploy to, beside the agent's own (`cluster`): deployments choose them (docs/clusters.md). */
  clusters: z.array(targetCluster).max(500).default([]),
  sources: z
    .strictObject({
      git: z.array(gitSource).default([]),
      registry: z.array(registrySource).default([]),
      local: z.array(localSource).default([]),
      /** Helm charts from chart repositories and OCI registries (docs/helm.md). */
      charts: z.array(chartSource).default([]),
      /** Manifests as OCI artifacts (docs/oci.md). */
      oci: z.array(ociSource).default([]),
    })
    .prefault({}),
  deployments: z.array(deployment).default([]),
  /** Deployments made from a template, one per list element or per folder of a Git source (docs/deployment-sets.md). */
  deploymentSets: z.array(deploymentSet).max(100).default([]),
  server: server.prefault({}),
  render: render.prefault({}),
  apply: apply.prefault({}),
  ledger: ledger.prefault({}),
  audit: audit.prefault({}),
  concurrency: z.number().int().min(1).max(64).default(4),
  /**
   * The syncs in flight follow the API server from `concurrency` up to this (src/sync/adaptive-concurrency.ts: grown
   * while syncs wait for a slot and answers stay fast, cut when they slow or at a 429); twice `concurrency` when
   * unset; equal to `concurrency`, fixed.
   */
  concurrencyMax: z.number().int().min(1).max(256).optional(),
  /** Several replicas: one leads (holds a coordination.k8s.io Lease in the agent's namespace) and syncs. */
  leaderElection: z
    .strictObject({
      enabled: z.boolean().default(false),
      leaseName: name.default('mooring'),
      leaseDuration: duration.prefault('15s'),
      renewInterval: interval.prefault('5s'),
      /**
       * `standby`: one replica syncs, the others wait on the Lease. `shared`: every replica syncs a share of the
       * deployments (consistent hashing with bounded loads over the live replicas; docs/replicas.md).
       */
      mode: z.enum(['standby', 'shared']).default('standby'),
      /** `shared`: how far above an even share one replica's deployments may go (1.25: 25 % more). */
      loadFactor: z.number().min(1).max(4).default(1.25),
      /**
       * `shared`: where the other replicas reach this one's webhooks (a webhook any replica takes is passed on to
       * the others). Default: `http://$POD_IP:<server.port>`, or the loopback address outside a cluster. An
       * origin only: the others take it from this replica's Lease only when it is one (src/kube/member-verify.ts).
       */
      address: httpUrl
        .refine((a) => plainOrigin(a) !== undefined, {
          message: 'must be an origin, http(s)://host:port, with no path, query or credentials',
        })
        .optional(),
    })
    // A holder that has not renewed within two thirds of the duration steps down (src/kube/lease.ts): renewing less
    // often than every half of it would make a leader on a healthy cluster step down between two renewals.
    .superRefine((election, ctx) => {
      if (election.renewInterval * 2 > election.leaseDuration)
        ctx.addIssue({
          code: 'custom',
          path: ['renewInterval'],
          message: `must be at most half of leaseDuration (${election.leaseDuration / 1000}s): a holder that has not renewed within two thirds of it steps down`,
        });
    })
    .prefault({}),
  /** Re-apply every deployment on an interval, so changes made by hand are put back (off by default). */
  drift: z
    .strictObject({
      interval: interval.optional(),
      /** `correct` puts back what was changed by hand; `report` only logs it, counts it and leaves it. */
      mode: z.enum(['correct', 'report']).default('correct'),
    })
    .prefault({}),
  /** Where notifications go (Slack, Teams, a signed JSON webhook); deployments choose them (`notify`). */
  notifications: z.strictObject({ receivers: z.array(notificationReceiver).default([]) }).prefault({}),
  /** SOPS files are decrypted with the age identities of this key file (a mounted Secret; docs/sops.md). */
  decryption: z.strictObject({ ageKeyFile: z.string().min(1).optional() }).prefault({}),
  /** Health rules in CEL per kind, which take the place of the built-in rule of their kind (healthRule). */
  health: healthRules.default([]),
});

export type MooringConfig = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
