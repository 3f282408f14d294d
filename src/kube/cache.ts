// The cluster cache: the objects of each resource type and namespace that something is interested in, kept
// current by ONE list and ONE watch per (resource type, namespace), whatever the number of objects, and shared
// by every sync that runs at once. This is the design of client-go's informers, Argo CD's cluster cache
// (gitops-engine) and Flux's caching reader, narrowed to what is in use: a type and namespace is watched only
// while a subscriber needs it (plus a linger, so consecutive syncs of the agent reuse the stream), and a
// subscriber hears only of its own object, so each verdict is re-evaluated on events of that object alone.
// A stability wait of N objects of K kinds in M namespaces costs 2*K*M requests, none per object, or K*M where the
// server serves streaming lists (src/kube/watch-list.ts): then the list is the first part of the watch.
import { groupOf, type KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import { type ResourceInfo, resourcePath } from './discovery.ts';
import { Informer, type InformerOptions } from './informer.ts';
import { StreamingSupport, streamingSupportOf } from './watch-list.ts';

export type { InformerState } from './informer.ts';

export interface CacheOptions extends Partial<InformerOptions> {
  /**
   * How long a type and namespace stays watched after its last subscriber left. 0 in the CLI (the process ends
   * anyway); a minute or more in the agent, where the next sync of the same deployment needs the same streams.
   */
  lingerMs?: number;
  /** Ask for streaming lists (true by default); false lists and watches as a server without them needs. */
  streamingLists?: boolean;
}

/** What a subscriber accepts as the current state of its object: no older than what apply wrote. */
export interface Freshness {
  uid?: string | undefined;
  generation?: number | undefined;
}

export interface SubscribeOptions {
  fresh?: Freshness;
  /**
   * The subscriber needs the object's metadata only (its kind has no status to judge): it is listed and watched
   * as PartialObjectMetadata, so no content (no Secret value) is transferred or held.
   */
  metadataOnly?: boolean;
}

export interface Subscription {
  /** Resolves when `signal` aborts; rejects when the type cannot be watched at all (forbidden, unknown). */
  done: Promise<void>;
}

const DEFAULTS: InformerOptions = {
  pageSize: 500,
  minBackoffMs: 250,
  maxBackoffMs: 30_000,
  watchSeconds: 300,
  idleMarginSeconds: 60,
  // A server that serves streaming lists starts sending at once (from its watch cache); ten silent seconds
  // before the end mark mean it ignored the ask.
  initialEventsTimeoutMs: 10_000,
};

export class ClusterCache {
  private readonly api: KubeApi;
  private readonly options: InformerOptions & { lingerMs: number };
  private readonly informers = new Map<string, Informer>();
  private readonly lingering = new Map<string, NodeJS.Timeout>();
  private closed = false;
  /**
   * Writes of this agent that the watch of their type and namespace has not shown yet, by type key (typeKey) and
   * name: the resourceVersion each write answered. Kept only while the type and namespace is watched: a watch
   * started after a write lists it anyway.
   */
  private readonly unseen = new Map<string, Map<string, string>>();
  /** The informers open per type key (in full and metadata only). */
  private readonly typeWatches = new Map<string, Set<Informer>>();
  /** What this server said to streaming lists, per type: outlives the informers and the cache, so it is asked once. */
  private readonly streaming: StreamingSupport;

  constructor(api: KubeApi, options: CacheOptions = {}) {
    this.api = api;
    this.options = { ...DEFAULTS, lingerMs: 0, ...options };
    this.streaming = options.streamingLists === false ? new StreamingSupport(false) : streamingSupportOf(api);
  }

  /** The types that refused a streaming list (listed and watched instead), with the server's answer. */
  get streamingRefusals(): ReadonlyMap<string, string> {
    return this.streaming.refusals;
  }

  /**
   * From now on, copies of objects `manager` wrote keep who owns their fields (drift passes read them); copies
   * listed before keep them from their next change.
   */
  keepFieldOwnersOf(manager: string): void {
    this.options.keepFieldOwnersOf = manager;
  }

  /** Type-and-namespace streams open now (for tests, metrics and the benchmark). */
  get watched(): number {
    return this.informers.size;
  }

  /** Requests the cache has sent (list pages and watches) over the lifetime of its open informers. */
  get requests(): number {
    let total = 0;
    for (const informer of this.informers.values()) total += informer.requests;
    return total;
  }

  /** Closed (the agent stopping or reloading): it takes no new subscription. */
  get isClosed(): boolean {
    return this.closed;
  }

  private key(info: ResourceInfo, namespace: string | undefined, metadataOnly = false): string {
    const ns = info.namespaced ? (namespace ?? 'default') : '';
    return `${info.apiVersion}|${info.plural}|${ns}${metadataOnly ? '|metadata' : ''}`;
  }

  private acquire(info: ResourceInfo, namespace: string | undefined, metadataOnly: boolean): Informer {
    if (this.closed) throw new Error('the cluster cache is closed');
    const key = this.key(info, namespace, metadataOnly);
    const timer = this.lingering.get(key);
    if (timer) {
      clearTimeout(timer);
      this.lingering.delete(key);
    }
    let informer = this.informers.get(key);
    if (!informer) {
      const path = resourcePath(info, info.namespaced ? (namespace ?? 'default') : undefined);
      informer = new Informer(this.api, info, path, this.options, metadataOnly, this.streaming);
      const type = typeKey(
        info.apiVersion,
        info.kind,
        info.namespaced ? (namespace ?? 'default') : undefined,
      );
      informer.onSeen = (name, rv, deleted) => this.seen(type, name, rv, deleted);
      const watches = this.typeWatches.get(type) ?? new Set();
      watches.add(informer);
      this.typeWatches.set(type, watches);
      this.informers.set(key, informer);
      informer.start();
    }
    informer.refs++;
    return informer;
  }

  private release(informer: Informer): void {
    informer.refs--;
    if (informer.refs > 0) return;
    const key = this.key(informer.info, informer.namespace, informer.metadataOnly);
    const stop = () => {
      this.lingering.delete(key);
      if (informer.refs > 0) return;
      this.informers.delete(key);
      informer.stop();
      this.unwatched(informer);
    };
    if (this.options.lingerMs <= 0 || this.closed) stop();
    else this.lingering.set(key, setTimeout(stop, this.options.lingerMs).unref());
  }

  /**
   * Calls `onObject` with the object as soon as its type and namespace are listed (undefined while it does not
   * exist, or while the cache holds a copy older than `fresh`), then on every change of that object, until
   * `signal` aborts.
   */
  subscribe(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
    onObject: (object: KubeObject | undefined, note?: string) => void,
    signal: AbortSignal,
    options: SubscribeOptions = {},
  ): Subscription {
    const fresh = options.fresh ?? {};
    const informer = this.acquire(info, namespace, options.metadataOnly ?? false);
    const deliver = (object: KubeObject | undefined, note?: string) => {
      if (object && !isFresh(object, fresh))
        onObject(undefined, note ?? 'the cache has not seen the applied version yet');
      else onObject(object, note);
    };
    const done = new Promise<void>((resolve, reject) => {
      const unsubscribe = informer.listen(name, deliver, (error) => {
        cleanup();
        reject(error);
      });
      const cleanup = () => {
        signal.removeEventListener('abort', onAbort);
        unsubscribe();
        this.release(informer);
      };
      const onAbort = () => {
        cleanup();
        resolve();
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
    });
    return { done };
  }

  /** The current copy of an object, when its type and namespace are watched (in full) and listed. */
  get(info: ResourceInfo, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.informers.get(this.key(info, namespace))?.get(name);
  }

  /**
   * The resourceVersion of an object as a watch of its type and namespace (in full or metadata only) holds it
   * now; undefined when none is watched and listed, or the object is not there.
   */
  resourceVersion(info: ResourceInfo, namespace: string | undefined, name: string): string | undefined {
    for (const metadataOnly of [true, false]) {
      const informer = this.informers.get(this.key(info, namespace, metadataOnly));
      if (!informer?.listed) continue;
      const version = informer.get(name)?.metadata.resourceVersion;
      if (typeof version === 'string') return version;
    }
    return undefined;
  }

  /**
   * As resourceVersion, and null when a watch of the type and namespace has listed it and the object is not there:
   * known absent (as fresh as the watch).
   */
  watchedVersion(info: ResourceInfo, namespace: string | undefined, name: string): string | null | undefined {
    const version = this.resourceVersion(info, namespace, name);
    if (version !== undefined) return version;
    const listed = [true, false].some(
      (m) => this.informers.get(this.key(info, namespace, m))?.listed === true,
    );
    return listed ? null : undefined;
  }

  /**
   * The annotations of an object as a watch of its type and namespace (in full or metadata only) holds it now;
   * null when such a watch has listed it and the object is not there, undefined when none is watched and listed.
   */
  annotations(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
  ): Record<string, string> | null | undefined {
    let listed = false;
    for (const metadataOnly of [true, false]) {
      const informer = this.informers.get(this.key(info, namespace, metadataOnly));
      if (!informer?.listed) continue;
      listed = true;
      const object = informer.get(name);
      if (object) return object.metadata.annotations ?? {};
    }
    return listed ? null : undefined;
  }

  /**
   * A write this agent made (the server's answer): until the watch of its type and namespace shows that version
   * (or the object's deletion), listedObjects does not answer for that type and namespace. Read your writes.
   */
  noteWrite(answer: KubeObject): void {
    const rv = answer.metadata?.resourceVersion;
    if (typeof rv !== 'string') return;
    const type = typeKey(answer.apiVersion, answer.kind, answer.metadata.namespace);
    const watches = this.typeWatches.get(type);
    // Not watched: a watch started later lists it. Already shown (its event came before the answer): nothing to wait for.
    if (!watches || [...watches].some((w) => w.get(answer.metadata.name)?.metadata.resourceVersion === rv))
      return;
    let pending = this.unseen.get(type);
    if (!pending) {
      pending = new Map();
      this.unseen.set(type, pending);
    }
    pending.set(answer.metadata.name, rv);
  }

  private seen(type: string, name: string, rv: string | undefined, deleted: boolean): void {
    const pending = this.unseen.get(type);
    const wanted = pending?.get(name);
    if (!pending || wanted === undefined || !(deleted || rv === wanted)) return;
    pending.delete(name);
    if (pending.size === 0) this.unseen.delete(type);
  }

  private unwatched(informer: Informer): void {
    const { info, namespace } = informer;
    const type = typeKey(info.apiVersion, info.kind, info.namespaced ? (namespace ?? 'default') : undefined);
    const watches = this.typeWatches.get(type);
    watches?.delete(informer);
    if (watches && watches.size > 0) return;
    this.typeWatches.delete(type);
    this.unseen.delete(type);
  }

  /**
   * The objects of a type in a namespace as its watch holds them (trimmed copies; metadata only when that is all
   * it watches), when it is listed and has shown every write this agent made there (with `concerns`: every write
   * of an object whose name it accepts, the caller reading no other); undefined otherwise: ask the server.
   */
  listedObjects(
    info: ResourceInfo,
    namespace: string | undefined,
    concerns?: (name: string) => boolean,
    /**
     * Only these objects, read from the informer's indexes: those of these names, or those whose annotation has one
     * of these values. A namespace may hold tens of thousands of a type, and each of its syncs reads a few.
     */
    select?: ListSelection,
  ): KubeObject[] | undefined {
    const pending = this.unseen.get(
      typeKey(info.apiVersion, info.kind, info.namespaced ? (namespace ?? 'default') : undefined),
    );
    if (pending && (!concerns || someKey(pending, concerns))) return undefined;
    for (const metadataOnly of [false, true]) {
      const informer = this.informers.get(this.key(info, namespace, metadataOnly));
      if (!informer?.listed) continue;
      if (select && 'names' in select) return informer.named(select.names);
      if (select) return informer.annotated(select.annotation, select.values);
      return informer.items();
    }
    return undefined;
  }

  /** Restarts every watch from `resourceVersion` (see Informer.rewatch); full lists done so far. */
  rewatch(resourceVersion?: string): void {
    for (const informer of this.informers.values()) informer.rewatch(resourceVersion);
  }

  /**
   * Full lists, paged or streamed, done so far by the open informers (one each at start, one more after each 410
   * Gone).
   */
  get lists(): number {
    let total = 0;
    for (const informer of this.informers.values()) total += informer.lists;
    return total;
  }

  /** Of those, the streaming lists. */
  get streamedLists(): number {
    let total = 0;
    for (const informer of this.informers.values()) total += informer.streamedLists;
    return total;
  }

  /** Streams the open informers gave up because the server stopped answering on them. */
  get silentStreams(): number {
    let total = 0;
    for (const informer of this.informers.values()) total += informer.silentStreams;
    return total;
  }

  close(): void {
    this.closed = true;
    for (const timer of this.lingering.values()) clearTimeout(timer);
    this.lingering.clear();
    for (const informer of this.informers.values()) informer.stop();
    this.informers.clear();
  }
}

function someKey(map: ReadonlyMap<string, unknown>, test: (key: string) => boolean): boolean {
  for (const key of map.keys()) if (test(key)) return true;
  return false;
}

/** Which of a type's objects a reader of the cache wants (ClusterCache.listedObjects). */
export type ListSelection = { names: Iterable<string> } | { annotation: string; values: Iterable<string> };

/** A type in a namespace, whatever version of its group is asked: `apps/Deployment ns`. */
function typeKey(apiVersion: string, kind: string, namespace: string | undefined): string {
  return `${groupOf(apiVersion)}/${kind} ${namespace ?? ''}`;
}

function isFresh(object: KubeObject, fresh: Freshness): boolean {
  if (fresh.uid !== undefined && object.metadata.uid !== undefined && object.metadata.uid !== fresh.uid)
    return false;
  const generation = object.metadata.generation;
  if (fresh.generation !== undefined && typeof generation === 'number' && generation < fresh.generation)
    return false;
  return true;
}

/**
 * The agent's line when a type of its server refuses streaming lists (once per type): which type, and what the
 * server answered, so an operator can tell an old server or a stripping proxy from a fault.
 */
export function streamingRefusedLog(log: {
  info: (fields: Record<string, unknown>, message: string) => void;
}): (what: string, reason: string) => void {
  return (what, reason) =>
    log.info(
      { watch: what, reason },
      'streaming list refused by the API server; listing and watching instead',
    );
}
