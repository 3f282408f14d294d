// REST mapping: which resource (plural, namespaced) serves an apiVersion and kind. Answers are cached per
// group-version; an unknown kind refreshes that group-version once (a CRD applied a moment ago), and only then is
// it an error, which names the release that removed the version and what replaced it (removed-apis.ts).
import { StalledError } from '../errors.ts';
import type { KubeApi } from './api.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { eachListPage } from './list-pages.ts';
import { minorOf, unservedMessage } from './removed-apis.ts';

/** The cluster serves no such kind in that apiVersion (now: after one refresh of its group-version). */
export class UnservedKindError extends StalledError {
  readonly apiVersion: string;
  readonly objectKind: string;
  constructor(apiVersion: string, objectKind: string, message: string) {
    super(message);
    this.apiVersion = apiVersion;
    this.objectKind = objectKind;
  }
}

export interface ResourceInfo {
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

interface ApiResourceList {
  resources: {
    name: string;
    kind: string;
    namespaced: boolean;
    singularName?: string;
    shortNames?: string[];
  }[];
}

interface ApiGroupList {
  groups: {
    name: string;
    preferredVersion: { groupVersion: string };
    versions: { groupVersion: string }[];
  }[];
}

/**
 * How long a kind found not served is taken as not served without asking again: the objects of a set whose kind is
 * not served yet are checked together, and each would otherwise list its group-version twice.
 */
const RELIST_MS = 500;
/** Kinds found missing held at most (Discovery.noteMissing). */
const MISSED_MAX = 1024;

/** How long an answer of `capabilities()` is given again before the server is asked anew. */
export const CAPABILITIES_MAX_AGE_MS = 30_000;
/** How long one group-version's listing is tried again for `capabilities()` before it is done without. */
const GROUP_RETRY_MS = 5_000;

/**
 * One reading of the server given to every caller while it is younger than `maxAgeMs` and of the same discovery
 * generation (no `invalidate()` since); a failed reading is never given again.
 */
class SharedReading<T> {
  private last: { at: number; generation: number; answer: Promise<T> } | undefined;
  private readonly maxAgeMs: number;

  constructor(maxAgeMs: number) {
    this.maxAgeMs = maxAgeMs;
  }

  get(generation: number, read: () => Promise<T>, fresh = false): Promise<T> {
    const last = this.last;
    if (!fresh && last && last.generation === generation && Date.now() - last.at < this.maxAgeMs)
      return last.answer;
    const answer = read();
    const entry = { at: Date.now(), generation, answer };
    this.last = entry;
    answer.catch(() => {
      if (this.last === entry) this.last = undefined;
    });
    return answer;
  }
}

/** The cluster as `.Capabilities` sees it: its version and each group-version it serves with its kinds. */
export interface Capabilities {
  kubeVersion: string;
  apiVersions: { groupVersion: string; kinds: string[] }[];
  /**
   * Group-versions the cluster lists whose discovery failed with a server error (an aggregated API whose server is
   * down): `kept`, given with the kinds last read; otherwise left out. Said in the render's warnings.
   */
  unavailable?: UnavailableApi[];
}

/** A group-version whose discovery failed with a server error, and why, when its APIService says. */
export interface UnavailableApi {
  groupVersion: string;
  status: number;
  kept: boolean;
  /** `APIService v1beta1.metrics.k8s.io: ServiceNotFound: ...`: the aggregator's Available=False condition. */
  reason?: string;
}

interface ApiServiceList {
  items?: {
    metadata?: { name?: string };
    spec?: { group?: string; version?: string; service?: unknown };
    status?: { conditions?: { type?: string; status?: string; reason?: string; message?: string }[] };
  }[];
}

/**
 * Aggregated discovery (apidiscovery.k8s.io, Kubernetes 1.26 and later): every group-version with its resources in
 * the answers of `/api` and `/apis`, as kubectl reads it. A server without it answers with its plain lists (the last
 * media type), and each group-version is then listed on its own.
 */
const AGGREGATED_DISCOVERY = [
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
  'application/json',
].join(',');

interface GroupDiscoveryList {
  kind?: string;
  items?: {
    metadata?: { name?: string };
    versions?: {
      version?: string;
      freshness?: string;
      resources?: { resource?: string; scope?: string; responseKind?: { kind?: string } }[];
    }[];
  }[];
}

/**
 * The group-versions of an aggregated discovery answer, in its order (a group's preferred version first), each with
 * its kinds; undefined for one the aggregator could not read lately (`freshness: Stale`, an aggregated API whose
 * server is down), which is then listed on its own as before. Entries not shaped as the API defines are passed
 * over: a CRD's or an aggregated server's names are their authors'.
 */
function discoveredKinds(
  list: GroupDiscoveryList,
  into: Map<string, Map<string, ResourceInfo> | undefined>,
): void {
  for (const item of Array.isArray(list.items) ? list.items : []) {
    const group = item?.metadata?.name ?? '';
    if (typeof group !== 'string') continue;
    for (const entry of Array.isArray(item.versions) ? item.versions : []) {
      const version = entry?.version;
      if (typeof version !== 'string' || version === '' || version.includes('/')) continue;
      const apiVersion = group === '' ? version : `${group}/${version}`;
      if (into.has(apiVersion)) continue;
      if (entry.freshness !== undefined && entry.freshness !== 'Current') {
        into.set(apiVersion, undefined);
        continue;
      }
      const kinds = new Map<string, ResourceInfo>();
      for (const r of Array.isArray(entry.resources) ? entry.resources : []) {
        const kind = r?.responseKind?.kind;
        if (typeof r?.resource !== 'string' || r.resource.includes('/') || typeof kind !== 'string') continue;
        kinds.set(kind, { apiVersion, kind, plural: r.resource, namespaced: r.scope === 'Namespaced' });
      }
      into.set(apiVersion, kinds);
    }
  }
}

/** A cluster registers tens of APIServices; more pages than this is not a cluster's list. */
const API_SERVICE_PAGES = 4;

export class Discovery {
  private readonly api: KubeApi;
  private readonly cache = new Map<string, Promise<Map<string, ResourceInfo>>>();
  private version: Promise<string | undefined> | undefined;
  /** Bumped by `invalidate()`: a capabilities answer read before it is not given again. */
  private generation = 0;
  private readonly capabilitiesReading: SharedReading<Capabilities>;
  /** `/apis`, shared as capabilities are (`groups()`). */
  private readonly groupsReading: SharedReading<ApiGroupList>;
  /**
   * When each kind not served was last found missing (`apiVersion|kind`): asked again within RELIST_MS, the answer is
   * the same without a request (invalidate() forgets them).
   */
  private readonly missed = new Map<string, number>();
  /** Each group-version's kinds as last listed for capabilities: given while its listing fails (5xx). */
  private readonly knownKinds = new Map<string, string[]>();

  constructor(api: KubeApi, options: { capabilitiesMaxAgeMs?: number } = {}) {
    this.api = api;
    const maxAgeMs = options.capabilitiesMaxAgeMs ?? CAPABILITIES_MAX_AGE_MS;
    this.capabilitiesReading = new SharedReading(maxAgeMs);
    this.groupsReading = new SharedReading(maxAgeMs);
  }

  private load(apiVersion: string, spec: { retryForMs?: number } = {}): Promise<Map<string, ResourceInfo>> {
    let entry = this.cache.get(apiVersion);
    if (!entry) {
      const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      entry = this.api.request<ApiResourceList>('GET', path, spec).then(
        (list) => {
          const kinds = new Map<string, ResourceInfo>();
          for (const r of list.resources) {
            if (r.name.includes('/')) continue; // subresources
            kinds.set(r.kind, { apiVersion, kind: r.kind, plural: r.name, namespaced: r.namespaced });
          }
          return kinds;
        },
        (error: unknown) => {
          this.cache.delete(apiVersion);
          if (statusCode(error) === 404) return new Map<string, ResourceInfo>();
          throw describeKubeError(error, `discover ${apiVersion}`);
        },
      );
      this.cache.set(apiVersion, entry);
    }
    return entry;
  }

  /**
   * Notes `key` found missing now. The kinds a commit names are its author's choice: entries past RELIST_MS say
   * nothing any more and are swept once MISSED_MAX are held, so that commits of ever new kinds cannot grow the map.
   */
  private noteMissing(key: string): void {
    const now = Date.now();
    if (this.missed.size >= MISSED_MAX) {
      for (const [k, at] of this.missed) if (now - at >= RELIST_MS) this.missed.delete(k);
      if (this.missed.size >= MISSED_MAX) this.missed.clear();
    }
    this.missed.set(key, now);
  }

  async resource(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const key = `${apiVersion}|${kind}`;
    const missed = this.missed.get(key);
    let info: ResourceInfo | undefined;
    if (missed === undefined || Date.now() - missed >= RELIST_MS) {
      const listed = this.load(apiVersion);
      info = (await listed).get(kind);
      if (!info) {
        // Listed again (a CRD applied since), unless another caller has done so since this one's listing: many
        // objects of a kind not served yet ask at once, and share one listing.
        if (this.cache.get(apiVersion) === listed) this.cache.delete(apiVersion);
        info = (await this.load(apiVersion)).get(kind);
      }
    }
    if (!info) {
      if (missed === undefined || Date.now() - missed >= RELIST_MS) this.noteMissing(key);
      const clusterMinor = minorOf(await this.gitVersion());
      throw new UnservedKindError(apiVersion, kind, unservedMessage(apiVersion, kind, { clusterMinor }));
    }
    this.missed.delete(key);
    return info;
  }

  /**
   * The server's `gitVersion` (`v1.37.2`), read once; undefined when it cannot be read (a message about a removed
   * version then does not compare releases).
   */
  gitVersion(): Promise<string | undefined> {
    this.version ??= this.api.request<{ gitVersion?: string }>('GET', '/version').then(
      (answer) => (typeof answer.gitVersion === 'string' ? answer.gitVersion : undefined),
      () => {
        this.version = undefined;
        return undefined;
      },
    );
    return this.version;
  }

  /**
   * The resource a user means by `deployment`, `deployments`, `deploy`, `Deployment` or `deployment.apps`, as
   * kubectl resolves it: core group first, then every group's preferred version, then the other versions.
   */
  async find(text: string): Promise<ResourceInfo> {
    const [name = '', ...groupParts] = text.toLowerCase().split('.');
    const group = groupParts.join('.');
    const groups = await this.api.request<ApiGroupList>('GET', '/apis').catch((error: unknown) => {
      throw describeKubeError(error, 'discover API groups');
    });
    const versions = [
      ...(group === '' ? ['v1'] : []),
      // Preferred versions first; a kind served only by another version (CronJob in batch/v1beta1) after.
      ...groups.groups
        .filter((g) => group === '' || g.name === group)
        .map((g) => g.preferredVersion.groupVersion),
      ...groups.groups
        .filter((g) => group === '' || g.name === group)
        .flatMap((g) =>
          g.versions.map((v) => v.groupVersion).filter((v) => v !== g.preferredVersion.groupVersion),
        ),
    ];
    for (const apiVersion of versions) {
      const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      const list = await this.api.request<ApiResourceList>('GET', path).catch(() => ({ resources: [] }));
      for (const r of list.resources) {
        if (r.name.includes('/')) continue;
        const names = [r.name, r.kind.toLowerCase(), r.singularName ?? '', ...(r.shortNames ?? [])];
        if (names.includes(name))
          return { apiVersion, kind: r.kind, plural: r.name, namespaced: r.namespaced };
      }
    }
    throw new StalledError(`the server does not have a resource type "${text}"`);
  }

  /**
   * The resource serving `kind` of `group` ('' for the core group) in the group's preferred version; undefined
   * when the cluster serves no such kind (its CRD not installed). Any other failure to read discovery is thrown:
   * a caller that lists the kind to learn who refers to a version must not take an unread answer for "none".
   */
  async served(group: string, kind: string): Promise<ResourceInfo | undefined> {
    let apiVersion = 'v1';
    if (group !== '') {
      const preferredOf = (list: ApiGroupList) =>
        list.groups.find((g) => g.name === group)?.preferredVersion.groupVersion;
      // The group list of a short while ago, read again when it lacks the group (a CRD installed since).
      const preferred = preferredOf(await this.groups()) ?? preferredOf(await this.groups(true));
      if (preferred === undefined) return undefined;
      apiVersion = preferred;
    }
    const known = (await this.load(apiVersion)).get(kind);
    if (known) return known;
    // Read again once: a CRD applied since the group-version was cached.
    this.cache.delete(apiVersion);
    return (await this.load(apiVersion)).get(kind);
  }

  /**
   * What `helm template` needs to see the cluster as `helm install` would (`.Capabilities`): the server's version
   * and every group-version it serves, with each kind (`apps/v1`, `apps/v1/Deployment`), as Argo CD passes them.
   * Three requests where the server aggregates discovery (1.26 and later), else every group-version listed. Read
   * afresh (every group-version's kinds read again) when the last answer is older than `capabilitiesMaxAgeMs` or
   * `invalidate()` was called since (mooring applied CRDs): a chart that renders its ServiceMonitor only where the
   * cluster serves the kind sees CRDs installed after the process started, by mooring or by anyone. Renders close
   * together share one reading; a failed reading is never given again.
   */
  capabilities(): Promise<Capabilities> {
    return this.capabilitiesReading.get(this.generation, () => this.readCapabilities());
  }

  /**
   * The API groups (`/apis`), the reading of less than `capabilitiesMaxAgeMs` ago given again unless `fresh` or
   * `invalidate()` was called since.
   */
  private groups(fresh = false): Promise<ApiGroupList> {
    const read = () =>
      this.api.request<ApiGroupList>('GET', '/apis').catch((error: unknown) => {
        throw describeKubeError(error, 'discover API groups');
      });
    return this.groupsReading.get(this.generation, read, fresh);
  }

  private async readCapabilities(): Promise<Capabilities> {
    const discover = (path: string, what: string) =>
      this.api
        .request<GroupDiscoveryList & Partial<ApiGroupList>>('GET', path, { accept: AGGREGATED_DISCOVERY })
        .catch((error: unknown) => {
          throw describeKubeError(error, what);
        });
    const [version, core, groups] = await Promise.all([
      this.api.request<{ gitVersion?: string }>('GET', '/version').catch((error: unknown) => {
        throw describeKubeError(error, 'read the server version');
      }),
      discover('/api', 'discover the core API'),
      discover('/apis', 'discover API groups'),
    ]);
    // Aggregated: three requests in all, every kind of every group-version read at once. Otherwise (an answer in
    // the plain form, a group-version marked stale, the core group missing from it) each group-version is listed
    // again (a kind added to a served group-version is not in /apis), a few at a time.
    const discovered = new Map<string, Map<string, ResourceInfo> | undefined>();
    const aggregated = (list: GroupDiscoveryList) => list.kind === 'APIGroupDiscoveryList';
    if (aggregated(core)) discoveredKinds(core, discovered);
    if (!discovered.has('v1')) discovered.set('v1', undefined);
    if (aggregated(groups)) discoveredKinds(groups, discovered);
    else {
      if (!Array.isArray(groups.groups))
        throw new StalledError('discover API groups: the server answered /apis with no list of groups');
      for (const g of groups.groups)
        for (const v of g.versions)
          if (!discovered.has(v.groupVersion)) discovered.set(v.groupVersion, undefined);
    }
    const groupVersions = [...discovered.keys()];
    for (const groupVersion of groupVersions) {
      this.cache.delete(groupVersion);
      const kinds = discovered.get(groupVersion);
      if (kinds) this.cache.set(groupVersion, Promise.resolve(kinds));
    }
    const apiVersions: ({ groupVersion: string; kinds: string[] } | undefined)[] = new Array(
      groupVersions.length,
    );
    const unavailable: UnavailableApi[] = [];
    let down: Promise<ReadonlyMap<string, string>> | undefined;
    /** Group-versions done without at once, with what their APIService says. */
    const reasons = new Map<string, string>();
    let next = 0;
    const reader = async (): Promise<void> => {
      while (next < groupVersions.length) {
        const index = next++;
        const groupVersion = groupVersions[index] as string;
        try {
          let listed: Map<string, ResourceInfo>;
          try {
            listed = await this.load(groupVersion, { retryForMs: 0 });
          } catch (error) {
            // A failure is tried again for a while (a blip, an API server restarting: a connection reset, a 503),
            // unless it is a server error and the aggregator already says the group-version's server is
            // unavailable (its APIService Available=False: helm and kubectl do without it at once, and so does this).
            if (isServerError(error)) {
              down ??= this.unavailableApiServices();
              const reason = (await down).get(groupVersion);
              if (reason !== undefined) {
                reasons.set(groupVersion, reason);
                throw error;
              }
            }
            listed = await this.load(groupVersion, { retryForMs: GROUP_RETRY_MS });
          }
          const kinds = [...listed.keys()].sort();
          this.knownKinds.set(groupVersion, kinds);
          apiVersions[index] = { groupVersion, kinds };
        } catch (error) {
          // An aggregated API whose server is down (metrics.k8s.io while metrics-server restarts: 503) does not
          // hold up every chart: its kinds as last read, or, never read, it is left out, as helm leaves out a
          // group whose discovery failed. Any other failure (the API server itself) fails the reading.
          if (!isServerError(error)) throw error;
          const status = statusCode(error) ?? statusCode((error as { cause?: unknown }).cause) ?? 0;
          const known = this.knownKinds.get(groupVersion);
          if (known) apiVersions[index] = { groupVersion, kinds: known };
          const reason = reasons.get(groupVersion);
          unavailable.push({
            groupVersion,
            status,
            kept: known !== undefined,
            ...(reason !== undefined ? { reason } : {}),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, groupVersions.length) }, reader));
    // `v1.20.2`: helm wants a plain semantic version, without a build suffix some distributions add.
    const kubeVersion = /^v?\d+\.\d+\.\d+/.exec(version.gitVersion ?? '')?.[0] ?? '';
    return {
      kubeVersion,
      apiVersions: apiVersions.filter((v) => v !== undefined),
      ...(unavailable.length > 0
        ? { unavailable: unavailable.sort((a, b) => (a.groupVersion < b.groupVersion ? -1 : 1)) }
        : {}),
    };
  }

  /**
   * The aggregated group-versions the aggregator reports unavailable (APIService `Available=False`), each with its
   * reason and message; empty when the APIServices cannot be read (a role without them).
   */
  private async unavailableApiServices(): Promise<ReadonlyMap<string, string>> {
    const down = new Map<string, string>();
    try {
      await eachListPage<NonNullable<ApiServiceList['items']>[number]>(
        this.api,
        '/apis/apiregistration.k8s.io/v1/apiservices',
        { maxPages: API_SERVICE_PAGES, pageSize: 250, retryForMs: GROUP_RETRY_MS },
        (items) => {
          for (const item of items) {
            const { group, version, service } = item.spec ?? {};
            if (!group || !version || !service) continue; // served by the API server itself
            const available = item.status?.conditions?.find((c) => c.type === 'Available');
            if (available?.status !== 'False') continue;
            const why = [available.reason, available.message].filter(Boolean).join(': ');
            down.set(
              `${group}/${version}`,
              `APIService ${item.metadata?.name ?? `${version}.${group}`}: ${why || 'not available'}`,
            );
          }
        },
      );
    } catch {
      return new Map();
    }
    return down;
  }

  /**
   * One resource per namespaced kind the cluster serves, for a look at everything in a namespace: a kind served at
   * several versions once (at the version its group lists first, the preferred one); the group-versions whose
   * server is unavailable are left out (their objects cannot be listed).
   */
  async namespacedKinds(): Promise<ResourceInfo[]> {
    const { apiVersions, unavailable = [] } = await this.capabilities();
    const down = new Set(unavailable.map((u) => u.groupVersion));
    const seen = new Set<string>();
    const kinds: ResourceInfo[] = [];
    for (const { groupVersion } of apiVersions) {
      if (down.has(groupVersion)) continue;
      const group = groupVersion.includes('/') ? groupVersion.slice(0, groupVersion.indexOf('/')) : '';
      for (const info of (await this.load(groupVersion)).values()) {
        const key = `${group}/${info.kind}`;
        if (!info.namespaced || seen.has(key)) continue;
        seen.add(key);
        kinds.push(info);
      }
    }
    return kinds;
  }

  invalidate(apiVersion?: string): void {
    this.generation++;
    this.missed.clear();
    if (apiVersion) this.cache.delete(apiVersion);
    else this.cache.clear();
  }
}

/** The URL path of a resource collection or of one object. */
export function resourcePath(info: ResourceInfo, namespace: string | undefined, name?: string): string {
  const base = info.apiVersion.includes('/') ? `/apis/${info.apiVersion}` : `/api/${info.apiVersion}`;
  const ns = info.namespaced ? `/namespaces/${encodeURIComponent(namespace ?? 'default')}` : '';
  return `${base}${ns}/${info.plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
}

/** A server error (5xx) of a discovery request, as described or as sent. */
function isServerError(error: unknown): boolean {
  const status = statusCode(error) ?? statusCode((error as { cause?: unknown }).cause) ?? 0;
  return status >= 500;
}
