// The check every path that reads or writes a set makes before its first request about the set's objects (render
// online, deploy, diff, the agent's sync): an object whose apiVersion Kubernetes removed (removed-apis.ts) and the
// cluster does not serve is named with its file and line, the release that removed it and what replaced it, as
// pluto and kube-no-trouble do. Only listed versions are asked about, and only through discovery (cached per
// group-version, shared with apply); a listed version the cluster still serves passes.
import { naturalOrder, problemLines, StalledError } from '../errors.ts';
import { describeObject, describeOrigin, groupOf, type SourcedObject } from '../render/manifest.ts';
import { type Discovery, UnservedKindError } from './discovery.ts';
import { isRemovedApi, minorOf, unservedMessage } from './removed-apis.ts';

/** Objects of API versions the cluster does not serve, refused before any request about them. */
export class RemovedApiError extends StalledError {
  readonly problems: readonly string[];
  /** The first object and its replacement, for a commit status's one line. */
  readonly headline: string;
  constructor(problems: readonly string[]) {
    const count = problems.length === 1 ? 'an object' : `${problems.length} objects`;
    super(`the cluster does not serve the API version of ${count}:\n${problemLines(problems)}`);
    this.problems = problems;
    this.headline = `${problems[0] ?? ''}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}`;
  }
}

/** Throws RemovedApiError naming every object of a removed apiVersion that the cluster does not serve. */
export async function assertServed(discovery: Discovery, objects: readonly SourcedObject[]): Promise<void> {
  // A CRD of the set may serve any group it declares: its kinds are not the removed built-in ones.
  const declared = new Set(
    objects.flatMap(({ object }) => {
      const spec =
        object.kind === 'CustomResourceDefinition' ? (object.spec as { group?: unknown }) : undefined;
      return typeof spec?.group === 'string' ? [spec.group] : [];
    }),
  );
  const listed = objects.filter(
    ({ object }) => isRemovedApi(object.apiVersion, object.kind) && !declared.has(groupOf(object.apiVersion)),
  );
  if (listed.length === 0) return;
  const unserved = new Set<string>();
  for (const key of new Set(listed.map(({ object }) => `${object.apiVersion}|${object.kind}`))) {
    const [apiVersion = '', kind = ''] = key.split('|');
    try {
      await discovery.resource(apiVersion, kind);
    } catch (error) {
      if (!(error instanceof UnservedKindError)) throw error;
      unserved.add(key);
    }
  }
  if (unserved.size === 0) return;
  const clusterMinor = minorOf(await discovery.gitVersion());
  const problems = listed
    .filter(({ object }) => unserved.has(`${object.apiVersion}|${object.kind}`))
    .map(({ object, origin }) => {
      const name = describeObject(object).slice(object.kind.length + 1);
      const why = unservedMessage(object.apiVersion, object.kind, { name, clusterMinor });
      return `${describeOrigin(origin)}: ${why}`;
    });
  throw new RemovedApiError(problems.sort(naturalOrder));
}
