import { describe, expect, it } from 'vitest';
import { folderSelection, globExpression } from '../../../src/sources/git/folder-glob.ts';

describe('folder globs of a Git-directories deployment set', () => {
  it.each([
    ['apps/*', 'apps/web', true],
    ['apps/*', 'apps/web/api', false],
    ['apps/*', 'apps', false],
    ['apps/**', 'apps/web/api', true],
    ['**/deploy', 'team/web/deploy', true],
    ['**/deploy', 'deploy', true],
    ['apps/w?b', 'apps/web', true],
    ['apps/w?b', 'apps/weeb', false],
    // Everything but the wildcards is itself: a dot, brackets or a plus never act as a pattern.
    ['apps/a.b', 'apps/axb', false],
    ['apps/a+', 'apps/aa', false],
    ['apps/[ab]', 'apps/a', false],
    ['apps/[ab]', 'apps/[ab]', true],
  ])('%s matches %s: %s', (glob, folder, expected) => {
    expect(globExpression(glob).test(folder)).toBe(expected);
  });

  it('looks into folders only as deep as an include may reach, and never into an excluded one', () => {
    const shallow = folderSelection(['apps/*'], ['apps/legacy']);
    expect(shallow.mayContain('apps')).toBe(true);
    expect(shallow.mayContain('apps/web')).toBe(false);
    expect(shallow.matches('apps/web')).toBe(true);
    expect(shallow.matches('apps/legacy')).toBe(false);
    const deep = folderSelection(['teams/**/deploy'], ['teams/old']);
    expect(deep.mayContain('teams/a/b/c')).toBe(true);
    expect(deep.mayContain('teams/old')).toBe(false);
  });
});
