// The agent's configuration: one zod schema for the whole product, with its defaults.
// Parsed once at start (see load.ts); every other module receives the typed result.
import cron from 'node-cron';
import semver from 'semver';
import { z } from 'zod';
import { parseRepositoryUrl } from '../http/repository-url.ts';
import { plainOrigin } from '../kube/member-verify.ts';
import { healthProblems } from '../stability/health.ts';
import { DEFAULT_YAML_LIMITS } from '../yaml/limits.ts';
import { formatDuration, parseDuration } from './duration.ts';

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const name = z
  .string()
  .max(63)
  .regex(NAME, 'must be a DNS label: lowercase letters, digits and "-", starting and ending alphanumeric');

/**
 * A duration string with its unit ("30s", "5m", "1h30m"), parsed to milliseconds. A bare number is refused:
 * `timeout: 300` could mean seconds or milliseconds, and guessing wrong is a thousandfold mistake.
 */
export const duration = z
  .string({
    error: (issue) =>
      typeof issue.input === 'number'
        ? bareNumber(String(issue.input))
        : 'must be a duration such as 30s or 5m',
  })
  .transform((text, ctx) => {
    if (/^\s*\d+(?:\.\d+)?\s*$/.test(text)) {
      ctx.addIssue({ code: 'custom', message: bareNumber(text.trim()) });
      return z.NEVER;
    }
    const ms = parseDuration(text);
    if (ms === undefined || ms <= 0) {
      ctx.addIssue({ code: 'custom', message: `"${text}" is not a duration (examples: 30s, 5m, 1h30m)` });
      return z.NEVER;
    }
    return ms;
  });

function bareNumber(text: string): string {
  return `${text} has no unit: durations need one (ms, s, m, h or d), e.g. "${text}s"?`;
}

/** Shortest interval of anything that repeats on a timer (polls, drift correction, lease renewal). */
export const MIN_INTERVAL_MS = 1000;

/** A duration that schedules a repeating timer: under a second it would hammer the server it polls. */
export const interval = duration.superRefine((ms, ctx) => {
  if (ms < MIN_INTERVAL_MS) {
    ctx.addIssue({
      code: 'custom',
      message: `${formatDuration(ms)} is under 1s: an interval that repeats must be at least 1s`,
    });
  }
});

const cronExpression = z.string().refine((expr) => cron.validate(expr), {
  message: 'is not a valid cron expression (five or six fields, e.g. "*/5 * * * *")',
});

// Marks every parsed secret reference, so that the secrets a config needs are found by walking it
// (secret-check.ts) rather than by a list of places that could fall behind the schema.
const SECRET_REF = Symbol('secretRef');

export function isSecretRef(value: unknown): value is SecretRef {
  return typeof value === 'object' && value !== null && SECRET_REF in value;
}

/** A secret is never written in the config file itself: it is read from an environment variable or a file. */
export const secretRef = z
  .strictObject({
    env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
      .optional(),
    file: z.string().min(1).optional(),
  })
  .refine((ref) => (ref.env === undefined) !== (ref.file === undefined), {
    message: 'give exactly one of "env" or "file"',
  })
  .transform((ref) => Object.defineProperty(ref, SECRET_REF, { value: true, enumerable: false }));
export type SecretRef = z.infer<typeof secretRef>;

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

const schedule = {
  interval: interval.optional(),
  cron: cronExpression.optional(),
};

/** A source polls on its interval or its cron schedule; with neither, on a default interval. */
function withDefaultInterval(ms: number) {
  return <T extends { interval?: number | undefined; cron?: string | undefined }>(source: T): T =>
    source.interval === undefined && source.cron === undefined ? { ...source, interval: ms } : source;
}

const gitRef = z
  .strictObject({
    branch: z.string().min(1).optional(),
    tag: z.string().min(1).optional(),
    semver: z
      .string()
      .refine((range) => semver.validRange(range) !== null, { message: 'is not a valid semver range' })
      .optional(),
  })
  .refine((ref) => [ref.branch, ref.tag, ref.semver].filter((v) => v !== undefined).length === 1, {
    message: 'give exactly one of "branch", "tag" or "semver"',
  });

/**
 * Previews of pull requests to a Git source's branch (docs/previews.md): each deployment the pull request concerns is
 * rendered at the base and the head as a sync would render it, and one comment per pull request (updated in place)
 * and a commit status per deployment say what would change. Nothing is written to any cluster.
 */
const preview = z.strictObject({
  enabled: z.boolean().default(false),
  /** Also find pull requests by polling the forge's refs (refs/pull/N/head, refs/merge-requests/N/head). */
  pollRefs: z.boolean().default(true),
  /** Pull requests from forks are untrusted content: previewed only with this, or by an allowed author or label. */
  forks: z.boolean().default(false),
  allowAuthors: z.array(z.string().min(1).max(255)).default([]),
  allowLabels: z.array(z.string().min(1).max(255)).default([]),
  /** The forge's API; the provider, apiUrl and token of the source's first deployment's commitStatus when absent. */
  provider: z.enum(['auto', 'github', 'gitlab', 'gitea', 'bitbucket-cloud', 'bitbucket-server']).optional(),
  apiUrl: httpUrl.optional(),
  token: secretRef.optional(),
  /** The commit status of each deployment's preview on the head commit. */
  context: z.string().min(1).default('mooring/preview/{deployment}'),
  /**
   * Decrypt SOPS files for previews of trusted pull requests (never from forks). Off: they are left out, since a
   * template can show a decrypted value encoded in a way no redaction recognises.
   */
  decrypt: z.boolean().default(false),
  /**
   * Compare the head with the cluster (a server-side dry run: drift and admission show) rather than with the base.
   * Still nothing is written.
   */
  live: z.boolean().default(false),
  /** Open pull requests previewed at most (the highest numbers). */
  maxPullRequests: z.number().int().min(1).max(10_000).default(200),
});

export const gitSource = z
  .strictObject({
    name,
    url: httpUrl,
    ref: gitRef.default({ branch: 'main' }),
    ...schedule,
    credentials: z
      .strictObject({
        /** Not a secret: written as it is (`x-access-token`, a deploy token's name) or read from a reference. */
        username: z.union([z.string().min(1), secretRef]).optional(),
        password: secretRef.optional(),
        token: secretRef.optional(),
      })
      .refine((c) => !(c.token && c.password), { message: 'give "token" or "username"/"password", not both' })
      .optional(),
    /** A PEM bundle trusted besides the public roots, for a server on a private CA; read at load and start. */
    caFile: z.string().min(1).optional(),
    timeout: duration.prefault('60s'),
    /** Limits that keep a hostile or broken repository from exhausting the agent. */
    maxFileBytes: z
      .number()
      .int()
      .positive()
      .default(4 * 1024 * 1024),
    /** The largest Git object held in memory (read from its header first): larger ones are never inflated whole. */
    maxObjectBytes: z
      .number()
      .int()
      .min(1024 * 1024)
      .default(64 * 1024 * 1024),
    /** Pull-request previews (docs/previews.md): never a write to a cluster. */
    preview: preview.prefault({}),
  })
  .refine((s) => s.maxFileBytes <= s.maxObjectBytes, {
    message: 'maxFileBytes must not be larger than maxObjectBytes',
    path: ['maxFileBytes'],
  })
  .transform(withDefaultInterval(60_000));
export type GitSource = z.infer<typeof gitSource>;

const tagPolicy = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('fixed'), tag: z.string().min(1).default('latest') }),
  z.strictObject({
    type: z.literal('semver'),
    range: z
      .string()
      .refine((r) => semver.validRange(r) !== null, { message: 'is not a valid semver range' }),
    prereleases: z.boolean().default(false),
  }),
  z.strictObject({
    type: z.literal('regex'),
    pattern: z.string().refine(
      (p) => {
        try {
          new RegExp(p);
          return true;
        } catch {
          return false;
        }
      },
      { message: 'is not a valid regular expression' },
    ),
    /** e.g. "$ts": the named or numbered group to sort by; the whole tag when absent. */
    extract: z.string().optional(),
    order: z.enum(['alphabetical', 'numerical']).default('alphabetical'),
  }),
]);

export const registrySource = z
  .strictObject({
    name,
    /** `host[:port]/path/name`; `nginx` means `docker.io/library/nginx`. */
    image: z
      .string()
      .regex(/^[a-z0-9]([a-z0-9._:/-]*[a-z0-9])?$/, 'must be an image name without tag or digest')
      .superRefine((image, ctx) => {
        // A tag in the name would be dropped by the poll (it follows `policy`): say where the tag goes instead.
        const last = image.slice(image.lastIndexOf('/') + 1);
        const colon = last.indexOf(':');
        if (colon < 0) return;
        const repository = image.slice(0, image.length - last.length + colon);
        const tag = last.slice(colon + 1);
        ctx.addIssue({
          code: 'custom',
          message: `has a tag (":${tag}"): give the name only (image: ${repository}) and the tag as policy: {type: fixed, tag: "${tag}"}`,
        });
      }),
    policy: tagPolicy.default({ type: 'fixed', tag: 'latest' }),
    exclude: z.array(z.string()).default(['\\.sig$', '\\.att$', '\\.sbom$']),
    ...schedule,
    credentials: z
      .strictObject({
        dockerConfigJson: secretRef.optional(),
        username: secretRef.optional(),
        password: secretRef.optional(),
      })
      .optional(),
    caFile: z.string().optional(),
    /** Plain HTTP: only for registries configured so on purpose. */
    insecure: z.boolean().default(false),
    requestsPerSecond: z.number().positive().default(5),
  })
  .transform(withDefaultInterval(5 * 60_000));
export type RegistrySource = z.infer<typeof registrySource>;

/** How a chart source or an OCI artifact source reaches its server and what it may download (the hostile-content bounds). */
const registryCredentials = z
  .strictObject({
    dockerConfigJson: secretRef.optional(),
    username: secretRef.optional(),
    password: secretRef.optional(),
  })
  .optional();

/** The limits of one download and of the archive it holds: what a hostile publisher could make huge. */
const downloadLimits = {
  /** The largest download (the compressed chart or artifact layer). */
  maxBytes: z
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024),
  /** The most files and folders in the archive. */
  maxFiles: z.number().int().positive().default(5000),
  /** The largest file in the archive. */
  maxFileBytes: z
    .number()
    .int()
    .positive()
    .default(4 * 1024 * 1024),
  /** All files of the archive together, uncompressed. */
  maxExtractedBytes: z
    .number()
    .int()
    .positive()
    .default(128 * 1024 * 1024),
};

/** Which chart version a chart source deploys: as a registry source's tag policy, over chart versions. */
const chartPolicy = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('fixed'), version: z.string().min(1) }),
  z.strictObject({
    type: z.literal('semver'),
    range: z
      .string()
      .refine((r) => semver.validRange(r) !== null, { message: 'is not a valid semver range' }),
    prereleases: z.boolean().default(false),
  }),
  /** The highest semantic version the repository holds. */
  z.strictObject({ type: z.literal('latest'), prereleases: z.boolean().default(false) }),
]);

/**
 * A Helm chart in a chart repository (`https://…`, its index.yaml) or an OCI registry (`oci://host/path`), whose
 * version the policy picks (docs/helm.md). A new version it picks is an artifact, as a new image digest is.
 */
/** A repository URL that parses (no `..` or encoded separator): compared with others, never as a string. */
const repositoryUrlText = z
  .string()
  .min(1)
  .superRefine((url, ctx) => {
    const parsed = parseRepositoryUrl(url);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
  });

export const chartSource = z
  .strictObject({
    name,
    url: z
      .string()
      .regex(
        /^(oci|https?):\/\/[^\s/?#@]+(\/[^\s?#@]*)?$/,
        'must be oci://host/path or an http(s) URL without credentials',
      )
      .pipe(repositoryUrlText),
    /** The chart's name in the repository (`podinfo`): oci://host/path/podinfo, or its entry in index.yaml. */
    chart: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be a chart name'),
    policy: chartPolicy.default({ type: 'latest', prereleases: false }),
    ...schedule,
    credentials: registryCredentials,
    caFile: z.string().optional(),
    /** Plain HTTP (an http:// chart repository, an OCI registry without TLS): only for servers configured so on purpose. */
    insecure: z.boolean().default(false),
    requestsPerSecond: z.number().positive().default(5),
    /** The largest index.yaml read (a chart repository's index lists every version of every chart). */
    maxIndexBytes: z
      .number()
      .int()
      .positive()
      .default(32 * 1024 * 1024),
    /** The most YAML nodes index.yaml may hold (one document, listing every chart: more than render.maxYamlNodes). */
    maxIndexNodes: z.number().int().min(1000).default(2_500_000),
    ...downloadLimits,
  })
  .refine((s) => s.insecure || !s.url.startsWith('http://'), {
    message: 'is plain http: use https, or set insecure: true for a server configured so on purpose',
    path: ['url'],
  })
  .transform(withDefaultInterval(5 * 60_000));
export type ChartSource = z.infer<typeof chartSource>;

/**
 * Manifests shipped as an OCI artifact (`flux push artifact`, ORAS): a tar.gz layer of manifests, polled by tag
 * policy or pinned to a digest; each new digest is a revision (docs/oci.md).
 */
export const ociSource = z
  .strictObject({
    name,
    /** `oci://host[:port]/path`. */
    url: z
      .string()
      .regex(
        /^oci:\/\/[a-z0-9]([a-z0-9.:-]*[a-z0-9])?(\/[a-z0-9]([a-z0-9._/-]*[a-z0-9])?)+$/,
        'must be oci://host/path (lower case, no tag or digest)',
      ),
    policy: tagPolicy.default({ type: 'fixed', tag: 'latest' }),
    /** A digest to deploy instead of following the policy. */
    digest: z
      .string()
      .regex(/^sha256:[a-f0-9]{64}$/, 'must be sha256:<64 hex digits>')
      .optional(),
    exclude: z.array(z.string()).default(['\\.sig$', '\\.att$', '\\.sbom$']),
    ...schedule,
    credentials: registryCredentials,
    caFile: z.string().optional(),
    insecure: z.boolean().default(false),
    requestsPerSecond: z.number().positive().default(5),
    ...downloadLimits,
  })
  .transform(withDefaultInterval(5 * 60_000));
export type OciSource = z.infer<typeof ociSource>;

export const localSource = z.strictObject({
  name,
  path: z.string().min(1),
  debounce: duration.prefault('500ms'),
});
export type LocalSource = z.infer<typeof localSource>;

const commitStatus = z.strictObject({
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

const notificationReceiver = z
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
const clusterLabels = z.record(
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

/** How the API server of a cluster is reached and what the agent may ask of it. */
const clusterLimits = {
  /**
   * A request to the API server that receives nothing for this long is abandoned and retried (a stopped or
   * unreachable server); watch streams have their own, longer limit.
   */
  requestTimeout: duration.prefault('30s'),
  /**
   * The agent's request budget to the API server, shared by all syncs (watch streams are not counted), as
   * client-go's --kube-api-qps and --kube-api-burst: requests a second, and at once after a quiet time. A sync
   * of a small application costs about 35 requests (docs/fleet.md): 200 a second syncs about 6 a second.
   */
  qps: z.number().positive().max(10_000).default(200),
  burst: z.number().int().min(1).max(10_000).default(400),
};

/**
 * Another cluster the agent deploys to (docs/clusters.md): its kubeconfig from a file or a Secret of the agent's
 * own cluster, with a context, and labels that deployments select it by. Its ledgers, inventories, outbox and
 * control ConfigMap live in its own `namespace`.
 */
const targetCluster = z
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
       * URL prefixes a chart dependency may come from when it is not in the chart's charts/ folder, compared
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
  maxFileBytes: z
    .number()
    .int()
    .positive()
    .default(4 * 1024 * 1024),
  maxDocumentsPerFile: z.number().int().positive().default(1000),
  /** Alias expansions one YAML document may make (and aliases it may hold), for every YAML text read. */
  maxAliasCount: z.number().int().min(0).default(DEFAULT_YAML_LIMITS.maxAliasCount),
  /** Nodes one YAML document may hold, counted before it is composed (src/yaml/count.ts; docs/security.md). */
  maxYamlNodes: z.number().int().min(1000).default(DEFAULT_YAML_LIMITS.maxNodes),
  /**
   * Nodes of all the documents of one YAML text together (a manifest file, a chart's output): bounds the memory a
   * file's values take, whatever its number of documents. Never less than maxYamlNodes in effect.
   */
  maxYamlFileNodes: z
    .number()
    .int()
    .min(1000)
    .default(DEFAULT_YAML_LIMITS.maxFileNodes ?? 1_000_000),
  /** How deep one YAML document's collections may nest. */
  maxYamlDepth: z.number().int().min(16).max(512).default(DEFAULT_YAML_LIMITS.maxDepth),
  /** The labels app.kubernetes.io/name and managed-by (Spinnaker's kubernetes.v2.applyAppLabels). */
  applyAppLabels: z.boolean().default(true),
  /**
   * With applyAppLabels, whether pod templates get the labels too: true (always), false (never), or `auto`: not on
   * a workload first adopted from another tool, whose pods would all restart (docs/adoption.md).
   */
  podTemplateLabels: z.union([z.literal('auto'), z.boolean()]).default('auto'),
  /** Cluster-scoped custom kinds as `group/Kind`, until discovery tells. */
  clusterScoped: z.array(z.string().regex(/^[a-z0-9.-]*\/[A-Za-z0-9]+$/, 'must be group/Kind')).default([]),
  /** The kubectl whose kustomize builds kustomizations; MOORING_KUBECTL, else `kubectl` on PATH, when absent. */
  kubectl: z.string().min(1).optional(),
  /** Kustomizations (docs/kustomize.md): remote bases (URLs in resources/bases) are refused unless allowed. */
  kustomize: z.strictObject({ allowRemoteBases: z.boolean().default(false) }).prefault({}),
  /** Each run of kubectl kustomize or helm template is stopped after this long. */
  toolTimeout: duration.prefault('60s'),
  /** Each run of kubectl kustomize or helm template is stopped when it prints more than this. */
  toolMaxOutputBytes: z
    .number()
    .int()
    .min(1024 * 1024)
    .default(32 * 1024 * 1024),
  /** The memory (RLIMIT_DATA) each run may allocate; a tool past it fails its build. 0: no limit. */
  toolMemoryBytes: z
    .number()
    .int()
    .refine((n) => n === 0 || n >= 64 * 1024 * 1024, 'must be 0 (no limit) or at least 67108864 (64 MiB)')
    .default(1024 * 1024 * 1024),
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
  server: server.prefault({}),
  render: render.prefault({}),
  apply: apply.prefault({}),
  ledger: ledger.prefault({}),
  audit: audit.prefault({}),
  concurrency: z.number().int().min(1).max(64).default(4),
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

export interface ReferenceProblem {
  path: (string | number)[];
  message: string;
}

interface Named {
  name?: unknown;
  interval?: unknown;
  cron?: unknown;
}

function list(value: unknown): Named[] {
  return Array.isArray(value) ? value.filter((v): v is Named => typeof v === 'object' && v !== null) : [];
}

/**
 * Checks what a field-by-field schema cannot: names are unique and references between sections resolve.
 * It reads the raw document, so that these problems are reported together with every other problem.
 */
export function checkReferences(raw: unknown): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  const root = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const sources = (typeof root.sources === 'object' && root.sources !== null ? root.sources : {}) as Record<
    string,
    unknown
  >;
  const seen = new Map<string, string>();
  const byKind: Record<string, Set<string>> = {
    git: new Set(),
    registry: new Set(),
    local: new Set(),
    charts: new Set(),
    oci: new Set(),
  };
  for (const kind of ['git', 'registry', 'local', 'charts', 'oci'] as const) {
    list(sources[kind]).forEach((source, index) => {
      if (kind !== 'local' && source.interval !== undefined && source.cron !== undefined) {
        problems.push({ path: ['sources', kind, index], message: 'give "interval" or "cron", not both' });
      }
      if (typeof source.name !== 'string') return;
      const earlier = seen.get(source.name);
      if (earlier) {
        problems.push({
          path: ['sources', kind, index, 'name'],
          message: `source name "${source.name}" is already used by ${earlier}`,
        });
      } else seen.set(source.name, `sources.${kind}[${index}]`);
      byKind[kind]?.add(source.name);
    });
  }
  const notifications = (
    typeof root.notifications === 'object' && root.notifications !== null ? root.notifications : {}
  ) as Record<string, unknown>;
  const receivers = new Set<string>();
  list(notifications.receivers).forEach((r, index) => {
    if (typeof r.name !== 'string') return;
    if (receivers.has(r.name))
      problems.push({
        path: ['notifications', 'receivers', index, 'name'],
        message: `receiver name "${r.name}" is used twice`,
      });
    receivers.add(r.name);
  });
  const deploymentNames = new Set<string>();
  list(root.deployments).forEach((d, index) => {
    const notify = (d as { notify?: unknown }).notify;
    if (Array.isArray(notify))
      notify.forEach((n: unknown, i: number) => {
        const receiver = (n as { receiver?: unknown } | null)?.receiver;
        if (typeof receiver === 'string' && !receivers.has(receiver))
          problems.push({
            path: ['deployments', index, 'notify', i, 'receiver'],
            message: `no notification receiver is named "${receiver}"`,
          });
      });
    const dep = d as Named & { source?: unknown; images?: unknown; paths?: unknown };
    if (typeof dep.name === 'string') {
      if (deploymentNames.has(dep.name)) {
        problems.push({
          path: ['deployments', index, 'name'],
          message: `deployment name "${dep.name}" is used twice`,
        });
      }
      deploymentNames.add(dep.name);
    }
    if (
      typeof dep.source === 'string' &&
      !byKind.git?.has(dep.source) &&
      !byKind.local?.has(dep.source) &&
      !byKind.oci?.has(dep.source)
    ) {
      problems.push({
        path: ['deployments', index, 'source'],
        message: `no git, local or oci source is named "${dep.source}"`,
      });
    }
    if (Array.isArray(dep.paths)) {
      const who = typeof dep.name === 'string' ? `deployment ${dep.name}` : `deployments[${index}]`;
      dep.paths.forEach((path: unknown, i: number) => {
        const why = typeof path === 'string' ? pathProblem(path) : undefined;
        if (why)
          problems.push({
            path: ['deployments', index, 'paths', i],
            message: `${who}: path "${path}" ${why}`,
          });
      });
    }
    const helm = (dep as { helm?: { chart?: unknown; chartSource?: unknown; valuesFiles?: unknown } }).helm;
    if (helm && typeof helm === 'object') {
      const who = typeof dep.name === 'string' ? `deployment ${dep.name}` : `deployments[${index}]`;
      if (typeof helm.chartSource === 'string' && !byKind.charts?.has(helm.chartSource))
        problems.push({
          path: ['deployments', index, 'helm', 'chartSource'],
          message: `${who}: no chart source is named "${helm.chartSource}"`,
        });
      const chartWhy = typeof helm.chart === 'string' ? pathProblem(helm.chart) : undefined;
      if (chartWhy)
        problems.push({
          path: ['deployments', index, 'helm', 'chart'],
          message: `${who}: chart "${helm.chart}" ${chartWhy}`,
        });
      if (Array.isArray(helm.valuesFiles)) {
        helm.valuesFiles.forEach((file: unknown, i: number) => {
          const why = typeof file === 'string' ? pathProblem(file) : undefined;
          if (why)
            problems.push({
              path: ['deployments', index, 'helm', 'valuesFiles', i],
              message: `${who}: values file "${file}" ${why}`,
            });
        });
      }
    }
    if (Array.isArray(dep.images)) {
      dep.images.forEach((image: unknown, i: number) => {
        if (typeof image === 'string' && !byKind.registry?.has(image)) {
          problems.push({
            path: ['deployments', index, 'images', i],
            message: `no registry source is named "${image}"`,
          });
        }
      });
    }
  });
  problems.push(...dependencyProblems(list(root.deployments)));
  return problems;
}

/** dependsOn names deployments of this configuration, not itself, and no chain leads back to where it began. */
function dependencyProblems(deployments: readonly Named[]): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  const edges = new Map<string, string[]>();
  deployments.forEach((d) => {
    const dependsOn: unknown = (d as { dependsOn?: unknown }).dependsOn;
    if (typeof d.name === 'string')
      edges.set(
        d.name,
        Array.isArray(dependsOn) ? dependsOn.filter((n): n is string => typeof n === 'string') : [],
      );
  });
  deployments.forEach((d, index) => {
    if (typeof d.name !== 'string') return;
    (edges.get(d.name) ?? []).forEach((other, i) => {
      if (!edges.has(other))
        problems.push({
          path: ['deployments', index, 'dependsOn', i],
          message: `deployment ${d.name} depends on "${other}", which is no deployment of this configuration`,
        });
      else if (other === d.name)
        problems.push({
          path: ['deployments', index, 'dependsOn', i],
          message: `deployment ${d.name} depends on itself`,
        });
    });
  });
  // Each cycle is named once, from the first deployment on it in the file: `a -> b -> c -> a`.
  const state = new Map<string, 'visiting' | 'done'>();
  const reported = new Set<string>();
  const visit = (name: string, chain: string[]): void => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') {
      const cycle = [...chain.slice(chain.indexOf(name)), name];
      const key = [...new Set(cycle)].sort().join(',');
      if (cycle.length > 2 && !reported.has(key)) {
        reported.add(key);
        const index = deployments.findIndex((d) => d.name === cycle[0]);
        problems.push({
          path: ['deployments', index, 'dependsOn'],
          message: `dependsOn cycle: ${cycle.join(' -> ')}`,
        });
      }
      return;
    }
    state.set(name, 'visiting');
    for (const next of edges.get(name) ?? [])
      if (edges.has(next) && next !== name) visit(next, [...chain, name]);
    state.set(name, 'done');
  };
  for (const name of edges.keys()) visit(name, []);
  return problems;
}

/**
 * Why a deployment path cannot be used, or undefined. Paths are relative to the root of the deployment's
 * source: an absolute one would be read as relative (and select nothing), and `..` must not leave the root.
 */
export function pathProblem(path: string): string | undefined {
  if (/^[\\/]/.test(path) || /^[A-Za-z]:/.test(path)) {
    return 'is absolute; paths are relative to the root of the source (e.g. "apps/web")';
  }
  let depth = 0;
  for (const segment of path.split(/[\\/]+/)) {
    if (segment === '..') depth--;
    else if (segment !== '.' && segment !== '') depth++;
    if (depth < 0) return 'leads outside the root of the source';
  }
  return undefined;
}
