// Sending the take-over of a client-side apply's fields (client-side-takeover.ts says what it is): the object's
// metadata read (never a Secret's values), the JSON patch guarded by that read's resourceVersion, and on 409 a new
// read and a new patch, as kubectl's migrateToSSAIfNecessary retries. Only the Applier calls it, just before it
// applies the object, so every path that applies (sync, rollback, CLI deploy, hooks) takes over the same way.
import type { KubeObject } from '../render/manifest.ts';
import { type KubeApi, METADATA_OBJECT, type RequestSpec } from './api.ts';
import { pendingTakeOver, type TakeOver, takeOverPatch } from './client-side-takeover.ts';
import { type ResourceInfo, resourcePath } from './discovery.ts';
import { statusCode } from './errors.ts';
import { requireIdentity } from './live-state.ts';

/** As kubectl's maxPatchRetry: a controller writing status may move the resourceVersion a few times. */
const ATTEMPTS = 5;

/**
 * Gives `fieldManager` the fields the client-side managers of `wanted`'s live object own and drops the
 * last-applied-configuration annotation; undefined when there was nothing to take over (or no object).
 * `known`: the object's metadata as just answered (by an apply), used for the first attempt instead of a read.
 * `send` is the Applier's, so a refusal about a Secret is reduced as every other one is.
 */
export async function takeOver(
  api: KubeApi,
  send: <T>(method: string, path: string, spec: RequestSpec) => Promise<T>,
  info: ResourceInfo,
  wanted: KubeObject,
  fieldManager: string,
  known?: KubeObject,
): Promise<TakeOver | undefined> {
  const path = resourcePath(info, wanted.metadata.namespace, wanted.metadata.name);
  let live = known;
  for (let attempt = 1; ; attempt++) {
    if (!live) {
      live = await api
        .request<KubeObject>('GET', path, { accept: METADATA_OBJECT })
        .catch((error: unknown) => {
          if (statusCode(error) === 404) return undefined;
          throw error;
        });
      if (!live) return undefined;
    }
    requireIdentity(live, { ...wanted, kind: info.kind }, info.namespaced);
    const change = takeOverPatch(live, wanted, fieldManager);
    if (!change) return undefined;
    try {
      await send('PATCH', path, {
        query: { fieldManager },
        body: change.patch,
        contentType: 'application/json-patch+json',
        accept: METADATA_OBJECT,
      });
      return { managers: change.managers, lastApplied: change.lastApplied };
    } catch (error) {
      // 409: the object changed since it was read; anything else is the caller's to report.
      if (statusCode(error) !== 409 || attempt >= ATTEMPTS) throw error;
      live = undefined;
    }
  }
}

/**
 * An object's server-side apply with what a client-side apply left taken over first (`adopting`: as found when
 * it was read before the dry run). An object whose managed fields were empty gets `before-first-apply` from this
 * very apply: that is taken over from the apply's answer and the object applied again, so one deploy adopts it
 * whole (kubectl checks after its apply the same way).
 */
export async function applyTakingOver(
  wanted: KubeObject,
  adopting: boolean,
  steps: {
    takeOver: (known?: KubeObject) => Promise<TakeOver | undefined>;
    apply: () => Promise<KubeObject>;
  },
): Promise<{ after: KubeObject; tookOver: TakeOver | undefined }> {
  let tookOver = adopting ? await steps.takeOver() : undefined;
  let after = await steps.apply();
  if (pendingTakeOver(after, wanted)) {
    const more = await steps.takeOver(after);
    if (more) {
      tookOver = {
        managers: [...new Set([...(tookOver?.managers ?? []), ...more.managers])],
        lastApplied: (tookOver?.lastApplied ?? false) || more.lastApplied,
      };
      after = await steps.apply();
    }
  }
  return { after, tookOver };
}
