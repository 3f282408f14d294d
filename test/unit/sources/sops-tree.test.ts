// SOPS files a build tool reads: found under the folders a build reads, decrypted in a private copy that keeps the
// folders' layout, the user's files left as they were, the copy removed; a file that cannot be decrypted fails
// naming it as the user knows it, and leaves no copy behind.
import { renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAgeKeys } from '../../../src/sources/sops/age-keys.ts';
import { sopsFilesUnder, stageDecrypted } from '../../../src/sources/sops/tree.ts';
import { encryptSops, newAgeKey } from './sops-fixture.ts';

async function tree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sops-tree-'));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

const secret = (value: string) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'db' },
  stringData: { password: value },
});

async function copiesLeft(): Promise<string[]> {
  return (await readdir(tmpdir())).filter((n) => n.startsWith('mooring-sops-'));
}

describe('SOPS files under the folders a build reads', () => {
  it('decrypts them in a private copy with the same layout; the originals stay encrypted', async () => {
    const key = await newAgeKey();
    const encrypted = await encryptSops([secret('s3cret')], { recipients: [key.recipient] });
    const dir = await tree({
      'base/kustomization.yaml': 'resources: [secret.yaml]\n',
      'base/secret.yaml': encrypted,
      'overlay/kustomization.yaml': 'resources: [../base]\n',
      'other/secret.yaml': encrypted,
    });
    const places = ['overlay', 'base'].map((f) => ({ disk: join(dir, f), label: f }));
    const found = await sopsFilesUnder(places);
    expect(found.map((f) => f.label)).toEqual(['base/secret.yaml']);
    const before = await copiesLeft();
    const staged = await stageDecrypted(places, found, await parseAgeKeys(key.secret, 'test'), dir);
    const copy = staged.at(join(dir, 'base/secret.yaml'));
    expect(copy).not.toContain(dir);
    expect(await readFile(copy, 'utf8')).toContain('password: s3cret');
    // The values decrypted into the copy, for the runner to redact from what the tool prints.
    expect(staged.secrets).toEqual(['s3cret']);
    expect((await stat(copy)).mode & 0o777).toBe(0o600);
    expect(await readFile(staged.at(join(dir, 'overlay/kustomization.yaml')), 'utf8')).toBe(
      'resources: [../base]\n',
    );
    // Only the folders read are copied.
    await expect(stat(staged.at(join(dir, 'other/secret.yaml')))).rejects.toThrow();
    expect(await readFile(join(dir, 'base/secret.yaml'), 'utf8')).toBe(encrypted);
    expect(staged.clean(`error in ${staged.at(join(dir, 'base/secret.yaml'))}`)).toBe(
      'error in base/secret.yaml',
    );
    await staged.remove();
    expect(await copiesLeft()).toEqual(before);
  });

  it('fails naming the file it cannot decrypt, and removes the copy', async () => {
    const mine = await newAgeKey();
    const theirs = await newAgeKey();
    const dir = await tree({
      'app/kustomization.yaml': 'resources: [secret.yaml]\n',
      'app/secret.yaml': await encryptSops([secret('x')], { recipients: [theirs.recipient] }),
    });
    const places = [{ disk: join(dir, 'app'), label: 'app' }];
    const found = await sopsFilesUnder(places);
    const before = await copiesLeft();
    await expect(stageDecrypted(places, found, await parseAgeKeys(mine.secret, 'test'), dir)).rejects.toThrow(
      `app/secret.yaml: cannot decrypt (sops): no age identity for recipient ${theirs.recipient}`,
    );
    expect(await copiesLeft()).toEqual(before);
  });

  it('finds nothing in folders without a sops block, and skips symlinks', async () => {
    const dir = await tree({
      'a/cm.yaml': 'kind: ConfigMap\ndata: {sops: no}\n',
      'a/notes.txt': 'sops: x\n',
    });
    expect(await sopsFilesUnder([{ disk: join(dir, 'a'), label: 'a' }])).toEqual([]);
  });
});

describe('a file of the folders swapped while the private copy is made', () => {
  it('is copied as the file it was, or refused: never through a link to a file outside', async () => {
    const key = await newAgeKey();
    const encrypted = await encryptSops([secret('s3cret')], { recipients: [key.recipient] });
    const top = await mkdtemp(join(tmpdir(), 'sops-swap-'));
    await writeFile(join(top, 'outside.txt'), 'the-file-outside');
    const dir = await tree({
      'app/kustomization.yaml': 'resources: [secret.yaml]\n',
      'app/secret.yaml': encrypted,
      'app/notes.txt': 'plain',
    });
    const places = [{ disk: join(dir, 'app'), label: 'app' }];
    const found = await sopsFilesUnder(places);
    const keys = await parseAgeKeys(key.secret, 'test');
    let on = true;
    let n = 0;
    const flip = () => {
      if (!on) return;
      const next = join(dir, 'app', `.next-${n}`);
      if (n++ % 2 === 0) symlinkSync(join(top, 'outside.txt'), next);
      else writeFileSync(next, 'plain');
      renameSync(next, join(dir, 'app', 'notes.txt'));
      setImmediate(flip);
    };
    setImmediate(flip);
    let copied = 0;
    try {
      for (let i = 0; i < 100; i++) {
        try {
          const staged = await stageDecrypted(places, found, keys, dir);
          const text = await readFile(staged.at(join(dir, 'app', 'notes.txt')), 'utf8').catch(() => 'plain');
          await staged.remove();
          expect(text).toBe('plain');
          copied++;
        } catch (error) {
          expect(String(error)).toContain('app/notes.txt');
        }
      }
    } finally {
      on = false;
    }
    expect(copied).toBeGreaterThan(0);
  });
});
