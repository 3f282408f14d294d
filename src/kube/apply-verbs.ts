// The requests one object's write is made of, behind the Applier (apply.ts), as fluxcd/pkg's ssa keeps one verb per
// method behind one manager: server-side apply, replace (and create), their dry runs, a replace retried on a
// conflict it caused itself, the take-over of a client-side apply, a delete that waits until the object is gone,
// a read of metadata only, and the wait for a CRD to be established. Each sends the object's content through
// `send`, so a Secret's refusal never quotes its values; each failure of a write names the object's place.
import { StalledError } from '../errors.ts';
import { describeObject, type KubeObject } from '../render/manifest.ts';
import type { PlanEntry } from '../render/render.ts';
import { JsonText, type KubeApi, METADATA_OBJECT, type RequestSpec } from './api.ts';
import { writeFailure } from './apply-errors.ts';
import { onlyClientSideConflicts, type TakeOver } from './client-side-takeover.ts';
import { pause } from './deadline.ts';
import { type ResourceInfo, resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { type LiveSummary, readObject, requireIdentity, summarize } from './live-state.ts';
import { withApplyDefaults } from './normalize.ts';
import { withSecretErrors } from './secret-errors.ts';
import { applyTakingOver, takeOver } from './take-over.ts';

/** One object of a set to write, with its plan (method, strategy, origin). */
export interface ApplyTarget {
  object: KubeObject;
  plan: PlanEntry;
}

/**
 * How many times a replace that met a conflicting write is tried (each after a fresh read), and the pause before
 * each retry: doubled from the first up to the last. A rollout's controllers write a Deployment's status several
 * times within a few hundred milliseconds; retries spaced over ~2.5 s outlast such a burst, as client-go's
 * RetryOnConflict with its backoff does.
 */
const REPLACE_ATTEMPTS = 8;
const REPLACE_PAUSE_MS = { first: 20, last: 1000 };

export interface VerbOptions {
  fieldManager: string;
  /** How long a delete waits for the object to go, and a CRD to be established. */
  waitTimeoutMs: number;
  /** Called with each dry-run answer whole (see ApplyOptions.onPreview). */
  onPreview?: ((target: ApplyTarget, preview: KubeObject) => void) | undefined;
}

export class ObjectVerbs {
  private readonly api: KubeApi;
  private readonly options: VerbOptions;

  constructor(api: KubeApi, options: VerbOptions) {
    this.api = api;
    this.options = options;
  }

  read(info: ResourceInfo, obj: KubeObject): Promise<LiveSummary | undefined> {
    return readObject(this.api, info, obj);
  }

  /**
   * Every request that sends an object's content (apply, replace, create, and their dry runs, the whole-set
   * validation included) goes through here: a Secret's refusal is reduced to field paths and reasons before any
   * message is made of it, because the server's words may quote its values. The server's warnings name the
   * target's place in the sources.
   */
  private send<T>(target: ApplyTarget, method: string, path: string, spec: RequestSpec): Promise<T> {
    const { object, plan } = target;
    return withSecretErrors(object, () =>
      this.api.request<T>(method, path, { ...spec, about: { object, origin: plan.origin } }),
    );
  }

  private readonly bodies = new WeakMap<ApplyTarget, JsonText>();

  /** The apply patch of a target, serialized once for its dry run and its write. */
  private applyBody(target: ApplyTarget): JsonText {
    let body = this.bodies.get(target);
    if (!body) {
      body = new JsonText(JSON.stringify(withApplyDefaults(target.object)));
      this.bodies.set(target, body);
    }
    return body;
  }

  /**
   * `metadataOnly`: the answer is read for its identity alone (a write, or the dry run of an object that does not
   * exist yet, which nothing is compared with), so the server sends PartialObjectMetadata: less for it to
   * serialize and for mooring to parse, per object.
   */
  serverSideApply(
    info: ResourceInfo,
    target: ApplyTarget,
    dryRun: boolean,
    metadataOnly = false,
    forceConflicts = false,
  ): Promise<KubeObject> {
    const { object, plan } = target;
    return this.send<KubeObject>(
      target,
      'PATCH',
      resourcePath(info, object.metadata.namespace, object.metadata.name),
      {
        query: {
          fieldManager: this.options.fieldManager,
          // The default takes ownership of conflicting fields, as kubectl apply's last writer wins.
          force: forceConflicts || plan.strategy.method !== 'server-side-apply',
          dryRun: dryRun ? 'All' : undefined,
        },
        body: this.applyBody(target),
        contentType: 'application/apply-patch+yaml',
        ...(metadataOnly ? { accept: METADATA_OBJECT } : {}),
      },
    );
  }

  private async replace(
    info: ResourceInfo,
    target: ApplyTarget,
    live: LiveSummary | undefined,
    dryRun: boolean,
    metadataOnly = false,
  ) {
    const { object } = target;
    const query = { fieldManager: this.options.fieldManager, dryRun: dryRun ? 'All' : undefined };
    const accept = metadataOnly ? { accept: METADATA_OBJECT } : {};
    if (!live) {
      return this.send<KubeObject>(target, 'POST', resourcePath(info, object.metadata.namespace), {
        query,
        body: object,
        ...accept,
      });
    }
    const body = {
      ...object,
      metadata: { ...object.metadata, resourceVersion: live.metadata.resourceVersion },
    };
    return this.send<KubeObject>(
      target,
      'PUT',
      resourcePath(info, object.metadata.namespace, object.metadata.name),
      {
        query,
        body,
        ...accept,
      },
    );
  }

  /**
   * A replace of what is there now. Its resourceVersion is the read's, so a write that lands between the read and
   * the replace (a hand edit that drift correction races, a controller's) makes the server answer 409: the object
   * is read again and replaced again, a few times with pauses between, rather than the deploy failing on a conflict
   * it caused itself.
   */
  async replaceLatest(info: ResourceInfo, target: ApplyTarget, live: LiveSummary | undefined) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.replace(info, target, live, false, true);
      } catch (error) {
        if (statusCode(error) !== 409 || attempt >= REPLACE_ATTEMPTS) throw error;
        await pause(Math.min(REPLACE_PAUSE_MS.first * 2 ** (attempt - 1), REPLACE_PAUSE_MS.last));
        live = await this.read(info, target.object);
      }
    }
  }

  /** Dry run of one object: the summary of what the server would hold, or the reason it refuses. */
  async dryRun(
    info: ResourceInfo,
    target: ApplyTarget,
    live: LiveSummary | undefined,
    adopting = false,
  ): Promise<LiveSummary | undefined> {
    const { method, recreate } = target.plan.strategy;
    // An object to be recreated is validated by its creation; its old self may hold immutable fields.
    if (recreate && live) return undefined;
    // Only an answer compared with a live object (or shown) needs its content: a live object known from the watch
    // cache (no digest, ApplyOptions.cachedLive) is compared with nothing.
    const onPreview = this.options.onPreview;
    if (!live || (live.digest === undefined && method !== 'replace' && !adopting)) {
      const answer =
        method === 'replace'
          ? await this.replace(info, target, live, true, !onPreview)
          : await this.serverSideApply(info, target, true, !onPreview);
      onPreview?.(target, answer);
      return summarize(identity(answer, target), undefined, false);
    }
    const answer =
      method === 'replace'
        ? await this.replace(info, target, live, true)
        : await this.serverSideApply(info, target, true).catch((error: unknown) => {
            // Fields a client-side apply owns are mooring's once the write takes them over: not a conflict.
            if (
              adopting &&
              statusCode(error) === 409 &&
              onlyClientSideConflicts((error as { body?: unknown }).body)
            )
              return this.serverSideApply(info, target, true, false, true);
            throw error;
          });
    onPreview?.(target, answer);
    return summarize(answer);
  }

  /** The server-side apply of an object, taking over what a client-side apply left (take-over.ts). */
  applyTakingOver(
    info: ResourceInfo,
    target: ApplyTarget,
    adopting: boolean,
  ): Promise<{ after: KubeObject; tookOver: TakeOver | undefined }> {
    const send = <T>(method: string, path: string, spec: RequestSpec) =>
      this.send<T>(target, method, path, spec);
    return applyTakingOver(target.object, adopting, {
      takeOver: (known) =>
        this.guard(
          target,
          () => takeOver(this.api, send, info, target.object, this.options.fieldManager, known),
          'taking over the fields of a client-side kubectl apply',
        ),
      apply: () => this.guard(target, () => this.serverSideApply(info, target, false, true)),
    });
  }

  async guard<T>(target: ApplyTarget, write: () => Promise<T>, doing?: string): Promise<T> {
    try {
      return await write();
    } catch (error) {
      throw writeFailure(target, error, doing);
    }
  }

  /** The object's metadata as the server holds it now (PartialObjectMetadata), or undefined when there is none. */
  async readMetadata(info: ResourceInfo, object: KubeObject): Promise<KubeObject | undefined> {
    const path = resourcePath(info, object.metadata.namespace, object.metadata.name);
    const whole = await this.api
      .request<KubeObject>('GET', path, { accept: METADATA_OBJECT, about: { object } })
      .catch((error: unknown) => {
        if (statusCode(error) === 404) return undefined;
        throw describeKubeError(error, `read ${describeObject(object)}`);
      });
    if (whole) requireIdentity(whole, object, info.namespaced);
    return whole;
  }

  async deleteAndWait(info: ResourceInfo, object: KubeObject, live: LiveSummary): Promise<void> {
    const path = resourcePath(info, object.metadata.namespace, object.metadata.name);
    // Only the object read before (its uid): never one that took its place, nor another a path led to.
    requireIdentity(live, { ...object, kind: info.kind }, info.namespaced);
    const preconditions = live.metadata.uid ? { preconditions: { uid: live.metadata.uid } } : {};
    try {
      await this.api.request('DELETE', path, {
        body: { propagationPolicy: 'Background', ...preconditions },
        about: { object },
      });
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
      await pause(200);
    }
  }

  async waitEstablished(crds: readonly ApplyTarget[]): Promise<void> {
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
        await pause(200);
      }
    }
  }
}

/** An answer read as metadata only says PartialObjectMetadata: it is the target's own kind. */
export function identity(answer: KubeObject, target: ApplyTarget): KubeObject {
  return { ...answer, apiVersion: target.object.apiVersion, kind: target.object.kind };
}
