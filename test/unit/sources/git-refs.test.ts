import { describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { refPrefix, type ServerRef, selectRef } from '../../../src/sources/git/refs.ts';

const sha = (n: number) => n.toString(16).padStart(40, '0');
const tag = (name: string, n: number, peeled?: number): ServerRef => ({
  ref: `refs/tags/${name}`,
  oid: sha(n),
  ...(peeled === undefined ? {} : { peeled: sha(peeled) }),
});

const tags: ServerRef[] = [
  tag('v1.0.0', 1),
  tag('1.2.0', 2, 20), // annotated: the tag object 2 points at commit 20
  tag('v1.3.0-rc.1', 3),
  tag('v2.0.0-beta.1', 4),
  tag('latest', 5),
  tag('release-7', 6),
  tag('1.4', 7),
];

describe('selecting a ref', () => {
  it('takes the exact branch, not one that shares its prefix', () => {
    const refs = [
      { ref: 'refs/heads/main-old', oid: sha(1) },
      { ref: 'refs/heads/main', oid: sha(2) },
    ];
    expect(selectRef(refs, { branch: 'main' })).toEqual({ ref: 'refs/heads/main', commit: sha(2) });
    expect(() => selectRef(refs, { branch: 'dev' })).toThrow(/branch dev not found/);
    expect(refPrefix({ branch: 'main' })).toBe('refs/heads/main');
  });

  it('peels an annotated tag to its commit, and keeps the tag object', () => {
    expect(selectRef(tags, { tag: '1.2.0' })).toEqual({
      ref: 'refs/tags/1.2.0',
      commit: sha(20),
      tag: tags.find((t) => t.ref === 'refs/tags/1.2.0')?.oid,
    });
    expect(selectRef(tags, { tag: 'latest' })).toEqual({ ref: 'refs/tags/latest', commit: sha(5) });
    expect(() => selectRef(tags, { tag: 'v9' })).toThrow(StalledError);
  });

  const ranges: [string, string][] = [
    ['^1.0.0', 'refs/tags/1.2.0'], // the prerelease 1.3.0-rc.1 is left out
    ['1.0.0', 'refs/tags/v1.0.0'],
    ['>=1.3.0-rc.0 <2.0.0', 'refs/tags/v1.3.0-rc.1'], // a range naming a prerelease admits it
    ['*', 'refs/tags/1.2.0'],
  ];
  for (const [range, expected] of ranges) {
    it(`takes the newest tag in ${range}`, () => {
      expect(selectRef(tags, { semver: range }).ref).toBe(expected);
    });
  }

  it('says which tags it saw when none matches', () => {
    expect(() => selectRef(tags, { semver: '>=2.0.0' })).toThrow(
      'no tag matches >=2.0.0 (tags seen: 1.2.0, 1.4, latest, release-7, v1.0.0, v1.3.0-rc.1, v2.0.0-beta.1)',
    );
    expect(() => selectRef([], { semver: '*' })).toThrow('no tag matches * (tags seen: none)');
  });

  it('prefers one tag deterministically when two name the same version', () => {
    const twins = [tag('v3.0.0', 8), tag('3.0.0', 9)];
    expect(selectRef(twins, { semver: '^3' }).ref).toBe('refs/tags/3.0.0');
    expect(selectRef([...twins].reverse(), { semver: '^3' }).ref).toBe('refs/tags/3.0.0');
  });
});
