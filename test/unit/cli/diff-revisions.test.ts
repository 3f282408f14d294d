// `mooring diff --base --head` on a real Git checkout (made with the git command): two revisions rendered without a
// cluster, as the agent's pull-request preview renders them, printed as Markdown, JSON or text.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { PREVIEW_MARKER } from '../../../src/report/preview-text.ts';
import { openCheckout } from '../../../src/sources/git/local-checkout.ts';
import { webApp } from '../render/web-app.ts';
import { encryptSops, newAgeKey } from '../sources/sops-fixture.ts';
import { cli } from './run-cli.ts';

// These tests run real work (processes, Git repositories, whole pages): a busy 2-core machine needs more than 5 s.
vi.setConfig({ testTimeout: 30_000 });

const run = promisify(execFile);

/** A checkout with one commit per entry of `commits` (files written, null deleted); returns its folder and shas. */
async function checkout(commits: Record<string, string | null>[]): Promise<{ dir: string; shas: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-diff-checkout-'));
  const git = (...args: string[]) =>
    run(
      'git',
      ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false', ...args],
      {
        cwd: dir,
      },
    );
  await git('init', '-q', '-b', 'main');
  const shas: string[] = [];
  for (const files of commits) {
    for (const [path, text] of Object.entries(files)) {
      if (text === null) await git('rm', '-q', path);
      else {
        await mkdir(dirname(join(dir, path)), { recursive: true });
        await writeFile(join(dir, path), text);
      }
    }
    await git('add', '-A');
    await git('commit', '-q', '-m', `commit ${shas.length}`);
    shas.push((await git('rev-parse', 'HEAD')).stdout.trim());
  }
  return { dir, shas };
}

/** `mooring diff` of two revisions of the whole checkout, configured by its mooring.yaml. */
function diffCheckout(dir: string, base: string, head: string, ...rest: string[]) {
  return cli(
    'diff',
    '--checkout',
    dir,
    '--base',
    base,
    '--head',
    head,
    '--config',
    join(dir, 'mooring.yaml'),
    ...rest,
  );
}

/** `mooring diff` of two revisions of the checkout's k8s folder, deployed to namespace shop. */
function diffPaths(dir: string, base: string, head: string, ...rest: string[]) {
  return cli('diff', join(dir, 'k8s'), '--base', base, '--head', head, '-n', 'shop', ...rest);
}

const web = (color: string, password: string) =>
  webApp({ config: 'web-config', secret: 'web-secret', color, stringData: `{password: ${password}}` });

const CONFIG = `sources:
  git:
    - {name: app, url: https://git.example.invalid/shop/app.git}
deployments:
  - {name: web, namespace: shop, source: app, paths: [apps/web]}
  - {name: api, namespace: shop, source: app, paths: [apps/api]}
  - {name: docs, namespace: shop, source: app, paths: [apps/docs]}
`;

describe('mooring diff --base --head', () => {
  it('previews the deployments a change concerns, as Markdown, with the ConfigMap version moving and no Secret value', async () => {
    const { dir, shas } = await checkout([
      {
        'mooring.yaml': CONFIG,
        'apps/web/web.yaml': web('blue', 'hunter2-one'),
        'apps/api/api.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: api}\ndata: {a: "1"}\n',
        'apps/docs/docs.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: docs}\n',
      },
      {
        'apps/web/web.yaml': web('green', 'hunter2-two'),
        // A broken manifest in api: its preview fails, naming the file and line.
        'apps/api/api.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: api}\ndata: {a: [\n',
      },
    ]);
    const [base, head] = shas as [string, string];
    const md = await diffCheckout(dir, base, 'HEAD', '-o', 'markdown');
    // api does not render: exit 2, and the preview is printed all the same.
    expect(md.code, md.stderr).toBe(2);
    expect(md.stdout.startsWith(PREVIEW_MARKER)).toBe(true);
    expect(md.stdout).toContain('web: 1 changed, 2 new versions');
    expect(md.stdout).toMatch(
      /New version ` ConfigMap shop\/web-config `: ` web-config-v000 ` → ` web-config-v001 `; moves ` Deployment shop\/web `/,
    );
    expect(md.stdout).toContain('-  color: blue');
    expect(md.stdout).toContain('+  color: green');
    expect(md.stdout).toContain('api: does not render');
    expect(md.stdout).toMatch(/apps\/api\/api\.yaml:\d+/);
    // docs changed no file: not previewed.
    expect(md.stdout).not.toContain('docs:');
    for (const secret of ['hunter2-one', 'hunter2-two', Buffer.from('hunter2-two').toString('base64')])
      expect(md.stdout).not.toContain(secret);

    const json = await diffCheckout(dir, base, head, '--deployment', 'web', '-o', 'json');
    expect(json.code, json.stderr).toBe(1);
    const parsed = JSON.parse(json.stdout) as {
      previews: { deployment: string; diff: { versions: { to: string }[] } }[];
    };
    expect(parsed.previews.map((p) => p.deployment)).toEqual(['web']);
    expect(parsed.previews[0]?.diff.versions.map((v) => v.to).sort()).toEqual([
      'web-config-v001',
      'web-secret-v001',
    ]);
  });

  it('reads paths of the checkout, says when nothing changes, and names a revision it does not have', async () => {
    const { dir, shas } = await checkout([
      { 'k8s/a.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n' },
      { 'README.md': 'docs\n' },
    ]);
    const same = await diffPaths(dir, shas[0] as string, 'main');
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toContain('paths: no change');
    const missing = await cli('diff', join(dir, 'k8s'), '--base', 'no-such-branch', '--head', 'main');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('revision no-such-branch is not in the checkout');
  });

  it('prints the Markdown of a value of 150,000 backtick runs, within the comment cap', async () => {
    const value = (n: number) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ticks, annotations: {strategy.spinnaker.io/versioned: "false"}}\ndata: {v: "${'` '.repeat(n)}"}\n`;
    const { dir, shas } = await checkout([{ 'k8s/a.yaml': value(3) }, { 'k8s/a.yaml': value(150_000) }]);
    const md = await diffPaths(dir, shas[0] as string, shas[1] as string, '-o', 'markdown');
    // Exit code 1: something changed.
    expect(md.code, md.stderr).toBe(1);
    expect(md.stdout.startsWith(PREVIEW_MARKER)).toBe(true);
    expect(md.stdout.length).toBeLessThanOrEqual(65_536);
    expect(md.stdout).toContain('**Changed ` ConfigMap shop/ticks `** (diff left out)');
  }, 30_000);

  it('previews 60 deployments of 8 objects changed by one commit in a comment that fits GitHub', async () => {
    const apps = Array.from({ length: 60 }, (_, i) => `app-${String(i).padStart(2, '0')}`);
    const objects = (app: string, color: string) =>
      Array.from(
        { length: 8 },
        (_, j) =>
          `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${app}-${j}, annotations: {strategy.spinnaker.io/versioned: "false"}}\ndata:\n${Array.from({ length: 12 }, (_, k) => `  key${k}: ${color}-${k}`).join('\n')}\n`,
      ).join('---\n');
    const config = `sources:\n  git:\n    - {name: app, url: https://git.example.invalid/fleet.git}\ndeployments:\n${apps
      .map((a) => `  - {name: ${a}, namespace: ${a}, source: app, paths: [apps/${a}]}`)
      .join('\n')}\n`;
    const { dir, shas } = await checkout([
      {
        'mooring.yaml': config,
        ...Object.fromEntries(apps.map((a) => [`apps/${a}/all.yaml`, objects(a, 'blue')])),
      },
      Object.fromEntries(apps.map((a) => [`apps/${a}/all.yaml`, objects(a, 'green')])),
    ]);
    const md = await diffCheckout(dir, shas[0] as string, shas[1] as string, '-o', 'markdown');
    expect(md.code, md.stderr).toBe(1);
    expect(md.stdout.length).toBeLessThanOrEqual(65_536);
    for (const a of apps) expect(md.stdout).toContain(`<b>${a}: 8 changed</b>`);
    expect(md.stdout).toContain('Diffs left out to fit the comment');
    const json = await diffCheckout(dir, shas[0] as string, shas[1] as string, '-o', 'json');
    const parsed = JSON.parse(json.stdout) as { previews: { diff: { changed: unknown[] } }[] };
    expect(parsed.previews).toHaveLength(60);
    expect(parsed.previews.reduce((n, p) => n + p.diff.changed.length, 0)).toBe(480);
  }, 120_000);

  it('leaves SOPS files out unless --decrypt, and then shows no decrypted value', async () => {
    const key = await newAgeKey();
    const keyFile = join(await mkdtemp(join(tmpdir(), 'mooring-diff-key-')), 'keys.txt');
    await writeFile(keyFile, `${key.secret}\n`);
    const secret = (value: string) =>
      encryptSops(
        [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, stringData: { password: value } }],
        { recipients: [key.recipient], encryptedRegex: '^(data|stringData)$' },
      );
    const { dir, shas } = await checkout([
      {
        'k8s/db.yaml': await secret('sops-old-value'),
        'k8s/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n',
      },
      { 'k8s/db.yaml': await secret('sops-new-value') },
    ]);
    const args = [dir, shas[0] as string, shas[1] as string] as const;
    const omitted = await diffPaths(...args, '-o', 'markdown');
    expect(omitted.code, omitted.stderr).toBe(0);
    expect(omitted.stdout).toContain('SOPS-encrypted, left out');
    const decrypted = await diffPaths(...args, '--decrypt', '--age-key-file', keyFile, '-o', 'markdown');
    expect(decrypted.code, decrypted.stderr).toBe(1);
    expect(decrypted.stdout).toContain('password: (changed)');
    for (const value of [
      'sops-old-value',
      'sops-new-value',
      Buffer.from('sops-new-value').toString('base64'),
    ])
      expect(decrypted.stdout).not.toContain(value);
  });

  it('resolves revisions as git rev-parse does: a ref before an id, an annotated tag to its commit, a tree refused', async () => {
    const { dir, shas } = await checkout([{ 'a.yaml': 'a: 1\n' }, { 'a.yaml': 'a: 2\n' }]);
    const [first, second] = shas as [string, string];
    const git = (...args: string[]) =>
      run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir });
    // A branch named like the start of the other commit's id: the branch wins, as in git.
    const prefix = second.slice(0, 6);
    await git('branch', prefix, first);
    await git('tag', '-a', 'v1', '-m', 'release', first);
    const co = await openCheckout(join(dir));
    expect(await co.resolve(prefix)).toBe(first);
    expect(await co.resolve(second.slice(0, 10))).toBe(second);
    expect(await co.resolve('v1')).toBe(first);
    expect(await co.resolve('HEAD')).toBe(second);
    const tree = (await git('rev-parse', 'HEAD^{tree}')).stdout.trim();
    await expect(co.resolve(tree)).rejects.toThrow(/names a tree, not a commit/);
    await expect(co.resolve('--upload-pack=x')).rejects.toThrow(/is not a revision/);
  });
});
