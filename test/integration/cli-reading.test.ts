// How the CLI reads paths, as kubectl does: a folder without its subfolders unless -R, a clear hint when only
// subfolders hold manifests, and the render settings that errors name as flags (--cluster-scoped): offline, a
// kind's scope is guessed and render says so.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema, deployment, gitSource } from '../../src/config/schema.ts';
import { deploymentManifests } from '../../src/sources/deployment-manifests.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { commitFiles, createBareRepo } from '../testbed/git-repos.ts';

import { crdManifest, manifestDir, mooring, testbed } from './helpers.ts';

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {a: b}\n`;

describe('reading folders', () => {
  it('reads a folder without its subfolders, as kubectl apply -f DIR; -R reads them', async () => {
    // As many repositories ship an all-in-one copy of the same objects in a subfolder.
    const dir = await manifestDir({
      'web.yaml': cm('web'),
      'api.yaml': cm('api'),
      'all-in-one/everything.yaml': `${cm('web')}---\n${cm('api')}`,
    });
    const flat = await mooring('render', dir, '--offline', '-n', 'shop');
    expect(flat.code, flat.stderr).toBe(0);
    expect(flat.stdout.match(/^kind: ConfigMap$/gm)).toHaveLength(2);

    const deep = await mooring('render', dir, '--offline', '-n', 'shop', '-R');
    expect(deep.code).toBe(2);
    expect(deep.stderr).toContain('defined twice');
    expect(deep.stderr).toContain('all-in-one/everything.yaml');
  });

  it('says to give -R when only subfolders hold manifests', async () => {
    const dir = await manifestDir({ 'apps/web.yaml': cm('web') });
    const result = await mooring('render', dir, '--offline');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('renders no objects');
    expect(result.stderr).toContain('has subfolders: give -R to read them');
    const recursive = await mooring('render', dir, '--offline', '--recursive');
    expect(recursive.code, recursive.stderr).toBe(0);
    expect(recursive.stdout).toContain('name: web');
  });

  it('says a folder of Jsonnet is not evaluated, rather than only that it renders nothing', async () => {
    // As an Argo CD application written in Jsonnet.
    const dir = await manifestDir({
      'guestbook-ui.jsonnet':
        'local params = import "params.libsonnet"; [{apiVersion: "v1", kind: "Service"}]\n',
      'params.libsonnet': '{ replicas: 1 }\n',
    });
    const result = await mooring('render', dir, '--offline', '-n', 'shop');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `renders no objects (no .yaml, .yml or .json file); ${dir}/guestbook-ui.jsonnet, ${dir}/params.libsonnet: Jsonnet is not evaluated, render it to YAML or JSON first (jsonnet -y)`,
    );
  });

  it('does not send a chart that renders nothing to -R (its subfolders are its templates)', async () => {
    // As a chart of Applications whose list is empty by default.
    process.env.MOORING_HELM = testbed().tools.helm;
    const chart = await manifestDir({
      'Chart.yaml': 'apiVersion: v2\nname: apps\nversion: 1.0.0\n',
      'values.yaml': 'applications: []\n',
      'templates/apps.yaml': `{{- range .Values.applications }}\n---\n${cm('{{ . }}')}{{- end }}\n`,
    });
    const result = await mooring('render', chart, '--offline', '-n', 'shop');
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('renders no objects');
    // As a flag, not inside the temporary folder's random name (mooring-manifests-Rx…).
    expect(result.stderr).not.toMatch(/(^|\s)-R(\s|$)|--recursive/);
    const some = await mooring('render', chart, '--offline', '-n', 'shop', '--set', 'applications={web}');
    expect(some.code, some.stderr).toBe(0);
    expect(some.stdout).toContain('name: web');
  });

  it('builds a kustomization folder whole without -R', async () => {
    const dir = await manifestDir({
      'kustomization.yaml': 'resources: [base/web.yaml]\nnamePrefix: prod-\n',
      'base/web.yaml': cm('web'),
    });
    const result = await mooring('render', dir, '--offline');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('name: prod-web');
  });
});

describe("a deployment's recursive setting", () => {
  it('reads subfolders by default, and only the folder itself with recursive: false', async () => {
    const env = testbed();
    const name = `reading-${Date.now().toString(36)}`;
    const bare = await createBareRepo(env.git.root, name);
    const commit = await commitFiles(bare, {
      'apps/web/web.yaml': cm('web'),
      'apps/web/all-in-one/everything.yaml': cm('everything'),
      'apps/api/kustomization.yaml': 'resources: [base/api.yaml]\nnamePrefix: prod-\n',
      'apps/api/base/api.yaml': cm('api'),
    });
    const authority = `${encodeURIComponent(env.git.username)}:${encodeURIComponent(env.git.password)}@`;
    const url = `${env.git.url.replace('http://', `http://${authority}`)}/${name}.git`;
    const repo = new GitRepository(gitSource.parse({ name: 'app', url }), {
      cacheDir: await mkdtemp(join(tmpdir(), 'mooring-reading-cache-')),
    });
    const ctx = { config: configSchema.parse({}) };
    const names = async (recursive?: boolean) => {
      const spec = deployment.parse({
        name: 'web',
        namespace: 'shop',
        source: 'app',
        paths: ['apps/web', 'apps/api'],
        ...(recursive === undefined ? {} : { recursive }),
      });
      const files = await deploymentManifests(ctx, spec, { git: repo, commit });
      return files.flatMap((f) => [...f.text.matchAll(/name: ([a-z-]+)/g)].map((m) => m[1])).sort();
    };
    expect(await names()).toEqual(['everything', 'prod-api', 'web']);
    // A kustomization directly in a path is built whole either way.
    expect(await names(false)).toEqual(['prod-api', 'web']);
  });
});

describe('the scope of custom kinds', () => {
  const gatewayClass = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: shared-gc}
spec: {controllerName: example.net/gateway}
`;

  it('offline, says which scopes it guessed; --cluster-scoped settles one', async () => {
    const dir = await manifestDir({ 'gc.yaml': gatewayClass });
    const guessed = await mooring('render', dir, '--offline', '-n', 'shop');
    expect(guessed.code, guessed.stderr).toBe(0);
    expect(guessed.stderr).toContain(
      'warning: offline, the scope of gateway.networking.k8s.io/GatewayClass is guessed: namespaced',
    );
    expect(guessed.stdout).toContain('namespace: shop');

    const told = await mooring(
      'render',
      dir,
      '--offline',
      '-n',
      'shop',
      '--cluster-scoped',
      'gateway.networking.k8s.io/GatewayClass',
    );
    expect(told.code, told.stderr).toBe(0);
    expect(told.stderr).not.toContain('guessed');
    expect(told.stdout).not.toContain('namespace:');

    const bad = await mooring('render', dir, '--offline', '--cluster-scoped', 'GatewayClass');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--cluster-scoped "GatewayClass" must be group/Kind');
  });

  it('online, takes the scope from the cluster', async () => {
    // The test bed serves a cluster-scoped custom kind once its CRD is applied.
    const crd = crdManifest('reading.example.com', 'clusterwidgets', 'ClusterWidget', {}, 'Cluster');
    const env = testbed();
    const install = await mooring(
      'deploy',
      await manifestDir({ 'crd.yaml': crd }),
      '--kubeconfig',
      env.kube.kubeconfig,
    );
    expect(install.code, install.stdout + install.stderr).toBe(0);
    const widget = 'apiVersion: reading.example.com/v1\nkind: ClusterWidget\nmetadata: {name: w}\n';
    const dir = await manifestDir({ 'w.yaml': widget });
    const online = await mooring('render', dir, '--kubeconfig', env.kube.kubeconfig, '-n', 'shop');
    expect(online.code, online.stderr).toBe(0);
    expect(online.stdout).not.toContain('namespace:');
    expect(online.stderr).not.toContain('guessed');
  });
});
