// The Applier and its types: applying a rendered set in phases (apply-order.ts), validated whole by a server-side
// dry run before the first write (all or nothing), and written with the method each object's plan asks for (apply,
// replace, recreate). Objects whose content would not change are not written (live-state.ts reads what is there),
// and objects the caller knows unmoved since its own last write are not even read or dry-run (ApplyOptions.unmoved).
// Only summaries of live objects and dry-run answers are kept (live-state.ts), so memory grows with the set's
// manifests, not with what the server sends back.
import { append } from '../arrays.ts';
import { naturalOrder, StalledError } from '../errors.ts';
import { FLUX_RECONCILE, FLUX_SSA } from '../render/annotations.ts';
import { describeObject, type KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import { ApplyRejectedError, explain, place } from './apply-errors.ts';
import { inPhases, prerequisitesOf } from './apply-order.ts';
import type { ApplyAction, ApplyOptions, ApplyResult, SetWrite } from './apply-types.ts';
import { type ApplyTarget, identity, ObjectVerbs } from './apply-verbs.ts';
import { pendingTakeOver, type TakeOver } from './client-side-takeover.ts';
import { pause } from './deadline.ts';
import { type Discovery, type ResourceInfo, UnservedKindError } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { type LiveSummary, namespaceExists, readLive, readObject, summarize } from './live-state.ts';
import { mapLimit } from './pool.ts';

/** A dry run refused with a conflict: the object is there, held by other managers. */
const THERE = Symbol('there');
function conflictIsThere(error: unknown): typeof THERE {
  if (statusCode(error) === 409) return THERE;
  throw error;
}

export { ApplyRejectedError } from './apply-errors.ts';
export { phaseOf } from './apply-order.ts';
export type { ApplyAction, ApplyOptions, ApplyResult, SetWrite } from './apply-types.ts';
export type { ApplyTarget } from './apply-verbs.ts';
export type { TakeOver } from './client-side-takeover.ts';
export type { LiveSummary } from './live-state.ts';

export class Applier {
  private readonly api: KubeApi;
  private readonly discovery: Discovery;
  private readonly options: Required<
    Omit<
      ApplyOptions,
      | 'onResult'
      | 'onWritten'
      | 'onPreview'
      | 'dryRun'
      | 'validateFirst'
      | 'beforeWrite'
      | 'absentNamespaces'
      | 'refuse'
      | 'known'
      | 'unmoved'
      | 'unmovedLive'
      | 'cachedLive'
      | 'servedWaitMs'
      | 'refuseClusterScoped'
    >
  > &
    ApplyOptions;

  /** The waits for kinds not served yet (whenServed), by `apiVersion|kind`: one per kind. */
  private readonly servedWaits = new Map<string, Promise<ResourceInfo>>();

  /** The requests each write is made of (apply-verbs.ts). */
  private readonly verbs: ObjectVerbs;

  constructor(api: KubeApi, discovery: Discovery, options: ApplyOptions) {
    this.api = api;
    this.discovery = discovery;
    this.options = { waitTimeoutMs: 120_000, ...options };
    this.verbs = new ObjectVerbs(api, this.options);
  }

  /**
   * The summary of `target` if the caller says it is unmoved since its last write (ApplyOptions.unmoved), or, with
   * `cached`, what its watch cache shows of it (ApplyOptions.cachedLive: no digest, nothing to compare).
   */
  private async unmoved(
    target: ApplyTarget,
    info: ResourceInfo,
    cached = false,
  ): Promise<LiveSummary | undefined> {
    const { dryRun, onPreview } = this.options;
    const { method, recreate } = target.plan.strategy;
    const ask = cached ? this.options.cachedLive : this.options.unmoved;
    if (!ask || dryRun || onPreview || recreate) return undefined;
    if (cached && (method === 'replace' || target.object.kind === 'CustomResourceDefinition'))
      return undefined;
    const metadata = await ask(target, info);
    if (!metadata) return undefined;
    const { apiVersion, kind } = target.object;
    const { name, namespace } = target.object.metadata;
    return {
      apiVersion,
      kind,
      metadata: { name, ...(namespace !== undefined ? { namespace } : {}), ...metadata },
      digest: undefined,
    };
  }

  /** Whether `target` is dry-run before it is read: not applied before, and written by server-side apply. */
  private probes(target: ApplyTarget): boolean {
    const { known, onPreview } = this.options;
    const { method, recreate } = target.plan.strategy;
    return (
      known !== undefined &&
      !onPreview &&
      method !== 'replace' &&
      !recreate &&
      target.plan.strategy.writeOnce === undefined &&
      !known(target.object)
    );
  }

  /**
   * Applies the set: the whole set's server-side dry run first (all or nothing), then `beforeWrite`, the
   * prerequisites, and its writes wave by wave (strategy.wave, lowest first), each wave in kind phases. A deploy
   * runs these steps itself, with its hooks and waits between them (src/sync/deploy/tasks.ts).
   */
  async apply(targets: readonly ApplyTarget[]): Promise<ApplyResult[]> {
    const set = await this.prepare(targets);
    if (!this.options.dryRun) await this.options.beforeWrite?.();
    await set.prerequisites();
    for (const wave of set.waves) await set.writeWave(wave);
    return set.results();
  }

  /**
   * The set validated whole by its server-side dry run (all or nothing: a refusal throws ApplyRejectedError
   * before anything is written), ready to be written in steps (SetWrite).
   */
  async prepare(targets: readonly ApplyTarget[]): Promise<SetWrite> {
    // Objects whose namespace or CRD arrives in this same set cannot be dry-run before it exists: they are
    // validated when their phase comes. A custom resource whose CRD the set holds unchanged is not among them:
    // that definition (its schema and CEL rules) is already in force, so it is validated with the rest below.
    const newNamespaces = new Set(
      targets.filter((t) => t.object.kind === 'Namespace').map((t) => t.object.metadata.name),
    );
    const definitions = definedKinds(targets);
    const deferred = new Set<ApplyTarget>();
    /** Custom resources of kinds not served yet that skip the dry run (strategy.whenServed): written when served. */
    const unserved = new Set<ApplyTarget>();
    /** What is left as it is (strategy.writeOnce: there already, or never to be written), and why. */
    const left = new Map<ApplyTarget, string>();
    const absent = new Set<ApplyTarget>();
    const resources = new Map<ApplyTarget, ResourceInfo>();
    const lives = new Map<ApplyTarget, LiveSummary | undefined>();
    const dryRuns = new Map<ApplyTarget, LiveSummary | undefined>();
    /** Objects the caller says are unmoved since its last write: left as they are (ApplyOptions.unmoved). */
    const unmoved = new Set<ApplyTarget>();
    const problems: string[] = [];
    const awaitingDefinition: ApplyTarget[] = [];
    /**
     * Whether each of the set's own Namespaces exists, asked once per pass over the targets (not once per object
     * in it: a set of 1,000 objects with its Namespace sent 1,000 identical reads on every sync), and asked again
     * once the prerequisites are written.
     */
    let namespaceThere = new Map<string, Promise<boolean>>();
    const namespaceIsThere = (ns: string): Promise<boolean> => {
      let there = namespaceThere.get(ns);
      if (!there) {
        there = namespaceExists(this.api, ns);
        namespaceThere.set(ns, there);
      }
      return there;
    };

    /**
     * Where a target stands before the dry run: its kind resolved, its namespace there (or coming). A kind that
     * is not served is a problem, or, for a custom resource of the set's CRDs (`unknown: 'defer'`), left to its
     * phase as before: discovery may not have caught up with its definition yet.
     */
    const sort = async (
      target: ApplyTarget,
      ready: ApplyTarget[],
      unknown: 'problem' | 'defer' = 'problem',
    ): Promise<void> => {
      const { object } = target;
      let info: ResourceInfo;
      try {
        info = await this.discovery.resource(object.apiVersion, object.kind);
      } catch (error) {
        if (unknown === 'defer') deferred.add(target);
        else if (error instanceof UnservedKindError && target.plan.strategy.whenServed) unserved.add(target);
        else problems.push(`${place(target)}: ${(error as Error).message}`);
        return;
      }
      resources.set(target, info);
      const ns = object.metadata.namespace;
      if (info.namespaced && ns && this.options.dryRun && this.options.absentNamespaces?.has(ns)) {
        absent.add(target);
        return;
      }
      if (info.namespaced && ns && newNamespaces.has(ns) && !(await namespaceIsThere(ns))) {
        deferred.add(target);
        return;
      }
      ready.push(target);
    };
    const validate = this.options.validateFirst !== false;
    /** Reads the live objects of `ready` and dry-runs them (when validating), into the maps above. */
    const adopt = new Map<ApplyTarget, TakeOver>();
    const check = async (ready: ApplyTarget[]): Promise<void> => {
      const refused: string[] = [];
      const inspect = (target: ApplyTarget, live: KubeObject) => {
        const why = this.options.refuse?.(live, target.object);
        if (why) refused.push(why);
        this.noteTakeOver(adopt, target, live);
      };
      const refuse = () => {
        if (refused.length > 0) throw new StalledError(refused.sort(naturalOrder).join('; '));
      };
      if (validate)
        await mapLimit(ready, this.options.concurrency, async (target) => {
          const live = await this.unmoved(target, resources.get(target) as ResourceInfo);
          if (!live) return;
          unmoved.add(target);
          lives.set(target, live);
        });
      const rest = unmoved.size === 0 ? ready : ready.filter((t) => !unmoved.has(t));
      // What the caller never applied is dry-run before it is read (ApplyOptions.known).
      const probed = new Set(validate ? rest.filter((t) => this.probes(t)) : []);
      // What it wrote before and its watch cache shows is not read (ApplyOptions.cachedLive).
      const cached = new Set<ApplyTarget>();
      if (validate && this.options.cachedLive)
        await mapLimit(
          rest.filter((t) => !probed.has(t)),
          this.options.concurrency,
          async (target) => {
            const live = await this.unmoved(target, resources.get(target) as ResourceInfo, true);
            if (!live) return;
            cached.add(target);
            lives.set(target, live);
          },
        );
      try {
        for (const [target, live] of await readLive(
          this.api,
          rest.filter((t) => !probed.has(t) && !cached.has(t)),
          resources,
          this.options.concurrency,
          inspect,
        ))
          lives.set(target, live);
      } catch (error) {
        throw describeKubeError(error, 'read the live objects');
      }
      refuse();
      const { unmovedLive, dryRun, onPreview } = this.options;
      if (validate && unmovedLive && !dryRun && !onPreview)
        for (const target of rest) {
          const live = lives.get(target);
          if (live && !probed.has(target) && !adopt.has(target) && !target.plan.strategy.recreate)
            if (unmovedLive(target, live)) unmoved.add(target);
        }
      for (const target of rest) {
        const why = this.leftBy(target, lives.get(target));
        if (why) left.set(target, why);
      }
      const checked = rest.filter((t) => !unmoved.has(t) && !left.has(t));
      await mapLimit(validate ? checked : [], this.options.concurrency, async (target) => {
        const info = resources.get(target) as ResourceInfo;
        try {
          if (probed.has(target)) {
            const answer = await this.verbs.dryRun(info, target, undefined).catch(conflictIsThere);
            if (answer !== THERE && answer?.metadata.resourceVersion === undefined) {
              lives.set(target, undefined);
              dryRuns.set(target, answer);
              return;
            }
            // It is there after all: read, checked and dry-run as every object the caller applied before.
            const live = await readObject(this.api, info, target.object, (o) => inspect(target, o));
            lives.set(target, live);
            if (refused.length > 0) return;
            const why = this.leftBy(target, live);
            if (why) {
              left.set(target, why);
              return;
            }
          }
          dryRuns.set(target, await this.verbs.dryRun(info, target, lives.get(target), adopt.has(target)));
        } catch (error) {
          // No answer is no refusal: an API server that cannot be reached (or still asks to wait) fails the set as
          // a failed read does, to be tried again; what the server answered is listed with the rest.
          const code = statusCode(error);
          if (!(error instanceof StalledError) && (code === undefined || code === 429))
            throw describeKubeError(error, `dry-run ${place(target)}`);
          problems.push(`${place(target)}: ${explain(error)}`);
        }
      });
      refuse();
    };

    const ready: ApplyTarget[] = [];
    await mapLimit(targets, this.options.concurrency, async (target) => {
      if (definitions.has(customKind(target.object))) awaitingDefinition.push(target);
      else await sort(target, ready);
    });
    await check(ready);
    // The CRDs of the set that exist and that its dry run leaves as they are: their kinds are served as defined.
    const inForce = new Set<string>();
    for (const [kind, crd] of definitions) {
      const live = lives.get(crd);
      if (unmoved.has(crd) || (validate && live?.digest && dryRuns.get(crd)?.digest === live.digest))
        inForce.add(kind);
    }
    const readyNow: ApplyTarget[] = [];
    await mapLimit(awaitingDefinition, this.options.concurrency, async (target) => {
      if (inForce.has(customKind(target.object))) await sort(target, readyNow, 'defer');
      else deferred.add(target);
    });
    await check(readyNow);
    if (problems.length > 0) throw new ApplyRejectedError(problems.sort(naturalOrder));
    const known = { resources, lives, dryRuns, deferred, unserved, left, absent, adopt, unmoved };
    const early = new Map<ApplyTarget, ApplyResult>();
    const results: ApplyResult[] = [];
    return {
      waves: [...new Set(targets.map((t) => t.plan.strategy.wave ?? 0))].sort((a, b) => a - b),
      // All or nothing holds for objects whose Namespace or CRD the set brings too: those prerequisites alone are
      // written first (the CRDs until Established), then what waited for them is dry-run, and a refusal there
      // stops the deploy before any other write.
      prerequisites: async () => {
        if (this.options.dryRun || !validate || deferred.size === 0) return;
        const first = prerequisitesOf([...deferred], targets);
        for (const result of await this.writeWave(first, known)) early.set(result.target, result);
        const waiting = [...deferred];
        deferred.clear();
        namespaceThere = new Map();
        const readyLate: ApplyTarget[] = [];
        await mapLimit(waiting, this.options.concurrency, (target) => sort(target, readyLate));
        await check(readyLate);
        if (problems.length > 0) {
          const written = inPhases(first, (t) => t.object.kind).flat();
          throw new ApplyRejectedError(
            problems.sort(naturalOrder),
            written.map((t) => describeObject(t.object)),
          );
        }
      },
      writeWave: async (wave) => {
        const inWave = targets.filter((t) => (t.plan.strategy.wave ?? 0) === wave);
        const waveResults = inWave.flatMap((t) => early.get(t) ?? []);
        append(
          waveResults,
          await this.writeWave(
            inWave.filter((t) => !early.has(t)),
            known,
          ),
        );
        append(results, waveResults);
        return waveResults;
      },
      // In the order of the render set, whatever order the phases wrote them in.
      results: () => {
        const byTarget = new Map(results.map((r) => [r.target, r]));
        return targets.map((t) => byTarget.get(t)).filter((r): r is ApplyResult => r !== undefined);
      },
    };
  }

  /** One wave's writes, in kind phases (apply-order.ts); a CRD's phase waits until the CRD is established. */
  private async writeWave(
    targets: readonly ApplyTarget[],
    known: {
      resources: Map<ApplyTarget, ResourceInfo>;
      lives: Map<ApplyTarget, LiveSummary | undefined>;
      dryRuns: Map<ApplyTarget, LiveSummary | undefined>;
      deferred: ReadonlySet<ApplyTarget>;
      unserved: ReadonlySet<ApplyTarget>;
      left: Map<ApplyTarget, string>;
      absent: ReadonlySet<ApplyTarget>;
      adopt: Map<ApplyTarget, TakeOver>;
      unmoved: ReadonlySet<ApplyTarget>;
    },
  ): Promise<ApplyResult[]> {
    const { resources, lives, dryRuns, deferred, unserved, left, absent, adopt, unmoved } = known;
    const results: ApplyResult[] = [];
    for (const batch of inPhases(targets, (t) => t.object.kind)) {
      const written = await mapLimit(batch, this.options.concurrency, async (target) => {
        let info = resources.get(target);
        let live = lives.get(target);
        let preview = dryRuns.get(target);
        if (unserved.has(target)) {
          // A dry run cannot tell what the server would make of it: reported as created, as rendered.
          if (this.options.dryRun) return this.notValidated(target);
          info = await this.whenServed(target);
        }
        if (deferred.has(target) || unserved.has(target)) {
          try {
            info ??= await this.discovery.resource(target.object.apiVersion, target.object.kind);
            live = await readObject(this.api, info, target.object, (found) => {
              const why = this.options.refuse?.(found, target.object);
              if (why) throw new StalledError(why);
              this.noteTakeOver(adopt, target, found);
            });
            const why = this.leftBy(target, live);
            if (why) left.set(target, why);
            else preview = await this.verbs.dryRun(info, target, live, adopt.has(target));
          } catch (error) {
            throw new StalledError(`${place(target)}: ${explain(error)}`, { cause: error });
          }
        }
        if (!info) throw new Error(`no resource for ${place(target)}`);
        const leftBy = left.get(target);
        if (leftBy !== undefined) {
          const result: ApplyResult = { target, action: 'unchanged', live, resource: info, leftBy };
          this.options.onResult?.(result);
          return result;
        }
        if (absent.has(target) || unmoved.has(target)) {
          const result: ApplyResult = unmoved.has(target)
            ? { target, action: 'unchanged', live, resource: info }
            : { target, action: 'created', live: undefined, resource: info };
          this.options.onResult?.(result);
          return result;
        }
        const result = await this.write(info, target, live, preview, adopt.get(target));
        this.options.onResult?.(result);
        return result;
      });
      append(results, written);
      if (batch.some((t) => t.object.kind === 'CustomResourceDefinition') && !this.options.dryRun) {
        const crds = batch.filter((t) => t.object.kind === 'CustomResourceDefinition');
        await this.verbs.waitEstablished(crds);
        this.discovery.invalidate();
        await this.waitServed(crds);
      }
    }
    return results;
  }

  /**
   * Why `target` is left as it is, if it is: Flux's reconcile disabled on the live object (FLUX_RECONCILE); or
   * strategy.writeOnce: Flux's `IfNotPresent` on an object that exists, `Ignore` whether it exists or not.
   */
  private leftBy(target: ApplyTarget, live: LiveSummary | undefined): string | undefined {
    if (live?.metadata.reconcileDisabled) return `${FLUX_RECONCILE}: disabled`;
    const once = target.plan.strategy.writeOnce;
    if (once === undefined || (once === 'IfNotPresent' && live === undefined)) return undefined;
    return `${FLUX_SSA}: ${once}`;
  }

  /**
   * The result of a dry run for an object of a kind not served yet (strategy.whenServed): `created`, its rendered
   * manifest the preview (`mooring diff` shows it whole), its resource guessed from the manifest.
   */
  private notValidated(target: ApplyTarget): ApplyResult {
    const { apiVersion, kind, metadata } = target.object;
    const resource: ResourceInfo = {
      apiVersion,
      kind,
      plural: `${kind.toLowerCase()}s`,
      namespaced: metadata.namespace !== undefined,
    };
    this.options.onPreview?.(target, target.object);
    const result: ApplyResult = { target, action: 'created', live: undefined, resource };
    this.options.onResult?.(result);
    return result;
  }

  /**
   * Waits until the cluster serves the kind of `target` (its CRD installed by another deployment or an operator),
   * for `servedWaitMs`: one wait per kind, shared by every object of it that waits (a hundred custom resources of a
   * kind not served yet look at its group-version's discovery once a second, not a hundred times).
   */
  private async whenServed(target: ApplyTarget): Promise<ResourceInfo> {
    const { apiVersion, kind } = target.object;
    const waitMs = this.options.servedWaitMs ?? this.options.waitTimeoutMs;
    const key = `${apiVersion}|${kind}`;
    let wait = this.servedWaits.get(key);
    if (!wait) {
      wait = this.pollServed(apiVersion, kind, Date.now() + waitMs);
      this.servedWaits.set(key, wait);
      // Settled, it is asked anew by whoever comes later (a later wave, a retry): discovery answers at once then.
      void wait.then(
        () => this.servedWaits.delete(key),
        () => this.servedWaits.delete(key),
      );
    }
    let info: ResourceInfo | undefined;
    try {
      info = await wait;
    } catch (error) {
      if (!(error instanceof UnservedKindError)) throw error;
    }
    if (!info)
      throw new StalledError(
        `${place(target)}: the cluster did not serve ${kind} in ${apiVersion} within ${Math.round(waitMs / 1000)} s (argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true writes it once its CRD is installed)`,
      );
    if (!info.namespaced) {
      // Its scope unknown, it was held to the boundary as an object of the deployment's namespace: it is held
      // again as what it is.
      const why = this.options.refuseClusterScoped?.(target.object);
      if (why) throw new StalledError(`${place(target)}: its kind is served ${why}`);
      // Placed in the deployment's namespace while its scope was unknown (src/sync/deploy/read-cluster.ts).
      delete target.object.metadata.namespace;
    }
    return info;
  }

  /** Asks discovery for `kind` each second until it is served; throws its UnservedKindError past `deadline`. */
  private async pollServed(apiVersion: string, kind: string, deadline: number): Promise<ResourceInfo> {
    for (;;) {
      try {
        return await this.discovery.resource(apiVersion, kind);
      } catch (error) {
        if (!(error instanceof UnservedKindError) || Date.now() > deadline) throw error;
        await pause(1000);
      }
    }
  }

  /**
   * Until discovery lists each kind an established CRD serves: kube-apiserver marks a CRD Established as its
   * handler is installed, and its discovery documents follow a moment later (on a busy server, seconds). A custom
   * resource dry-run before then would be refused as a kind the cluster does not serve.
   */
  private async waitServed(crds: readonly ApplyTarget[]): Promise<void> {
    const deadline = Date.now() + this.options.waitTimeoutMs;
    for (const crd of crds) {
      const spec = (crd.object.spec ?? {}) as {
        group?: unknown;
        names?: { kind?: unknown };
        versions?: { name?: unknown; served?: unknown }[];
      };
      const kind = spec.names?.kind;
      if (typeof spec.group !== 'string' || typeof kind !== 'string' || !Array.isArray(spec.versions))
        continue;
      for (const version of spec.versions) {
        if (version?.served === false || typeof version?.name !== 'string') continue;
        const apiVersion = `${spec.group}/${version.name}`;
        for (;;) {
          try {
            await this.discovery.resource(apiVersion, kind);
            break;
          } catch (error) {
            if (!(error instanceof UnservedKindError)) throw error;
            if (Date.now() > deadline)
              throw new StalledError(
                `${describeObject(crd.object)}: established, but the API server did not serve ${kind} in ${apiVersion} within ${this.options.waitTimeoutMs} ms`,
              );
            await pause(200);
          }
        }
      }
    }
  }

  private async write(
    info: ResourceInfo,
    target: ApplyTarget,
    live: LiveSummary | undefined,
    preview: LiveSummary | undefined,
    adopting: TakeOver | undefined,
  ): Promise<ApplyResult> {
    const { strategy } = target.plan;
    const done = (action: ApplyAction, after: LiveSummary | undefined, tookOver?: TakeOver): ApplyResult => ({
      target,
      action,
      live: after,
      resource: info,
      ...(tookOver ? { tookOver } : {}),
    });
    const written = (answer: KubeObject): LiveSummary => {
      const whole = identity(answer, target);
      this.options.onWritten?.(target, whole);
      return summarize(whole, undefined, false);
    };
    // Seed 001: recreate redeploys what exists (for a versioned object, only the same version).
    if (strategy.recreate && live) {
      if (this.options.dryRun) return done('recreated', live);
      await this.verbs.deleteAndWait(info, target.object, live);
      return done(
        'recreated',
        written(await this.verbs.guard(target, () => this.verbs.serverSideApply(info, target, false, true))),
      );
    }
    // What a client-side apply owns is taken over even when the content would not change: that is when a field
    // removed from Git is still on the object.
    if (live?.digest && preview?.digest === live.digest && !adopting) return done('unchanged', live);
    if (this.options.dryRun)
      return done(
        live ? (strategy.method === 'replace' ? 'replaced' : 'configured') : 'created',
        preview,
        adopting,
      );
    if (strategy.method === 'replace') {
      const after = await this.verbs.guard(target, () => this.verbs.replaceLatest(info, target, live));
      return done(live ? 'replaced' : 'created', written(after));
    }
    const { after, tookOver } = await this.verbs.applyTakingOver(info, target, adopting !== undefined);
    const summary = written(after);
    // Known from the watch cache only (ApplyOptions.cachedLive): a write that changed nothing left its version.
    const same =
      live !== undefined &&
      live.digest === undefined &&
      live.metadata.resourceVersion !== undefined &&
      summary.metadata.resourceVersion === live.metadata.resourceVersion;
    return done(same ? 'unchanged' : live ? 'configured' : 'created', summary, tookOver);
  }

  /** Notes, from an object as read, what taking over would change on it (server-side apply only). */
  private noteTakeOver(adopt: Map<ApplyTarget, TakeOver>, target: ApplyTarget, live: KubeObject): void {
    const { method, recreate } = target.plan.strategy;
    // A replace writes the whole object, and a recreate a new one: nothing of the old ownership is left.
    if (method === 'replace' || recreate) return;
    const pending = pendingTakeOver(live, target.object);
    if (pending) adopt.set(target, pending);
  }

  /**
   * Deletes the object as it is now (its uid a precondition) and waits until it is gone: a hook's delete policy.
   * False when there was nothing to delete.
   */
  async remove(object: KubeObject): Promise<boolean> {
    let info: ResourceInfo;
    try {
      info = await this.discovery.resource(object.apiVersion, object.kind);
    } catch (error) {
      // A kind the cluster does not serve (yet) holds nothing to delete: a hook of such a kind (SkipDryRunOnMissingResource)
      // goes on to its write, which waits for the kind or names the object it refuses.
      if (error instanceof UnservedKindError) return false;
      throw error;
    }
    const refuse = this.options.refuse;
    if (!refuse) {
      const live = await this.verbs.read(info, object);
      if (!live) return false;
      await this.verbs.deleteAndWait(info, object, live);
      return true;
    }
    // Read as metadata only (what the object is, not what a Secret holds) and judged; the delete's uid
    // precondition is this read's, so an object that took the name since is not deleted.
    const whole = await this.verbs.readMetadata(info, object);
    if (!whole) return false;
    const why = refuse(whole, object);
    if (why) throw new StalledError(why);
    await this.verbs.deleteAndWait(info, object, summarize(whole, undefined, false));
    return true;
  }

  /**
   * Reads what holds each object's name now (metadata only) and refuses them all, before anything is written,
   * when `refuse` says one is not the caller's. A kind the server does not serve yet holds nothing.
   */
  async check(objects: readonly KubeObject[]): Promise<void> {
    const refuse = this.options.refuse;
    if (!refuse) return;
    const problems: string[] = [];
    await mapLimit(objects, this.options.concurrency, async (object) => {
      const info = await this.discovery.resource(object.apiVersion, object.kind).catch((error: unknown) => {
        if (error instanceof StalledError) return undefined;
        throw error;
      });
      const live = info && (await this.verbs.readMetadata(info, object));
      const why = live && refuse(live, object);
      if (why) problems.push(why);
    });
    if (problems.length > 0) throw new StalledError(problems.sort(naturalOrder).join('; '));
  }
}

/** `group/Kind` of a custom resource (of any object: core kinds give `/Kind`). */
function customKind(object: KubeObject): string {
  const group = object.apiVersion.includes('/') ? object.apiVersion.split('/')[0] : '';
  return `${group}/${object.kind}`;
}

/** The CRDs of the set, by the `group/Kind` each defines. */
function definedKinds(targets: readonly ApplyTarget[]): Map<string, ApplyTarget> {
  const kinds = new Map<string, ApplyTarget>();
  for (const t of targets) {
    if (t.object.kind !== 'CustomResourceDefinition') continue;
    const spec = t.object.spec as { group?: string; names?: { kind?: string } } | undefined;
    kinds.set(`${spec?.group}/${spec?.names?.kind}`, t);
  }
  return kinds;
}
