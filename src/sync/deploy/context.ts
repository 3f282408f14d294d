// One deploy under way, as every stage of src/sync/deploy.ts sees it: the request, the dependencies, and what the
// stages before it found (the cluster's snapshot, the render, what was applied, the wait).

import type { HookRun, PruneReport } from '../../contract.ts';
import type { KubeApi } from '../../kube/api.ts';
import type { ApplyOptions, ApplyResult } from '../../kube/apply.ts';
import type { ClusterCache } from '../../kube/cache.ts';
import type { Discovery } from '../../kube/discovery.ts';
import type { DriftFinding } from '../../kube/drift.ts';
import type { DriftRun } from '../../kube/drift-check.ts';
import type { HistoryResult } from '../../kube/history.ts';
import type { InventoryEntry, InventoryNote } from '../../kube/inventory.ts';
import type { WarningEvents } from '../../kube/warning-events.ts';
import type { WarningLog } from '../../kube/warnings.ts';
import type { HookOwner } from '../../render/hook-owner.ts';
import type { HookEvent, HookPhase } from '../../render/hooks.ts';
import type { ImageArtifact } from '../../render/images.ts';
import type { KubeObject } from '../../render/manifest.ts';
import { clusterScopedRefusal } from '../../render/namespace-boundary.ts';
import type { ManifestFile, parseManifestFiles } from '../../render/parse.ts';
import type { ClusterSnapshot, RenderOptions, RenderResult } from '../../render/render.ts';
import type { HealthRules } from '../../stability/health.ts';
import type { ClusterFacts } from '../../stability/verdict.ts';
import type { WaitResult } from '../../stability/waiter.ts';
import type { HookTarget, SyncEndHook } from '../hooks.ts';
import type { AppliedRecord } from './applied-record.ts';

export interface DeployRequest {
  files: readonly ManifestFile[];
  namespace: string;
  application: string;
  images: readonly ImageArtifact[];
  timeoutMs: number;
  dryRun: boolean;
  /** false: apply and return, without waiting for stability (nor collecting version history). */
  wait?: boolean;
  renderOptions?: Partial<RenderOptions>;
  /** The agent's namespace, where the content-hash key of versioned Secrets is kept (default `mooring`). */
  hashKeyNamespace?: string;
  fieldManager?: string;
  concurrency?: number;
  signal?: AbortSignal;
  /**
   * Record what is applied in the owner's inventory (in `namespace`, the agent's) and, with `prune`, delete what
   * the inventory held and the render no longer has, once the rest is applied and stable.
   */
  inventory?: {
    owner: string;
    namespace: string;
    prune: boolean;
    /** The owner is going (a deployment leaving its set): what is kept when an application is deleted stays. */
    removal?: boolean | undefined;
    /** An empty render of an owner that had objects is an error unless this is set. */
    allowEmpty: boolean;
    /** How to say it is meant, in the error of an empty render. */
    emptyAdvice: string;
    /**
     * Without prune, an inventory this identity may not read or write (a CLI user allowed only into the
     * application's namespace) is skipped with a warning rather than failing the deploy.
     */
    bestEffort?: boolean;
    /**
     * The agent's note of the sync (src/sync/attempts.ts), written with the inventory once the whole set passed its
     * dry run and before the first write (written even when the entries are unchanged); `started` is told once it
     * is (the pending commit status: a sync whose end the next agent could not report posts none).
     */
    attempt?: { note: InventoryNote; started: () => Promise<void> } | undefined;
    /**
     * Keep a record of what this deploy writes with the inventory, and leave what a later one finds exactly as
     * recorded unwritten and not dry-run (src/sync/deploy/applied-record.ts): for a deploy without the agent's watch
     * cache and drift marks (the CLI's).
     */
    keepRecord?: boolean;
  };
  /**
   * A drift pass: the live objects are compared with the manifests field by field first; with `correct`, fields
   * added by hand outside the manifest are put back too (that object is replaced rather than applied).
   */
  drift?: 'correct' | 'report';
  /** Versions kept of a versioned object that sets no strategy.spinnaker.io/max-version-history. */
  versionHistory?: number;
  /**
   * Versioned objects that recorded releases name (`ConfigMap app-config-v003`): never collected. `unknown`: the
   * releases could not be read, and no version is collected this time (one a rollback needs could go).
   */
  keepVersions?: ReadonlySet<string> | 'unknown';
  /**
   * Versioned objects every recorded release names (`ConfigMap app-config-v003`), live or pruned: a new version is
   * numbered above the highest, so that a name never stands for two contents in the deployment's history.
   */
  usedVersions?: readonly string[];
  /**
   * A rollback's: the versioned objects of the release it restores. One that is gone from the cluster comes back
   * under the name the release recorded (when no live version holds it), rather than above `usedVersions`.
   */
  restoreVersions?: readonly string[];
  /** Create `namespace` (with mooring's labels) when it does not exist, before the first write; never pruned. */
  createNamespace?: boolean;
  /** How to say what creates a missing `namespace`, in the error that names it. */
  namespaceAdvice?: string;
  /**
   * What this sync is for Helm's hook events; by default an install when the owner's inventory holds none of the
   * release's objects (its first deploy, src/sync/hook-event.ts), else an upgrade. `mooring rollback` says rollback.
   */
  hookEvent?: HookEvent;
  /** false: hooks are neither run nor applied (a drift pass corrects the release, it is no new release). */
  hooks?: boolean;
  /**
   * Health rules in CEL (the agent's `health`, the CLI's --health-file), compiled by compileHealthRules; rules of
   * the CustomResourceDefinitions in the set (mooring.io/health-* annotations) join them for other kinds.
   */
  health?: HealthRules;
}

export type DeployEvent =
  | { type: 'applied'; result: ApplyResult }
  | { type: 'progress'; object: string; state: string; message: string }
  | { type: 'pruned'; object: string }
  | { type: 'namespace-created'; namespace: string }
  | { type: 'warning'; message: string }
  | { type: 'hook'; run: HookRun }
  /** An Argo CD hook deleted at the sync's end (its run was told before, as `hook`). */
  | { type: 'hook-deleted'; run: HookRun };

export interface DeployDeps {
  api: KubeApi;
  discovery: Discovery;
  /**
   * The cluster cache the stability wait reads (the agent shares one across all its syncs). Without one, the
   * deploy makes its own and closes it when done.
   */
  cache?: ClusterCache;
  onEvent?: (event: DeployEvent) => void;
  /** Each dry-run answer whole, as the server would hold the object (`mooring diff` shows them). */
  onPreview?: ApplyOptions['onPreview'];
  /**
   * Called once the set is written and the deploy only waits for stability (the agent gives its worker slot back:
   * the watch cache does the waiting).
   */
  beforeWait?: () => void;
}

/** One deploy under way: what it was asked, what it works with, and what its stages found so far. */
export interface DeployRun {
  readonly request: DeployRequest;
  readonly deps: DeployDeps;
  /** The API every request of the deploy goes through: a drift pass's, which reads its watch cache first. */
  readonly api: KubeApi;
  readonly discovery: Discovery;
  /** When the deploy started (Date.now()): its deadline and the age of the warnings it says count from it. */
  readonly started: number;
  /** A drift pass's run (src/kube/drift-check.ts), when the request is one. */
  readonly driftRun: DriftRun | undefined;
  /** Whose hooks this sync runs: each is marked as this deployment's, and only its earlier runs are its own. */
  readonly hookOwner: HookOwner;
  /**
   * The warning Events of what is waited on (and what it owns), read while it is not stable; one reader per
   * deploy, so the owners it looked up serve every wave and hook.
   */
  readonly warningEvents: WarningEvents;
  /** The rules stability judges by: compiled at render, before anything is written. */
  health?: HealthRules;
  /** What the stability rules read of the cluster (src/sync/deploy/wait.ts), once a wait needs it. */
  facts?: Promise<ClusterFacts>;
  snapshot?: ClusterSnapshot;
  parsed?: ReturnType<typeof parseManifestFiles>;
  hashKey?: Buffer;
  rendered?: RenderResult;
  applied?: ApplyResult[];
  wait?: WaitResult;
  history?: HistoryResult;
  /** Kinds (`group/Kind`) that are cluster-scoped: the configuration's and those discovery serves so. */
  clusterScoped?: string[];
  previous?: InventoryEntry[] | undefined;
  /** Once the inventory was read: whether it records an object as applied (none was when it does not exist). */
  appliedBefore?: ((object: KubeObject) => boolean) | undefined;
  desired?: InventoryEntry[];
  /** What this sync wrote to the inventory, once it wrote it. */
  recorded?: InventoryEntry[];
  /** What this deploy writes, kept with the inventory for the next (inventory.keepRecord), and how it is stored. */
  record?: { of: AppliedRecord; save: (text: string) => Promise<void> };
  /** Records `entries` (with the previous inventory) as the owner's inventory. */
  recordInventory?: (entries: InventoryEntry[], note?: InventoryNote) => Promise<void>;
  prune?: PruneReport;
  drift?: DriftFinding[];
  /** A dry run's: namespaces a deploy would create, whose objects the server cannot validate yet. */
  absentNamespaces?: ReadonlySet<string>;
  /** The sync wave whose objects did not become stable, and how many waves were left unapplied after it. */
  stoppedAtWave?: { wave: number; left: number };
  /** The set's hooks by phase, taken out of the release objects (src/render/hooks.ts). */
  hooks?: Record<HookPhase, HookTarget[]>;
  hookRuns: HookRun[];
  /** Argo CD's hooks that ran, deleted per their policy when the sync ends (deploy/hooks.ts, endHooks). */
  syncEndHooks: SyncEndHook[];
  /** The sync was cancelled while a hook ran (hooks.ts HooksCancelledError): which one. */
  cancelled?: string | undefined;
  warnings: WarningLog;
}

/** A step of a deploy: it reads what earlier stages found and adds its own, or throws to end the deploy. */
export type Stage = (run: DeployRun) => Promise<void>;

/** The field manager the deploy writes as. */
export function fieldManagerOf(request: DeployRequest): string {
  return request.fieldManager ?? 'mooring';
}

/** How many requests of a kind the deploy makes at once. */
export function concurrencyOf(request: DeployRequest): number {
  return request.concurrency ?? 8;
}

/**
 * What every Applier of the deploy (its objects' and its hooks') is given for an object of a kind not served yet
 * (SkipDryRunOnMissingResource): how long it waits for the kind, and the boundary it is held to again once served.
 */
export function unservedKindOptions(
  request: DeployRequest,
): Pick<ApplyOptions, 'servedWaitMs' | 'refuseClusterScoped'> {
  const boundary = request.renderOptions?.boundary;
  return {
    servedWaitMs: request.timeoutMs,
    refuseClusterScoped: (object) => (boundary ? clusterScopedRefusal(boundary, object) : undefined),
  };
}
