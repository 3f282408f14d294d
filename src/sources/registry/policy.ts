// Choosing the tag to deploy from a repository's tag list, by the source's policy: the highest semver in a
// range, or the highest value a regex extracts (Flux's ImagePolicy semantics). Pure: tags in, a tag or an
// error out. A policy that matches nothing is an error value naming the policy and a few tags it saw, so the
// commit status tells the user what to fix.

import semver from 'semver';
import { byCodeUnit } from '../../arrays.ts';
import type { RegistrySource } from '../../config/schema.ts';
import { StalledError } from '../../errors.ts';

export type TagPolicy = RegistrySource['policy'];

/** The policy cannot pick a tag: nothing matches, or the policy itself is unusable. */
export class TagSelectionError extends StalledError {}

const SEEN_IN_MESSAGE = 5;

/**
 * The tag the policy picks. Excludes apply first. A fixed policy returns its tag without looking at the list
 * (and excludes do not apply to it: the user named the tag). Ties (`v1.2.0` and `1.2.0`) go to the tag that
 * sorts first, so the choice does not depend on the registry's order.
 */
export function selectTag(
  tags: readonly string[],
  policy: TagPolicy,
  exclude: readonly string[],
): string | TagSelectionError {
  if (policy.type === 'fixed') return policy.tag;
  const excludes: RegExp[] = [];
  for (const pattern of exclude) {
    const regex = compile(pattern);
    if (regex === undefined)
      return new TagSelectionError(`exclude ${JSON.stringify(pattern)} is not a valid regex`);
    excludes.push(regex);
  }
  const kept = tags.filter((tag) => !excludes.some((regex) => regex.test(tag)));
  const chosen = policy.type === 'semver' ? bySemver(kept, policy) : byRegex(kept, policy);
  if (chosen !== undefined) return chosen;
  const seen = kept.slice(0, SEEN_IN_MESSAGE).join(', ');
  const more = kept.length > SEEN_IN_MESSAGE ? ', …' : '';
  const excluded = tags.length - kept.length;
  return new TagSelectionError(
    `no tag matches ${describePolicy(policy)} among ${kept.length} tags` +
      (excluded > 0 ? ` (${excluded} excluded)` : '') +
      (kept.length > 0 ? `; seen: ${seen}${more}` : ''),
  );
}

export function describePolicy(policy: TagPolicy): string {
  switch (policy.type) {
    case 'fixed':
      return `tag ${policy.tag}`;
    case 'semver':
      return `semver range ${JSON.stringify(policy.range)} (prereleases ${policy.prereleases ? 'included' : 'excluded'})`;
    case 'regex': {
      const extract = policy.extract === undefined ? '' : `, extract ${policy.extract}`;
      return `regex /${policy.pattern}/ (${policy.order} order${extract})`;
    }
  }
}

type SemverPolicy = Extract<TagPolicy, { type: 'semver' }>;
type RegexPolicy = Extract<TagPolicy, { type: 'regex' }>;

function bySemver(tags: readonly string[], policy: SemverPolicy): string | undefined {
  const options = { includePrerelease: policy.prereleases };
  let best: { tag: string; version: semver.SemVer } | undefined;
  for (const tag of tags) {
    // Strict parsing accepts an optional leading `v` and nothing else that is not semver (no `1.2`).
    const version = semver.parse(tag);
    if (version === null) continue;
    if (!policy.prereleases && version.prerelease.length > 0) continue;
    if (!semver.satisfies(version, policy.range, options)) continue;
    const order = best === undefined ? 1 : semver.compare(version, best.version);
    if (best === undefined || order > 0 || (order === 0 && tag < best.tag)) best = { tag, version };
  }
  return best?.tag;
}

function byRegex(tags: readonly string[], policy: RegexPolicy): string | TagSelectionError | undefined {
  const regex = compile(policy.pattern);
  if (regex === undefined) return new TagSelectionError(`pattern /${policy.pattern}/ is not a valid regex`);
  const problem = policy.extract === undefined ? undefined : extractProblem(regex, policy.extract);
  if (problem !== undefined) return new TagSelectionError(problem);
  let best: { tag: string; text: string; number: number } | undefined;
  for (const tag of tags) {
    const match = regex.exec(tag);
    if (match === null) continue;
    const text = policy.extract === undefined ? tag : expand(policy.extract, match);
    let number = 0;
    if (policy.order === 'numerical') {
      // Values that are not numbers cannot be ordered numerically; they are skipped, not sorted last.
      if (!/^[+-]?\d+(\.\d+)?$/.test(text)) continue;
      number = Number(text);
    }
    const order = best === undefined ? 1 : compareValues(policy.order, { text, number }, best);
    if (best === undefined || order > 0 || (order === 0 && tag < best.tag)) best = { tag, text, number };
  }
  return best?.tag;
}

function compareValues(
  order: RegexPolicy['order'],
  a: { text: string; number: number },
  b: { text: string; number: number },
): number {
  if (order === 'numerical') return Math.sign(a.number - b.number);
  // Code-unit order, not localeCompare: the same tags must give the same choice on every machine.
  return byCodeUnit(a.text, b.text);
}

// `$name`, `${name}` and `$1` as Go's Regexp.Expand reads them (Flux's `extract`); `$$` is a dollar.
const REFERENCE = /\$(?:\$|\{(\w+)\}|(\w+))/g;

function expand(template: string, match: RegExpExecArray): string {
  return template.replace(REFERENCE, (_all, braced: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare;
    if (name === undefined) return '$';
    return (/^\d+$/.test(name) ? match[Number(name)] : match.groups?.[name]) ?? '';
  });
}

/** A reference to a group the pattern does not have is a config mistake, not an empty value. */
function extractProblem(regex: RegExp, template: string): string | undefined {
  // Matching the empty alternative reveals every group of the pattern (all undefined).
  const probe = new RegExp(`(?:${regex.source})|`).exec('');
  const groupCount = (probe?.length ?? 1) - 1;
  const names = new Set(Object.keys(probe?.groups ?? {}));
  for (const [, braced, bare] of template.matchAll(REFERENCE)) {
    const name = braced ?? bare;
    if (name === undefined) continue;
    const known = /^\d+$/.test(name) ? Number(name) <= groupCount : names.has(name);
    if (!known)
      return `extract ${JSON.stringify(template)} refers to $${name}, which the pattern does not have`;
  }
  return undefined;
}

function compile(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern);
  } catch {
    return undefined;
  }
}
