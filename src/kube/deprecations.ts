// What the API server says of the kinds of a set, without writing anything: `mooring render` makes no dry run, so
// no answer about each object carries the server's warnings. The server warns of a deprecated version on every
// request to it, so one metadata-only read of one item of each kind's collection (per namespace, where a CLI user
// may read) hears it, and the warning is noted for every object of that kind with its place in the sources.
import { describeObject, type SourcedObject } from '../render/manifest.ts';
import { type KubeApi, METADATA_LIST } from './api.ts';
import { type Discovery, resourcePath } from './discovery.ts';
import { mapLimit } from './pool.ts';
import { currentWarnings, WarningLog, withWarnings } from './warnings.ts';

export async function hearKindWarnings(
  api: KubeApi,
  discovery: Discovery,
  objects: readonly SourcedObject[],
  concurrency = 8,
): Promise<void> {
  const log = currentWarnings();
  if (!log) return;
  const groups = new Map<string, SourcedObject[]>();
  for (const sourced of objects) {
    const { apiVersion, kind, metadata } = sourced.object;
    const key = `${apiVersion}|${kind}|${metadata.namespace ?? ''}`;
    const group = groups.get(key);
    if (group) group.push(sourced);
    else groups.set(key, [sourced]);
  }
  await mapLimit([...groups.values()], concurrency, async (group) => {
    const first = group[0] as SourcedObject;
    // A kind the cluster does not serve is for the render's own checks to name; a refused read warns of nothing.
    const info = await discovery.resource(first.object.apiVersion, first.object.kind).catch(() => undefined);
    if (!info) return;
    const path = resourcePath(info, info.namespaced ? first.object.metadata.namespace : undefined);
    const heard = new WarningLog();
    await withWarnings(heard, () =>
      api.request('GET', path, { query: { limit: 1 }, accept: METADATA_LIST, maxBytes: 1024 * 1024 }),
    ).catch(() => undefined);
    const texts = heard.list().map((w) => w.text);
    if (texts.length === 0) return;
    for (const { object, origin } of group)
      log.add(texts, `GET ${path} (${describeObject(object)})`, { object, origin });
  });
}
