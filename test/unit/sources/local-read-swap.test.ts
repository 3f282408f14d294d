// A file of a local folder switched to a symlink between the check of the folder and the read of the file (a writer
// renaming a link over it, as fast as the event loop lets it): what is read is the checked file or a refusal, never
// the file outside that the link leads to.
import { renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readManifestFiles } from '../../../src/sources/local/files.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('a file of a local folder swapped for a link while the folder is read', () => {
  it('is read as the checked file or refused, never through the link', async () => {
    const top = await mkdtemp(join(tmpdir(), 'mooring-read-swap-'));
    dirs.push(top);
    const folder = join(top, 'repo');
    await mkdir(folder);
    await writeFile(
      join(top, 'outside.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: the-secret-outside}\n',
    );
    const plain = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n';
    await writeFile(join(folder, 'web.yaml'), plain);
    let on = true;
    let n = 0;
    const flip = () => {
      if (!on) return;
      const next = join(folder, `.next-${n}`);
      if (n++ % 2 === 0) symlinkSync(join(top, 'outside.yaml'), next);
      else writeFileSync(next, plain);
      renameSync(next, join(folder, 'web.yaml'));
      setImmediate(flip);
    };
    setImmediate(flip);
    let read = 0;
    let refused = 0;
    try {
      for (let i = 0; i < 300; i++) {
        try {
          const files = await readManifestFiles([folder]);
          expect(files.map((f) => f.text).join('')).not.toContain('the-secret-outside');
          read++;
        } catch (error) {
          expect(String(error)).toMatch(/symlink leads outside|no such file/);
          refused++;
        }
      }
    } finally {
      on = false;
    }
    expect(read).toBeGreaterThan(0);
    expect(read + refused).toBe(300);
  });
});
