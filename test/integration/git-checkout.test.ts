// checkoutTree against the test bed's real Git server: a commit fetched shallowly into the cache is written out as
// files, executable bits kept, symlinks within the repository written as what they lead to (and none on disk),
// those leading out left out and refused where a chart reads them, and the bounds refuse a tree that is too big.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { deployment, gitSource } from '../../src/config/schema.ts';
import { StalledError, TransientError } from '../../src/errors.ts';
import { chartFromGit } from '../../src/sources/build/chart-files.ts';
import { kustomizeGit } from '../../src/sources/build/kustomize-sources.ts';
import { checkoutTree } from '../../src/sources/git/checkout.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { bareRepo, testbed } from './helpers.ts';

const run = promisify(execFile);
const cleanup: string[] = [];
let counter = 0;

afterAll(async () => {
  for (const dir of cleanup) await rm(dir, { recursive: true, force: true });
});

async function temp(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanup.push(dir);
  return dir;
}

async function repoWith(files: Record<string, string>): Promise<{ repo: GitRepository; commit: string }> {
  const name = `checkout-${Date.now().toString(36)}-${counter++}`;
  const bare = await bareRepo(name);
  const commit = await bare.commit(files);
  return { repo: repository(name), commit };
}

/**
 * A repository on the test bed holding `files` and the symlinks `links` (path -> target), pushed by native git from a
 * work folder (kept, for later commits through `pushed`) and fetched into the cache.
 */
async function linkedRepo(prefix: string, files: Record<string, string>, links: Record<string, string>) {
  const name = `${prefix}-${Date.now().toString(36)}-${counter++}`;
  const bare = await bareRepo(name);
  const work = await temp('mooring-checkout-work-');
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(work, path)), { recursive: true });
    await writeFile(join(work, path), text);
  }
  for (const [path, target] of Object.entries(links)) {
    await mkdir(dirname(join(work, path)), { recursive: true });
    await symlink(target, join(work, path));
  }
  const commit = await pushed(work, bare.path);
  const repo = repository(name);
  cleanup.push(repo.gitdir);
  await repo.fetch(commit);
  return { repo, commit, work, bare: bare.path };
}

/** Commits everything in `work` (a folder, made a repository on first use) and pushes it to `bare`. */
async function pushed(work: string, bare: string): Promise<string> {
  const gitEnv = {
    ...process.env,
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@mooring.invalid',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@mooring.invalid',
  };
  await run('git', ['init', '--quiet', '--initial-branch=main', work], { env: gitEnv });
  await run('git', ['-C', work, 'add', '-A', '.'], { env: gitEnv });
  await run('git', ['-C', work, 'commit', '--quiet', '-m', 'links'], { env: gitEnv });
  await run('git', ['-C', work, 'push', '--quiet', bare, 'main'], { env: gitEnv });
  return (await run('git', ['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
}

function repository(name: string, maxFileBytes?: number): GitRepository {
  const env = testbed();
  process.env.MOORING_TEST_CHECKOUT_USER = env.git.username;
  process.env.MOORING_TEST_CHECKOUT_PASSWORD = env.git.password;
  const source = gitSource.parse({
    name: 'app',
    url: `${env.git.url}/${name}.git`,
    credentials: {
      username: { env: 'MOORING_TEST_CHECKOUT_USER' },
      password: { env: 'MOORING_TEST_CHECKOUT_PASSWORD' },
    },
    ...(maxFileBytes ? { maxFileBytes } : {}),
  });
  return new GitRepository(source, { cacheDir: join(tmpdir(), `mooring-checkout-cache-${name}`) });
}

describe('checkoutTree', () => {
  it('writes every file of the fetched commit, nested folders included', async () => {
    const { repo, commit } = await repoWith({
      'base/kustomization.yaml': 'resources: [deploy.yaml]\n',
      'base/deploy.yaml': 'kind: Deployment\n',
      'overlays/prod/kustomization.yaml': 'resources: [../../base]\n',
      'README.md': '# app\n',
    });
    cleanup.push(repo.gitdir);
    await repo.fetch(commit);
    const into = join(await temp('mooring-checkout-'), 'tree');
    await checkoutTree(repo, commit, into);
    expect(await readFile(join(into, 'base/deploy.yaml'), 'utf8')).toBe('kind: Deployment\n');
    expect(await readFile(join(into, 'overlays/prod/kustomization.yaml'), 'utf8')).toBe(
      'resources: [../../base]\n',
    );
    expect(await readFile(join(into, 'README.md'), 'utf8')).toBe('# app\n');
  });

  it('keeps the executable bit and leaves a symlink out of the repository out', async () => {
    // A repository with a script and a symlink, made with a plain clone and push.
    const name = `checkout-modes-${Date.now().toString(36)}-${counter++}`;
    const bare = await bareRepo(name);
    const work = await temp('mooring-checkout-work-');
    await mkdir(join(work, 'bin'));
    await writeFile(join(work, 'bin/run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    await writeFile(join(work, 'plain.yaml'), 'a: 1\n');
    await symlink('/etc/passwd', join(work, 'passwd.yaml'));
    const gitEnv = {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@mooring.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@mooring.invalid',
    };
    await run('git', ['init', '--quiet', '--initial-branch=main', work], { env: gitEnv });
    await run('git', ['-C', work, 'add', '.'], { env: gitEnv });
    await run('git', ['-C', work, 'commit', '--quiet', '-m', 'modes'], { env: gitEnv });
    await run('git', ['-C', work, 'push', '--quiet', bare.path, 'main'], { env: gitEnv });
    const commit = (await run('git', ['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();

    const repo = repository(name);
    cleanup.push(repo.gitdir);
    await repo.fetch(commit);
    const into = await temp('mooring-checkout-');
    await checkoutTree(repo, commit, into);
    expect((await stat(join(into, 'bin/run.sh'))).mode & 0o111).not.toBe(0);
    expect((await stat(join(into, 'plain.yaml'))).mode & 0o111).toBe(0);
    await expect(stat(join(into, 'passwd.yaml'))).rejects.toThrow(/ENOENT/);
  });

  it('writes a link within the repository as what it leads to, and refuses one a chart reads that leads out', async () => {
    // A monorepo whose charts share a helper and a values file through links, pushed by native git.
    const { repo, commit, work, bare } = await linkedRepo(
      'checkout-links',
      {
        'shared/values.yaml': 'color: green\n',
        'shared/tpl/_helpers.tpl': '{{- define "web.name" }}web-linked{{ end }}\n',
        'charts/web/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
        'charts/web/templates/cm.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ include "web.name" . }}}\ndata: {color: {{ .Values.color | quote }}}\n',
      },
      {
        'charts/web/values.yaml': '../../shared/values.yaml',
        'charts/web/templates/common': '../../../shared/tpl',
        // Elsewhere in the repository, read by no chart: left out, refused by nobody.
        'passwd.yaml': '/etc/passwd',
      },
    );
    const into = await temp('mooring-checkout-');
    const skipped = await checkoutTree(repo, commit, into);
    expect(skipped).toEqual([{ path: 'passwd.yaml', why: 'leads outside the repository' }]);
    expect(await readFile(join(into, 'charts/web/values.yaml'), 'utf8')).toBe('color: green\n');
    expect(await readFile(join(into, 'charts/web/templates/common/_helpers.tpl'), 'utf8')).toContain(
      'web-linked',
    );
    const links = (await readdir(into, { recursive: true, withFileTypes: true })).filter((e) =>
      e.isSymbolicLink(),
    );
    expect(links).toEqual([]);

    // The chart renders with the linked values and helper, as helm renders the clone.
    process.env.MOORING_HELM = testbed().tools.helm;
    const spec = deployment.parse({
      name: 'shop',
      namespace: 'prod',
      source: 'app',
      helm: { chart: 'charts/web' },
    });
    const [file] = await chartFromGit(repo, commit, spec, undefined);
    expect(file?.text).toContain('name: web-linked');
    expect(file?.text).toContain('color: "green"');

    // values.yaml linked outside the repository: the chart would render with no values at all. Refused, named.
    await rm(join(work, 'charts/web/values.yaml'));
    await symlink('/etc/hostname', join(work, 'charts/web/values.yaml'));
    const outward = await pushed(work, bare);
    await repo.fetch(outward);
    await expect(chartFromGit(repo, outward, spec, undefined)).rejects.toThrow(
      "charts/web/values.yaml: a symlink that leads outside the repository; a symlink deployment shop's chart reads must lead to a file or folder within the repository",
    );
  });

  it('builds a kustomization that is a link, and one whose resource links into a shared folder', async () => {
    process.env.MOORING_KUBECTL = testbed().tools.kubectl;
    // The app's kustomization is the shared one; its cm.yaml a link to a shared manifest.
    const { repo, commit, work, bare } = await linkedRepo(
      'checkout-kustomize-links',
      {
        'shared/kustomization.yaml': 'resources: [cm.yaml]\nnamePrefix: web-\n',
        'shared/config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n',
      },
      {
        'apps/web/kustomization.yaml': '../../shared/kustomization.yaml',
        'apps/web/cm.yaml': '../../shared/config.yaml',
      },
    );
    const files = await repo.files(commit, ['apps/web']);
    const built = await kustomizeGit(repo, commit, ['apps/web'], [], files);
    expect(built.map((f) => f.text).join('')).toContain('name: web-shared');
    // A resource that links out of the repository: refused naming the link, not a file kustomize cannot find.
    await rm(join(work, 'apps/web/cm.yaml'));
    await symlink('/etc/hostname', join(work, 'apps/web/cm.yaml'));
    const outward = await pushed(work, bare);
    await repo.fetch(outward);
    await expect(kustomizeGit(repo, outward, ['apps/web'], [], [])).rejects.toThrow(
      'apps/web/cm.yaml: a symlink that leads outside the repository; a symlink a kustomization reads must lead to a file or folder within the repository',
    );
  });

  it('refuses a tree past its bounds, naming the bound', async () => {
    const { repo, commit } = await repoWith({
      'a.yaml': 'x'.repeat(2000),
      'b.yaml': 'y: 1\n',
      'c/d.yaml': 'z: 1\n',
    });
    cleanup.push(repo.gitdir);
    await repo.fetch(commit);
    const into = await temp('mooring-checkout-');
    await expect(checkoutTree(repo, commit, into, { maxFiles: 2 })).rejects.toThrow(
      /checkout: more than 2 files/,
    );
    const big = checkoutTree(repo, commit, into, { maxFileBytes: 1000 });
    await expect(big).rejects.toBeInstanceOf(StalledError);
    await expect(big).rejects.toThrow(/a\.yaml is 2000 bytes, more than maxFileBytes \(1000\)/);
    await expect(checkoutTree(repo, commit, into, { maxTotalBytes: 2001 })).rejects.toThrow(
      /more than 2001 bytes/,
    );
  });

  it('asks for a fetch when the commit is not in the cache', async () => {
    const { repo, commit } = await repoWith({ 'a.yaml': 'a: 1\n' });
    cleanup.push(repo.gitdir);
    const into = await temp('mooring-checkout-');
    const missing = checkoutTree(repo, commit, into);
    await expect(missing).rejects.toBeInstanceOf(TransientError);
    await expect(missing).rejects.toThrow(/fetch it first/);
  });
});
