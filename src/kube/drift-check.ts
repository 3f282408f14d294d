// One deployment's drift check, cache first: each object's copy in the watch cache is compared with the mark of
// mooring's last write of it (drift-marks.ts); only objects that moved get the reads and dry runs of detectDrift
// (drift.ts), and only objects found changed by hand are applied again. A check where nothing moved sends no
// dry run and no write. Every request the deploy of a drift pass sends is counted, and the pass's summary
// (drift-pass.ts) adds them up.
import type { KubeObject } from '../render/manifest.ts';
import type { PlanEntry, RenderResult } from '../render/render.ts';
import type { KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import type { Discovery, ResourceInfo } from './discovery.ts';
import { type DriftFinding, detectDrift } from './drift.ts';
import { type CachedCopy, desiredDigest, liveMetadata, movedSince } from './drift-marks.ts';
import { driftState, noRequests, type RequestTally, tallied } from './drift-pass.ts';
import type { LiveSummary } from './live-state.ts';

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

/** Notes an apply's result as the object's mark (any sync of the agent; nothing in a dry run). */
export function noteApplied(
  cache: ClusterCache | undefined,
  owner: string | undefined,
  result: { target: { object: KubeObject }; live: LiveSummary | undefined },
): void {
  if (!cache || owner === undefined) return;
  driftState(cache).marks.record(owner, result.target.object, result.live?.metadata);
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
          finish(note !== undefined ? 'unknown' : copy && { metadata: liveMetadata(copy.metadata) }),
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
  private drifted = 0;

  constructor(deps: DriftRunDeps) {
    this.deps = deps;
    this.api = tallied(deps.api, this.tally);
  }

  async check(rendered: RenderResult, options: DriftRunOptions): Promise<DriftOutcome> {
    const { discovery, cache } = this.deps;
    const { owner } = options;
    const marks = cache && owner !== undefined ? driftState(cache).marks : undefined;
    if (marks && owner !== undefined) marks.retain(owner, rendered.objects);
    const moved: number[] = [];
    await Promise.all(
      rendered.objects.map(async (object, i) => {
        if (rendered.plan[i]?.strategy.ignored) return;
        const mark = owner !== undefined ? marks?.get(owner, object) : undefined;
        let copy: CachedCopy = 'unknown';
        if (mark && cache) {
          const info = await discovery.resource(object.apiVersion, object.kind);
          copy = await cachedCopy(cache, info, object, options.metadataOnly(object));
        }
        if (movedSince(mark, desiredDigest(object), copy).moved) moved.push(i);
      }),
    );
    moved.sort((a, b) => a - b);
    const objects = moved.map((i) => rendered.objects[i] as KubeObject);
    const plan = moved.map((i) => rendered.plan[i] as PlanEntry);
    const findings = await detectDrift(this.api, discovery, objects, plan, {
      fieldManager: options.fieldManager,
      concurrency: options.concurrency,
      // Checked and as mooring wants it: what was read is the mark now, so the next pass need not check again.
      onClean: (j, live) => {
        if (owner !== undefined) marks?.record(owner, objects[j] as KubeObject, liveMetadata(live.metadata));
      },
    });
    this.objects += rendered.objects.length;
    this.moved += moved.length;
    this.drifted += findings.length;
    const found = new Set(findings.map((f) => f.object));
    // Fields added by hand survive a server-side apply (another manager owns them): those objects are replaced.
    const replace = new Set(findings.filter((f) => f.added.length > 0).map((f) => f.object));
    const keep = plan.flatMap((entry, j) => (found.has(entry.object) ? [j] : []));
    return {
      findings,
      rendered: {
        ...rendered,
        objects: keep.map((j) => objects[j] as KubeObject),
        plan: keep.map((j) => {
          const entry = plan[j] as PlanEntry;
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
      drifted: this.drifted,
      requests: { ...this.tally },
      elapsedMs: Date.now() - this.started,
    });
  }
}
