// The warning Events of objects a wait is on, and of what they own: the I/O behind src/stability/warning-notes.ts.
// Read as a bounded list per namespace (`type=Warning`, a few pages), not a stream per object nor a watch that
// would hold every Event of a busy namespace: an Event is about one object (`involvedObject`), and one about an
// object mooring did not apply (a Pod, a ReplicaSet, a Job) is attributed by its controller chain, read from the
// ownerReferences of that object (metadata only, remembered by uid for the wait). A Pod of a Deployment is two
// steps from it (Pod -> ReplicaSet -> Deployment), a Pod of a CronJob too (Pod -> Job -> CronJob).
// Only objects whose name starts as a waited-on workload's does are looked up: the built-in controllers name what
// they create after themselves, so a namespace full of other teams' failing Pods costs no request.
// The list of a namespace is shared by every wait of one cluster (one KubeApi) for a few seconds: a fleet rollout
// with dozens of waits in one namespace lists its warnings once per interval, not once per wait. A verdict's last
// read (a wait that failed or timed out) lists afresh.
import { z } from 'zod';
import type { KubeObject } from '../render/manifest.ts';
import { type KubeApi, METADATA_OBJECT } from './api.ts';
import { statusCode } from './errors.ts';
import { eachListPage } from './list-pages.ts';

/** What one Event says, for one waited-on object (the shape of src/stability/warning-notes.ts's WarningNote). */
export interface ObservedWarning {
  object: string;
  reason: string;
  message: string;
  count: number;
  lastMs: number;
}

export interface WarningEventsOptions {
  /** Events last seen before this (ms since the epoch) are left out: they are about an earlier rollout. */
  sinceMs?: number | undefined;
  pageSize?: number;
  /** Pages listed per namespace and read: the newest warnings of a namespace with thousands may be missed. */
  maxPages?: number;
  /** Objects looked up per read (their ownerReferences), beyond those remembered. */
  maxLookups?: number;
}

/** The kinds that create others, and the kinds of what they create. */
const OWNERS = new Set(['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob']);
/** Where an owned object of each kind is read (its metadata only). */
const OWNED: Readonly<Record<string, string>> = {
  Pod: '/api/v1/namespaces/{ns}/pods/',
  ReplicaSet: '/apis/apps/v1/namespaces/{ns}/replicasets/',
  Job: '/apis/batch/v1/namespaces/{ns}/jobs/',
};
/** A Pod of a long-named ReplicaSet is named after its first 57 characters or so: what the name test compares. */
const PREFIX_CHARS = 40;
/**
 * Whether a name begins with one of a set of prefixes, asked once per Event: a lookup per length of prefix (at most
 * PREFIX_CHARS of them), not a test of each prefix (3,000 waited-on workloads and a namespace's 1,000 Events made
 * three million).
 */
export class NamePrefixes {
  private readonly byLength = new Map<number, Set<string>>();

  constructor(prefixes: readonly string[]) {
    for (const prefix of prefixes) {
      const same = this.byLength.get(prefix.length);
      if (same) same.add(prefix);
      else this.byLength.set(prefix.length, new Set([prefix]));
    }
  }

  begins(name: string): boolean {
    for (const [length, prefixes] of this.byLength)
      if (name.length >= length && prefixes.has(name.slice(0, length))) return true;
    return false;
  }
}

/** Chain steps followed from an Event's object up to a waited-on one (Pod -> ReplicaSet -> Deployment). */
const MAX_DEPTH = 3;
const MAX_REMEMBERED = 2000;
const MAX_PAGE_BYTES = 8 * 1024 * 1024;

const text = z.string().max(64 * 1024);
const eventSchema = z.object({
  type: text.optional(),
  reason: text.optional(),
  message: text.optional(),
  count: z.number().nullish(),
  lastTimestamp: text.nullish(),
  eventTime: text.nullish(),
  firstTimestamp: text.nullish(),
  series: z.object({ count: z.number().nullish(), lastObservedTime: text.nullish() }).nullish(),
  involvedObject: z.object({
    kind: text.optional(),
    name: text.optional(),
    uid: text.optional(),
  }),
  metadata: z.object({ creationTimestamp: text.nullish() }).optional(),
});
type Event = z.infer<typeof eventSchema>;

/** How long a namespace's list answers other waits of the same cluster. */
const SHARED_MS = 5000;
/**
 * Namespaces whose list is kept at once, per cluster, and the Events they may hold together (each list is at most
 * four pages of 250): a fleet's waits go round its namespaces, and a cap below their number made every wait list
 * again (20 namespaces through 16 places: a list per read in a rollout of 1,000). Lists older than SHARED_MS go
 * first in any case.
 */
const MAX_SHARED = 128;
const MAX_SHARED_EVENTS = 4000;

interface Listed {
  at: number;
  events: Promise<Event[]>;
  /** How many Events it holds, once listed. */
  held: number;
}

/**
 * The warning Events of a namespace as listed (a few pages, parsed), shared by the waits of one cluster: a list
 * younger than SHARED_MS, or one under way, answers; a fresh one is asked otherwise. The list is read under its
 * own bound, not a waiter's signal (a wait that ends does not fail the others'); each waiter stops waiting on its own.
 */
class NamespaceWarnings {
  private readonly listed = new Map<string, Listed>();
  private readonly api: KubeApi;

  constructor(api: KubeApi) {
    this.api = api;
  }

  events(
    ns: string,
    pages: { size: number; max: number },
    fresh: boolean,
    signal: AbortSignal,
  ): Promise<Event[]> {
    // A verdict's last read is its own, under its own bound: not shared, and cut short with the wait.
    if (fresh) return this.list(ns, pages, signal);
    const now = Date.now();
    for (const [key, entry] of this.listed) if (now - entry.at > SHARED_MS) this.listed.delete(key);
    let entry = this.listed.get(ns);
    if (!entry) {
      const made: Listed = { at: now, events: this.list(ns, pages, AbortSignal.timeout(LIST_MS)), held: 0 };
      entry = made;
      this.listed.set(ns, made);
      this.trim();
      made.events.then(
        (events) => {
          made.held = events.length;
          this.trim();
        },
        // A failed list is asked again by the next waiter, not shared.
        () => {
          if (this.listed.get(ns) === made) this.listed.delete(ns);
        },
      );
    }
    return untilAborted(entry.events, signal);
  }

  /** The oldest lists go while more namespaces or Events are kept than the bounds allow (the newest stays). */
  private trim(): void {
    let held = 0;
    for (const entry of this.listed.values()) held += entry.held;
    for (const [key, entry] of this.listed) {
      if (this.listed.size <= 1 || (this.listed.size <= MAX_SHARED && held <= MAX_SHARED_EVENTS)) break;
      this.listed.delete(key);
      held -= entry.held;
    }
  }

  private async list(
    ns: string,
    pages: { size: number; max: number },
    signal: AbortSignal,
  ): Promise<Event[]> {
    const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/events`;
    const events: Event[] = [];
    await eachListPage<unknown>(
      this.api,
      path,
      {
        query: { fieldSelector: 'type=Warning' },
        pageSize: pages.size,
        maxPages: pages.max,
        maxPageBytes: MAX_PAGE_BYTES,
        inconsistent: true,
        signal,
      },
      (items) => {
        for (const item of items) {
          const parsed = eventSchema.safeParse(item);
          if (parsed.success) events.push(kept(parsed.data));
        }
      },
    );
    return events;
  }
}

/**
 * What is held of an Event for the waits, cut to the lengths Kubernetes gives its fields (whoever writes Events in a
 * namespace chooses their sizes): a shared list of 1,000 stays under 3 MB. The digest cuts the message further.
 */
function kept(event: Event): Event {
  const { involvedObject: o } = event;
  return {
    type: event.type?.slice(0, 64),
    reason: event.reason?.slice(0, 128),
    message: event.message?.slice(0, 2048),
    count: event.count,
    lastTimestamp: event.lastTimestamp?.slice(0, 64),
    eventTime: event.eventTime?.slice(0, 64),
    firstTimestamp: event.firstTimestamp?.slice(0, 64),
    series: event.series && {
      count: event.series.count,
      lastObservedTime: event.series.lastObservedTime?.slice(0, 64),
    },
    involvedObject: { kind: o.kind?.slice(0, 63), name: o.name?.slice(0, 253), uid: o.uid?.slice(0, 64) },
    metadata: { creationTimestamp: event.metadata?.creationTimestamp?.slice(0, 64) },
  };
}

/** The bound of a shared list, which no waiter's signal bounds. */
const LIST_MS = 30_000;

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** One shared list per cluster: the waits of every deploy to it. */
const shared = new WeakMap<KubeApi, NamespaceWarnings>();

interface Owned {
  uid: string | undefined;
  controller: { kind: string; name: string; uid: string } | undefined;
}

function lastSeen(event: Event): number {
  const when =
    event.series?.lastObservedTime ??
    event.lastTimestamp ??
    event.eventTime ??
    event.firstTimestamp ??
    event.metadata?.creationTimestamp;
  const ms = when ? Date.parse(when) : Number.NaN;
  return Number.isFinite(ms) ? ms : 0;
}

export class WarningEvents {
  private readonly api: KubeApi;
  private readonly options: Required<Omit<WarningEventsOptions, 'sinceMs'>> & { sinceMs: number };
  /** By `kind/namespace/name`: the object's uid and controller when it was looked up; undefined: not there. */
  private readonly owned = new Map<string, Owned | undefined>();

  constructor(api: KubeApi, options: WarningEventsOptions = {}) {
    this.api = api;
    this.options = {
      pageSize: options.pageSize ?? 250,
      maxPages: options.maxPages ?? 4,
      maxLookups: options.maxLookups ?? 30,
      sinceMs: options.sinceMs ?? 0,
    };
  }

  /**
   * By uid of each namespaced object: the warnings about it and about what it owns. A namespace's list another wait
   * of the cluster made in the last few seconds answers, unless `fresh` (a verdict's last read).
   */
  async read(
    objects: readonly KubeObject[],
    signal: AbortSignal,
    fresh = false,
  ): Promise<Map<string, ObservedWarning[]>> {
    const byNamespace = new Map<string, KubeObject[]>();
    for (const object of objects) {
      const ns = object.metadata.namespace;
      if (!ns || typeof object.metadata.uid !== 'string') continue;
      const inNamespace = byNamespace.get(ns);
      if (inNamespace) inNamespace.push(object);
      else byNamespace.set(ns, [object]);
    }
    const found = new Map<string, ObservedWarning[]>();
    const budget = { lookups: this.options.maxLookups };
    for (const [ns, inNamespace] of byNamespace) {
      await this.readNamespace(ns, inNamespace, found, budget, signal, fresh);
    }
    return found;
  }

  private async readNamespace(
    ns: string,
    objects: readonly KubeObject[],
    found: Map<string, ObservedWarning[]>,
    budget: { lookups: number },
    signal: AbortSignal,
    fresh: boolean,
  ): Promise<void> {
    const targets = new Set(objects.map((o) => o.metadata.uid as string));
    const prefixes = new NamePrefixes(
      objects.filter((o) => OWNERS.has(o.kind)).map((o) => o.metadata.name.slice(0, PREFIX_CHARS)),
    );
    let lists = shared.get(this.api);
    if (!lists) {
      lists = new NamespaceWarnings(this.api);
      shared.set(this.api, lists);
    }
    const pages = { size: this.options.pageSize, max: this.options.maxPages };
    for (const event of await lists.events(ns, pages, fresh, signal)) {
      const involved = event.involvedObject;
      const lastMs = lastSeen(event);
      if (!involved.kind || !involved.name || lastMs < this.options.sinceMs) continue;
      let target = involved.uid && targets.has(involved.uid) ? involved.uid : undefined;
      if (!target && OWNED[involved.kind] && prefixes.begins(involved.name))
        target = await this.ownerAmong(
          ns,
          involved.kind,
          involved.name,
          involved.uid,
          targets,
          budget,
          signal,
        );
      if (!target) continue;
      const notes = found.get(target) ?? [];
      notes.push({
        object: `${involved.kind} ${ns}/${involved.name}`,
        reason: event.reason || 'Warning',
        message: event.message ?? '',
        count: event.series?.count ?? event.count ?? 1,
        lastMs,
      });
      found.set(target, notes);
    }
  }

  /** The waited-on object (its uid) whose object this is, following controller references; undefined if none. */
  private async ownerAmong(
    ns: string,
    kind: string,
    name: string,
    uid: string | undefined,
    targets: ReadonlySet<string>,
    budget: { lookups: number },
    signal: AbortSignal,
  ): Promise<string | undefined> {
    for (let depth = 0; depth < MAX_DEPTH; depth++) {
      const owned = await this.lookUp(ns, kind, name, uid, budget, signal);
      // Gone, or another object of that name since: the Event is about something no longer there.
      if (!owned || (uid !== undefined && owned.uid !== uid)) return undefined;
      const controller = owned.controller;
      if (!controller) return undefined;
      if (targets.has(controller.uid)) return controller.uid;
      if (!OWNED[controller.kind]) return undefined;
      ({ kind, name, uid } = controller);
    }
    return undefined;
  }

  private async lookUp(
    ns: string,
    kind: string,
    name: string,
    uid: string | undefined,
    budget: { lookups: number },
    signal: AbortSignal,
  ): Promise<Owned | undefined> {
    const key = `${kind}/${ns}/${name}`;
    const known = this.owned.get(key);
    if (this.owned.has(key) && (known === undefined || uid === undefined || known.uid === uid)) return known;
    if (budget.lookups <= 0) return undefined;
    budget.lookups--;
    const base = (OWNED[kind] as string).replace('{ns}', encodeURIComponent(ns));
    let owned: Owned | undefined;
    try {
      const object = await this.api.request<KubeObject>('GET', `${base}${encodeURIComponent(name)}`, {
        accept: METADATA_OBJECT,
        signal,
        maxBytes: 1024 * 1024,
      });
      const refs = (object.metadata as { ownerReferences?: unknown }).ownerReferences;
      const controller = Array.isArray(refs)
        ? (refs as { controller?: boolean; kind?: unknown; name?: unknown; uid?: unknown }[]).find(
            (r) => r.controller === true,
          )
        : undefined;
      owned = {
        uid: typeof object.metadata.uid === 'string' ? object.metadata.uid : undefined,
        controller:
          controller &&
          typeof controller.kind === 'string' &&
          typeof controller.name === 'string' &&
          typeof controller.uid === 'string'
            ? { kind: controller.kind, name: controller.name, uid: controller.uid }
            : undefined,
      };
    } catch (error) {
      const code = statusCode(error);
      // Not there (deleted), or not ours to read: remembered as unknown. Anything else: asked again next time.
      if (code !== 404 && code !== 403) throw error;
    }
    this.owned.set(key, owned);
    if (this.owned.size > MAX_REMEMBERED) this.owned.delete(this.owned.keys().next().value as string);
    return owned;
  }
}
