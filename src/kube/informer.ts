// One resource type in one namespace, kept current: a streaming list where the server serves one (a WATCH with
// sendInitialEvents, src/kube/watch-list.ts), else a paginated LIST, then a WATCH from the list's
// resourceVersion with bookmarks (so a quiet stream still advances it), re-watched when the server ends the
// stream, re-listed when that version has been compacted away (410 Gone), backing off with full jitter on any
// other failure, and never sooner than a 429's Retry-After. Listeners are keyed by object name, so an event reaches only the subscribers of its object.
// Cached copies drop what no stability rule reads and most of an object's bytes are: managedFields (while drift
// passes run, the objects mooring wrote keep who owns their fields, compact), kubectl's last-applied annotation,
// pod templates and ConfigMap/Secret data. Kinds whose verdict needs no status at all (ConfigMaps, Secrets, RBAC,
// ...) are watched as metadata only: their contents, Secret values above all, never reach mooring for this.

import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, StalledError } from '../errors.ts';
import type { KubeObject } from '../render/manifest.ts';
import { type KubeApi, KubeRequestError, METADATA_LIST, METADATA_OBJECT, StreamIdleError } from './api.ts';
import { outsideDeadline } from './deadline.ts';
import type { ResourceInfo } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { eachListPage } from './list-pages.ts';
import { trimObject } from './trim.ts';
import { outsideWarnings } from './warnings.ts';
import {
  endedWithoutMark,
  endsInitialEvents,
  INITIAL_EVENTS_END,
  InitialEvents,
  InitialEventsCut,
  STREAMING_LIST_QUERY,
  StreamingSupport,
  streamingRefusal,
} from './watch-list.ts';

export interface InformerOptions {
  /** Objects per LIST page. */
  pageSize: number;
  /** Back-off (full jitter): the base, which is also the shortest pause, and the cap. */
  minBackoffMs: number;
  maxBackoffMs: number;
  /** Server-side timeout of one watch request; jittered up to twice this, as client-go does. */
  watchSeconds: number;
  /** How long past that timeout a silent stream is given up as hung. */
  idleMarginSeconds: number;
  /**
   * How long a streaming list may stay silent before its end-of-initial-events bookmark: past it the server is
   * taken to ignore sendInitialEvents, and the type is listed instead.
   */
  initialEventsTimeoutMs: number;
  /** Told once per type that refuses streaming lists, with the server's answer. */
  onStreamingRefused?: ((what: string, reason: string) => void) | undefined;
  /**
   * While the agent runs drift passes: the field manager whose objects keep their managed fields (compact,
   * src/kube/field-owners.ts), so a pass reads who changed them from the copy. Unset, none are kept.
   */
  keepFieldOwnersOf?: string | undefined;
}

export type InformerState = 'listing' | 'watching' | 'backing-off' | 'failed' | 'stopped';

interface Listener {
  onObject: (object: KubeObject | undefined, note?: string) => void;
  onError: (error: Error) => void;
}

function indexAdd(index: Map<string, Set<string>>, key: string, name: string, object: KubeObject): void {
  const value = object.metadata.annotations?.[key];
  if (value === undefined) return;
  const names = index.get(value);
  if (names) names.add(name);
  else index.set(value, new Set([name]));
}

function indexDelete(index: Map<string, Set<string>>, key: string, name: string, object: KubeObject): void {
  const value = object.metadata.annotations?.[key];
  if (value === undefined) return;
  const names = index.get(value);
  names?.delete(name);
  if (names?.size === 0) index.delete(value);
}

export class Informer {
  refs = 0;
  /**
   * Told of each object the informer comes to hold (listed, added or modified) and of each one deleted: the cache
   * learns here which of its own writes the watch has shown (ClusterCache.noteWrite).
   */
  onSeen: ((name: string, resourceVersion: string | undefined, deleted: boolean) => void) | undefined;
  readonly info: ResourceInfo;
  readonly namespace: string | undefined;
  readonly metadataOnly: boolean;
  state: InformerState = 'listing';
  /** Requests sent so far (list pages and watches), for tests and the benchmark. */
  requests = 0;
  /** Full lists so far, paged or streamed: one at start, one more after each 410 Gone. */
  lists = 0;
  /** Of those, the streaming lists. */
  streamedLists = 0;
  /** Streams given up because the server stopped answering on them. */
  silentStreams = 0;
  /** Streaming lists that ended early before their end mark, in a row (see endedWithoutMark). */
  private earlyEnds = 0;
  private readonly api: KubeApi;
  private readonly path: string;
  private readonly options: InformerOptions;
  private readonly controller = new AbortController();
  private objects = new Map<string, KubeObject>();
  /**
   * The names of the objects held, by the value of an annotation (one map per annotation key asked for, made at the
   * first question and kept current since): a sync reads its own artifact's versions among a namespace's thousands
   * without visiting every object held.
   */
  private readonly byAnnotation = new Map<string, Map<string, Set<string>>>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private synced = false;
  private resourceVersion: string | undefined;
  private failure: Error | undefined;
  private stream: AbortController | undefined;
  private readonly streaming: StreamingSupport;

  constructor(
    api: KubeApi,
    info: ResourceInfo,
    path: string,
    options: InformerOptions,
    metadataOnly = false,
    streaming = new StreamingSupport(false),
  ) {
    this.api = api;
    this.streaming = streaming;
    this.info = info;
    this.metadataOnly = metadataOnly;
    this.path = path;
    this.options = options;
    this.namespace = info.namespaced ? /\/namespaces\/([^/]+)\//.exec(path)?.[1] : undefined;
    if (this.namespace) this.namespace = decodeURIComponent(this.namespace);
  }

  /** What the server's answer to a streaming list is remembered by: the type, and how it is read. */
  private get streamingKey(): string {
    return `${this.info.apiVersion}/${this.info.plural}${this.metadataOnly ? ' (metadata)' : ''}`;
  }

  private get what(): string {
    return `${this.info.kind}s${this.namespace ? ` in namespace ${this.namespace}` : ''}`;
  }

  /** Listed, and not in trouble since (no failure noted after the last list): what it holds is current. */
  get listed(): boolean {
    return this.synced && !this.noted;
  }

  get(name: string): KubeObject | undefined {
    return this.objects.get(name);
  }

  /** Every object it holds now. */
  items(): KubeObject[] {
    return [...this.objects.values()];
  }

  /** The objects it holds with these names. */
  named(names: Iterable<string>): KubeObject[] {
    const found: KubeObject[] = [];
    for (const name of names) {
      const object = this.objects.get(name);
      if (object) found.push(object);
    }
    return found;
  }

  /** The objects it holds whose annotation `key` has one of `values`. */
  annotated(key: string, values: Iterable<string>): KubeObject[] {
    let index = this.byAnnotation.get(key);
    if (!index) {
      index = new Map();
      for (const [name, object] of this.objects) indexAdd(index, key, name, object);
      this.byAnnotation.set(key, index);
    }
    const names: string[] = [];
    for (const value of values) for (const name of index.get(value) ?? []) names.push(name);
    return this.named(names);
  }

  /** Holds an object under its name, the indexes kept current. */
  private hold(name: string, object: KubeObject): void {
    const before = this.objects.get(name);
    this.objects.set(name, object);
    for (const [key, index] of this.byAnnotation) {
      if (before?.metadata.annotations?.[key] === object.metadata.annotations?.[key]) continue;
      if (before) indexDelete(index, key, name, before);
      indexAdd(index, key, name, object);
    }
  }

  /** Drops the object of a name, the indexes kept current. */
  private drop(name: string): void {
    const before = this.objects.get(name);
    if (!before) return;
    this.objects.delete(name);
    for (const [key, index] of this.byAnnotation) indexDelete(index, key, name, before);
  }

  private seen(object: KubeObject, deleted = false): void {
    const rv = object.metadata?.resourceVersion;
    this.onSeen?.(object.metadata.name, typeof rv === 'string' ? rv : undefined, deleted);
  }

  listen(name: string, onObject: Listener['onObject'], onError: Listener['onError']): () => void {
    const listener: Listener = { onObject, onError };
    if (this.failure) {
      const failure = this.failure;
      queueMicrotask(() => onError(failure));
      return () => {};
    }
    let set = this.listeners.get(name);
    if (!set) {
      set = new Set();
      this.listeners.set(name, set);
    }
    set.add(listener);
    // Asynchronously, so that a subscriber is fully set up before it first hears of its object.
    if (this.synced) queueMicrotask(() => set.has(listener) && onObject(this.objects.get(name)));
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(name) === set) this.listeners.delete(name);
    };
  }

  start(): void {
    // Shared by every sync and lingering after them: its requests follow no single sync's deadline.
    outsideDeadline(() => outsideWarnings(() => void this.run()));
  }

  stop(): void {
    this.state = 'stopped';
    this.controller.abort();
  }

  /**
   * Ends the current watch and watches again from `resourceVersion` (or from the last one seen). A version the
   * server no longer holds makes it answer 410 Gone, and the informer re-lists: how tests prove the re-list.
   */
  rewatch(resourceVersion?: string): void {
    if (resourceVersion !== undefined && this.synced) this.resourceVersion = resourceVersion;
    this.stream?.abort();
  }

  private notify(name: string, object: KubeObject | undefined, note?: string): void {
    for (const listener of this.listeners.get(name) ?? []) {
      try {
        listener.onObject(object, note);
      } catch (error) {
        // One subscriber's fault must not stop the stream every other subscriber of this type depends on.
        listener.onError(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }

  /** Subscribers were told of a failure since the last list. */
  private noted = false;

  private async run(): Promise<void> {
    const { signal } = this.controller;
    let failures = 0;
    while (!signal.aborted) {
      try {
        const streamed = this.resourceVersion === undefined && this.streaming.allowed(this.streamingKey);
        if (this.resourceVersion === undefined && !streamed) {
          this.state = 'listing';
          await this.list();
        }
        this.state = streamed ? 'listing' : 'watching';
        await this.watch(streamed);
        failures = 0;
      } catch (error) {
        if (signal.aborted) return;
        const refusal = this.resourceVersion === undefined ? streamingRefusal(error) : undefined;
        if (refusal !== undefined && this.streaming.allowed(this.streamingKey)) {
          // Remembered for the type, so no later informer of it asks again; listed at once, no pause.
          this.streaming.refuse(this.streamingKey, refusal);
          this.options.onStreamingRefused?.(this.what, refusal);
          continue;
        }
        if (statusCode(error) === 410) {
          // Compacted: start again from a fresh list (after a pause if it keeps happening).
          this.resourceVersion = undefined;
          if (failures++ === 0) continue;
        } else {
          if (error instanceof StreamIdleError) this.silentStreams++;
          const permanent = permanentWatchError(error, this.what);
          if (permanent) return this.fail(permanent);
          failures++;
        }
        this.state = 'backing-off';
        // Subscribers hear why what they know may be stale (or, before the first list, why nothing is known):
        // a verdict that times out then says the server was unreachable, not only the last state seen.
        const note = `${this.synced ? 'cannot watch' : 'cannot list'} ${this.what}: ${errorMessage(error)}`;
        for (const name of [...this.listeners.keys()]) this.notify(name, this.objects.get(name), note);
        this.noted = true;
        const { minBackoffMs, maxBackoffMs } = this.options;
        const delay = this.api.retryDelay(error, failures, {
          baseMs: minBackoffMs,
          maxMs: maxBackoffMs,
          minMs: minBackoffMs,
        });
        if (statusCode(error) === 429) this.api.throttled(delay);
        await sleep(delay, undefined, { signal }).catch(() => undefined);
      }
    }
  }

  private fail(error: Error): void {
    this.state = 'failed';
    this.failure = error;
    for (const set of this.listeners.values()) for (const listener of set) listener.onError(error);
    this.listeners.clear();
  }

  private async list(): Promise<void> {
    const { signal } = this.controller;
    const fresh = new Map<string, KubeObject>();
    const end = await eachListPage(
      this.api,
      this.path,
      {
        pageSize: this.options.pageSize,
        signal,
        accept: this.metadataOnly ? METADATA_LIST : undefined,
        onRequest: () => this.requests++,
      },
      (items) => {
        for (const item of items)
          fresh.set(item.metadata.name, trimObject(item, this.info, this.options.keepFieldOwnersOf));
      },
    );
    this.replace(fresh, end.resourceVersion);
  }

  /** The type's whole current state, from a list or a streaming list's initial events: held and told. */
  private replace(fresh: Map<string, KubeObject>, resourceVersion: string | undefined): void {
    this.lists++;
    const previous = this.objects;
    // After a failure subscribers were told their state may be stale: a fresh list tells them it is not, changed
    // or not.
    const first = !this.synced || this.noted;
    this.noted = false;
    this.objects = fresh;
    this.byAnnotation.clear();
    this.resourceVersion = resourceVersion;
    this.synced = true;
    for (const object of fresh.values()) this.seen(object);
    for (const name of [...this.listeners.keys()]) {
      const now = fresh.get(name);
      const before = previous.get(name);
      if (first || now?.metadata.resourceVersion !== before?.metadata.resourceVersion) this.notify(name, now);
    }
  }

  /** One watch; `streamed`: a streaming list, whose initial events replace what is held before it goes on. */
  private async watch(streamed = false): Promise<void> {
    const seconds = Math.round(this.options.watchSeconds * (1 + Math.random()));
    // Stopped while the list was in flight: no stream may outlive the informer.
    if (this.controller.signal.aborted) return;
    this.requests++;
    const stream = new AbortController();
    this.stream = stream;
    const onStop = () => stream.abort();
    this.controller.signal.addEventListener('abort', onStop, { once: true });
    try {
      await this.watchStream(seconds, stream, streamed);
    } finally {
      this.controller.signal.removeEventListener('abort', onStop);
      this.stream = undefined;
    }
  }

  private async watchStream(seconds: number, stream: AbortController, streamed: boolean): Promise<void> {
    let failure: Error | undefined;
    // The initial state of a streaming list, until the bookmark that ends it; undefined once it has come.
    let initial: InitialEvents | undefined = streamed
      ? new InitialEvents(this.path, this.options.initialEventsTimeoutMs, (error) => {
          failure = error;
          stream.abort();
        })
      : undefined;
    const started = Date.now();
    const query = streamed
      ? { ...STREAMING_LIST_QUERY, timeoutSeconds: seconds }
      : { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: seconds };
    try {
      await this.api.watch(
        this.path,
        query,
        (event) => {
          if (event.type === 'ERROR') {
            const status = event.object as { code?: number; message?: string };
            failure = new KubeRequestError('WATCH', this.path, status.code ?? 500, status);
            return false;
          }
          const object = event.object as KubeObject;
          const rv = object.metadata?.resourceVersion;
          if (initial && endsInitialEvents(event)) {
            initial.stop();
            this.earlyEnds = 0;
            this.streamedLists++;
            this.replace(initial.objects, typeof rv === 'string' ? rv : undefined);
            this.state = 'watching';
            initial = undefined;
            return true;
          }
          initial?.heard();
          if (typeof rv === 'string' && !initial) this.resourceVersion = rv;
          if (event.type === 'BOOKMARK') return true;
          const name = object.metadata.name;
          if (initial) {
            if (event.type === 'DELETED') initial.objects.delete(name);
            else initial.objects.set(name, trimObject(object, this.info, this.options.keepFieldOwnersOf));
          } else if (event.type === 'DELETED') {
            this.drop(name);
            this.seen(object, true);
            this.notify(name, undefined);
          } else {
            const trimmed = trimObject(object, this.info, this.options.keepFieldOwnersOf);
            this.hold(name, trimmed);
            this.seen(trimmed);
            this.notify(name, trimmed);
          }
          return true;
        },
        {
          signal: stream.signal,
          // The server ends the stream at `seconds` (a bookmark comes before); silence well past that means a
          // server that stopped answering without closing the connection.
          idleTimeoutMs: (seconds + this.options.idleMarginSeconds) * 1000,
          accept: this.metadataOnly ? METADATA_OBJECT : undefined,
        },
      );
    } finally {
      initial?.stop();
    }
    if (failure) throw failure;
    // Ended before the initial state was complete. Never taken as the state: either the server ignores the ask
    // (listed instead), or the stream was cut (asked again).
    if (initial && !stream.signal.aborted) {
      this.earlyEnds++;
      if (endedWithoutMark(Date.now() - started, seconds, this.earlyEnds) === 'ignored')
        throw initial.missing('the stream ended before it');
      throw new InitialEventsCut(
        `WATCH ${this.path}: the stream ended after ${initial.objects.size} objects, before ${INITIAL_EVENTS_END}`,
      );
    }
  }
}

/** A failure that retrying cannot fix: the watch of this type is forbidden, or the type is not served. */
export function permanentWatchError(error: unknown, what: string): StalledError | undefined {
  const code = statusCode(error);
  if (code === 401 || code === 403 || code === 404 || code === 405) {
    const described = describeKubeError(error, `watch ${what}`);
    return described instanceof StalledError ? described : new StalledError(described.message);
  }
  return undefined;
}
