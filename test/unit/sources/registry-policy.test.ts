import { describe, expect, it } from 'vitest';
import { classify } from '../../../src/errors.ts';
import { selectTag, type TagPolicy, TagSelectionError } from '../../../src/sources/registry/policy.ts';

// `extract` follows Go's Regexp.Expand, whose syntax happens to look like a JS template placeholder.
// biome-ignore lint/suspicious/noTemplateCurlyInString: not a template literal
const BRACED_FIRST_GROUP = '${1}';
const COSIGN = ['\\.sig$', '\\.att$', '\\.sbom$'];

interface Case {
  name: string;
  tags: string[];
  policy: TagPolicy;
  exclude?: string[];
  expected: string;
}

const semver = (range: string, prereleases = false): TagPolicy => ({ type: 'semver', range, prereleases });
const regex = (pattern: string, order: 'alphabetical' | 'numerical', extract?: string): TagPolicy =>
  extract === undefined ? { type: 'regex', pattern, order } : { type: 'regex', pattern, order, extract };

const picks: Case[] = [
  {
    name: 'semver: highest in range, with and without a v prefix',
    tags: ['1.0.0', 'v1.2.0', '1.10.0', 'v1.9.3', '2.0.0', 'latest'],
    policy: semver('^1.0.0'),
    expected: '1.10.0',
  },
  {
    name: 'semver: a v-prefixed tag can be the highest',
    tags: ['1.0.0', 'v1.4.2', '1.3.9'],
    policy: semver('>=1.0.0 <2.0.0'),
    expected: 'v1.4.2',
  },
  {
    name: 'semver: the same version under two spellings goes to the one sorting first',
    tags: ['v1.2.0', '1.2.0'],
    policy: semver('*'),
    expected: '1.2.0',
  },
  {
    name: 'semver: prereleases off skips them even when higher',
    tags: ['1.2.0', '1.3.0-rc.1', '2.0.0-alpha'],
    policy: semver('>=1.0.0'),
    expected: '1.2.0',
  },
  {
    name: 'semver: prereleases on lets them win',
    tags: ['1.2.0', '1.3.0-rc.1', '1.3.0-rc.2', '2.0.0'],
    policy: semver('^1.0.0', true),
    expected: '1.3.0-rc.2',
  },
  {
    name: 'semver: a release beats its own prerelease',
    tags: ['1.3.0-rc.2', '1.3.0'],
    policy: semver('^1.0.0', true),
    expected: '1.3.0',
  },
  {
    name: 'semver: tags that are not strict semver are ignored (1.2, 1.2.3.4, V1.0.0, sha-abc)',
    tags: ['1.2', '1.2.3.4', 'V9.0.0', 'sha-abc', '0.1.0'],
    policy: semver('*'),
    expected: '0.1.0',
  },
  {
    name: 'semver: cosign signature tags are excluded before selection',
    tags: ['1.0.0', '1.1.0', 'sha256-0123abcd.sig', 'sha256-0123abcd.att', 'sha256-0123abcd.sbom'],
    policy: semver('*'),
    exclude: COSIGN,
    expected: '1.1.0',
  },
  {
    name: 'semver: an exclude can remove what would otherwise win',
    tags: ['1.0.0', '1.1.0', '1.2.0'],
    policy: semver('*'),
    exclude: ['^1\\.2\\.'],
    expected: '1.1.0',
  },
  {
    name: 'regex: named group, numerical order (9 < 10, unlike alphabetical)',
    tags: ['main-9-abc', 'main-10-def', 'main-2-fff', 'dev-99-aaa'],
    policy: regex('^main-(?<ts>\\d+)-[a-f0-9]+$', 'numerical', '$ts'),
    expected: 'main-10-def',
  },
  {
    name: 'regex: the same with alphabetical order picks 9',
    tags: ['main-9-abc', 'main-10-def', 'main-2-fff'],
    policy: regex('^main-(?<ts>\\d+)-[a-f0-9]+$', 'alphabetical', '$ts'),
    expected: 'main-9-abc',
  },
  {
    name: 'regex: numbered group in braces',
    tags: ['build.7', 'build.12', 'build.3'],
    policy: regex('^build\\.(\\d+)$', 'numerical', BRACED_FIRST_GROUP),
    expected: 'build.12',
  },
  {
    name: 'regex: numerical order skips values that are not numbers',
    tags: ['rel-5', 'rel-x', 'rel-40', 'rel-'],
    policy: regex('^rel-(?<n>.*)$', 'numerical', '$n'),
    expected: 'rel-40',
  },
  {
    name: 'regex: without extract the whole tag is sorted',
    tags: ['2024-01-05', '2024-11-30', '2023-12-31', 'latest'],
    policy: regex('^\\d{4}-\\d{2}-\\d{2}$', 'alphabetical'),
    expected: '2024-11-30',
  },
  {
    name: 'regex: cosign tags excluded first',
    tags: ['main-1', 'main-2', 'main-3.sig'],
    policy: regex('^main-', 'alphabetical'),
    exclude: COSIGN,
    expected: 'main-2',
  },
  {
    name: 'fixed: the tag itself, without looking at the list',
    tags: [],
    policy: { type: 'fixed', tag: 'stable' },
    exclude: COSIGN,
    expected: 'stable',
  },
];

describe('selectTag picks', () => {
  it.each(picks)('$name', ({ tags, policy, exclude, expected }) => {
    expect(selectTag(tags, policy, exclude ?? [])).toBe(expected);
  });

  it('does not depend on the order the registry lists tags in', () => {
    const tags = ['v1.2.0', '1.2.0', '1.1.9', 'main-10', 'main-9'];
    for (const policy of [semver('^1.0.0'), regex('^main-(\\d+)$', 'numerical', '$1')]) {
      const forward = selectTag(tags, policy, []);
      expect(selectTag([...tags].reverse(), policy, [])).toBe(forward);
    }
  });
});

interface NoMatch {
  name: string;
  tags: string[];
  policy: TagPolicy;
  exclude?: string[];
  message: RegExp;
}

const failures: NoMatch[] = [
  {
    name: 'semver range without a match names the range and the tags seen',
    tags: ['1.0.0', '1.1.0', 'latest'],
    policy: semver('^2.0.0'),
    message:
      /no tag matches semver range "\^2\.0\.0" \(prereleases excluded\) among 3 tags; seen: 1\.0\.0, 1\.1\.0, latest$/,
  },
  {
    name: 'only prereleases in range while prereleases are off',
    tags: ['2.0.0-rc.1'],
    policy: semver('^2.0.0'),
    message: /semver range "\^2\.0\.0" \(prereleases excluded\)/,
  },
  {
    name: 'everything excluded: the count says so',
    tags: ['1.0.0.sig', '1.0.0.att'],
    policy: semver('*'),
    exclude: COSIGN,
    message: /among 0 tags \(2 excluded\)$/,
  },
  {
    name: 'a long list is cut after five tags',
    tags: ['a', 'b', 'c', 'd', 'e', 'f', 'g'],
    policy: regex('^v', 'alphabetical'),
    message: /seen: a, b, c, d, e, …$/,
  },
  {
    name: 'numerical regex where no value is a number',
    tags: ['rel-a', 'rel-b'],
    policy: regex('^rel-(?<n>.+)$', 'numerical', '$n'),
    message: /regex \/\^rel-\(\?<n>\.\+\)\$\/ \(numerical order, extract \$n\)/,
  },
  {
    name: 'extract naming a group the pattern lacks',
    tags: ['rel-1'],
    policy: regex('^rel-(?<n>\\d+)$', 'numerical', '$ts'),
    message: /extract "\$ts" refers to \$ts, which the pattern does not have/,
  },
  {
    name: 'extract with a group number past the last group',
    tags: ['rel-1'],
    policy: regex('^rel-(\\d+)$', 'numerical', '$2'),
    message: /refers to \$2/,
  },
  {
    name: 'an exclude that is not a regex',
    tags: ['1.0.0'],
    policy: semver('*'),
    exclude: ['(unclosed'],
    message: /exclude "\(unclosed" is not a valid regex/,
  },
  {
    name: 'an empty repository',
    tags: [],
    policy: semver('*'),
    message: /among 0 tags$/,
  },
];

describe('selectTag fails with a message', () => {
  it.each(failures)('$name', ({ tags, policy, exclude, message }) => {
    const result = selectTag(tags, policy, exclude ?? []);
    expect(result).toBeInstanceOf(TagSelectionError);
    expect((result as TagSelectionError).message).toMatch(message);
    // The user must change the policy or push a tag: retrying cannot help.
    expect(classify(result)).toEqual({ action: 'stop' });
  });
});
