// Deleting an object, or every version of a versioned one (seed 001: "Delete: can this resource be deleted?").
// `NAME` names either the object itself or, for a versioned object, its artifact: all its versions go, or the one
// asked for with a version.
import { NotFoundError } from '../errors.ts';
import { ARTIFACT } from '../render/annotations.ts';
import { versionSuffix } from '../render/versioning.ts';
import { type KubeApi, METADATA_LIST } from './api.ts';
import { type Discovery, type ResourceInfo, resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { listAll } from './list-pages.ts';
import { requireOperation } from './operations.ts';
import { settleLimit } from './pool.ts';

/** Versions of an artifact deleted at once. */
const DELETES_AT_ONCE = 8;

export interface DeleteRequest {
  /** kubectl's spelling: `deployment`, `cm`, `configmap.v1`… */
  resource: string;
  name: string;
  namespace: string;
  /** Only this version of a versioned object (`v001` or 1). */
  version?: number;
}

export interface DeleteResult {
  info: ResourceInfo;
  deleted: string[];
  /** Deletes refused or failed while others were made: each with its error (empty when none was made). */
  failed: { name: string; error: Error }[];
}

/**
 * Deletes the object, or the versions of the artifact, `request` names. When every delete fails, the first failure
 * in name order is thrown (nothing was deleted); when some were made, the others come back in `failed`, so that the
 * caller says what was deleted as well as what was not. A version listed and then gone before its delete counts as
 * deleted.
 */
export async function deleteObjects(
  api: KubeApi,
  discovery: Discovery,
  request: DeleteRequest,
): Promise<DeleteResult> {
  const info = await discovery.find(request.resource);
  requireOperation(info.kind, 'delete');
  const ns = info.namespaced ? request.namespace : undefined;
  const names: string[] = [];
  let listed = false;
  if (request.version !== undefined) {
    names.push(`${request.name}${versionSuffix(request.version)}`);
  } else {
    const items = await listAll(api, resourcePath(info, ns), { accept: METADATA_LIST }).catch(
      (error: unknown) => {
        throw describeKubeError(error, `list ${info.plural}`);
      },
    );
    if (items.some((o) => o.metadata.name === request.name)) names.push(request.name);
    else {
      listed = true;
      names.push(
        ...items
          .filter((o) => o.metadata.annotations?.[ARTIFACT.name] === request.name)
          .map((o) => o.metadata.name)
          .sort(),
      );
    }
  }
  if (names.length === 0) {
    throw new NotFoundError(
      `${info.kind} ${ns ? `${ns}/` : ''}${request.name} not found (neither an object nor a versioned artifact)`,
    );
  }
  // A few at once (an artifact of a hundred versions was a hundred deletes one after another); every delete is
  // tried.
  const settled = await settleLimit(names, DELETES_AT_ONCE, async (name) => {
    try {
      await api.request('DELETE', resourcePath(info, ns, name), {
        body: { propagationPolicy: 'Background' },
      });
    } catch (error) {
      if (statusCode(error) === 404) {
        // A version of the list gone since (another delete, history collection): what was asked for is done.
        if (listed) return name;
        throw new NotFoundError(`${info.kind} ${ns ? `${ns}/` : ''}${name} not found`);
      }
      throw describeKubeError(error, `delete ${info.kind} ${name}`);
    }
    return name;
  });
  const deleted: string[] = [];
  const failed: { name: string; error: Error }[] = [];
  for (const [index, outcome] of settled.entries()) {
    if (outcome.status === 'fulfilled') deleted.push(outcome.value);
    else {
      const error = outcome.reason instanceof Error ? outcome.reason : new Error(String(outcome.reason));
      failed.push({ name: names[index] as string, error });
    }
  }
  if (deleted.length === 0 && failed[0]) throw failed[0].error;
  return { info, deleted, failed };
}
