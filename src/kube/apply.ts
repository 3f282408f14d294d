// Applying a rendered set: ordered in phases (namespaces, CRDs, access, configuration, services, workloads, the
// rest), validated whole by a server-side dry run before the first write (all or nothing), and written with the
// method each object's plan asks for. Objects whose content would not change are not written.
import { StalledError, TransientError } from '../errors.ts';
import { describeObject, describeOrigin, type KubeObject } from '../render/manifest.ts';
import type { PlanEntry } from '../render/render.ts';
import type { KubeApi } from './api.ts';
import { type Discovery, type ResourceInfo, resourcePath } from './discovery.ts';
import { describeKubeError, serverMessage, statusCode } from './errors.ts';
import { withApplyDefaults } from './normalize.ts';
import { mapLimit } from './pool.ts';

export interface ApplyTarget {
  object: KubeObject;
  plan: PlanEntry;
}

export type ApplyAction = 'created' | 'configured' | 'unchanged' | 'replaced' | 'recreated';

export interface ApplyResult {
  target: ApplyTarget;
  action: ApplyAction;
  /** The object as the server holds it after the write (or as it was, when unchanged). */
  live: KubeObject | undefined;
  resource: ResourceInfo;
}

export interface ApplyOptions {
  fieldManager: string;
  concurrency: number;
  /** Validate only: the server-side dry run of the whole set, and the actions it would take. */
  dryRun?: boolean;
  onResult?: (result: ApplyResult) => void;
  /** How long a recreate waits for the old object to go, and a CRD to be established. */
  waitTimeoutMs?: number;
}

const PHASES: readonly (readonly string[])[] = [
  ['Namespace'],
  ['CustomResourceDefinition'],
  [
    'ServiceAccount',
    'Role',
    'ClusterRole',
    'RoleBinding',
    'ClusterRoleBinding',
    'PriorityClass',
    'StorageClass',
    'LimitRange',
    'ResourceQuota',
    'PodSecurityPolicy',
    'NetworkPolicy',
  ],
  ['ConfigMap', 'Secret', 'PersistentVolume', 'PersistentVolumeClaim'],
  ['Service'],
  ['Pod', 'ReplicationController', 'ReplicaSet', 'Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob'],
];

/** From this many objects of one kind in one namespace, their live state is read with one LIST. */
const LIST_THRESHOLD = 5;

export function phaseOf(kind: string): number {
  const index = PHASES.findIndex((kinds) => kinds.includes(kind));
  return index === -1 ? PHASES.length : index;
}

/** Rejected before anything was written: every object the server refused, with its place and the server's words. */
export class ApplyRejectedError extends StalledError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(
      `the API server rejected ${problems.length === 1 ? 'an object' : `${problems.length} objects`}; nothing was applied:\n${problems.map((p) => `  ${p}`).join('\n')}`,
    );
    this.problems = problems;
  }
}

function place(target: ApplyTarget): string {
  return `${describeOrigin(target.plan.origin)}: ${describeObject(target.object)}`;
}

/** The server's message, with what to do about the failures people meet most. */
function explain(error: unknown): string {
  const message = serverMessage(error);
  const code = statusCode(error);
  if (
    code === 422 &&
    /field is immutable|may not change|Forbidden: updates to .* are forbidden/i.test(message)
  ) {
    return `${message} (an immutable field changed: annotate the object strategy.spinnaker.io/recreate: "true" to delete and create it)`;
  }
  if (code === 409 && /conflict/i.test(message)) {
    return `${message} (other field managers own these fields: set strategy.spinnaker.io/server-side-apply: force-conflicts to take them over)`;
  }
  return code ? `${code} ${message}` : message;
}

/** What is compared to decide "unchanged": the object without bookkeeping the server changes on every write. */
function comparable(obj: KubeObject | undefined): string {
  if (!obj) return '';
  const { metadata, ...rest } = obj;
  const { managedFields: _m, resourceVersion: _r, ...meta } = metadata as Record<string, unknown>;
  return JSON.stringify({ ...rest, metadata: meta });
}

export class Applier {
  private readonly api: KubeApi;
  private readonly discovery: Discovery;
  private readonly options: Required<Omit<ApplyOptions, 'onResult' | 'dryRun'>> & ApplyOptions;

  constructor(api: KubeApi, discovery: Discovery, options: ApplyOptions) {
    this.api = api;
    this.discovery = discovery;
    this.options = { waitTimeoutMs: 120_000, ...options };
  }

  private async read(info: ResourceInfo, obj: KubeObject): Promise<KubeObject | undefined> {
    try {
      return await this.api.request<KubeObject>(
        'GET',
        resourcePath(info, obj.metadata.namespace, obj.metadata.name),
      );
    } catch (error) {
      if (statusCode(error) === 404) return undefined;
      throw describeKubeError(error, `read ${describeObject(obj)}`);
    }
  }

  private serverSideApply(info: ResourceInfo, target: ApplyTarget, dryRun: boolean): Promise<KubeObject> {
    const { object, plan } = target;
    return this.api.request<KubeObject>(
      'PATCH',
      resourcePath(info, object.metadata.namespace, object.metadata.name),
      {
        query: {
          fieldManager: this.options.fieldManager,
          // The default takes ownership of conflicting fields, as kubectl apply's last writer wins.
          force: plan.strategy.method !== 'server-side-apply',
          dryRun: dryRun ? 'All' : undefined,
        },
        body: withApplyDefaults(object),
        contentType: 'application/apply-patch+yaml',
      },
    );
  }

  private async replace(
    info: ResourceInfo,
    target: ApplyTarget,
    live: KubeObject | undefined,
    dryRun: boolean,
  ) {
    const { object } = target;
    const query = { fieldManager: this.options.fieldManager, dryRun: dryRun ? 'All' : undefined };
    if (!live) {
      return this.api.request<KubeObject>('POST', resourcePath(info, object.metadata.namespace), {
        query,
        body: object,
      });
    }
    const body = {
      ...object,
      metadata: { ...object.metadata, resourceVersion: live.metadata.resourceVersion },
    };
    return this.api.request<KubeObject>(
      'PUT',
      resourcePath(info, object.metadata.namespace, object.metadata.name),
      {
        query,
        body,
      },
    );
  }

  /** Dry run of one object: what the server would hold, or the reason it refuses. */
  private async dryRun(
    info: ResourceInfo,
    target: ApplyTarget,
    live: KubeObject | undefined,
  ): Promise<KubeObject | undefined> {
    const { method, recreate } = target.plan.strategy;
    // An object to be recreated is validated by its creation; its old self may hold immutable fields.
    if (recreate && live) return undefined;
    if (method === 'replace') return this.replace(info, target, live, true);
    return this.serverSideApply(info, target, true);
  }

  async apply(targets: readonly ApplyTarget[]): Promise<ApplyResult[]> {
    // Objects whose namespace or CRD arrives in this same set cannot be dry-run before it exists: they are
    // validated when their phase comes.
    const newNamespaces = new Set(
      targets.filter((t) => t.object.kind === 'Namespace').map((t) => t.object.metadata.name),
    );
    const newCrds = new Set(
      targets
        .filter((t) => t.object.kind === 'CustomResourceDefinition')
        .map((t) => {
          const spec = t.object.spec as { group?: string; names?: { kind?: string } } | undefined;
          return `${spec?.group}/${spec?.names?.kind}`;
        }),
    );
    const deferred = new Set<ApplyTarget>();
    const resources = new Map<ApplyTarget, ResourceInfo>();
    const lives = new Map<ApplyTarget, KubeObject | undefined>();
    const dryRuns = new Map<ApplyTarget, KubeObject | undefined>();
    const problems: string[] = [];

    const ready: ApplyTarget[] = [];
    await mapLimit(targets, this.options.concurrency, async (target) => {
      const { object } = target;
      const group = object.apiVersion.includes('/') ? object.apiVersion.split('/')[0] : '';
      if (newCrds.has(`${group}/${object.kind}`)) {
        deferred.add(target);
        return;
      }
      let info: ResourceInfo;
      try {
        info = await this.discovery.resource(object.apiVersion, object.kind);
      } catch (error) {
        problems.push(`${place(target)}: ${(error as Error).message}`);
        return;
      }
      resources.set(target, info);
      const ns = object.metadata.namespace;
      if (info.namespaced && ns && newNamespaces.has(ns) && !(await this.namespaceExists(ns))) {
        deferred.add(target);
        return;
      }
      ready.push(target);
    });
    try {
      for (const [target, live] of await this.readLive(ready, resources)) lives.set(target, live);
    } catch (error) {
      throw describeKubeError(error, 'read the live objects');
    }
    await mapLimit(ready, this.options.concurrency, async (target) => {
      try {
        dryRuns.set(
          target,
          await this.dryRun(resources.get(target) as ResourceInfo, target, lives.get(target)),
        );
      } catch (error) {
        problems.push(`${place(target)}: ${explain(error)}`);
      }
    });
    if (problems.length > 0) throw new ApplyRejectedError(problems.sort());

    const results: ApplyResult[] = [];
    const byPhase = new Map<number, ApplyTarget[]>();
    for (const t of targets)
      byPhase.set(phaseOf(t.object.kind), [...(byPhase.get(phaseOf(t.object.kind)) ?? []), t]);
    for (const phase of [...byPhase.keys()].sort((a, b) => a - b)) {
      const batch = byPhase.get(phase) ?? [];
      const written = await mapLimit(batch, this.options.concurrency, async (target) => {
        let info = resources.get(target);
        let live = lives.get(target);
        let preview = dryRuns.get(target);
        if (deferred.has(target)) {
          try {
            info ??= await this.discovery.resource(target.object.apiVersion, target.object.kind);
            live = await this.read(info, target.object);
            preview = await this.dryRun(info, target, live);
          } catch (error) {
            throw new StalledError(`${place(target)}: ${explain(error)}`, { cause: error });
          }
        }
        if (!info) throw new Error(`no resource for ${place(target)}`);
        const result = await this.write(info, target, live, preview);
        this.options.onResult?.(result);
        return result;
      });
      results.push(...written);
      if (batch.some((t) => t.object.kind === 'CustomResourceDefinition') && !this.options.dryRun) {
        await this.waitEstablished(batch.filter((t) => t.object.kind === 'CustomResourceDefinition'));
        this.discovery.invalidate();
      }
    }
    // Results in the order of the render set, whatever order the phases wrote them in.
    return targets
      .map((t) => results.find((r) => r.target === t))
      .filter((r): r is ApplyResult => r !== undefined);
  }

  /**
   * The live state of every target: one LIST per kind and namespace where several objects share them (one
   * request instead of hundreds), a GET otherwise.
   */
  private async readLive(
    targets: readonly ApplyTarget[],
    resources: ReadonlyMap<ApplyTarget, ResourceInfo>,
  ): Promise<Map<ApplyTarget, KubeObject | undefined>> {
    const groups = new Map<string, ApplyTarget[]>();
    for (const t of targets) {
      const info = resources.get(t) as ResourceInfo;
      const key = `${info.apiVersion}|${info.plural}|${info.namespaced ? (t.object.metadata.namespace ?? '') : ''}`;
      groups.set(key, [...(groups.get(key) ?? []), t]);
    }
    const live = new Map<ApplyTarget, KubeObject | undefined>();
    await mapLimit([...groups.values()], this.options.concurrency, async (members) => {
      const first = members[0] as ApplyTarget;
      const info = resources.get(first) as ResourceInfo;
      if (members.length < LIST_THRESHOLD) {
        for (const t of members) live.set(t, await this.read(info, t.object));
        return;
      }
      const list = await this.api.request<{ items: KubeObject[] | null }>(
        'GET',
        resourcePath(info, first.object.metadata.namespace),
      );
      const byName = new Map((list.items ?? []).map((o) => [o.metadata.name, o]));
      for (const t of members) {
        const found = byName.get(t.object.metadata.name);
        // Items of a list carry no apiVersion and kind; the comparison with a dry run needs them.
        live.set(t, found ? { ...found, apiVersion: t.object.apiVersion, kind: t.object.kind } : undefined);
      }
    });
    return live;
  }

  private async namespaceExists(name: string): Promise<boolean> {
    try {
      await this.api.request('GET', `/api/v1/namespaces/${encodeURIComponent(name)}`);
      return true;
    } catch (error) {
      if (statusCode(error) === 404) return false;
      throw describeKubeError(error, `read Namespace ${name}`);
    }
  }

  private async write(
    info: ResourceInfo,
    target: ApplyTarget,
    live: KubeObject | undefined,
    preview: KubeObject | undefined,
  ): Promise<ApplyResult> {
    const { strategy } = target.plan;
    const done = (action: ApplyAction, after: KubeObject | undefined): ApplyResult => ({
      target,
      action,
      live: after,
      resource: info,
    });
    // Seed 001: recreate redeploys what exists (for a versioned object, only the same version).
    if (strategy.recreate && live) {
      if (this.options.dryRun) return done('recreated', live);
      await this.deleteAndWait(info, target.object);
      return done('recreated', await this.guard(target, () => this.serverSideApply(info, target, false)));
    }
    if (live && preview && comparable(preview) === comparable(live)) return done('unchanged', live);
    if (this.options.dryRun)
      return done(live ? (strategy.method === 'replace' ? 'replaced' : 'configured') : 'created', preview);
    if (strategy.method === 'replace') {
      const after = await this.guard(target, () => this.replace(info, target, live, false));
      return done(live ? 'replaced' : 'created', after);
    }
    const after = await this.guard(target, () => this.serverSideApply(info, target, false));
    return done(live ? 'configured' : 'created', after);
  }

  private async guard<T>(target: ApplyTarget, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      const failure = describeKubeError(error, 'apply');
      const message = `${place(target)}: ${explain(error)}`;
      throw failure instanceof StalledError
        ? new StalledError(message, { cause: error })
        : new TransientError(message, { cause: error });
    }
  }

  private async deleteAndWait(info: ResourceInfo, object: KubeObject): Promise<void> {
    const path = resourcePath(info, object.metadata.namespace, object.metadata.name);
    try {
      await this.api.request('DELETE', path, { body: { propagationPolicy: 'Background' } });
    } catch (error) {
      if (statusCode(error) !== 404) throw describeKubeError(error, `delete ${describeObject(object)}`);
    }
    const deadline = Date.now() + this.options.waitTimeoutMs;
    while (await this.read(info, object)) {
      if (Date.now() > deadline) {
        throw new StalledError(
          `${describeObject(object)}: still being deleted after ${this.options.waitTimeoutMs} ms`,
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async waitEstablished(crds: readonly ApplyTarget[]): Promise<void> {
    const deadline = Date.now() + this.options.waitTimeoutMs;
    for (const crd of crds) {
      for (;;) {
        const obj = await this.api.request<KubeObject>(
          'GET',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${encodeURIComponent(crd.object.metadata.name)}`,
        );
        const conditions =
          (obj.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
        if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) break;
        if (Date.now() > deadline)
          throw new StalledError(`${describeObject(crd.object)}: not established in time`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
}
