// Waiting for stability: the objects a deploy wrote (a wave, a phase of hooks, the whole set) are watched through
// the cluster cache until all are stable, one fails, or the deploy's deadline passes (src/stability/waiter.ts).
import type { ApplyResult } from '../../kube/apply.ts';
import { ClusterCache } from '../../kube/cache.ts';
import { readVolumeBindingModes } from '../../kube/storage-classes.ts';
import { describeObject, type KubeObject } from '../../render/manifest.ts';
import { type ClusterFacts, judgedByMetadata, ruleKey, stabilityOf } from '../../stability/rules.ts';
import type { Stability } from '../../stability/verdict.ts';
import { type WaitResult, waitForStability } from '../../stability/waiter.ts';
import type { DeployRun } from './context.ts';

/**
 * What the rules need of the cluster for these objects (ClusterFacts): the StorageClasses' binding modes once a
 * claim is waited on, read once per deploy.
 */
async function factsFor(run: DeployRun, results: readonly ApplyResult[]): Promise<ClusterFacts | undefined> {
  if (run.facts === undefined && results.some((r) => ruleKey(r.target.object) === '/PersistentVolumeClaim'))
    run.facts = readVolumeBindingModes(run.api, run.request.signal).then((volumeBindingModes) =>
      volumeBindingModes ? { volumeBindingModes } : {},
    );
  return run.facts;
}

/** Waits until the objects of these results are stable (or one fails, or the deploy's deadline passes). */
export async function waitFor(
  run: DeployRun,
  results: readonly ApplyResult[],
  rule?: (object: KubeObject, now: Date) => Stability,
): Promise<WaitResult> {
  const { request, deps, api, health } = run;
  const facts = await factsFor(run, results);
  const cache = deps.cache ?? new ClusterCache(api);
  // The copies last seen, to renew the deploy's record of what it wrote once the wait ends stable.
  const record = run.record?.of;
  const seen = new Map<ApplyResult, KubeObject>();
  // Stability is judged on the object as apply left it or later, never on an older cached copy.
  const watched = results
    // Not waited on: what caching.spinnaker.io/ignore says, and what was left unwritten and does not exist.
    .filter((r) => !r.target.plan.strategy.ignored && !(r.leftBy !== undefined && r.live === undefined))
    .map((r) => {
      const { namespace, name } = r.target.object.metadata;
      const uid = r.live?.metadata.uid;
      const generation = r.live?.metadata.generation;
      const fresh = {
        uid: typeof uid === 'string' ? uid : undefined,
        generation: typeof generation === 'number' ? generation : undefined,
      };
      const metadataOnly = judgedByMetadata(r.target.object);
      return {
        name: describeObject(r.target.object),
        watch: (onObject: (o: KubeObject | undefined, note?: string) => void, signal: AbortSignal) =>
          cache.subscribe(
            r.resource,
            namespace,
            name,
            record
              ? (o, note) => {
                  if (o) seen.set(r, o);
                  else seen.delete(r);
                  onObject(o, note);
                }
              : onObject,
            signal,
            { fresh, metadataOnly },
          ).done,
      };
    });
  try {
    const result = await waitForStability(watched, {
      // What is left of the deploy's time (a wave waited on before spent some of it).
      timeoutMs: request.timeoutMs > 0 ? Math.max(1, run.started + request.timeoutMs - Date.now()) : 0,
      signal: request.signal,
      warnings: run.warningEvents,
      ...(rule
        ? { rule }
        : health || facts
          ? { rule: (o: KubeObject, now: Date) => stabilityOf(o, now, health, facts) }
          : {}),
      onProgress: (v) =>
        deps.onEvent?.({
          type: 'progress',
          object: v.name,
          state: v.stability.state,
          message: v.stability.message,
        }),
    });
    if (record && result.outcome === 'stable')
      for (const [r, copy] of seen) record.renew(r.target.object, copy);
    return result;
  } finally {
    if (!deps.cache) cache.close();
  }
}
