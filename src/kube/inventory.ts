// The inventory: the set of objects an owner (an agent deployment, or one application of `mooring deploy`) has
// applied, kept in one ConfigMap per owner in the agent's namespace so that the agent and the CLI read the same
// record. Prune deletes what an inventory holds and a new render no longer does. A versioned ConfigMap or Secret
// is recorded by its artifact (`app-config`), so that prune finds every version of an artifact that is gone.
// It is separate from the release ledger because releases are capped in size and read often; an inventory is
// one compact line per object, bounded so that the ConfigMap stays far below the API server's 1 MiB object limit.
import { createHash } from 'node:crypto';
import { StalledError } from '../errors.ts';
import { ARTIFACT } from '../render/annotations.ts';
import { groupOf, type KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { createNamespace } from './namespace.ts';

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

/** `ConfigMap ns/app-config-v003`, as messages name objects. */
export function entryName(e: InventoryEntry): string {
  return `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
}

/**
 * What makes two entries the same object for prune: group, kind, namespace and name (the artifact for versioned
 * objects). The version of the API is not part of it: `apps/v1` and `apps/v1beta2` name one Deployment.
 */
export function entryId(e: InventoryEntry): string {
  return `${groupOf(e.apiVersion)}/${e.kind} ${e.namespace ?? ''}/${e.artifact ?? e.name}`;
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

export class InventoryStore {
  private readonly api: KubeApi;
  readonly namespace: string;

  constructor(api: KubeApi, namespace: string) {
    this.api = api;
    this.namespace = namespace;
  }

  private path(name?: string): string {
    return `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/configmaps${name ? `/${name}` : ''}`;
  }

  /** The owner's inventory; undefined when none was ever recorded (a first sync: nothing to prune). */
  async read(owner: string): Promise<InventoryEntry[] | undefined> {
    try {
      const cm = await this.api.request<{ data?: Record<string, string> }>(
        'GET',
        this.path(inventoryName(owner)),
      );
      return parse(cm.data?.inventory ?? '');
    } catch (error) {
      if (statusCode(error) === 404) return undefined;
      throw describeKubeError(error, `read the inventory of ${owner}`);
    }
  }

  /** Every owner's inventory in the namespace. */
  async all(): Promise<Map<string, InventoryEntry[]>> {
    const list = await this.api
      .request<{
        items: { metadata: { annotations?: Record<string, string> }; data?: Record<string, string> }[] | null;
      }>('GET', this.path(), { query: { labelSelector: 'app.kubernetes.io/component=inventory' } })
      .catch((error: unknown) => {
        throw describeKubeError(error, 'list inventories');
      });
    const owners = new Map<string, InventoryEntry[]>();
    for (const item of list.items ?? []) {
      const owner = item.metadata.annotations?.[OWNER];
      if (owner) owners.set(owner, parse(item.data?.inventory ?? ''));
    }
    return owners;
  }

  async write(owner: string, entries: readonly InventoryEntry[]): Promise<void> {
    if (entries.length > MAX_INVENTORY) {
      throw new StalledError(
        `${owner} has ${entries.length} objects, more than an inventory holds (${MAX_INVENTORY}): split it`,
      );
    }
    const name = inventoryName(owner);
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: this.namespace, labels: LABELS, annotations: { [OWNER]: owner } },
      data: { inventory: serialize(entries) },
    };
    try {
      await this.api.request('PUT', this.path(name), { body }).catch(async (error: unknown) => {
        if (statusCode(error) !== 404) throw error;
        await this.api.request('POST', this.path(), { body }).catch(async (e: unknown) => {
          // No namespace yet (a `mooring deploy` before any agent ran): make it, then the inventory.
          if (statusCode(e) !== 404) throw e;
          await createNamespace(this.api, this.namespace);
          await this.api.request('POST', this.path(), { body });
        });
      });
    } catch (error) {
      throw describeKubeError(error, `write the inventory of ${owner}`);
    }
  }
}
