// The inventory: the set of objects an owner (an agent deployment, or one application of `mooring deploy`) has
// applied, kept in one ConfigMap per owner in the agent's namespace so that the agent and the CLI read the same
// record. Prune deletes what an inventory holds and a new render no longer does. A versioned ConfigMap or Secret
// is recorded by its artifact (`app-config`), so that prune finds every version of an artifact that is gone.
// It is separate from the release ledger because releases are capped in size and read often; an inventory is
// one compact line per object, bounded so that the ConfigMap stays far below the API server's 1 MiB object limit.
// Writes go through the state store (state-store.ts): two writers of one owner never drop each other's entries.
import { createHash } from 'node:crypto';
import { StalledError } from '../errors.ts';
import { ARTIFACT } from '../render/annotations.ts';
import { groupOf, type KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import { StateStore } from './state-store.ts';

export interface InventoryEntry {
  apiVersion: string;
  kind: string;
  namespace?: string | undefined;
  name: string;
  /** For a versioned ConfigMap/Secret: its artifact name; `name` is then the version last applied. */
  artifact?: string | undefined;
}

/** At ~80 bytes a line, 10 000 objects keep the ConfigMap under 1 MiB. */
export const MAX_INVENTORY = 10_000;

/**
 * The versions of versioned objects an owner's inventory names (`ConfigMap app-config-v003`, as releases name
 * them): what a sync writes, recorded before its first write, so that one an agent never finished still names them.
 */
export async function inventoryVersions(api: KubeApi, namespace: string, owner: string): Promise<string[]> {
  return versionsIn((await new InventoryStore(api, namespace).read(owner)) ?? []);
}

/** The versions of versioned objects among `entries`, as releases name them (`ConfigMap app-config-v003`). */
export function versionsIn(entries: readonly InventoryEntry[]): string[] {
  return entries.filter((e) => e.artifact !== undefined).map((e) => `${e.kind} ${e.name}`);
}

/** `ConfigMap ns/app-config-v003`, as messages name objects. */
export function entryName(e: InventoryEntry): string {
  return `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
}

/**
 * What makes two entries the same object for prune: group, kind, namespace and name (the artifact for versioned
 * objects). The version of the API is not part of it: `apps/v1` and `apps/v1beta2` name one Deployment. An artifact
 * and an object of its name are told apart: a ConfigMap that was versioned and now is not (or the reverse, when
 * the versioning mode or the references to it change) leaves its old versions (or its old self) to prune.
 */
export function entryId(e: InventoryEntry): string {
  const name = e.artifact === undefined ? e.name : `${e.artifact} (versions)`;
  return `${groupOf(e.apiVersion)}/${e.kind} ${e.namespace ?? ''}/${name}`;
}

/** The inventory of a rendered set: a versioned object (it carries its artifact's annotations) by its artifact. */
export function inventoryOf(objects: readonly KubeObject[]): InventoryEntry[] {
  return objects.map((object) => {
    const annotations = object.metadata.annotations ?? {};
    const versioned = annotations[ARTIFACT.version] !== undefined;
    return {
      apiVersion: object.apiVersion,
      kind: object.kind,
      namespace: object.metadata.namespace,
      name: object.metadata.name,
      artifact: versioned ? annotations[ARTIFACT.name] : undefined,
    };
  });
}

/** Whether an object is one the inventory records as applied (by group, kind, namespace and name). */
export function appliedBefore(entries: readonly InventoryEntry[]): (object: KubeObject) => boolean {
  const key = (apiVersion: string, kind: string, namespace: string | undefined, name: string) =>
    `${groupOf(apiVersion)}/${kind} ${namespace ?? ''}/${name}`;
  const applied = new Set(entries.map((e) => key(e.apiVersion, e.kind, e.namespace, e.name)));
  return (o) => applied.has(key(o.apiVersion, o.kind, o.metadata.namespace, o.metadata.name));
}

/** The entries of `a` and those of `b` that `a` does not hold (by entryId), `a`'s first. */
export function unionOf(a: readonly InventoryEntry[], b: readonly InventoryEntry[]): InventoryEntry[] {
  const ids = new Set(a.map(entryId));
  return [...a, ...b.filter((e) => !ids.has(entryId(e)))];
}

/** Whether `a` and `b` hold the same entries (a missing inventory holds none and differs from any). */
export function sameInventory(
  a: readonly InventoryEntry[],
  b: readonly InventoryEntry[] | undefined,
): boolean {
  return b !== undefined && serialize(a) === serialize(b);
}

function serialize(entries: readonly InventoryEntry[]): string {
  return entries
    .map((e) => [e.apiVersion, e.kind, e.namespace ?? '', e.name, e.artifact ?? ''].join(' ').trimEnd())
    .sort()
    .join('\n');
}

function parse(text: string): InventoryEntry[] {
  const entries: InventoryEntry[] = [];
  for (const line of text.split('\n')) {
    const [apiVersion, kind, namespace, name, artifact] = line.split(' ');
    if (!apiVersion || !kind || !name) continue;
    entries.push({
      apiVersion,
      kind,
      namespace: namespace || undefined,
      name,
      artifact: artifact || undefined,
    });
  }
  return entries;
}

/** The owner of a CLI application's inventory: `mooring deploy -n shop --application web` is `cli.shop.web`. */
export function cliOwner(namespace: string, application: string): string {
  return `cli.${namespace}.${application}`;
}

/** A DNS-subdomain ConfigMap name for any owner; long owners are shortened with a hash, never cut ambiguously. */
export function inventoryName(owner: string): string {
  const plain = `mooring-inventory-${owner}`;
  if (plain.length <= 253) return plain;
  const hash = createHash('sha256').update(owner).digest('hex').slice(0, 16);
  return `${plain.slice(0, 230)}-${hash}`;
}

const LABELS = {
  'app.kubernetes.io/managed-by': 'mooring',
  'app.kubernetes.io/component': 'inventory',
};
const OWNER = 'mooring.io/owner';
/** The data key of the note of the sync that last recorded the inventory as it started. */
const NOTE = 'attempt.json';
/** The key of the record of what was last written (src/sync/deploy/applied-record.ts). */
const RECORD = 'applied.json';
/** What the inventory and the record may take together in their ConfigMap (the API server's limit is 1 MiB). */
const RECORD_ROOM = 900 * 1024;
/** The annotation that names the note's id: a metadata-only watch tells it without a read. */
export const NOTE_ID = 'mooring.io/attempt';

/** A sync's note (src/sync/attempts.ts): its id, and its text as stored. */
export interface InventoryNote {
  id: string;
  text: string;
}

export class InventoryStore {
  readonly namespace: string;
  private readonly store: StateStore;

  constructor(api: KubeApi, namespace: string) {
    this.namespace = namespace;
    this.store = new StateStore(api, namespace);
  }

  /** The owner's inventory; undefined when none was ever recorded (a first sync: nothing to prune). */
  async read(owner: string): Promise<InventoryEntry[] | undefined> {
    return (await this.readWithNote(owner))?.entries;
  }

  /**
   * The owner's inventory and the note of the sync that last recorded it as it started (`note`, the agent's
   * attempt: src/sync/attempts.ts), as stored: untrusted JSON, parsed by its reader.
   */
  async readWithNote(owner: string): Promise<
    | {
        entries: InventoryEntry[];
        note: string | undefined;
        /** The record of what the owner's deploys last wrote (src/sync/deploy/applied-record.ts), as stored. */
        record: string | undefined;
      }
    | undefined
  > {
    const cm = await this.store.read(inventoryName(owner), `read the inventory of ${owner}`);
    return cm && { entries: parse(cm.data.inventory ?? ''), note: cm.data[NOTE], record: cm.data[RECORD] };
  }

  /** Stores `record` with the owner's inventory, when there is one (src/sync/deploy/applied-record.ts). */
  async saveRecord(owner: string, record: string): Promise<void> {
    await this.store.update(
      inventoryName(owner),
      (current) =>
        // Beside an inventory too large to leave it room within the API's 1 MiB, no record is kept.
        current &&
        current.data[RECORD] !== record &&
        (current.data.inventory?.length ?? 0) + record.length <= RECORD_ROOM
          ? { data: { ...current.data, [RECORD]: record }, annotations: current.annotations }
          : undefined,
      { action: `write the inventory of ${owner}`, labels: LABELS },
    );
  }

  /** Every owner's inventory in the namespace. */
  async all(): Promise<Map<string, InventoryEntry[]>> {
    const owners = new Map<string, InventoryEntry[]>();
    for (const item of await this.store.list('app.kubernetes.io/component=inventory', 'list inventories')) {
      const owner = item.annotations[OWNER];
      if (owner) owners.set(owner, parse(item.data.inventory ?? ''));
    }
    return owners;
  }

  /** Replaces the owner's inventory with `entries`. */
  async write(owner: string, entries: readonly InventoryEntry[]): Promise<void> {
    await this.update(owner, () => entries);
  }

  /**
   * Records `entries` as the owner's inventory, keeping what another writer recorded since this one last knew the
   * inventory as `known` (what it read, or last recorded): entries stored now that `known` does not hold. A
   * single writer gets exactly `entries`; two writers of one owner lose none of each other's objects.
   */
  async record(
    owner: string,
    entries: readonly InventoryEntry[],
    known: readonly InventoryEntry[],
    note?: InventoryNote,
  ): Promise<InventoryEntry[]> {
    const ids = new Set(known.map(entryId));
    return this.update(
      owner,
      (current) =>
        unionOf(
          entries,
          (current ?? []).filter((e) => !ids.has(entryId(e))),
        ),
      note,
    );
  }

  /** Takes the note out again, when it is still `note` (a sync that ended without a release: cancelled). */
  async clearNote(owner: string, note: InventoryNote): Promise<void> {
    await this.store.update(
      inventoryName(owner),
      (current) => {
        if (current?.data[NOTE] !== note.text) return undefined;
        const { [NOTE]: _, ...data } = current.data;
        const { [NOTE_ID]: __, ...annotations } = current.annotations;
        return { data, annotations };
      },
      { action: `write the inventory of ${owner}`, labels: LABELS },
    );
  }

  /**
   * Writes the change of what is stored now (undefined: none yet); returns what was written. With `note`, the
   * note is written in the same write (kept otherwise, whoever writes).
   */
  async update(
    owner: string,
    change: (current: InventoryEntry[] | undefined) => readonly InventoryEntry[],
    note?: InventoryNote,
  ): Promise<InventoryEntry[]> {
    let written: InventoryEntry[] = [];
    await this.store.update(
      inventoryName(owner),
      (current) => {
        const next = change(current && parse(current.data.inventory ?? ''));
        if (next.length > MAX_INVENTORY) {
          throw new StalledError(
            `${owner} has ${next.length} objects, more than an inventory holds (${MAX_INVENTORY}): split it`,
          );
        }
        written = [...next];
        const text = serialize(next);
        // The same entries for the same owner: nothing to write (most syncs change no object's identity).
        if (
          current &&
          current.data.inventory === text &&
          current.annotations[OWNER] === owner &&
          (note === undefined || current.data[NOTE] === note.text)
        )
          return undefined;
        return {
          data: { ...current?.data, inventory: text, ...(note ? { [NOTE]: note.text } : {}) },
          annotations: { ...current?.annotations, [OWNER]: owner, ...(note ? { [NOTE_ID]: note.id } : {}) },
        };
      },
      { action: `write the inventory of ${owner}`, labels: LABELS, createNamespace: true },
    );
    return written;
  }
}
