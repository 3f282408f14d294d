// One deploy, as an ordered list of stages with one signature, run until the first error, and one finalizer that
// writes the report (the shape of Flux's reconcilers): read the cluster -> render -> apply -> wait -> history.

import type { DeployReport, HookRun, PruneReport } from '../contract.ts';
import { classify, errorMessage, TransientError, WaitingError } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import { Applier, type ApplyOptions, type ApplyResult, type ApplyTarget } from '../kube/apply.ts';
import { ClusterCache } from '../kube/cache.ts';
import { withDeadline } from '../kube/deadline.ts';
import type { Discovery } from '../kube/discovery.ts';
import type { DriftFinding } from '../kube/drift.ts';
import { DriftRun, noteApplied } from '../kube/drift-check.ts';
import { isAccessDenied } from '../kube/errors.ts';
import { ensureHashKey, readHashKey } from '../kube/hash-key.ts';
import { collectVersionHistory, type HistoryResult } from '../kube/history.ts';
import {
  cliOwner,
  type InventoryEntry,
  InventoryStore,
  inventoryOf,
  sameInventory,
  unionOf,
} from '../kube/inventory.ts';
import { createNamespace, namespaceExists } from '../kube/namespace.ts';
import { executePrune, pruneTargets } from '../kube/prune.ts';
import { discoverClusterScoped } from '../kube/scope.ts';
import { assertServed } from '../kube/served.ts';
import { readSnapshot } from '../kube/snapshot.ts';
import { WarningEvents } from '../kube/warning-events.ts';
import { WarningLog, withWarnings } from '../kube/warnings.ts';
import { type HookOwner, markHook } from '../render/hook-owner.ts';
import { type HookEvent, type HookPhase, hookRole, isHookObject } from '../render/hooks.ts';
import type { ImageArtifact } from '../render/images.ts';
import { describeObject, isClusterScoped, type KubeObject } from '../render/manifest.ts';
import { assertWithinBoundary } from '../render/namespace-boundary.ts';
import { DEFAULT_LIMITS, type ManifestFile, parseManifestFiles } from '../render/parse.ts';
import {
  type ClusterSnapshot,
  DEFAULT_OPTIONS,
  type RenderOptions,
  type RenderResult,
  render,
} from '../render/render.ts';
import { needsHashKey } from '../render/versioning.ts';
import { type HealthRules, healthRulesFor } from '../stability/health.ts';
import { judgedByMetadata, stabilityOf } from '../stability/rules.ts';
import type { Stability } from '../stability/verdict.ts';
import { type WaitResult, waitForStability } from '../stability/waiter.ts';
import { releaseEvent } from './hook-event.ts';
import { checkHooks, type HookActions, type HookTarget, hookRefusal, runHooks } from './hooks.ts';
import { assertNotEmpty } from './prune.ts';

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
    /** An empty render of an owner that had objects is an error unless this is set. */
    allowEmpty: boolean;
    /** How to say it is meant, in the error of an empty render. */
    emptyAdvice: string;
    /**
     * Without prune, an inventory this identity may not read or write (a CLI user allowed only into the
     * application's namespace) is skipped with a warning rather than failing the deploy.
     */
    bestEffort?: boolean;
  };
  /**
   * A drift pass: the live objects are compared with the manifests field by field first; with `correct`, fields
   * added by hand outside the manifest are put back too (that object is replaced rather than applied).
   */
  drift?: 'correct' | 'report';
  /** Versions kept of a versioned object that sets no strategy.spinnaker.io/max-version-history. */
  versionHistory?: number;
  /** Versioned objects that recorded releases name (`ConfigMap app-config-v003`): never collected. */
  keepVersions?: ReadonlySet<string>;
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

/** Warning Events last seen this long before a deploy started are not said by its waits. */
const WARNINGS_SINCE_MS = 10 * 60_000;

/** How long SyncFail hooks may run, after a sync that failed (its own time may be spent). */
const FAIL_HOOK_TIMEOUT_MS = 5 * 60_000;

/** How long a sync that found its namespace missing waits before it looks again (the agent caps it). */
export const MISSING_NAMESPACE_RETRY_MS = 30_000;

export type DeployEvent =
  | { type: 'applied'; result: ApplyResult }
  | { type: 'progress'; object: string; state: string; message: string }
  | { type: 'pruned'; object: string }
  | { type: 'namespace-created'; namespace: string }
  | { type: 'warning'; message: string }
  | { type: 'hook'; run: HookRun };

interface Context {
  request: DeployRequest;
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
  desired?: InventoryEntry[];
  /** What this sync wrote to the inventory, once it wrote it. */
  recorded?: InventoryEntry[];
  /** Records `entries` (with the previous inventory) as the owner's inventory. */
  recordInventory?: (entries: InventoryEntry[]) => Promise<void>;
  prune?: PruneReport;
  drift?: DriftFinding[];
  /** A dry run's: namespaces a deploy would create, whose objects the server cannot validate yet. */
  absentNamespaces?: ReadonlySet<string>;
  /** The sync wave whose objects did not become stable, and how many waves were left unapplied after it. */
  stoppedAtWave?: { wave: number; left: number };
  /** The set's hooks by phase, taken out of the release objects (src/render/hooks.ts). */
  hooks?: Record<HookPhase, HookTarget[]>;
  hookRuns: HookRun[];
  warnings: WarningLog;
}

type Stage = (ctx: Context) => Promise<void>;

export interface DeployDeps {
  api: KubeApi;
  discovery: Discovery;
  /**
   * The cluster cache the stability wait reads (the agent shares one across all its syncs). Without one, the
   * deploy makes its own and closes it when done.
   */
  cache?: ClusterCache;
  onEvent?: (event: DeployEvent) => void;
  /**
   * Called after render, before anything is written, with the versioned objects the deploy is to write
   * (`ConfigMap app-config-v003`): the agent notes them, so that a sync it never finishes leaves none unrecorded.
   */
  beforeApply?: (versions: string[]) => Promise<void>;
  /** Each dry-run answer whole, as the server would hold the object (`mooring diff` shows them). */
  onPreview?: ApplyOptions['onPreview'];
  /**
   * Called once the set is written and the deploy only waits for stability (the agent gives its worker slot back:
   * the watch cache does the waiting).
   */
  beforeWait?: () => void;
}

export async function deploy(deps: DeployDeps, request: DeployRequest): Promise<DeployReport> {
  const started = Date.now();
  // A drift pass reads the watch cache first and counts its requests (src/kube/drift-check.ts).
  const driftRun = request.drift ? new DriftRun(deps) : undefined;
  const { discovery } = deps;
  const api = driftRun?.api ?? deps.api;

  const readCluster: Stage = async (ctx) => {
    // The lookup needs the objects' namespaces; render reports any parse problem itself.
    ctx.parsed = parseManifestFiles(request.files, { ...DEFAULT_LIMITS, ...request.renderOptions?.limits });
    const { objects } = ctx.parsed;
    const known = request.renderOptions?.clusterScoped ?? [];
    const scoped = new Set(known);
    const placed = new Set<KubeObject>();
    for (const { object } of objects) {
      if (isClusterScoped(object.apiVersion, object.kind, scoped) || object.metadata.namespace) continue;
      object.metadata.namespace = request.namespace;
      placed.add(object);
    }
    // Nothing is asked of the cluster about objects outside the deployment's namespaces.
    assertWithinBoundary(ctx.parsed, request.renderOptions?.boundary, known);
    // A version Kubernetes removed is named with its replacement before any request about the set.
    await assertServed(discovery, objects);
    // Custom kinds the cluster serves cluster-scoped (discovery is shared with apply) have no namespace: not in
    // render, not in the inventory, so that two owners of one such object see the same entry (prune keeps it).
    const served = await discoverClusterScoped(discovery, objects, known);
    ctx.clusterScoped = [...known, ...served];
    if (served.length > 0) {
      const servedSet = new Set(served);
      for (const { object } of objects)
        if (placed.has(object) && isClusterScoped(object.apiVersion, object.kind, servedSet))
          delete object.metadata.namespace;
    }
    const boundary = request.renderOptions?.boundary;
    if (boundary && boundary.clusterScoped !== true)
      assertWithinBoundary(ctx.parsed, boundary, ctx.clusterScoped);
    // Pod templates of workloads adopted from another tool are left as they are (podTemplateLabels auto).
    const labels = { ...DEFAULT_OPTIONS, ...request.renderOptions };
    ctx.snapshot = await readSnapshot(api, objects, discovery, {
      adopted: labels.applyAppLabels && labels.podTemplateLabels === 'auto',
      referenceRules: request.renderOptions?.referenceRules,
    });
    // Versioned Secrets are hashed under the installation's key; a dry run makes none.
    if (
      needsHashKey(objects, {
        versioned: request.renderOptions?.versioned ?? {},
        versioning: request.renderOptions?.versioning,
        referenceRules: request.renderOptions?.referenceRules,
      })
    ) {
      const keyNamespace = request.hashKeyNamespace ?? 'mooring';
      ctx.hashKey = request.dryRun
        ? await readHashKey(api, keyNamespace)
        : await ensureHashKey(api, keyNamespace);
    }
  };
  // The namespaces the objects go into exist, or are created here (createNamespace; not in a dry run), before the
  // whole-set dry run: a missing one is one line, not a 404 per object. One the set itself holds is created by the
  // apply, in its phase. With createNamespace the deployment's namespace is made even when no object goes into it
  // (a set of CRDs and other cluster-scoped objects), as `helm install --create-namespace` makes it.
  const namespaceStage: Stage = async (ctx) => {
    const objects = ctx.rendered?.objects ?? [];
    const created = new Set(objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name));
    const wanted = objects.map((o) => o.metadata.namespace);
    if (request.createNamespace === true) wanted.push(request.namespace);
    const used = [...new Set(wanted)].filter((ns): ns is string => ns !== undefined && !created.has(ns));
    const missing: string[] = [];
    for (const ns of used.sort()) {
      // An identity allowed only into its namespaces may not read them: the apply itself tells then.
      const exists = await namespaceExists(api, ns).catch((error: unknown) => {
        if (isAccessDenied(error)) return true;
        throw error;
      });
      if (!exists) missing.push(ns);
    }
    const own = missing.includes(request.namespace) && request.createNamespace === true;
    const others = missing.filter((ns) => !own || ns !== request.namespace);
    if (others.length > 0) {
      const advice = (ns: string) => (ns === request.namespace && request.namespaceAdvice) || 'create it';
      throw new WaitingError(
        others.map((ns) => `namespace "${ns}" does not exist: ${advice(ns)}`).join('; '),
        MISSING_NAMESPACE_RETRY_MS,
      );
    }
    if (!own) return;
    if (request.dryRun) {
      ctx.absentNamespaces = new Set([request.namespace]);
      deps.onEvent?.({
        type: 'warning',
        message: `namespace "${request.namespace}" does not exist: a deploy would create it (its objects are not validated by the server)`,
      });
      return;
    }
    await createNamespace(api, request.namespace);
    deps.onEvent?.({ type: 'namespace-created', namespace: request.namespace });
  };
  // The rules stability judges by: compiled before anything is written, so an invalid CRD annotation stops here.
  let health: HealthRules | undefined;
  const renderStage: Stage = async (ctx) => {
    ctx.rendered = render({
      files: request.files,
      parsed: ctx.parsed,
      namespace: request.namespace,
      application: request.application,
      images: request.images,
      snapshot: ctx.snapshot,
      options: {
        ...request.renderOptions,
        ...(ctx.clusterScoped ? { clusterScoped: ctx.clusterScoped } : {}),
        hashKey: ctx.hashKey,
      },
    });
    health = healthRulesFor(request.health, ctx.rendered.objects);
  };
  // The owner's inventory is read here; the new objects are recorded once the whole set passed its dry run and
  // before the first write (recordInventory): a set refused whole records nothing, a sync cut short leaves no
  // write unrecorded, and what a failed apply never wrote is taken out again.
  // Whose hooks this sync runs: each is marked as this deployment's, and only its earlier runs are its own.
  const hookOwner: HookOwner = {
    deployment: request.inventory?.owner ?? cliOwner(request.namespace, request.application),
    application: request.application,
    fieldManager: request.fieldManager ?? 'mooring',
  };
  // Hooks leave the release objects here: they are not in the inventory, the whole-set dry run or the wait; they
  // run in their phases, each in every phase of this event it names. Which Helm hooks run depends on the event:
  // `eventOf` is given the release objects (src/sync/hook-event.ts).
  const splitHooks = (ctx: Context, eventOf: (release: readonly KubeObject[]) => HookEvent) => {
    const rendered = ctx.rendered as RenderResult;
    const parsed = ctx.parsed?.objects ?? [];
    const keep: number[] = [];
    const hooks: Record<HookPhase, HookTarget[]> = { pre: [], sync: [], post: [], fail: [] };
    const event =
      request.hookEvent ?? eventOf(rendered.objects.filter((o) => !isHookObject(o.metadata.annotations)));
    rendered.objects.forEach((object, i) => {
      const item = parsed[i];
      if (!item || !isHookObject(object.metadata.annotations)) {
        keep.push(i);
        return;
      }
      if (request.hooks === false) return;
      const role = hookRole(item, event, []);
      if (role.role === 'release') keep.push(i);
      else if (role.role === 'hook') {
        const target = {
          object: markHook(object, hookOwner.deployment),
          plan: rendered.plan[i] as ApplyTarget['plan'],
        };
        for (const hook of role.runs) hooks[hook.phase].push({ target, hook });
      }
    });
    if (keep.length === rendered.objects.length) return;
    ctx.rendered = {
      ...rendered,
      objects: keep.map((i) => rendered.objects[i] as KubeObject),
      plan: keep.map((i) => rendered.plan[i] as RenderResult['plan'][number]),
    };
    ctx.hooks = hooks;
  };
  const inventoryStage: Stage = async (ctx) => {
    const inventory = request.inventory;
    if (!ctx.rendered) return;
    if (!inventory) {
      splitHooks(ctx, () => 'install');
      return;
    }
    const store = new InventoryStore(api, inventory.namespace);
    const skippable = inventory.bestEffort === true && !inventory.prune;
    const skipped = (error: unknown) => {
      if (!skippable || !isAccessDenied(error)) throw error;
      deps.onEvent?.({
        type: 'warning',
        message: `${errorMessage(error)}; the objects applied are not recorded`,
      });
    };
    try {
      ctx.previous = await store.read(inventory.owner);
    } catch (error) {
      skipped(error);
      splitHooks(ctx, () => 'upgrade');
      return;
    }
    splitHooks(ctx, (release) => releaseEvent(ctx.previous, inventoryOf(release)));
    assertNotEmpty(
      inventory.owner,
      ctx.rendered.objects,
      ctx.previous,
      inventory.allowEmpty,
      inventory.emptyAdvice,
    );
    ctx.desired = inventoryOf(ctx.rendered.objects);
    ctx.recordInventory = async (entries) => {
      const recorded = unionOf(entries, ctx.previous ?? []);
      if (request.dryRun || sameInventory(recorded, ctx.recorded ?? ctx.previous)) return;
      // What another writer of this owner recorded since this sync read it stays (state-store.ts).
      await store.record(inventory.owner, recorded, ctx.recorded ?? ctx.previous ?? []).then(() => {
        ctx.recorded = recorded;
      }, skipped);
    };
  };
  // Only what drifted is applied again; a pass that finds nothing ends here, stable, having written nothing.
  const driftStage: Stage = async (ctx) => {
    if (!request.drift || !driftRun || !ctx.rendered) return;
    const found = await driftRun.check(ctx.rendered, {
      owner: request.inventory?.owner,
      mode: request.drift,
      fieldManager: request.fieldManager ?? 'mooring',
      concurrency: request.concurrency ?? 8,
      metadataOnly: judgedByMetadata,
    });
    ctx.drift = found.findings;
    ctx.rendered = found.rendered;
    if (found.findings.length === 0)
      ctx.wait = { outcome: 'stable', verdicts: [], culprit: undefined, elapsedMs: 0 };
  };
  /** The deploy's own apply, wait and delete for hooks: each refuses an object a hook does not own. */
  const hookActions = (): HookActions => {
    const applier = new Applier(api, discovery, {
      fieldManager: request.fieldManager ?? 'mooring',
      concurrency: request.concurrency ?? 8,
      refuse: hookRefusal(hookOwner),
    });
    return {
      check: (objects) => applier.check(objects),
      apply: (targets) => applier.apply(targets),
      wait: waitFor,
      remove: (object) => applier.remove(object),
    };
  };
  // Before anything is written (in a dry run too, so a preview says it): every hook whose name another object
  // holds fails the sync, and no hook runs, SyncFail's included.
  const hookCheckStage: Stage = async (ctx) => {
    const hooks = Object.values(ctx.hooks ?? {}).flat();
    try {
      await checkHooks(hookActions(), hooks);
    } catch (error) {
      ctx.hooks = undefined;
      throw error;
    }
  };
  /** Runs the hooks of a phase (src/sync/hooks.ts) with the deploy's own apply, wait and delete. */
  const runPhase = async (ctx: Context, phase: HookPhase) => {
    const hooks = ctx.hooks?.[phase] ?? [];
    if (hooks.length === 0 || request.dryRun) return;
    await runHooks(hookActions(), hooks, (run) => {
      ctx.hookRuns.push(run);
      deps.onEvent?.({ type: 'hook', run });
    });
  };
  const applyStage: Stage = async (ctx) => {
    const rendered = ctx.rendered as RenderResult;
    if (deps.beforeApply && !request.dryRun)
      await deps.beforeApply(
        rendered.objects
          .filter((_, i) => rendered.plan[i]?.version)
          .map((o) => `${o.kind} ${o.metadata.name}`),
      );
    const targets: ApplyTarget[] = rendered.objects.map((object, i) => ({
      object,
      plan: rendered.plan[i] as ApplyTarget['plan'],
    }));
    const written: KubeObject[] = [];
    const fieldManager = request.fieldManager ?? 'mooring';
    const owner = request.inventory?.owner;
    const applier = new Applier(api, discovery, {
      fieldManager,
      concurrency: request.concurrency ?? 8,
      dryRun: request.dryRun,
      // A drift pass writes back objects exactly as mooring wrote them before (their marks say so), or as the
      // dry run of drift.ts validated them just now: a second dry run of each would double what a pass costs.
      ...(request.drift ? { validateFirst: false } : {}),
      onWritten: (target, answer) => noteApplied(deps.cache, owner, target.object, answer, fieldManager),
      onResult: (result) => {
        written.push(result.target.object);
        if (!request.dryRun && result.action === 'unchanged')
          noteApplied(deps.cache, owner, result.target.object, result.live, fieldManager);
        deps.onEvent?.({ type: 'applied', result });
      },
      onPreview: deps.onPreview,
      absentNamespaces: ctx.absentNamespaces,
      // The inventory is written first; then the pre hooks run: one that fails stops the sync before any release
      // object is written.
      beforeWrite: async () => {
        await ctx.recordInventory?.(ctx.desired ?? []);
        await runPhase(ctx, 'pre');
      },
    });
    // Sync waves: each wave but the last is stable before the next is written; a wave that fails or times out
    // stops the deploy there, and its verdicts are the deploy's.
    const waves = new Set(targets.map((t) => t.plan.strategy.wave ?? 0));
    const afterWave =
      waves.size > 1 && !request.dryRun && request.wait !== false
        ? async (wave: number, results: ApplyResult[]) => {
            const result = await waitFor(results);
            if (result.outcome === 'stable') return true;
            ctx.wait = result;
            ctx.stoppedAtWave = { wave, left: [...waves].filter((w) => w > wave).length };
            return false;
          }
        : undefined;
    try {
      ctx.applied = await applier.apply(targets, { afterWave });
      // Waves after one that did not become stable were never written: they leave the inventory again.
      if (ctx.stoppedAtWave && ctx.recorded) await ctx.recordInventory?.(inventoryOf(written));
      // Argo CD's Sync hooks run with the release objects, once they are written.
      if (!ctx.stoppedAtWave && !request.dryRun) await runPhase(ctx, 'sync');
    } catch (error) {
      // The inventory names only what was applied: what this apply did not write comes out of it again. (A write
      // whose answer was lost is left out too; prune deletes only objects that carry mooring's field manager.)
      if (ctx.recorded && written.length < targets.length)
        await ctx.recordInventory?.(inventoryOf(written)).catch(() => undefined);
      throw error;
    }
  };
  // The warning Events of what is waited on (and what it owns), read while it is not stable; one reader per deploy,
  // so the owners it looked up serve every wave and hook. Those last seen long before the deploy are taken for an
  // earlier rollout's (a controller says it again when the object changes, and as it retries).
  const warningEvents = new WarningEvents(api, { sinceMs: started - WARNINGS_SINCE_MS });
  /** Waits until the objects of these results are stable (or one fails, or the deploy's deadline passes). */
  const waitFor = async (
    results: readonly ApplyResult[],
    rule?: (object: KubeObject, now: Date) => Stability,
  ): Promise<WaitResult> => {
    const cache = deps.cache ?? new ClusterCache(api);
    // Stability is judged on the object as apply left it or later, never on an older cached copy.
    const watched = results
      .filter((r) => !r.target.plan.strategy.ignored)
      .map((r) => {
        const { namespace, name } = r.target.object.metadata;
        const uid = r.live?.metadata.uid;
        const generation = r.live?.metadata.generation;
        const fresh = {
          uid: typeof uid === 'string' ? uid : undefined,
          generation: typeof generation === 'number' ? generation : undefined,
        };
        const metadataOnly = judgedByMetadata(r.target.object);
        return {
          name: describeObject(r.target.object),
          watch: (onObject: (o: KubeObject | undefined, note?: string) => void, signal: AbortSignal) =>
            cache.subscribe(r.resource, namespace, name, onObject, signal, { fresh, metadataOnly }).done,
        };
      });
    try {
      return await waitForStability(watched, {
        // What is left of the deploy's time (a wave waited on before spent some of it).
        timeoutMs: request.timeoutMs > 0 ? Math.max(1, started + request.timeoutMs - Date.now()) : 0,
        signal: request.signal,
        warnings: warningEvents,
        ...(rule
          ? { rule }
          : health
            ? { rule: (o: KubeObject, now: Date) => stabilityOf(o, now, health) }
            : {}),
        onProgress: (v) =>
          deps.onEvent?.({
            type: 'progress',
            object: v.name,
            state: v.stability.state,
            message: v.stability.message,
          }),
      });
    } finally {
      if (!deps.cache) cache.close();
    }
  };
  const waitStage: Stage = async (ctx) => {
    if (request.dryRun || request.wait === false || ctx.wait) return;
    deps.beforeWait?.();
    ctx.wait = await waitFor(ctx.applied ?? []);
  };
  // Once the release objects are stable: post-install/post-upgrade/post-rollback and PostSync hooks.
  const postHookStage: Stage = async (ctx) => {
    if (request.dryRun || request.wait === false || ctx.wait?.outcome !== 'stable') return;
    await runPhase(ctx, 'post');
  };
  // After the new set is applied and stable: what the inventory held and the render no longer has is deleted.
  const pruneStage: Stage = async (ctx) => {
    const inventory = request.inventory;
    if (!inventory?.prune || !ctx.desired) return;
    if (!request.dryRun && request.wait !== false && ctx.wait?.outcome !== 'stable') return;
    const store = new InventoryStore(api, inventory.namespace);
    const plan = await pruneTargets(api, discovery, {
      owner: inventory.owner,
      previous: ctx.previous ?? [],
      desired: ctx.desired,
      others: () => store.all(),
      fieldManager: request.fieldManager,
    });
    if (request.dryRun) {
      ctx.prune = { deleted: [], planned: plan.targets.map((t) => t.object), kept: plan.kept };
      return;
    }
    const result = await executePrune(api, plan);
    ctx.prune = { deleted: result.deleted, planned: [], kept: plan.kept };
    for (const d of result.deleted) deps.onEvent?.({ type: 'pruned', object: d });
    // What could not be deleted stays in the inventory, to be pruned by the next sync.
    const recorded = unionOf(
      ctx.desired,
      result.failed.map((f) => f.target.entry),
    );
    await store.record(inventory.owner, recorded, ctx.recorded ?? ctx.previous ?? []);
    const failed = result.failed[0];
    if (failed) throw failed.error;
  };
  const historyStage: Stage = async (ctx) => {
    if (request.dryRun || ctx.wait?.outcome !== 'stable' || !ctx.rendered) return;
    ctx.history = await collectVersionHistory(api, discovery, ctx.rendered.plan, ctx.rendered.objects, {
      defaultLimit: request.versionHistory,
      keep: request.keepVersions,
    });
  };

  const ctx: Context = { request, hookRuns: [], warnings: new WarningLog() };
  let error: unknown;
  let report: DeployReport | undefined;
  // What the API server warns about, in any request made for this deploy, is reported with it.
  const warned = <T>(fn: () => Promise<T>) => withWarnings(ctx.warnings, fn);
  try {
    // Requests made for this deploy retry transient failures (a restarting API server) until its deadline.
    await withDeadline({ until: started + request.timeoutMs, signal: request.signal }, () =>
      warned(async () => {
        for (const stage of [
          readCluster,
          renderStage,
          namespaceStage,
          inventoryStage,
          hookCheckStage,
          driftStage,
          applyStage,
          waitStage,
          postHookStage,
          pruneStage,
          historyStage,
        ]) {
          await stage(ctx);
          if (ctx.wait && (ctx.wait.outcome !== 'stable' || stage === driftStage)) break;
        }
      }),
    );
    // A wait that ran out while the API server was unreachable says nothing about the commit: the agent's error.
    // A server that stopped answering without closing its streams is found by asking it once.
    if (ctx.wait?.outcome === 'timed-out' && api.unreachableSince === undefined)
      await withDeadline({ until: Date.now() }, () => api.request('GET', '/version')).catch(() => undefined);
    const since = api.unreachableSince;
    if (ctx.wait?.outcome === 'timed-out' && since !== undefined) {
      const last = ctx.wait.culprit?.stability.message;
      error = new TransientError(
        `API server unreachable since ${new Date(since).toISOString().slice(11, 19)} UTC${last ? `; last seen: ${last}` : ''}`,
      );
    }
  } catch (e) {
    error = e;
  }
  try {
    // A sync that failed runs its SyncFail hooks (with time of their own: the deploy's may be spent); how they
    // ran is recorded, and the sync's failure stands whatever they do.
    const failed =
      error !== undefined ||
      (ctx.wait !== undefined && ctx.wait.outcome !== 'stable' && ctx.wait.outcome !== 'cancelled');
    if (failed && ctx.hooks?.fail.length && !request.signal?.aborted)
      await withDeadline({ until: Date.now() + FAIL_HOOK_TIMEOUT_MS }, () =>
        warned(() => runPhase(ctx, 'fail')),
      ).catch(() => undefined);
  } finally {
    // The one finalizer: whatever happened above, the report says it.
    report = finalize(ctx, error, Date.now() - started);
    driftRun?.end(request.inventory?.owner);
  }
  return report;
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms / 1000)}s`;
}

/** `(sync wave 1; 2 later waves not applied)`, when a wave stopped the deploy. */
function waveNote(ctx: Context): string {
  const stopped = ctx.stoppedAtWave;
  if (!stopped) return '';
  return ` (sync wave ${stopped.wave}; ${stopped.left} later wave${stopped.left === 1 ? '' : 's'} not applied)`;
}

function finalize(ctx: Context, error: unknown, elapsedMs: number): DeployReport {
  const applied = ctx.applied ?? [];
  const base = {
    applied,
    wait: ctx.wait,
    history: ctx.history,
    prune: ctx.prune,
    drift: ctx.drift,
    ...(ctx.hookRuns.length > 0 ? { hooks: ctx.hookRuns } : {}),
    ...(ctx.warnings.size > 0 ? { warnings: ctx.warnings.list() } : {}),
    error,
    elapsedMs,
  };
  const pruned = ctx.prune?.deleted.length ? `, ${ctx.prune.deleted.length} pruned` : '';
  if (error !== undefined) {
    const retry = classify(error).action !== 'stop';
    return {
      ...base,
      outcome: 'error',
      summary: `${retry ? 'failed (transient)' : 'failed'}: ${errorMessage(error)}`,
    };
  }
  if (ctx.request.dryRun) {
    return {
      ...base,
      outcome: 'dry-run',
      summary: `dry run: ${applied.length} objects valid${ctx.prune?.planned.length ? `, ${ctx.prune.planned.length} to prune` : ''}, nothing applied`,
    };
  }
  if (ctx.request.wait === false) {
    const changed = applied.filter((r) => r.action !== 'unchanged').length;
    return {
      ...base,
      outcome: 'applied',
      summary: `${applied.length} objects applied (${changed} changed) in ${seconds(elapsedMs)}${pruned}, not waited on`,
    };
  }
  const wait = ctx.wait;
  const watched = wait?.verdicts.length ?? 0;
  const stable = wait?.verdicts.filter((v) => v.stability.state === 'stable').length ?? 0;
  switch (wait?.outcome) {
    case 'stable':
      return {
        ...base,
        outcome: 'stable',
        summary: `${stable}/${watched} stable in ${seconds(elapsedMs)}${pruned}`,
      };
    case 'failed':
      return {
        ...base,
        outcome: 'failed',
        summary: `failed: ${wait.culprit?.stability.message ?? 'unknown'}${waveNote(ctx)}`,
      };
    case 'timed-out':
      return {
        ...base,
        outcome: 'timed-out',
        summary: `timed out after ${seconds(elapsedMs)} with ${stable}/${watched} stable: ${wait.culprit?.stability.message ?? ''}${waveNote(ctx)}`,
      };
    default:
      return { ...base, outcome: 'cancelled', summary: `cancelled with ${stable}/${watched} stable` };
  }
}
