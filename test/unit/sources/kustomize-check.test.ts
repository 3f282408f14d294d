// checkReach on real folders: every kustomization reached (bases, components, generator folders) and the plugin
// configurations named in generators/transformers, a Git checkout's root as the boundary, and for local paths the
// enclosing work tree with symlinks resolved.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import {
  checkReach,
  type KustomizeTree,
  readKustomization,
} from '../../../src/sources/build/kustomize-check.ts';

const made: string[] = [];
afterEach(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-kcheck-'));
  made.push(dir);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

async function checkGit(root: string, label: string, allowRemoteBases = false): Promise<string[]> {
  const t: KustomizeTree = { root, insideRoot: true };
  return (await checkReach(t, await readKustomization(t, label), { allowRemoteBases })).folders;
}

async function checkLocal(path: string): Promise<string[]> {
  const t: KustomizeTree = { root: '', insideRoot: false };
  return (await checkReach(t, await readKustomization(t, path), {})).folders;
}

const cm = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n';

describe('checkReach in a Git checkout', () => {
  it('accepts a tree that reads only its own files, and names the folders of the kustomizations reached', async () => {
    const root = await tree({
      'base/kustomization.yaml':
        'resources: [cm.yaml]\nconfigMapGenerator: [{name: b, files: [k=data/x.txt]}]\n',
      'base/cm.yaml': cm,
      'base/data/x.txt': 'x',
      'overlays/prod/kustomization.yaml':
        'resources: [../../base]\npatches: [{path: p.yaml}]\nsecretGenerator: [{name: s, envs: [s.env]}]\n',
      'overlays/prod/p.yaml': cm,
      'overlays/prod/s.env': 'A=b\n',
    });
    expect(await checkGit(root, 'overlays/prod/kustomization.yaml')).toEqual(['overlays/prod', 'base']);
  });

  it('refuses a URL in a base reached through the overlay, naming the base file and the field', async () => {
    const root = await tree({
      'base/kustomization.yaml': 'resources: [cm.yaml]\npatches:\n  - path: http://127.0.0.1:9/patch.yaml\n',
      'base/cm.yaml': cm,
      'overlays/prod/kustomization.yaml': 'resources: [../../base]\n',
    });
    await expect(checkGit(root, 'overlays/prod/kustomization.yaml', true)).rejects.toThrow(
      new StalledError(
        'base/kustomization.yaml: patches[0].path "http://127.0.0.1:9/patch.yaml" is a URL: only files in the repository may be read',
      ),
    );
  });

  it.each([
    [
      'configMapGenerator: [{name: a, files: [a.txt, "http://127.0.0.1:9/x"]}]',
      'configMapGenerator[0].files[1] "http://127.0.0.1:9/x" is a URL',
    ],
    [
      'configMapGenerator: [{name: a, files: ["k=http://127.0.0.1:9/x"]}]',
      'configMapGenerator[0].files[0] "k=http://127.0.0.1:9/x" is a URL',
    ],
    [
      'secretGenerator: [{name: a, env: /proc/self/environ}]',
      'secretGenerator[0].env "/proc/self/environ" is an absolute path',
    ],
    [
      'secretGenerator: [{name: a, envs: [../../../../etc/x.env]}]',
      'secretGenerator[0].envs[0] "../../../../etc/x.env" leads outside the repository',
    ],
    [
      'patchesStrategicMerge: [https://example.com/p.yaml]',
      'patchesStrategicMerge[0] "https://example.com/p.yaml" is a URL',
    ],
    [
      'patchesJson6902: [{path: /etc/passwd, target: {kind: ConfigMap}}]',
      'patchesJson6902[0].path "/etc/passwd" is an absolute path',
    ],
    [
      'replacements: [{path: "git::https://example.com/r"}]',
      'replacements[0].path "git::https://example.com/r" is a URL',
    ],
    [
      'helmCharts: [{name: c, repo: "https://charts.example"}]',
      'helmCharts[0].repo "https://charts.example": kustomize would pull a chart from it',
    ],
    ['helmGlobals: {chartHome: ../../..}', 'helmGlobals.chartHome "../../.." leads outside the repository'],
    [
      'openapi: {path: "http://169.254.169.254/latest"}',
      'openapi.path "http://169.254.169.254/latest" is a URL',
    ],
    ['crds: [/etc/crd.yaml]', 'crds[0] "/etc/crd.yaml" is an absolute path'],
    ['configurations: ["ftp://x/y"]', 'configurations[0] "ftp://x/y" is a URL'],
    [
      'transformers: [{kind: PatchTransformer, path: "http://127.0.0.1:9/t"}]',
      'transformers[0].path "http://127.0.0.1:9/t" is a URL',
    ],
    ['components: [/srv/component]', 'components[0] "/srv/component" is an absolute path'],
    [
      'helmGlobals: {configHome: /root/.config/helm}',
      'helmGlobals.configHome "/root/.config/helm" is an absolute path',
    ],
    [
      'transformers:\n  - |\n    apiVersion: builtin\n    kind: PatchTransformer\n    metadata: {name: p}\n    path: http://127.0.0.1:9/inline',
      'transformers[0].path "http://127.0.0.1:9/inline" is a URL',
    ],
    [
      'generators:\n  - |\n    kind: ConfigMapGenerator\n    files: [a]\n    ---\n    kind: SecretGenerator\n    envs: [/etc/x]',
      'generators[0][1].envs[0] "/etc/x" is an absolute path',
    ],
    ['validators:\n  - "a: [\\n b"', 'validators[0] cannot be read as plugin configurations'],
  ])('refuses %s', async (field, why) => {
    const root = await tree({
      'app/kustomization.yaml': `resources: [cm.yaml]\n${field}\n`,
      'app/cm.yaml': cm,
    });
    await expect(checkGit(root, 'app/kustomization.yaml')).rejects.toThrow(`app/kustomization.yaml: ${why}`);
  });

  it('refuses generators naming a folder outside the checkout', async () => {
    const root = await tree({ 'app/kustomization.yaml': 'generators: [../../outside]\n' });
    await expect(checkGit(root, 'app/kustomization.yaml')).rejects.toThrow(
      'app/kustomization.yaml: generators[0] "../../outside" leads outside the repository',
    );
  });

  it('checks the plugin configurations of a file named in generators', async () => {
    const root = await tree({
      'app/kustomization.yaml': 'generators: [gen.yaml]\n',
      'app/gen.yaml': `apiVersion: builtin
kind: ConfigMapGenerator
metadata: {name: a}
files: [ok.txt]
---
apiVersion: builtin
kind: SecretGenerator
metadata: {name: b}
envs: ["http://127.0.0.1:9/env"]
`,
      'app/ok.txt': 'x',
    });
    await expect(checkGit(root, 'app/kustomization.yaml')).rejects.toThrow(
      'app/gen.yaml: [1].envs[0] "http://127.0.0.1:9/env" is a URL',
    );
  });

  it('refuses a file named in generators that cannot be read, as it cannot be checked', async () => {
    const root = await tree({
      'app/kustomization.yaml': 'generators: [gen.yaml]\n',
      'app/gen.yaml': 'a: [\n b',
    });
    await expect(checkGit(root, 'app/kustomization.yaml')).rejects.toThrow(/^app\/gen\.yaml: /);
  });

  it('checks the resources of a kustomization named in transformers as plugin configurations', async () => {
    const root = await tree({
      'app/kustomization.yaml': 'resources: [cm.yaml]\ntransformers: [../transformers]\n',
      'app/cm.yaml': cm,
      'transformers/kustomization.yaml': 'resources: [patch.yaml]\n',
      'transformers/patch.yaml':
        'apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: http://127.0.0.1:9/p\n',
    });
    await expect(checkGit(root, 'app/kustomization.yaml')).rejects.toThrow(
      'transformers/patch.yaml: path "http://127.0.0.1:9/p" is a URL',
    );
  });

  it('keeps the message of a remote base without credentials or query', async () => {
    const root = await tree({
      'app/kustomization.yaml':
        'resources: ["https://u:secret@git.example.invalid/org/repo//deploy?ref=v1"]\n',
    });
    const message = await checkGit(root, 'app/kustomization.yaml').catch((e: unknown) => String(e));
    expect(message).toContain(
      'app/kustomization.yaml: resources[0] remote base "https://git.example.invalid/org/repo//deploy" is not allowed (render.kustomize.allowRemoteBases is false; --allow-remote-bases for the CLI)',
    );
    expect(message).not.toContain('secret');
  });
});

describe('checkReach on local paths', () => {
  it("keeps a local source's kustomizations inside the source's folder", async () => {
    const dir = await tree({
      'base/kustomization.yaml': 'resources: [cm.yaml]\n',
      'base/cm.yaml': cm,
      'source/app/kustomization.yaml': 'resources: [../../base]\n',
    });
    const t: KustomizeTree = { root: '', insideRoot: false, boundary: join(dir, 'source') };
    const label = join(dir, 'source/app/kustomization.yaml');
    await expect(checkReach(t, await readKustomization(t, label), {})).rejects.toThrow(
      `${label}: resources[0] "../../base" leads outside the repository`,
    );
  });

  it('allows a base beside the path given when there is no enclosing work tree, as before', async () => {
    const dir = await tree({
      'base/kustomization.yaml': 'resources: [cm.yaml]\n',
      'base/cm.yaml': cm,
      'overlays/prod/kustomization.yaml': 'resources: [../../base]\n',
    });
    expect(await checkLocal(join(dir, 'overlays/prod/kustomization.yaml'))).toEqual([
      join(dir, 'overlays/prod'),
      join(dir, 'base'),
    ]);
  });

  it('still refuses URLs and absolute paths there', async () => {
    const dir = await tree({
      'app/kustomization.yaml': 'configMapGenerator: [{name: a, files: ["http://127.0.0.1:9/x"]}]\n',
    });
    await expect(checkLocal(join(dir, 'app/kustomization.yaml'))).rejects.toThrow(
      `${join(dir, 'app/kustomization.yaml')}: configMapGenerator[0].files[0] "http://127.0.0.1:9/x" is a URL`,
    );
  });

  it('in a work tree, refuses leaving it, and a symlink that leads outside it', async () => {
    const outside = await tree({ 'secret.txt': 'x', 'base/kustomization.yaml': 'resources: []\n' });
    const repo = await tree({
      '.git/HEAD': 'ref: refs/heads/main\n',
      'app/kustomization.yaml': 'configMapGenerator: [{name: a, files: [link/secret.txt]}]\n',
      'other/kustomization.yaml': 'resources: [../base-link]\n',
      'escape/kustomization.yaml': `resources: [../../${outside.split('/').pop()}/base]\n`,
    });
    await symlink(outside, join(repo, 'app/link'));
    await symlink(join(outside, 'base'), join(repo, 'base-link'));
    await expect(checkLocal(join(repo, 'app/kustomization.yaml'))).rejects.toThrow(
      'configMapGenerator[0].files[0] "link/secret.txt" leads outside the repository through a symlink',
    );
    await expect(checkLocal(join(repo, 'other/kustomization.yaml'))).rejects.toThrow(
      'resources[0] "../base-link" leads outside the repository through a symlink',
    );
    await expect(checkLocal(join(repo, 'escape/kustomization.yaml'))).rejects.toThrow(
      'leads outside the repository',
    );
  });
});
