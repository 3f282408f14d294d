// The cluster side of `mooring diff`: each object of a dry-run deploy, read as the server holds it now and
// compared with the server's dry-run answer (the text is made by src/render/diff-text.ts, which masks Secrets).
import { diffObject, type ObjectDiff } from '../render/diff-text.ts';
import { describeObject, type KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import type { ApplyResult, ApplyTarget } from './apply.ts';
import { resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { mapLimit } from './pool.ts';

async function readWhole(api: KubeApi, result: ApplyResult): Promise<KubeObject | undefined> {
  const { object } = result.target;
  try {
    return await api.request<KubeObject>(
      'GET',
      resourcePath(result.resource, object.metadata.namespace, object.metadata.name),
    );
  } catch (error) {
    if (statusCode(error) === 404) return undefined;
    throw describeKubeError(error, `read ${describeObject(object)}`);
  }
}

/**
 * The diff of each object of a dry-run deploy (`applied`, in render order), from the dry-run answers the Applier
 * handed out (`previews`). An object the dry run found unchanged is not read again; one the deploy would delete
 * and create again (strategy recreate) has no dry-run answer to compare and is reported as such.
 */
export async function diffApplied(
  api: KubeApi,
  applied: readonly ApplyResult[],
  previews: ReadonlyMap<ApplyTarget, KubeObject>,
  concurrency = 8,
): Promise<ObjectDiff[]> {
  return mapLimit(applied, concurrency, async (result): Promise<ObjectDiff> => {
    const object = describeObject(result.target.object);
    if (result.action === 'unchanged') return { object, change: 'unchanged', text: '' };
    if (result.action === 'recreated') return { object, change: 'recreated', text: '' };
    const preview = previews.get(result.target);
    if (!preview) throw new Error(`${object}: the dry run gave no answer to compare`);
    return diffObject(object, await readWhole(api, result), preview);
  });
}
