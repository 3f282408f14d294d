// SOPS files a build tool reads: found under the folders a build reads, decrypted in a private copy that keeps the
// folders' layout, the user's files left as they were, the copy removed; a file that cannot be decrypted fails
// naming it as the user knows it, and leaves no copy behind.
import { renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  // The copies are counted in a temporary folder of this file's own (os.tmpdir() reads TMPDIR at each call): other
  // suites decrypting at the same time in the shared one would be counted too.
  const shared = process.env.TMPDIR;
  let own = '';
  beforeAll(async () => {
    own = await mkdtemp(join(tmpdir(), 'sops-tree-tmp-'));
    process.env.TMPDIR = own;
  });
  afterAll(async () => {
    if (shared === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = shared;
    await rm(own, { recursive: true, force: true });
  });

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

describe('symlinks in the folders copied to decrypt', () => {
  /** A repository (with `.git`) holding `chart/` and `shared/`, and a file outside it. */
  async function repository() {
    const key = await newAgeKey();
    const encrypted = await encryptSops([{ password: 's3cret' }], { recipients: [key.recipient] });
    const top = await mkdtemp(join(tmpdir(), 'sops-links-'));
    await writeFile(join(top, 'outside.txt'), 'the-file-outside');
    const repo = join(top, 'repo');
    await mkdir(join(repo, '.git'), { recursive: true });
    const files = {
      'chart/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
      'chart/templates/cm.yaml': 'kind: ConfigMap\n',
      'chart/secrets.yaml': encrypted,
      'shared/_helpers.tpl': '{{- define "web.name" }}web{{ end }}\n',
      'shared/prod.enc.yaml': encrypted,
      'shared/files/a.txt': 'a',
    };
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(repo, path, '..'), { recursive: true });
      await writeFile(join(repo, path), text);
    }
    return { key, top, repo, chart: join(repo, 'chart') };
  }

  it('copies what a link leads to under its name, decrypts a linked SOPS file, and holds no link', async () => {
    const { key, repo, chart } = await repository();
    symlinkSync(join(repo, 'shared', '_helpers.tpl'), join(chart, 'templates', '_helpers.tpl'));
    symlinkSync('../shared/prod.enc.yaml', join(chart, 'prod.yaml'));
    // One folder linked twice is copied under both names (helm loads both); a link back up is a cycle, not entered.
    symlinkSync(join(repo, 'shared', 'files'), join(chart, 'files'));
    symlinkSync(join(repo, 'shared', 'files'), join(chart, 'more'));
    symlinkSync(chart, join(chart, 'templates', 'loop'));
    const places = [{ disk: chart, label: 'chart' }];
    const found = await sopsFilesUnder(places, repo);
    expect(found.map((f) => f.label)).toEqual(['chart/prod.yaml', 'chart/secrets.yaml']);
    const staged = await stageDecrypted(places, found, await parseAgeKeys(key.secret, 'test'), repo, repo);
    try {
      expect(await readFile(staged.at(join(chart, 'templates', '_helpers.tpl')), 'utf8')).toContain(
        'define "web.name"',
      );
      expect(await readFile(staged.at(join(chart, 'prod.yaml')), 'utf8')).toContain('password: s3cret');
      expect(await readFile(staged.at(join(chart, 'files', 'a.txt')), 'utf8')).toBe('a');
      expect(await readFile(staged.at(join(chart, 'more', 'a.txt')), 'utf8')).toBe('a');
      const copy = staged.at(chart);
      const links = (await readdir(copy, { recursive: true, withFileTypes: true })).filter((e) =>
        e.isSymbolicLink(),
      );
      expect(links).toEqual([]);
      // The user's files are as they were.
      expect(await readFile(join(repo, 'shared', 'prod.enc.yaml'), 'utf8')).toContain('sops:');
    } finally {
      await staged.remove();
    }
  });

  it('refuses a link that leads outside the repository, naming it, and leaves no copy', async () => {
    const { key, top, repo, chart } = await repository();
    symlinkSync(join(top, 'outside.txt'), join(chart, 'templates', 'leak.txt'));
    const places = [{ disk: chart, label: 'chart' }];
    await expect(sopsFilesUnder(places, repo)).rejects.toThrow(
      'chart/templates/leak.txt: a symlink that leads outside the repository',
    );
    const before = await copiesLeft();
    await expect(
      stageDecrypted(
        places,
        [{ disk: join(chart, 'secrets.yaml'), label: 'chart/secrets.yaml' }],
        await parseAgeKeys(key.secret, 'test'),
        repo,
        repo,
      ),
    ).rejects.toThrow('chart/templates/leak.txt: a symlink that leads outside the repository');
    expect(await copiesLeft()).toEqual(before);
  });

  it('outside any repository, lets the folders of one build link to each other', async () => {
    const key = await newAgeKey();
    const encrypted = await encryptSops([secret('s3cret')], { recipients: [key.recipient] });
    const dir = await tree({
      'base/kustomization.yaml': 'resources: [secret.yaml]\n',
      'base/secret.yaml': encrypted,
      'base/patch.yaml': 'kind: Patch\n',
      'overlay/kustomization.yaml': 'resources: [../base]\npatches: [{path: patch.yaml}]\n',
    });
    symlinkSync('../base/patch.yaml', join(dir, 'overlay', 'patch.yaml'));
    const places = ['overlay', 'base'].map((f) => ({ disk: join(dir, f), label: f }));
    const found = await sopsFilesUnder(places);
    const staged = await stageDecrypted(places, found, await parseAgeKeys(key.secret, 'test'), dir);
    try {
      expect(await readFile(staged.at(join(dir, 'overlay', 'patch.yaml')), 'utf8')).toBe('kind: Patch\n');
    } finally {
      await staged.remove();
    }
  });

  it('bounds the whole copy when links multiply what it holds', async () => {
    const { key, repo, chart } = await repository();
    // A 40 MiB file reached through seven links: 280 MiB of copy from 40 MiB on disk.
    await writeFile(join(repo, 'shared', 'big.bin'), Buffer.alloc(40 * 1024 * 1024, 1));
    for (let i = 0; i < 7; i++) symlinkSync(join(repo, 'shared', 'big.bin'), join(chart, `big-${i}.bin`));
    const places = [{ disk: chart, label: 'chart' }];
    const found = await sopsFilesUnder(places, repo);
    await expect(
      stageDecrypted(places, found, await parseAgeKeys(key.secret, 'test'), repo, repo),
    ).rejects.toThrow(
      'chart/big-6.bin: the copy made to build the folder would hold more than 268435456 bytes',
    );
  });
});
