// The pack view isomorphic-git reads the Git cache through: packs listed oldest first under aliases that sort by
// age, and reads of an alias mapped back to the real file. (The loop it prevents is shown end to end by
// test/integration/faults-burst.test.ts, whose agent never finished a burst of commits without it.)
import { mkdir, mkdtemp, readFile, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packView } from '../../../src/sources/git/pack-order.ts';

describe('packView', () => {
  it('lists packs by age under aliases and reads the real files through them', async () => {
    const gitdir = await mkdtemp(join(tmpdir(), 'mooring-pack-order-'));
    const folder = join(gitdir, 'objects/pack');
    await mkdir(folder, { recursive: true });
    // Names in the opposite order of their age, as checksums may well be.
    const ages: [string, number][] = [
      ['pack-aaaa', 3000],
      ['pack-bbbb', 2000],
      ['pack-cccc', 1000],
    ];
    for (const [base, seconds] of ages) {
      for (const ext of ['.idx', '.pack']) {
        await writeFile(join(folder, `${base}${ext}`), `${base}${ext}`);
        await utimes(join(folder, `${base}${ext}`), seconds, seconds);
      }
    }
    await writeFile(join(folder, 'tmp_pack_x'), '');
    const view = packView();
    const listing = await view.list(folder);
    expect(view.list(join(gitdir, 'objects'))).toBeUndefined();
    const indexes = (listing ?? []).filter((n) => n.endsWith('.idx')).sort();
    expect(indexes).toEqual(['pack-00000000-cccc.idx', 'pack-00000001-bbbb.idx', 'pack-00000002-aaaa.idx']);
    expect(listing).toContain('tmp_pack_x');
    expect(listing).not.toContain('pack-aaaa.idx');
    expect(await readFile(view.real(join(folder, 'pack-00000000-cccc.pack')), 'utf8')).toBe('pack-cccc.pack');
    expect(view.real(join(folder, 'pack-00000002-aaaa.idx'))).toBe(join(folder, 'pack-aaaa.idx'));
    expect(view.real(join(gitdir, 'HEAD'))).toBe(join(gitdir, 'HEAD'));
  });
});
