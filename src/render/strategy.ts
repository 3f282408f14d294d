// Strategy annotations (seed 001 "Reserved annotations") parsed and checked into a per-object apply plan.
// Contradictions are errors: an object is never applied in a way its author did not ask for.
import {
  ARGO_SYNC_OPTIONS,
  argoSyncOptions,
  CACHING_IGNORE,
  STRATEGY,
  SYNC_WAVE,
  writeOnceBy,
} from './annotations.ts';
import { RenderError } from './errors.ts';
import { describeObject, fieldOrigin, groupOf, type SourcedObject } from './manifest.ts';
import { SOURCE_CAPACITY_KINDS } from './tables.ts';

/**
 * How an object is written. `apply`: server-side apply taking ownership of conflicting fields, as kubectl
 * apply's last writer wins (the default); `server-side-apply`: server-side apply that fails on conflicts;
 * `force-conflicts`: server-side apply with force; `replace`: PUT, creating when absent.
 */
export type ApplyMethod = 'apply' | 'server-side-apply' | 'force-conflicts' | 'replace';

export interface Strategy {
  method: ApplyMethod;
  /** Delete, wait until gone, create. For a versioned object only when the same version is redeployed. */
  recreate: boolean;
  useSourceCapacity: boolean;
  maxVersionHistory: number | undefined;
  /** caching.spinnaker.io/ignore: applied, but not waited on, tracked or collected. */
  ignored: boolean;
  /**
   * The sync wave (argocd.argoproj.io/sync-wave or mooring.io/sync-wave; 0 when absent): waves are applied lowest
   * first, each stable before the next, after the whole set passed its dry run.
   */
  wave: number;
  /**
   * Argo CD's `SkipDryRunOnMissingResource=true`: a custom resource whose kind the cluster does not serve yet (its
   * CRD comes from another deployment, or an operator installs it) skips the dry run and is written when its wave
   * and phase come, once the kind is served (src/kube/apply.ts).
   */
  whenServed?: true;
  /**
   * Flux's `kustomize.toolkit.fluxcd.io/ssa`: `IfNotPresent`, created when absent and then left as it is (never
   * versioned, updated or drift-corrected); `Ignore`, never written. Pruned as any object of the set.
   */
  writeOnce?: 'IfNotPresent' | 'Ignore';
}

function flag(item: SourcedObject, annotation: string, errors: RenderError[]): boolean {
  const value = item.object.metadata.annotations?.[annotation];
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  errors.push(
    new RenderError(`${annotation} must be "true" or "false", not "${value}"`, {
      origin: fieldOrigin(item, ['metadata', 'annotations', annotation]),
      object: describeObject(item.object),
    }),
  );
  return false;
}

export function parseStrategy(item: SourcedObject, errors: RenderError[]): Strategy {
  const { object } = item;
  const where = (annotation: string) => ({
    origin: fieldOrigin(item, ['metadata', 'annotations', annotation]),
    object: describeObject(object),
  });
  const annotations = object.metadata.annotations ?? {};

  const ssa = annotations[STRATEGY.serverSideApply];
  let method: ApplyMethod = 'apply';
  if (ssa === 'true') method = 'server-side-apply';
  else if (ssa === 'force-conflicts') method = 'force-conflicts';
  else if (ssa !== undefined && ssa !== 'false') {
    errors.push(
      new RenderError(
        `${STRATEGY.serverSideApply} must be "true", "false" or "force-conflicts", not "${ssa}"`,
        where(STRATEGY.serverSideApply),
      ),
    );
  }
  // Argo CD's `Replace=true` is a replace; with `Force=true` (kubectl replace --force) a delete and create.
  const argo = argoSyncOptions(annotations[ARGO_SYNC_OPTIONS]);
  const argoReplace = argo.has('Replace=true');
  const argoRecreate = argoReplace && argo.has('Force=true');
  const replace = flag(item, STRATEGY.replace, errors) || (argoReplace && !argoRecreate);
  const recreate = flag(item, STRATEGY.recreate, errors) || argoRecreate;
  const argoReplaceOnly = argoReplace && !argoRecreate;
  const replaceBy = argoReplaceOnly ? `${ARGO_SYNC_OPTIONS}: Replace=true` : STRATEGY.replace;
  const recreateBy = argoRecreate ? `${ARGO_SYNC_OPTIONS}: Force=true,Replace=true` : STRATEGY.recreate;
  if (replace && method !== 'apply') {
    errors.push(
      new RenderError(
        `${replaceBy} and ${STRATEGY.serverSideApply} cannot be used together`,
        where(argoReplaceOnly ? ARGO_SYNC_OPTIONS : STRATEGY.replace),
      ),
    );
  } else if (replace && recreate) {
    errors.push(
      new RenderError(
        `${replaceBy} and ${recreateBy} cannot be used together`,
        where(argoRecreate ? ARGO_SYNC_OPTIONS : STRATEGY.recreate),
      ),
    );
  } else if (replace) {
    method = 'replace';
  }

  const useSourceCapacity = flag(item, STRATEGY.useSourceCapacity, errors);
  if (useSourceCapacity && !SOURCE_CAPACITY_KINDS.has(`${groupOf(object.apiVersion)}/${object.kind}`)) {
    errors.push(
      new RenderError(
        `${STRATEGY.useSourceCapacity} applies to Deployment, ReplicaSet and StatefulSet only`,
        where(STRATEGY.useSourceCapacity),
      ),
    );
  }

  let maxVersionHistory: number | undefined;
  const history = annotations[STRATEGY.maxVersionHistory];
  if (history !== undefined) {
    if (/^\d{1,6}$/.test(history)) maxVersionHistory = Number(history);
    else
      errors.push(
        new RenderError(
          `${STRATEGY.maxVersionHistory} must be a non-negative integer, not "${history}"`,
          where(STRATEGY.maxVersionHistory),
        ),
      );
  }

  const ignored = flag(item, CACHING_IGNORE, errors);
  const writeOnce = writeOnceBy(annotations);
  return {
    method,
    recreate,
    useSourceCapacity,
    maxVersionHistory,
    ignored,
    wave: parseWave(item, errors),
    ...(argo.has('SkipDryRunOnMissingResource=true') ? { whenServed: true as const } : {}),
    ...(writeOnce ? { writeOnce } : {}),
  };
}

/** The object's sync wave: an integer, the same under both names when both are given. */
function parseWave(item: SourcedObject, errors: RenderError[]): number {
  const annotations = item.object.metadata.annotations ?? {};
  const given = SYNC_WAVE.filter((name) => annotations[name] !== undefined);
  let wave: number | undefined;
  for (const name of given) {
    const value = (annotations[name] ?? '').trim();
    const where = {
      origin: fieldOrigin(item, ['metadata', 'annotations', name]),
      object: describeObject(item.object),
    };
    if (!/^[-+]?\d{1,9}$/.test(value)) {
      errors.push(new RenderError(`${name} must be an integer, not "${value}"`, where));
      return 0;
    }
    if (wave !== undefined && wave !== Number(value)) {
      errors.push(new RenderError(`${SYNC_WAVE[0]} and ${SYNC_WAVE[1]} differ (${wave}, ${value})`, where));
      return 0;
    }
    wave = Number(value);
  }
  return wave ?? 0;
}
