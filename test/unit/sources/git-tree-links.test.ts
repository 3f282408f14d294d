// A commit's symlinks resolved on the tree's paths for a checkout: each within the repository written as what it
// leads to (a link in the middle of a path followed, `..` taken after it, as the kernel does in a clone); outside,
// nowhere and loops left out with why; a folder written under every link to it; links that multiply a tree bounded.
import { describe, expect, it } from 'vitest';
import type { TreeFile } from '../../../src/sources/git/tree.ts';
import { MAX_LINK_HOPS, resolveTreeLinks, TreeTooLargeError } from '../../../src/sources/git/tree-links.ts';

/** A tree from `path: content` (a regular file, its oid the content) and `path -> target` (a link). */
function tree(entries: Record<string, string>) {
  const files: TreeFile[] = [];
  const targets = new Map<string, string>();
  for (const [path, value] of Object.entries(entries)) {
    if (value.startsWith('-> ')) {
      files.push({ path, oid: `link:${path}`, mode: '120000' });
      targets.set(path, value.slice(3));
    } else files.push({ path, oid: value, mode: '100644' });
  }
  return { files, targets };
}

async function written(entries: Record<string, string>, maxFiles = 1000) {
  const { files, targets } = tree(entries);
  const result = await resolveTreeLinks(files, targets, maxFiles);
  return {
    files: Object.fromEntries(result.files.map((f) => [f.path, f.oid])),
    skipped: Object.fromEntries(result.skipped.map((s) => [s.path, s.why])),
  };
}

describe('symlinks of a tree, resolved for a checkout', () => {
  it('writes a link within the repository as the file it leads to, under its own name', async () => {
    expect(
      (
        await written({
          'shared/values.yaml': 'V',
          'charts/web/values.yaml': '-> ../../shared/values.yaml',
          'charts/web/templates/_helpers.tpl': '-> ../../../shared/_helpers.tpl',
          'shared/_helpers.tpl': 'H',
          'charts/web/Chart.yaml': 'C',
        })
      ).files,
    ).toEqual({
      'shared/values.yaml': 'V',
      'charts/web/values.yaml': 'V',
      'charts/web/templates/_helpers.tpl': 'H',
      'shared/_helpers.tpl': 'H',
      'charts/web/Chart.yaml': 'C',
    });
  });

  it('follows a link in the middle of a path, and takes `..` after the link as the kernel does', async () => {
    const { files, skipped } = await written({
      'real/deep/x.yaml': 'X',
      'real/y.yaml': 'Y',
      alias: '-> real/deep',
      // alias/.. is real/, not the top: `..` applies to where the link led.
      'a.yaml': '-> alias/../y.yaml',
      'b.yaml': '-> alias/x.yaml',
      'c.yaml': '-> ./real/./deep//x.yaml',
    });
    expect(files['a.yaml']).toBe('Y');
    expect(files['b.yaml']).toBe('X');
    expect(files['c.yaml']).toBe('X');
    expect(files['alias/x.yaml']).toBe('X');
    expect(skipped).toEqual({});
  });

  it('leaves out a link that leads outside, nowhere or round a loop, saying why', async () => {
    const { files, skipped } = await written({
      'ok.yaml': 'O',
      'abs.yaml': '-> /etc/passwd',
      'up.yaml': '-> ../outside.yaml',
      'deep/up.yaml': '-> ../../../x',
      'via.yaml': '-> out/passwd',
      out: '-> /etc',
      'gone.yaml': '-> missing.yaml',
      'loop-a': '-> loop-b',
      'loop-b': '-> loop-a',
      self: '-> self',
    });
    expect(files).toEqual({ 'ok.yaml': 'O' });
    expect(skipped).toEqual({
      'abs.yaml': 'leads outside the repository',
      'up.yaml': 'leads outside the repository',
      'deep/up.yaml': 'leads outside the repository',
      'via.yaml': 'leads outside the repository',
      out: 'leads outside the repository',
      'gone.yaml': 'leads nowhere in the repository',
      'loop-a': `passes through more than ${MAX_LINK_HOPS} symlinks (a loop)`,
      'loop-b': `passes through more than ${MAX_LINK_HOPS} symlinks (a loop)`,
      self: `passes through more than ${MAX_LINK_HOPS} symlinks (a loop)`,
    });
  });

  it('writes a linked folder under every link to it, its own links resolved from where they lie', async () => {
    const { files, skipped } = await written({
      'common/tpl/_a.tpl': 'A',
      'common/tpl/_b.tpl': '-> ../b.tpl',
      'common/b.tpl': 'B',
      'charts/one/templates/common': '-> ../../../common/tpl',
      'charts/two/templates/common': '-> ../../../common/tpl',
    });
    expect(files).toMatchObject({
      'charts/one/templates/common/_a.tpl': 'A',
      'charts/one/templates/common/_b.tpl': 'B',
      'charts/two/templates/common/_a.tpl': 'A',
      'charts/two/templates/common/_b.tpl': 'B',
      'common/tpl/_b.tpl': 'B',
    });
    expect(skipped).toEqual({});
  });

  it('does not enter a folder through a link inside it (a loop), nor the top', async () => {
    const { files, skipped } = await written({
      'app/x.yaml': 'X',
      'app/again': '-> .',
      'app/parent': '-> ..',
      'one/l': '-> ../two',
      'two/l': '-> ../one',
      'two/t.yaml': 'T',
    });
    expect(skipped).toMatchObject({
      'app/again': 'leads to a folder that holds it (a loop)',
      'app/parent': 'leads to a folder that holds it (a loop)',
    });
    // one/l is two/, whose link back to one/ is not entered again.
    expect(files['one/l/t.yaml']).toBe('T');
    expect(skipped['one/l/l/l']).toBe('leads to a folder that holds it (a loop)');
  });

  it('refuses a tree that links multiply past the bound', async () => {
    const entries: Record<string, string> = { 'f/data.yaml': 'D' };
    // Ten links to a folder of ten links to a folder of ten links ...: 10^4 paths to one file.
    for (let level = 0; level < 4; level++)
      for (let i = 0; i < 10; i++)
        entries[`l${level}/x${i}`] = level === 3 ? '-> ../f' : `-> ../l${level + 1}`;
    const { files, targets } = tree(entries);
    await expect(resolveTreeLinks(files, targets, 2000)).rejects.toThrow(TreeTooLargeError);
    await expect(resolveTreeLinks(files, targets, 2000)).rejects.toThrow(/more than 2000 files/);
  });
});
