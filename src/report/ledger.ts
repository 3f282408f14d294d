// The release ledger: for each deployment, its releases (newest first, bounded) and its rollback fence, kept in
// one ConfigMap `mooring-ledger-<deployment>` in the agent's namespace. It never holds manifests or Secret values:
// a release records what identifies it (commit, image digests, versioned object names) so that it can be
// rebuilt exactly, and what happened (result, duration, messages). Every change is written through the state
// store (src/kube/state-store.ts), so a rollback's fence and a sync's release written at once both stay.

import type { ChartDependency, Release, ReleaseImage, Trigger } from '../contract.ts';
import { errorMessage, StalledError } from '../errors.ts';
import { parseJson } from '../json.ts';
import type { KubeApi } from '../kube/api.ts';
import type { SavedMark } from '../kube/drift-marks.ts';
import { type StateMap, StateStore } from '../kube/state-store.ts';

/** Set by a rollback: the agent leaves the deployment alone until its sources move past `heads`. */
export interface Fence {
  release: number;
  since: string;
  /** The source revisions when the fence was set: the Git commit, and each image digest by source. */
  heads: { commit?: string | undefined; images: Record<string, string> };
}

/**
 * A sync in progress, noted with the deployment's inventory as it starts (src/sync/attempts.ts) and ended by the
 * release that names its id: one no release names when an agent starts means the previous agent died in the middle
 * of it (killed, out of memory), and its end is reported. Earlier agents noted it in the ledger itself (`attempt`
 * below, cleared by the release), which is still read.
 */
export interface Attempt {
  /** Named by the release that ends it (absent from the notes earlier agents kept in the ledger). */
  id?: string | undefined;
  commit?: string | undefined;
  revision: string;
  trigger: Trigger;
  images: Record<string, ReleaseImage>;
  since: string;
  /**
   * The versioned objects it was to write, as earlier agents noted them; an attempt that names none takes them from
   * the deployment's inventory, written with them before the first write (endInterrupted).
   */
  versions?: string[] | undefined;
}

/** A sync that waits for the deployments it depends on (dependsOn): what `mooring status` shows. */
export interface Waiting {
  /** `waiting for crds`, or `held: dependency crds failed …`. */
  message: string;
  commit?: string | undefined;
  since: string;
}

/**
 * Which replica syncs the deployment now, when replicas share the work (docs/replicas.md): at most one at any moment.
 * Taken before a sync starts and given back when it ends; a holder whose membership Lease expired holds nothing.
 */
export interface Holder {
  identity: string;
  since: string;
}

export interface LedgerData {
  releases: Release[];
  /**
   * What the agent last wrote to each object and what the server answered (src/kube/drift-marks.ts, SavedMark),
   * saved with each release: an agent started again judges drift and unmoved objects from it. Read back as
   * untrusted (DriftMarks.restore).
   */
  marks?: unknown;
  fence: Fence | undefined;
  attempt?: Attempt | undefined;
  waiting?: Waiting | undefined;
  holder?: Holder | undefined;
}

const MAX_OBJECTS = 300;
const MAX_MESSAGES = 10;
const MAX_MESSAGE = 500;

export function ledgerName(deployment: string): string {
  return `mooring-ledger-${deployment}`;
}

const LABELS = {
  'app.kubernetes.io/managed-by': 'mooring',
  'app.kubernetes.io/component': 'ledger',
};

/** How deep a ledger's JSON may nest (its records nest a few levels; a deeper one cannot be written back). */
const MAX_LEDGER_DEPTH = 32;

/** A ledger ConfigMap whose data is not one mooring wrote: named, with the key, and never taken for empty. */
export class CorruptLedgerError extends StalledError {}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` nests deeper than `limit` (iterative: a value nested 300,000 deep must not overflow the stack). */
function tooDeep(value: unknown, limit: number): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop() as { value: unknown; depth: number };
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= limit) return true;
    for (const child of Object.values(v)) stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/**
 * The ledger in a ConfigMap's data. The ConfigMap lives in the agent's namespace, where a hand or another program
 * may write it: a key that is not JSON of the expected shape is refused by name (CorruptLedgerError), so that one
 * deployment's broken ledger fails that deployment, not the agent, and is never read as an empty history.
 */
function parseLedger(data: Record<string, string> | undefined, name = 'the ledger'): LedgerData {
  const read = (key: string, shape: 'list' | 'object'): unknown => {
    const text = data?.[key];
    if (text === undefined || text === '') return undefined;
    let value: unknown;
    try {
      value = parseJson(text);
    } catch (error) {
      throw new CorruptLedgerError(
        `${name}: ${key} is not JSON (${errorMessage(error)}); fix it or delete the key`,
      );
    }
    const fits = shape === 'list' ? Array.isArray(value) : isRecord(value);
    if (!fits)
      throw new CorruptLedgerError(`${name}: ${key} is not a JSON ${shape}; fix it or delete the key`);
    if (tooDeep(value, MAX_LEDGER_DEPTH))
      throw new CorruptLedgerError(
        `${name}: ${key} nests deeper than ${MAX_LEDGER_DEPTH}; fix it or delete the key`,
      );
    return value;
  };
  const releases = (read('releases.json', 'list') ?? []) as unknown[];
  for (const [index, release] of releases.entries()) {
    if (
      !isRecord(release) ||
      !Number.isSafeInteger(release.id) ||
      typeof release.revision !== 'string' ||
      (release.versions !== undefined && !Array.isArray(release.versions)) ||
      (release.images !== undefined && !isRecord(release.images)) ||
      (release.objects !== undefined && !Array.isArray(release.objects))
    )
      throw new CorruptLedgerError(
        `${name}: releases.json item ${index} is not a release (an object with a numeric id and a revision); fix it or delete the key`,
      );
  }
  const marks = read('marks.json', 'object');
  return {
    releases: releases as Release[],
    fence: read('fence.json', 'object') as Fence | undefined,
    attempt: read('attempt.json', 'object') as Attempt | undefined,
    waiting: read('waiting.json', 'object') as Waiting | undefined,
    holder: read('holder.json', 'object') as Holder | undefined,
    ...(marks !== undefined ? { marks } : {}),
  };
}

/**
 * What a ledger's data may take: a ConfigMap holds at most 1 MiB, and one refused as too long stops every later
 * write (releases, fences, claims, `mooring resume`) for good.
 */
export const MAX_LEDGER_BYTES = 900 * 1024;

/** Releases that keep their objects, hooks and messages however full the ledger is (`mooring history` shows them). */
const DETAILED_RELEASES = 5;

/** The ledger's keys; keys of its own are replaced, not merged: a lifted fence must disappear. */
function ledgerData(data: LedgerData, limit: number): Record<string, string> {
  const others = {
    ...(data.fence ? { 'fence.json': JSON.stringify(data.fence, null, 1) } : {}),
    ...(data.attempt ? { 'attempt.json': JSON.stringify(data.attempt, null, 1) } : {}),
    ...(data.waiting ? { 'waiting.json': JSON.stringify(data.waiting, null, 1) } : {}),
    ...(data.holder ? { 'holder.json': JSON.stringify(data.holder) } : {}),
    ...(data.marks !== undefined ? { 'marks.json': JSON.stringify(data.marks) } : {}),
  };
  const taken = Object.values(others).reduce((sum, text) => sum + Buffer.byteLength(text), 0);
  return {
    'releases.json': fittedReleases(data.releases.slice(0, limit), MAX_LEDGER_BYTES - taken, data.fence),
    ...others,
  };
}

/**
 * The releases as JSON within `room` bytes. A deployment of a few hundred objects filled the 1 MiB of a ConfigMap
 * in about 35 releases. Past the room, releases older than the newest few lose what only `mooring history` shows
 * (objects, hooks, drift, all messages but the first); then the oldest go, but never the newest, the one the
 * rollback fence holds, nor the newest stable one (what a rollback goes back to). Commits, images, versions and
 * dependencies of the releases kept stay whole: rollback and the version history read them.
 */
export function fittedReleases(releases: readonly Release[], room: number, fence?: Fence): string {
  const whole = JSON.stringify(releases, null, 1);
  if (Buffer.byteLength(whole) <= room) return whole;
  const kept = releases.map((r, i) =>
    i < DETAILED_RELEASES
      ? r
      : { ...r, objects: [], drift: undefined, hooks: undefined, messages: r.messages.slice(0, 1) },
  );
  // Sizes one by one (a release's share of the array's text, near enough), so that dropping is linear.
  const sizes = kept.map((r) => Buffer.byteLength(JSON.stringify(r, null, 1)) + 2 * (r.versions.length + 20));
  let total = sizes.reduce((sum, n) => sum + n, 2);
  const stable = kept.find((r) => r.result === 'stable')?.id;
  const dropped = new Set<number>();
  for (let i = kept.length - 1; i > 0 && total > room; i--) {
    const r = kept[i] as Release;
    if (r.id === fence?.release || r.id === stable) continue;
    dropped.add(i);
    total -= sizes[i] as number;
  }
  let text = JSON.stringify(
    kept.filter((_, i) => !dropped.has(i)),
    null,
    1,
  );
  // The estimate fell short: the protected releases alone, without indentation.
  if (Buffer.byteLength(text) > room)
    text = JSON.stringify(kept.filter((r, i) => i === 0 || r.id === fence?.release || r.id === stable));
  return text;
}

export class Ledger {
  private readonly store: StateStore;
  private readonly limit: number;
  private readonly namespace: string;

  constructor(api: KubeApi, namespace: string, limit = 50) {
    this.store = new StateStore(api, namespace);
    this.limit = limit;
    this.namespace = namespace;
  }

  async read(deployment: string): Promise<LedgerData> {
    const cm = await this.store.read(ledgerName(deployment), `read the ledger of deployment ${deployment}`);
    if (!cm) return { releases: [], fence: undefined };
    return parseLedger(cm.data, this.described(deployment));
  }

  /** The ledger ConfigMap of a deployment, as messages name it. */
  private described(deployment: string): string {
    return `ConfigMap ${this.namespace}/${ledgerName(deployment)} (the ledger of deployment ${deployment})`;
  }

  /** Every ledger in the namespace, by deployment, in one request (the status page's periodic refresh). */
  async readAll(): Promise<Map<string, LedgerData>> {
    const list = await this.store.list('app.kubernetes.io/component=ledger', 'list ledgers');
    const all = new Map<string, LedgerData>();
    for (const item of list) {
      const name = item.labels['mooring.io/deployment'];
      if (!name) continue;
      try {
        all.set(name, parseLedger(item.data));
      } catch {
        // A ledger that cannot be parsed is read (and its problem reported) on its own.
      }
    }
    return all;
  }

  /** Every deployment that has a ledger in the namespace. */
  async deployments(): Promise<string[]> {
    const list = await this.store.list('app.kubernetes.io/component=ledger', 'list ledgers');
    return list
      .map((i) => i.labels['mooring.io/deployment'] ?? '')
      .filter(Boolean)
      .sort();
  }

  /**
   * Changes the ledger: `change` gets what is stored now (again after a concurrent write) and returns the new
   * ledger, or undefined to leave it as it is.
   */
  private async update(
    deployment: string,
    change: (data: LedgerData) => LedgerData | undefined,
  ): Promise<StateMap | undefined> {
    return await this.store.update(
      ledgerName(deployment),
      (current) => {
        const next = change(parseLedger(current?.data, this.described(deployment)));
        return next && { data: ledgerData(next, this.limit), annotations: current?.annotations ?? {} };
      },
      {
        action: `write the ledger of deployment ${deployment}`,
        labels: { ...LABELS, 'mooring.io/deployment': deployment },
      },
    );
  }

  /**
   * Records a release (bounded fields), newest first; returns it with its id. A retry that failed exactly as the
   * newest release did (same revision, same error, nothing else written) takes that release's place and id, so
   * that a sync retried for hours (a namespace that does not exist yet) does not push the history out. With
   * `fence`, a stable release also sets the deployment's rollback fence, in the same write; `marks` (the agent's
   * drift marks of the deployment) replace those saved before, in the same write too.
   */
  async append(
    release: Omit<Release, 'id'>,
    fence?: Omit<Fence, 'release'>,
    marks?: Record<string, SavedMark>,
  ): Promise<Release> {
    const fields: Omit<Release, 'id'> = {
      ...release,
      objects: release.objects.slice(0, MAX_OBJECTS),
      ...(release.drift
        ? { drift: release.drift.slice(0, MAX_OBJECTS).map((d) => ({ ...d, fields: d.fields.slice(0, 20) })) }
        : {}),
      ...(release.hooks
        ? {
            hooks: release.hooks
              .slice(0, MAX_OBJECTS)
              .map((h) => ({ ...h, message: h.message.slice(0, MAX_MESSAGE) })),
          }
        : {}),
      messages: release.messages.slice(0, MAX_MESSAGES).map((m) => m.slice(0, MAX_MESSAGE)),
    };
    let recorded: Release | undefined;
    await this.update(release.deployment, (data) => {
      // The id follows the newest release stored when the write succeeds, not when it was first tried.
      const newest = data.releases[0];
      const repeated = newest !== undefined && sameFailure(newest, fields);
      const bounded: Release = { ...fields, id: repeated ? newest.id : (newest?.id ?? 0) + 1 };
      recorded = bounded;
      // The release ends the attempt that made it; a stable rollback's fence is set with it (contract.ts).
      return {
        ...data,
        releases: [bounded, ...data.releases.slice(repeated ? 1 : 0)],
        attempt: undefined,
        ...(fence && bounded.result === 'stable' ? { fence: { ...fence, release: bounded.id } } : {}),
        ...(marks ? { marks } : {}),
      };
    });
    return recorded as Release;
  }

  /** Records (or clears) what the deployment's next sync waits for. */
  async setWaiting(deployment: string, waiting: Waiting | undefined): Promise<void> {
    await this.update(deployment, (data) => (!waiting && !data.waiting ? undefined : { ...data, waiting }));
  }

  /**
   * Takes the deployment for `identity` (replicas sharing the work): it is free, held by `identity` already, or
   * held by a replica that is no live member any more (`live`). Written with the resourceVersion read, so two
   * replicas never both take it. Returns the ledger as taken (with the replica it was taken from, when that one's
   * Lease had expired), or the holder that keeps it.
   */
  async claim(
    deployment: string,
    identity: string,
    live: (identity: string) => boolean,
  ): Promise<{ taken: true; data: LedgerData; from: Holder | undefined } | { taken: false; holder: Holder }> {
    let outcome:
      | { taken: true; data: LedgerData; from: Holder | undefined }
      | { taken: false; holder: Holder }
      | undefined;
    await this.update(deployment, (data) => {
      const holder = data.holder;
      if (holder && holder.identity !== identity && live(holder.identity)) {
        outcome = { taken: false, holder };
        return undefined;
      }
      const next = { ...data, holder: { identity, since: new Date().toISOString() } };
      outcome = {
        taken: true,
        data: next,
        from: holder && holder.identity !== identity ? holder : undefined,
      };
      return next;
    });
    return outcome as NonNullable<typeof outcome>;
  }

  /** Gives the deployment back (when `identity` still holds it). */
  async unclaim(deployment: string, identity: string): Promise<void> {
    await this.update(deployment, (data) =>
      data.holder?.identity === identity ? { ...data, holder: undefined } : undefined,
    );
  }

  /**
   * Sets or lifts the rollback fence. `lifting`: only the fence of that release is lifted; one written since (a
   * rollback from the CLI while the agent decided to lift the old one) stays.
   */
  async setFence(deployment: string, fence: Fence | undefined, lifting?: number): Promise<void> {
    await this.update(deployment, (data) =>
      lifting !== undefined && data.fence?.release !== lifting ? undefined : { ...data, fence },
    );
  }
}

function sameFailure(a: Omit<Release, 'id'>, b: Omit<Release, 'id'>): boolean {
  const what = (r: Omit<Release, 'id'>) =>
    JSON.stringify([r.revision, r.trigger, r.commit, r.versions, r.objects, r.messages]);
  return a.result === 'error' && b.result === 'error' && what(a) === what(b);
}

/** The newest release that ended stable: what the deployment is at. */
/** Every chart dependency the releases recorded, newest first: a version fetched again is checked against them. */
export function recordedDependencies(releases: readonly Release[]): ChartDependency[] {
  return releases.flatMap((r) => r.dependencies ?? []);
}

/**
 * Every versioned object the releases name (`app-config-v002`): a new version is numbered above them, so that no
 * recorded name is reused for other content. What a sync, a live preview and `mooring diff` render with, alike.
 */
export function recordedVersions(releases: readonly Release[]): string[] {
  return releases.flatMap((r) => r.versions);
}

export function current(data: LedgerData): Release | undefined {
  return data.releases.find((r) => r.result === 'stable');
}

/** A deployment's revision: what decides whether anything needs deploying (the commit plus every image digest). */
export function syncRevision(commit: string | undefined, images: Record<string, string>): string {
  const digests = Object.entries(images)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([source, digest]) => `${source}=${digest}`);
  return [commit ?? 'local', ...digests].join('|');
}
