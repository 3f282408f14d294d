// A folder read recursively (a CLI path, a local source): symlinks within it are followed, each real folder read
// once, so a link back up the tree (`sub/loop -> ..`) ends instead of walking `sub/loop/sub/loop/…` until the path
// was too long and then being reported as leading outside; links outside the folder, and links that lead nowhere,
// are refused by name.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { readManifestFiles } from '../../../src/sources/local/files.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function folder(): Promise<string> {
  const top = await mkdtemp(join(tmpdir(), 'mooring-walk-'));
  dirs.push(top);
  const app = join(top, 'app');
  await mkdir(join(app, 'sub'), { recursive: true });
  await writeFile(join(app, 'a.yaml'), 'kind: A\n');
  await writeFile(join(app, 'sub', 'b.yaml'), 'kind: B\n');
  return app;
}

describe('a folder read recursively', () => {
  it('reads each real folder once, through a symlink loop', async () => {
    const app = await folder();
    await symlink('..', join(app, 'sub', 'loop'));
    await symlink('sub', join(app, 'again'));
    // `again` comes before `sub` and is the same folder: read there, then not again.
    const files = await readManifestFiles([app]);
    expect(files.map((f) => f.path.slice(app.length))).toEqual(['/a.yaml', '/again/b.yaml']);
  });

  it('refuses a symlink that leads outside, or nowhere, naming it', async () => {
    const app = await folder();
    await symlink('../..', join(app, 'sub', 'up'));
    const outside = await readManifestFiles([app]).catch((e: unknown) => e);
    expect(outside).toBeInstanceOf(StalledError);
    expect(String((outside as StalledError).message)).toContain('symlink leads outside');
    expect(JSON.stringify(outside, Object.getOwnPropertyNames(outside))).toContain(join(app, 'sub', 'up'));
    await rm(join(app, 'sub', 'up'));
    await symlink('gone', join(app, 'sub', 'dangling'));
    const nowhere = await readManifestFiles([app]).catch((e: unknown) => e);
    expect(nowhere).toBeInstanceOf(StalledError);
    expect(String((nowhere as StalledError).message)).toContain('symlink leads nowhere');
  });
});
