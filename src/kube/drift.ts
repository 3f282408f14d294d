// Drift: what was changed by hand in the live objects of a deployment, found by server-side dry runs and named
// field by field (for the objects whose managed fields cannot tell, drift-check.ts). Two kinds are told apart:
// - fields the manifest sets and the live object holds otherwise (`kubectl scale`, `kubectl edit` of a value the
//   manifest gives): the dry run of the apply differs from the live object; an apply puts them back;
// - fields the manifest does not set and someone added (`kubectl set env`): a server-side apply keeps fields that
//   another manager owns, so the apply's dry run does not show them; the dry run of a replace by the manifest does.
//   Putting them back needs a replace of that object.
// Only field names are kept (Secret values never are); metadata and status are not compared.

import { reconcileDisabled } from '../render/annotations.ts';
import { changedFields } from '../render/changed-fields.ts';
import type { KubeObject } from '../render/manifest.ts';
import type { PlanEntry } from '../render/render.ts';
import type { KubeApi } from './api.ts';
import { type Discovery, resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { withApplyDefaults } from './normalize.ts';
import { mapLimit } from './pool.ts';
import { withSecretErrors } from './secret-errors.ts';

export interface DriftFinding {
  /** `Deployment shop/web`. */
  object: string;
  /** Fields the manifest sets that hold other values (or `(deleted)`: the object is gone). */
  fields: string[];
  /** Fields the manifest does not set that were added or changed by hand. */
  added: string[];
  /** The field managers that wrote them, when the object's managed fields say (ownership-drift.ts). */
  by?: string[];
}

export interface DriftOptions {
  fieldManager: string;
  concurrency: number;
  /** Called with each object checked that holds no drift, as it was read. */
  onClean?: (index: number, live: KubeObject) => void;
}

/** The Pod count of a workload whose manifest does not set it belongs to an autoscaler, not to drift. */
function unmanaged(object: KubeObject, path: string): boolean {
  const spec = object.spec as Record<string, unknown> | undefined;
  return path === 'spec.replicas' && (spec === undefined || spec.replicas === undefined);
}

export async function detectDrift(
  api: KubeApi,
  discovery: Discovery,
  objects: readonly KubeObject[],
  plan: readonly PlanEntry[],
  options: DriftOptions,
): Promise<DriftFinding[]> {
  const findings: (DriftFinding | undefined)[] = new Array(objects.length);
  await mapLimit([...objects.keys()], options.concurrency, async (i) => {
    const object = objects[i] as KubeObject;
    const entry = plan[i];
    if (entry?.strategy.ignored) return;
    const info = await discovery.resource(object.apiVersion, object.kind);
    const path = resourcePath(info, object.metadata.namespace, object.metadata.name);
    const name = entry?.object ?? `${object.kind} ${object.metadata.name}`;
    let live: KubeObject;
    try {
      live = await withSecretErrors(object, () => api.request<KubeObject>('GET', path));
    } catch (error) {
      if (statusCode(error) === 404) {
        findings[i] = { object: name, fields: ['(deleted)'], added: [] };
        return;
      }
      throw describeKubeError(error, `read ${name}`);
    }
    // Flux's reconcile disabled on it (by hand, during an incident): what it holds is left to whoever changed it.
    if (reconcileDisabled(live.metadata.annotations)) return;
    const query = { fieldManager: options.fieldManager, dryRun: 'All' };
    const applied = await withSecretErrors(object, () =>
      api.request<KubeObject>('PATCH', path, {
        query: { ...query, force: true },
        body: withApplyDefaults(object),
        contentType: 'application/apply-patch+yaml',
      }),
    ).catch((error: unknown) => {
      throw describeKubeError(error, `dry-run apply ${name}`);
    });
    const fields = changedFields(live as never, applied as never).filter((p) => !unmanaged(object, p));
    // A replace by the manifest alone: what it removes, someone else added. An object whose replace the server
    // refuses (immutable fields it fills in itself) cannot be judged this way and is left to the apply.
    const replaced = await withSecretErrors(object, () =>
      api.request<KubeObject>('PUT', path, {
        query,
        body: { ...object, metadata: { ...object.metadata, resourceVersion: live.metadata.resourceVersion } },
      }),
    ).catch(() => undefined);
    const known = new Set(fields);
    const added = replaced
      ? changedFields(live as never, replaced as never).filter(
          (p) =>
            !known.has(p) &&
            !unmanaged(object, p) &&
            !(object.kind === 'ServiceAccount' && p.startsWith('secrets')),
        )
      : [];
    if (fields.length > 0 || added.length > 0) findings[i] = { object: name, fields, added };
    else options.onClean?.(i, live);
  });
  return findings.filter((f): f is DriftFinding => f !== undefined);
}

/**
 * `Deployment shop/web: spec.replicas; added by hand: spec.template.spec.containers[name=web].env[name=DEBUG];
 * written by kubectl, kubectl-edit`.
 */
export function describeFinding(f: DriftFinding): string {
  const parts = [
    ...(f.fields.length ? [f.fields.join(', ')] : []),
    ...(f.added.length ? [`added by hand: ${f.added.join(', ')}`] : []),
    ...(f.by?.length ? [`written by ${f.by.join(', ')}`] : []),
  ];
  return `${f.object}: ${parts.join('; ')}`;
}
