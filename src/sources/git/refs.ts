// Choosing the commit a Git source follows from the refs a server advertises: a branch's head, a tag's commit
// (annotated tags peeled), or the newest tag in a semver range. Pure: the refs come in, a choice or a
// StalledError naming what was looked for comes out.
import semver from 'semver';
import { StalledError } from '../../errors.ts';

export interface ServerRef {
  ref: string;
  oid: string;
  /** For an annotated tag: the object it points to. */
  peeled?: string | undefined;
}

export type RefSpec = { branch: string } | { tag: string } | { semver: string } | { pullRequest: number };

export interface ResolvedRef {
  /** The full ref name on the server, e.g. `refs/heads/main`, `refs/tags/v1.2.0`. */
  ref: string;
  commit: string;
  /** For an annotated tag: the tag object (what a signed tag's signature is in). */
  tag?: string | undefined;
}

/** Tags beyond this many are not considered: a repository with more is almost certainly misconfigured. */
export const MAX_TAGS = 10_000;
const TAGS_SHOWN = 10;

export function refSpecOf(ref: {
  branch?: string | undefined;
  tag?: string | undefined;
  semver?: string | undefined;
  pullRequest?: number | undefined;
}): RefSpec {
  if (ref.branch !== undefined) return { branch: ref.branch };
  if (ref.tag !== undefined) return { tag: ref.tag };
  if (ref.semver !== undefined) return { semver: ref.semver };
  if (ref.pullRequest !== undefined) return { pullRequest: ref.pullRequest };
  return { branch: 'main' };
}

/** Where forges keep pull request `n`'s head: GitHub, Gitea and Forgejo; GitLab; Bitbucket Data Center. */
export function pullRequestRefs(n: number): string[] {
  return [`refs/pull/${n}/head`, `refs/merge-requests/${n}/head`, `refs/pull-requests/${n}/from`];
}

/** The prefix to ask the server for: exactly one branch or tag, or every tag for a range. */
export function refPrefix(spec: RefSpec): string {
  if ('branch' in spec) return `refs/heads/${spec.branch}`;
  if ('tag' in spec) return `refs/tags/${spec.tag}`;
  // Forges keep pull requests under three prefixes: each is listed.
  if ('pullRequest' in spec) return 'refs/';
  return 'refs/tags/';
}

export function describeSpec(spec: RefSpec): string {
  if ('branch' in spec) return `branch ${spec.branch}`;
  if ('tag' in spec) return `tag ${spec.tag}`;
  if ('pullRequest' in spec) return `pull request #${spec.pullRequest}`;
  return `semver range ${spec.semver}`;
}

export function selectRef(refs: readonly ServerRef[], spec: RefSpec): ResolvedRef {
  if ('semver' in spec) return newestInRange(refs, spec.semver);
  const wanted = 'pullRequest' in spec ? pullRequestRefs(spec.pullRequest) : [refPrefix(spec)];
  // The prefix also matches longer names (`main` matches `main-old`): only the exact ref counts.
  const found = refs.find((r) => wanted.includes(r.ref));
  if (!found) throw new StalledError(`${describeSpec(spec)} not found on the server`);
  return resolvedOf(found);
}

function newestInRange(refs: readonly ServerRef[], range: string): ResolvedRef {
  const byVersion = new Map<string, ServerRef>();
  const names: string[] = [];
  for (const ref of refs) {
    if (!ref.ref.startsWith('refs/tags/') || ref.ref.endsWith('^{}')) continue;
    if (names.length >= MAX_TAGS) break;
    const name = ref.ref.slice('refs/tags/'.length);
    names.push(name);
    // `v1.2.3` and `1.2.3` are the same version; loose parsing would also admit `1.2` or `=1.2.3`, which
    // people do not mean as releases.
    const version = semver.valid(name.startsWith('v') ? name.slice(1) : name);
    if (version === null) continue;
    const earlier = byVersion.get(version);
    // Two tags for one version: the choice must not depend on the order the server lists them.
    if (!earlier || ref.ref < earlier.ref) byVersion.set(version, ref);
  }
  const best = semver.maxSatisfying([...byVersion.keys()], range);
  const chosen = best === null ? undefined : byVersion.get(best);
  if (!chosen) {
    const shown = [...names].sort().slice(0, TAGS_SHOWN).join(', ');
    const more = names.length > TAGS_SHOWN ? `, … ${names.length} in all` : '';
    throw new StalledError(`no tag matches ${range} (tags seen: ${shown || 'none'}${more})`);
  }
  return resolvedOf(chosen);
}

function resolvedOf(ref: ServerRef): ResolvedRef {
  return ref.peeled ? { ref: ref.ref, commit: ref.peeled, tag: ref.oid } : { ref: ref.ref, commit: ref.oid };
}
