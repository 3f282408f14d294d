// Choosing the chart version to deploy, by the chart source's policy: a fixed version, the highest in a semver
// range, or the highest of all. Pure: versions in, a version or an error naming the policy and what it saw.
import semver from 'semver';
import type { ChartSource } from '../../config/schema.ts';
import { StalledError } from '../../errors.ts';

export type ChartPolicy = ChartSource['policy'];

const SEEN_IN_MESSAGE = 5;

export function describeChartPolicy(policy: ChartPolicy): string {
  switch (policy.type) {
    case 'fixed':
      return `version ${policy.version}`;
    case 'semver':
      return `semver range ${JSON.stringify(policy.range)}${policy.prereleases ? ' (prereleases included)' : ''}`;
    case 'latest':
      return `the latest version${policy.prereleases ? ' (prereleases included)' : ''}`;
  }
}

/** The version the policy picks among `versions`, or an error for the chart named `what`. */
export function selectVersion(versions: readonly string[], policy: ChartPolicy, what: string): string {
  if (policy.type === 'fixed') {
    if (versions.includes(policy.version)) return policy.version;
    throw new StalledError(`${what} has no version ${policy.version}${seen(versions)}`);
  }
  const range = policy.type === 'semver' ? policy.range : '*';
  const options = { includePrerelease: policy.prereleases };
  let best: { raw: string; version: semver.SemVer } | undefined;
  for (const raw of versions) {
    const version = semver.parse(raw);
    if (version === null) continue;
    if (!policy.prereleases && version.prerelease.length > 0) continue;
    if (!semver.satisfies(version, range, options)) continue;
    const order = best === undefined ? 1 : semver.compare(version, best.version);
    if (best === undefined || order > 0 || (order === 0 && raw < best.raw)) best = { raw, version };
  }
  if (best) return best.raw;
  throw new StalledError(
    `no version of ${what} matches ${describeChartPolicy(policy)} among ${versions.length}${seen(versions)}`,
  );
}

function seen(versions: readonly string[]): string {
  if (versions.length === 0) return '';
  const sorted = [...versions].sort((a, b) => {
    const va = semver.parse(a);
    const vb = semver.parse(b);
    return va && vb ? semver.rcompare(va, vb) : a < b ? -1 : 1;
  });
  const more = versions.length > SEEN_IN_MESSAGE ? ', …' : '';
  return `; seen: ${sorted.slice(0, SEEN_IN_MESSAGE).join(', ')}${more}`;
}
