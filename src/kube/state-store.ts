// The one store of mooring's state in ConfigMaps of the agent's namespace (release ledgers, the commit-status
// outbox, inventories, the control map). Every write is a change function of the current content, written with
// the resourceVersion it was read at: a writer that lost a race (409 Conflict, or 409 AlreadyExists when both
// created the ConfigMap) reads again and applies its change again, so two writers (the CLI and the agent, or two
// agents around a change of leader) never silently overwrite each other. Labels, other annotations and owner
// references that are there are kept.
import { setTimeout as sleep } from 'node:timers/promises';
import { fullJitter } from '../backoff.ts';
import { MooringError } from '../errors.ts';
import type { KubeApi } from './api.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { listAll } from './list-pages.ts';
import { createNamespace } from './namespace.ts';

/** What a state ConfigMap holds: its data and its annotations. */
export interface StateMap {
  data: Record<string, string>;
  annotations: Record<string, string>;
}

/** A state ConfigMap as listed: its name and labels too. */
export interface StateEntry extends StateMap {
  name: string;
  labels: Record<string, string>;
}

/**
 * The next content given the current one (undefined when the ConfigMap does not exist), or undefined to write
 * nothing. It may run more than once (once per conflict), so it must depend only on its argument.
 */
export type StateChange = (current: StateMap | undefined) => StateMap | undefined;

export interface StateUpdateOptions {
  /** What the write does, for error messages: `write the ledger of deployment web`. */
  action: string;
  /** Labels the ConfigMap carries (added to those it has). */
  labels: Record<string, string>;
  /** Create the namespace when it does not exist yet (a `mooring deploy` before any agent ran). */
  createNamespace?: boolean | undefined;
  /**
   * How an existing ConfigMap is written: `update` (PUT) by default; `patch` sends a JSON merge patch of the keys
   * that change, with the same resourceVersion precondition, for writers whose RBAC grants only patch.
   */
  verb?: 'update' | 'patch' | undefined;
}

export interface StateStoreOptions {
  /** Writes tried at most this many times in a row of conflicts. */
  attempts?: number | undefined;
  random?: (() => number) | undefined;
}

interface ConfigMap {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  data?: Record<string, string>;
  [key: string]: unknown;
}

const ATTEMPTS = 10;
/**
 * The bytes of state ConfigMaps remembered per API client, most recently used first: every store of a process
 * (the agent's ledger, inventories, outbox, control map, however many instances) shares them. 8 MiB holds the
 * ledgers and inventories of a fleet of a thousand deployments with short histories.
 */
export const KNOWN_BYTES = 8 * 1024 * 1024;
const BASE_DELAY_MS = 20;
const MAX_DELAY_MS = 1_000;

/**
 * The copies of state ConfigMaps a process knows (as the server answered a read or a write), shared by every store
 * on one API client, bounded in bytes, least recently used dropped first; and, per namespace, the resourceVersion a
 * watch of that namespace's ConfigMaps holds now, when the process watches it.
 */
class KnownCopies {
  private readonly copies = new Map<string, { cm: ConfigMap; bytes: number; behind: readonly string[] }>();
  private bytes = 0;
  readonly watched = new Map<string, (name: string) => WatchedVersion>();
  private readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  get(key: string): ConfigMap | undefined {
    const entry = this.copies.get(key);
    if (!entry) return undefined;
    this.copies.delete(key);
    this.copies.set(key, entry);
    return entry.cm;
  }

  /**
   * For a copy this process wrote: what a watch that has not seen the write yet may still hold (what it held just
   * before, and the versions the write replaced); none for a copy read.
   */
  behind(key: string): readonly string[] {
    return this.copies.get(key)?.behind ?? [];
  }

  set(key: string, cm: ConfigMap, behind: readonly string[] = []): void {
    this.delete(key);
    let bytes = 256;
    for (const [k, v] of Object.entries(cm.data ?? {})) bytes += k.length + v.length;
    for (const [k, v] of Object.entries(cm.metadata.annotations ?? {})) bytes += k.length + v.length;
    if (bytes > this.limit / 4) return;
    this.copies.set(key, { cm, bytes, behind });
    this.bytes += bytes;
    for (const [oldest, entry] of this.copies) {
      if (this.bytes <= this.limit) break;
      this.copies.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }

  delete(key: string): void {
    const entry = this.copies.get(key);
    if (!entry) return;
    this.copies.delete(key);
    this.bytes -= entry.bytes;
  }
}

/**
 * What a watch of a namespace's ConfigMaps holds of one: its resourceVersion, null when the watch has listed the
 * namespace and the ConfigMap is not there, undefined when no listed watch can tell.
 */
export type WatchedVersion = string | null | undefined;

/** At most this many versions a watch may lag by are kept per copy (a burst of writes of one ConfigMap). */
const MAX_BEHIND = 8;

const knownByClient = new WeakMap<KubeApi, KnownCopies>();

function knownFor(api: KubeApi): KnownCopies {
  let known = knownByClient.get(api);
  if (!known) {
    known = new KnownCopies(KNOWN_BYTES);
    knownByClient.set(api, known);
  }
  return known;
}

export class StateStore {
  readonly namespace: string;
  private readonly api: KubeApi;
  private readonly attempts: number;
  private readonly random: () => number;
  /**
   * The ConfigMaps known to this process (KnownCopies), as the server answered their last read or write: the next
   * change of one starts from that copy and writes with its resourceVersion, with no read first. A copy gone stale
   * (another writer) is refused with 409, and the change is applied again to a fresh read. A read is answered from
   * the copy only while a watch of the namespace holds the same resourceVersion (watchVersions), or one its own
   * write replaced (read your writes); one the listed watch does not hold, and of which no copy is known, is absent
   * (docs/state.md).
   */
  private readonly shared: KnownCopies;

  constructor(api: KubeApi, namespace: string, options: StateStoreOptions = {}) {
    this.api = api;
    this.namespace = namespace;
    this.attempts = options.attempts ?? ATTEMPTS;
    this.random = options.random ?? Math.random;
    this.shared = knownFor(api);
  }

  /**
   * Tells every store of this API client and namespace where the current resourceVersion of each ConfigMap is
   * (the agent's watch of its namespace): a read whose remembered copy is at that version sends no request. The
   * copy is then as fresh as the watch (milliseconds behind a write by another process); every write still carries
   * its resourceVersion, so a decision taken on a copy a moment old never overwrites what it did not see.
   */
  static watchVersions(api: KubeApi, namespace: string, version: (name: string) => WatchedVersion): void {
    knownFor(api).watched.set(namespace, version);
  }

  /**
   * The uid of a state ConfigMap as this process last read or wrote it (no request), when it remembers one: what an
   * Event about it names (src/report/events.ts).
   */
  static knownUid(api: KubeApi, namespace: string, name: string): string | undefined {
    const uid = knownFor(api).get(`${namespace}/${name}`)?.metadata.uid;
    return typeof uid === 'string' ? uid : undefined;
  }

  private keyOf(name: string): string {
    return `${this.namespace}/${name}`;
  }

  private watchedVersion(name: string): WatchedVersion {
    return this.shared.watched.get(this.namespace)?.(name);
  }

  /**
   * The remembered copy, when the namespace's watch says it is the current version, or (read your writes) when this
   * process wrote it and the watch has not moved since: it still holds what it held before the write.
   */
  private confirmed(name: string): ConfigMap | undefined {
    const key = this.keyOf(name);
    const copy = this.shared.get(key);
    const version = this.watchedVersion(name);
    if (!copy || version === undefined) return undefined;
    return copy.metadata.resourceVersion === version ||
      (version !== null && this.shared.behind(key).includes(version))
      ? copy
      : undefined;
  }

  /** Whether the namespace's watch has listed it and the ConfigMap is not there, and this process knows no copy. */
  private knownAbsent(name: string): boolean {
    return this.watchedVersion(name) === null && this.shared.get(this.keyOf(name)) === undefined;
  }

  private path(name?: string): string {
    return `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/configmaps${name ? `/${encodeURIComponent(name)}` : ''}`;
  }

  private async get(name: string): Promise<ConfigMap | undefined> {
    try {
      const cm = await this.api.request<ConfigMap>('GET', this.path(name));
      this.remember(cm);
      return cm;
    } catch (error) {
      if (statusCode(error) === 404) this.shared.delete(this.keyOf(name));
      if (statusCode(error) === 404) return undefined;
      throw error;
    }
  }

  /**
   * The ConfigMap's content; undefined when it does not exist. `fresh`: asked of the API server even when the
   * namespace's watch vouches for the copy (a decision on an event the watch may be behind).
   */
  async read(name: string, action: string, fresh = false): Promise<StateMap | undefined> {
    try {
      const cm = fresh
        ? await this.get(name)
        : (this.confirmed(name) ?? (this.knownAbsent(name) ? undefined : await this.get(name)));
      return cm && contentOf(cm);
    } catch (error) {
      throw describeKubeError(error, action);
    }
  }

  /** Every state ConfigMap of the namespace that matches the label selector. */
  async list(labelSelector: string, action: string): Promise<StateEntry[]> {
    const items = await listAll<ConfigMap>(this.api, this.path(), { query: { labelSelector } }).catch(
      (error: unknown) => {
        throw describeKubeError(error, action);
      },
    );
    return items.map((cm) => ({
      ...contentOf(cm),
      name: cm.metadata.name,
      labels: { ...cm.metadata.labels },
    }));
  }

  /**
   * Reads the ConfigMap, applies `change` and writes the result with the resourceVersion read (or creates it);
   * on a conflict, again from a new read, up to the bound. Returns what is stored after the write (the current
   * content when the change wrote nothing).
   */
  async update(
    name: string,
    change: StateChange,
    options: StateUpdateOptions,
  ): Promise<StateMap | undefined> {
    let tried: StateMap | undefined;
    for (let attempt = 0; ; attempt++) {
      let lost: unknown;
      try {
        const remembered = attempt === 0 ? this.shared.get(this.keyOf(name)) : undefined;
        const confirmed = remembered !== undefined && this.confirmed(name) === remembered;
        // Known absent: created with no read first (another writer's create meanwhile is a 409, then a read).
        const absent = attempt === 0 && this.knownAbsent(name);
        const known = this.shared.behind(this.keyOf(name));
        this.shared.delete(this.keyOf(name));
        const current = remembered ?? (absent ? undefined : await this.get(name));
        // A write whose answer was lost, then repeated by the client, is refused as stale although it landed:
        // what is stored is exactly what was written, and the change is not applied twice.
        if (current && tried && sameContent(contentOf(current), tried)) return tried;
        const next = change(current && contentOf(current));
        // Nothing to write is a verdict on what is stored now: a remembered copy is read afresh first.
        if (next === undefined && remembered && !confirmed) continue;
        if (next === undefined && remembered) this.remember(remembered, known);
        if (next === undefined) return current && contentOf(current);
        // What a watch that has not seen this write may hold: read-your-writes for the copy it leaves (confirmed).
        // Never "absent": after a create, the watch shows absent again only once the ConfigMap is deleted.
        const behind = [this.watchedVersion(name), current?.metadata.resourceVersion, ...known]
          .filter((v): v is string => typeof v === 'string')
          .slice(0, MAX_BEHIND);
        lost = current
          ? await this.replace(current, next, options, behind)
          : await this.create(name, next, options, behind);
        if (lost === undefined) return { data: { ...next.data }, annotations: { ...next.annotations } };
        tried = next;
      } catch (error) {
        if (error instanceof MooringError) throw error;
        throw describeKubeError(error, options.action);
      }
      if (attempt + 1 >= this.attempts)
        throw describeKubeError(lost, `${options.action} (${this.attempts} conflicting writes in a row)`);
      await sleep(fullJitter(attempt, { baseMs: BASE_DELAY_MS, maxMs: MAX_DELAY_MS, random: this.random }));
    }
  }

  /** Writes `next` over the object as read, with its resourceVersion; the refusal when it changed meanwhile. */
  private async replace(
    current: ConfigMap,
    next: StateMap,
    options: StateUpdateOptions,
    behind: readonly string[],
  ): Promise<unknown> {
    const path = this.path(current.metadata.name);
    const body: ConfigMap = {
      ...current,
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        ...current.metadata,
        labels: { ...current.metadata.labels, ...options.labels },
        annotations: next.annotations,
      },
      data: next.data,
    };
    try {
      if (options.verb === 'patch') {
        const patch = {
          metadata: {
            resourceVersion: current.metadata.resourceVersion,
            labels: options.labels,
            annotations: mergePatch(current.metadata.annotations, next.annotations),
          },
          data: mergePatch(current.data, next.data),
        };
        this.remember(
          await this.api.request<ConfigMap>('PATCH', path, {
            body: patch,
            contentType: 'application/merge-patch+json',
          }),
          behind,
        );
      } else {
        this.remember(await this.api.request<ConfigMap>('PUT', path, { body }), behind);
      }
      return undefined;
    } catch (error) {
      // 409: changed since it was read; 404: deleted since.
      if (statusCode(error) === 409 || statusCode(error) === 404) return error;
      throw error;
    }
  }

  /**
   * Keeps the server's answer to a read or a write as the starting point of the next change of that ConfigMap; for
   * a write, with the versions a watch that has not seen it may hold (`behind`), so that the copy answers reads until
   * the watch moves past them.
   */
  private remember(written: ConfigMap | undefined, behind: readonly string[] = []): void {
    const name = written?.metadata?.name;
    if (!written || !name || !written.metadata.resourceVersion) return;
    this.shared.set(this.keyOf(name), written, behind);
  }

  /** Creates the ConfigMap; the refusal when another writer created it first. */
  private async create(
    name: string,
    next: StateMap,
    options: StateUpdateOptions,
    behind: readonly string[],
  ): Promise<unknown> {
    const body: ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: this.namespace, labels: options.labels, annotations: next.annotations },
      data: next.data,
    };
    for (let first = true; ; first = false) {
      try {
        this.remember(await this.api.request<ConfigMap>('POST', this.path(), { body }), behind);
        return undefined;
      } catch (error) {
        if (statusCode(error) === 409) return error;
        // A 404 to a create is the namespace missing.
        if (statusCode(error) !== 404 || !options.createNamespace || !first) throw error;
      }
      await createNamespace(this.api, this.namespace);
    }
  }
}

function contentOf(cm: ConfigMap): StateMap {
  return { data: { ...cm.data }, annotations: { ...cm.metadata.annotations } };
}

/** The JSON merge patch from `from` to `to`: changed keys with their value, removed keys with null. */
function mergePatch(
  from: Record<string, string> | undefined,
  to: Record<string, string>,
): Record<string, string | null> {
  const patch: Record<string, string | null> = {};
  for (const key of Object.keys(from ?? {})) if (!(key in to)) patch[key] = null;
  for (const [key, value] of Object.entries(to)) if (from?.[key] !== value) patch[key] = value;
  return patch;
}

function sameContent(a: StateMap, b: StateMap): boolean {
  const text = (m: StateMap) =>
    JSON.stringify([Object.entries(m.data).sort(), Object.entries(m.annotations).sort()]);
  return text(a) === text(b);
}
