// One deployment's drift check, cache first: each object's copy in the watch cache is compared with the mark of
// mooring's last write of it (drift-marks.ts). An object that moved is judged from the managed fields of its
// copy (ownership-drift.ts): another manager holding a field of the manifest is drift, found without a request.
// Only objects the managed fields cannot tell get the reads and dry runs of detectDrift (drift.ts), and only
// objects found changed by hand are applied again. A check where nothing moved, or where what moved was judged
// from managed fields, sends no dry run. Every request the deploy of a drift pass sends is counted, and the
// pass's summary (drift-pass.ts) adds them up.
import type { KubeObject } from '../render/manifest.ts';
import type { PlanEntry, RenderResult } from '../render/render.ts';
import type { KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { CLIENT_SIDE_MANAGERS } from './client-side-takeover.ts';
import type { Discovery, ResourceInfo } from './discovery.ts';
import { type DriftFinding, detectDrift } from './drift.ts';
import {
  baselineFrom,
  type CachedCopy,
  type Judgement,
  judgeCopy,
  type LiveMetadata,
  liveMetadata,
} from './drift-marks.ts';
import { driftState, noRequests, type RequestTally, tallied } from './drift-pass.ts';
import { keptFieldOwners } from './field-owners.ts';

/** How long a check waits for the cache to list a type before it checks the object the long way. */
const CACHE_WAIT_MS = 10_000;

export interface DriftRunDeps {
  api: KubeApi;
  discovery: Discovery;
  cache?: ClusterCache | undefined;
}

export interface DriftRunOptions {
  /** The deployment (the inventory's owner) whose marks are read. */
  owner: string | undefined;
  mode: 'correct' | 'report';
  fieldManager: string;
  concurrency: number;
  /** Objects the stability waits watch as metadata only: read from those streams, so they are shared. */
  metadataOnly: (object: KubeObject) => boolean;
}

/** What a check hands back to the deploy: the findings, and the rendered set cut down to what drifted. */
export interface DriftOutcome {
  findings: DriftFinding[];
  rendered: RenderResult;
}

/**
 * Notes a write's answer (or, for an object found unchanged, what was read of it) as the object's mark: any sync
 * of the agent, nothing in a dry run. An answer that carries managed fields (a write's) gives the mark what they
 * held besides mooring's own.
 */
export function noteApplied(
  cache: ClusterCache | undefined,
  owner: string | undefined,
  object: KubeObject,
  answer: { metadata: KubeObject['metadata'] } | undefined,
  fieldManager: string,
): void {
  if (!cache || owner === undefined) return;
  const marks = driftState(cache).marks;
  if (!marks.enabled) return;
  const managedFields = answer?.metadata.managedFields;
  const baseline =
    managedFields === undefined ? undefined : baselineFrom(object, managedFields, fieldManager);
  marks.recordWrite(owner, object, answer && liveMetadata(answer.metadata), baseline);
}

/** How long a sync waits for the watch cache to list a type before it reads the object the long way. */
const UNMOVED_WAIT_MS = 2_000;

/**
 * Whether a sync may leave `object` as it is, unread, not dry-run and not written (ApplyOptions.unmoved): the
 * deployment's mark says mooring wrote this very manifest to it, and the watch cache's copy is still the one that
 * write left (the same uid and resourceVersion), or moved only in what the manifest does not set (a controller's
 * status: its managed fields say so, when the cache keeps them; the mark is renewed then). The copy's metadata, or
 * undefined when the object takes the read and dry run of every other (no mark, another manifest, a copy the
 * cache cannot show within `waitMs`, anything moved by hand).
 */
export async function unmovedSinceWrite(
  cache: ClusterCache,
  owner: string,
  info: ResourceInfo,
  object: KubeObject,
  options: { fieldManager: string; metadataOnly: boolean; waitMs?: number },
): Promise<LiveMetadata | undefined> {
  const marks = driftState(cache).marks;
  const mark = marks.enabled ? marks.get(owner, object) : undefined;
  const desired = marks.digest(object);
  if (!mark || mark.resourceVersion === undefined || mark.desired !== desired) return undefined;
  const copy = await cachedCopy(cache, info, object, options.metadataOnly, options.waitMs ?? UNMOVED_WAIT_MS);
  if (!copy || copy === 'unknown') return undefined;
  const judgement = judgeCopy(mark, object, copy, options.fieldManager, desired);
  // Without managed fields, judgeCopy calls a copy quiet whose generation alone is unchanged: a label set by hand
  // moves no generation, and a sync puts it back. Only the same resourceVersion is unmoved then.
  if (judgement.verdict === 'quiet' && copy.metadata.resourceVersion === mark.resourceVersion)
    return copy.metadata;
  if (judgement.verdict !== 'clean') return undefined;
  marks.record(owner, object, copy.metadata, judgement.baseline);
  return copy.metadata;
}

/**
 * The metadata of `object` as the watch cache holds it, for a sync that writes a changed manifest to an object
 * mooring wrote before (ApplyOptions.cachedLive), in place of a read: the deployment's mark names the same object
 * (uid), and the copy's managed fields, when the cache keeps them, hold none of a client-side apply's (the read would
 * be for taking those over, src/kube/client-side-takeover.ts); when it does not keep them, the copy is the one the
 * write left or moved only in its status (its generation). Undefined sends the object to the read of every other
 * (no mark, a copy the cache cannot show within `waitMs`, another object of that name, anything else moved).
 */
export async function cachedSinceWrite(
  cache: ClusterCache,
  owner: string,
  info: ResourceInfo,
  object: KubeObject,
  options: { metadataOnly: boolean; waitMs?: number },
): Promise<LiveMetadata | undefined> {
  const marks = driftState(cache).marks;
  const mark = marks.enabled ? marks.get(owner, object) : undefined;
  if (mark?.uid === undefined) return undefined;
  const copy = await cachedCopy(cache, info, object, options.metadataOnly, options.waitMs ?? UNMOVED_WAIT_MS);
  if (!copy || copy === 'unknown' || copy.metadata.uid !== mark.uid) return undefined;
  if (!copy.owners) {
    // Without its managed fields (kept only for drift passes), as judgeCopy judges such a copy: unmoved, or moved
    // only in its status (the same generation).
    const { resourceVersion, generation } = copy.metadata;
    const still =
      (mark.resourceVersion !== undefined && resourceVersion === mark.resourceVersion) ||
      (typeof mark.generation === 'number' && generation === mark.generation);
    return still ? copy.metadata : undefined;
  }
  const clientSide = copy.owners.some(
    (o) =>
      (CLIENT_SIDE_MANAGERS as readonly string[]).includes(o.manager) &&
      o.operation === 'Update' &&
      o.subresource === undefined,
  );
  return clientSide ? undefined : copy.metadata;
}

/** The copy the watch cache holds of an object, read through a subscription that ends at its first answer. */
export function cachedCopy(
  cache: ClusterCache,
  info: ResourceInfo,
  object: KubeObject,
  metadataOnly: boolean,
  waitMs = CACHE_WAIT_MS,
): Promise<CachedCopy> {
  return new Promise((resolve) => {
    const controller = new AbortController();
    const finish = (copy: CachedCopy) => {
      clearTimeout(timer);
      controller.abort();
      resolve(copy);
    };
    const timer = setTimeout(() => finish('unknown'), waitMs);
    try {
      const { namespace, name } = object.metadata;
      const subscription = cache.subscribe(
        info,
        namespace,
        name,
        (copy, note) =>
          finish(
            note !== undefined
              ? 'unknown'
              : copy && { metadata: liveMetadata(copy.metadata), owners: keptFieldOwners(copy) },
          ),
        controller.signal,
        { metadataOnly },
      );
      subscription.done.catch(() => finish('unknown'));
    } catch {
      finish('unknown');
    }
  });
}

/** The drift check of one deploy of trigger drift; `api` is the deploy's client, counted. */
export class DriftRun {
  readonly api: KubeApi;
  private readonly deps: DriftRunDeps;
  private readonly tally: RequestTally = noRequests();
  private readonly started = Date.now();
  private objects = 0;
  private moved = 0;
  private byDryRun = 0;
  private drifted = 0;

  constructor(deps: DriftRunDeps) {
    this.deps = deps;
    this.api = tallied(deps.api, this.tally);
  }

  async check(rendered: RenderResult, options: DriftRunOptions): Promise<DriftOutcome> {
    const { discovery, cache } = this.deps;
    const { owner, fieldManager } = options;
    const marks = cache && owner !== undefined ? driftState(cache).marks : undefined;
    if (marks && owner !== undefined) marks.retain(owner, rendered.objects);
    const judged: (Judgement | undefined)[] = await Promise.all(
      rendered.objects.map(async (object, i) => {
        if (rendered.plan[i]?.strategy.ignored) return undefined;
        const mark = owner !== undefined ? marks?.get(owner, object) : undefined;
        let copy: CachedCopy = 'unknown';
        if (mark && cache) {
          const info = await discovery.resource(object.apiVersion, object.kind);
          copy = await cachedCopy(cache, info, object, options.metadataOnly(object));
        }
        const judgement = judgeCopy(mark, object, copy, fieldManager, marks?.digest(object));
        // Moved, but nothing of the manifest was touched: what the copy holds is the mark now.
        if (judgement.verdict === 'clean' && copy && copy !== 'unknown' && owner !== undefined)
          marks?.record(owner, object, copy.metadata, judgement.baseline);
        return judgement;
      }),
    );
    const toCheck = judged.flatMap((j, i) => (j?.verdict === 'check' ? [i] : []));
    const objects = toCheck.map((i) => rendered.objects[i] as KubeObject);
    const plan = toCheck.map((i) => rendered.plan[i] as PlanEntry);
    const checked = await detectDrift(this.api, discovery, objects, plan, {
      fieldManager,
      concurrency: options.concurrency,
      // Checked and as mooring wants it: what was read is the mark now, so the next pass need not check again.
      onClean: (j, live) => {
        const object = objects[j] as KubeObject;
        if (owner !== undefined)
          marks?.record(
            owner,
            object,
            liveMetadata(live.metadata),
            baselineFrom(object, live.metadata.managedFields, fieldManager),
          );
      },
    });
    const byObject = new Map(checked.map((f) => [f.object, f]));
    const findings: DriftFinding[] = [];
    const drifted: number[] = [];
    judged.forEach((j, i) => {
      const entry = rendered.plan[i] as PlanEntry;
      if (j?.verdict === 'drifted') {
        const { fields, added, by } = j;
        findings.push({ object: entry.object, fields, added, by });
        drifted.push(i);
      } else if (j?.verdict === 'check' && byObject.has(entry.object)) {
        findings.push(byObject.get(entry.object) as DriftFinding);
        drifted.push(i);
      }
    });
    this.moved += judged.filter((j) => j && j.verdict !== 'quiet').length;
    this.byDryRun += toCheck.length;
    this.objects += rendered.objects.length;
    this.drifted += findings.length;
    // Fields added by hand survive a server-side apply (another manager owns them): those objects are replaced.
    const replace = new Set(findings.filter((f) => f.added.length > 0).map((f) => f.object));
    return {
      findings,
      rendered: {
        ...rendered,
        objects: drifted.map((i) => rendered.objects[i] as KubeObject),
        plan: drifted.map((i) => {
          const entry = rendered.plan[i] as PlanEntry;
          return options.mode === 'correct' && replace.has(entry.object)
            ? { ...entry, strategy: { ...entry.strategy, method: 'replace' as const } }
            : entry;
        }),
      },
    };
  }

  /** The deploy of the drift pass ended: its part of the pass is added up. */
  end(owner: string | undefined): void {
    if (!this.deps.cache || owner === undefined) return;
    driftState(this.deps.cache).passes.checked(owner, {
      objects: this.objects,
      moved: this.moved,
      byDryRun: this.byDryRun,
      drifted: this.drifted,
      requests: { ...this.tally },
      elapsedMs: Date.now() - this.started,
    });
  }
}
