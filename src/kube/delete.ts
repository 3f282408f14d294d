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

export async function deleteObjects(
  api: KubeApi,
  discovery: Discovery,
  request: DeleteRequest,
): Promise<{ info: ResourceInfo; deleted: string[] }> {
  const info = await discovery.find(request.resource);
  requireOperation(info.kind, 'delete');
  const ns = info.namespaced ? request.namespace : undefined;
  const names: string[] = [];
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
  // tried, then the first failure in name order is the command's.
  const settled = await settleLimit(names, DELETES_AT_ONCE, async (name) => {
    try {
      await api.request('DELETE', resourcePath(info, ns, name), {
        body: { propagationPolicy: 'Background' },
      });
    } catch (error) {
      if (statusCode(error) === 404) {
        throw new NotFoundError(`${info.kind} ${ns ? `${ns}/` : ''}${name} not found`);
      }
      throw describeKubeError(error, `delete ${info.kind} ${name}`);
    }
    return name;
  });
  const failed = settled.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  const deleted = settled.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  return { info, deleted };
}
