// Problems with built manifests named where the user wrote them, with the project's real kubectl (kustomize) and
// helm: an invalid object in a base of an overlay is reported at the base file (local paths and a Git commit), an
// invalid object of a chart at its template; what kustomize and helm warn about when they succeed is passed on
// (and printed by `mooring render` as `warning: …`); the built manifests are kustomize's own, byte for byte; a
// chart dependency missing from charts/ says how to vendor it, from a folder and from Git.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Deployment, deployment } from '../../src/config/schema.ts';
import { parseManifestFiles } from '../../src/render/parse.ts';
import { chartFromFolder, chartFromGit } from '../../src/sources/build/chart-files.ts';
import { renderChart } from '../../src/sources/build/helm.ts';
import { kustomizeGit, kustomizeLocal } from '../../src/sources/build/kustomize-sources.ts';
import { fetchedRepo } from './build-helpers.ts';
import { manifestDir, mooring, runTool, testbed } from './helpers.ts';

// Line 8 of base/web.yaml starts the invalid Deployment; kustomize's output puts it elsewhere.
const BASE_WEB = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data: {greeting: hello}
---
# the web server
apiVersion: apps/v1
kind: Deployment
metadata:
  name: Web_Server
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`;

const overlay = (web: string): Record<string, string> => ({
  'base/kustomization.yaml': 'resources: [web.yaml]\n',
  'base/web.yaml': web,
  'overlays/prod/kustomization.yaml': `resources: [../../base, extra.yaml]
namePrefix: prod-
configMapGenerator:
  - name: settings
    literals: [MODE=prod]
`,
  'overlays/prod/extra.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n',
});

const VALID_WEB = BASE_WEB.replace('Web_Server', 'web-server');

beforeAll(() => {
  // The CLI finds the tools as the product does: MOORING_KUBECTL and MOORING_HELM, else PATH.
  process.env.MOORING_KUBECTL = testbed().tools.kubectl;
  process.env.MOORING_HELM = testbed().tools.helm;
});

describe('kustomize: positions in the files the user wrote', () => {
  it('reports an invalid object of a base at the base file, naming the object as built', async () => {
    const dir = await manifestDir(overlay(BASE_WEB));
    const result = await mooring('render', join(dir, 'overlays/prod'), '--offline', '-n', 'shop');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `base/web.yaml:8:1: Deployment prod-Web_Server: Deployment metadata.name "prod-Web_Server" is not a valid Deployment name`,
    );
    expect(result.stderr).not.toContain('(built)');
  });

  it('builds exactly what kubectl kustomize builds: no origin annotation reaches the manifests', async () => {
    const dir = await manifestDir(overlay(VALID_WEB));
    const [file] = await kustomizeLocal([join(dir, 'overlays/prod')], []);
    const kubectl = await runTool(testbed().tools.kubectl, ['kustomize', join(dir, 'overlays/prod')]);
    expect(kubectl.code, kubectl.stderr).toBe(0);
    expect(file?.text).toBe(kubectl.stdout);
    expect(file?.text).not.toContain('config.kubernetes.io/origin');
    // Each object placed in its own file: a resource at its document, the generated one at its generator entry.
    const { objects, errors } = parseManifestFiles(file ? [file] : []);
    expect(errors).toEqual([]);
    const origins = Object.fromEntries(
      objects.map((o) => [o.object.metadata.name, `${o.origin.file.slice(dir.length + 1)}:${o.origin.line}`]),
    );
    expect(origins).toEqual({
      'prod-web-config': 'base/web.yaml:1',
      'prod-web-server': 'base/web.yaml:8',
      'prod-extra': 'overlays/prod/extra.yaml:1',
      [objects.find((o) => o.object.metadata.name.startsWith('prod-settings-'))?.object.metadata.name ?? 'x']:
        'overlays/prod/kustomization.yaml:4',
    });
    // The user's files are as they were.
    const again = await runTool(testbed().tools.kubectl, ['kustomize', join(dir, 'overlays/prod')]);
    expect(again.stdout).toBe(kubectl.stdout);
  });

  /** A kubectl that counts its runs in `log`, then runs the test bed's. */
  const countingKubectl = async (dir: string): Promise<{ kubectl: string; runs: () => Promise<number> }> => {
    const log = join(dir, 'runs.log');
    const kubectl = join(dir, 'counting-kubectl');
    await writeFile(kubectl, `#!/bin/sh\necho run >> '${log}'\nexec '${testbed().tools.kubectl}' "$@"\n`, {
      mode: 0o755,
    });
    const runs = async () => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
    return { kubectl, runs };
  };

  it('runs kustomize once for the build and its origins, and builds what kubectl builds, whatever the files hold', async () => {
    const plainDir = await manifestDir(overlay(VALID_WEB));
    const counted = await countingKubectl(plainDir);
    const [file] = await kustomizeLocal([join(plainDir, 'overlays/prod')], [], { kubectl: counted.kubectl });
    expect(await counted.runs()).toBe(1);
    const kubectl = await runTool(testbed().tools.kubectl, ['kustomize', join(plainDir, 'overlays/prod')]);
    expect(file?.text).toBe(kubectl.stdout);
    expect(file?.writtenAt).toBeDefined();

    // A value of the user's that reads like the annotation kustomize adds, and several annotations of their own:
    // never cut (the build is shown equal, or built again without annotations).
    const files = overlay(VALID_WEB);
    files['overlays/prod/extra.yaml'] = `apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
  annotations:
    note: |
      several
      lines
data:
  looks-like: |
    config.kubernetes.io/origin: |
      path: somewhere.yaml
    after: kept
`;
    // A kustomization that asks for origin annotations itself: they are the user's, and stay.
    files['overlays/own/kustomization.yaml'] =
      'resources: [../../base]\nbuildMetadata: [originAnnotations]\n';
    const dir = await manifestDir(files);
    for (const folder of ['overlays/prod', 'overlays/own']) {
      const [built] = await kustomizeLocal([join(dir, folder)], []);
      const expected = await runTool(testbed().tools.kubectl, ['kustomize', join(dir, folder)]);
      expect(expected.code, expected.stderr).toBe(0);
      expect(built?.text, folder).toBe(expected.stdout);
    }
    expect(
      (await kustomizeLocal([join(dir, 'overlays/own')], []))[0]?.text.match(
        /config\.kubernetes\.io\/origin/g,
      ),
    ).toHaveLength(2);
  });

  const deprecated = async (): Promise<string> => {
    const files = overlay(VALID_WEB);
    files['base/kustomization.yaml'] = 'resources: [web.yaml]\ncommonLabels: {team: shop}\n';
    return manifestDir(files);
  };

  it("passes kustomize's deprecation warnings on with the build", async () => {
    const dir = await deprecated();
    const [file] = await kustomizeLocal([join(dir, 'overlays/prod')], []);
    expect(file?.warnings).toEqual([
      expect.stringMatching(/overlays\/prod\/kustomization\.yaml: 'commonLabels' is deprecated/),
    ]);
    // Built by itself, the base is named.
    const [base] = await kustomizeLocal([join(dir, 'base')], []);
    expect(base?.warnings).toEqual([
      expect.stringMatching(/base\/kustomization\.yaml: 'commonLabels' is deprecated/),
    ]);
  });

  it("mooring render prints kustomize's warnings as `warning: …`", async () => {
    const dir = await deprecated();
    const result = await mooring('render', join(dir, 'overlays/prod'), '--offline', '-n', 'shop');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/^warning: .*'commonLabels' is deprecated/m);
    expect(result.stdout).not.toContain('config.kubernetes.io/origin');
  });

  it('names the base file by its path in the repository when building a Git commit', async () => {
    const { repo, commit } = await fetchedRepo(
      `build-positions-${Date.now().toString(36)}`,
      overlay(BASE_WEB),
    );
    const files = await repo.files(commit, ['overlays/prod']);
    const built = await kustomizeGit(repo, commit, ['overlays/prod'], [], files);
    const { errors } = parseManifestFiles(built);
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^base\/web\.yaml:8:1: Deployment prod-Web_Server: /),
    ]);
  });
});

const CHART = {
  'Chart.yaml': 'apiVersion: v2\nname: web\nversion: 1.0.0\n',
  'values.yaml': 'image: nginx\n',
  'templates/deployment.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: {{ .Values.image }}}]}
`,
  'templates/bad.yaml': `# a ConfigMap with a name no cluster takes
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}_Settings
`,
};

/** The chart under `dir`/charts/web rendered by the real helm as release shop in prod, paths named from `dir`. */
function renderWeb(dir: string) {
  return renderChart({
    chart: join(dir, 'charts/web'),
    label: 'charts/web',
    releaseName: 'shop',
    namespace: 'prod',
    valuesFiles: [],
    helm: testbed().tools.helm,
    treeRoot: dir,
  });
}

describe('helm: positions in the templates', () => {
  it('reports an invalid object at its template, the line counted in its rendered document', async () => {
    const dir = await manifestDir(
      Object.fromEntries(Object.entries(CHART).map(([p, t]) => [`charts/web/${p}`, t])),
    );
    const file = await renderWeb(dir);
    const { objects, errors } = parseManifestFiles([file]);
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(
        /^charts\/web\/templates\/bad\.yaml \(rendered\):2:1: ConfigMap shop_Settings: ConfigMap metadata\.name "shop_Settings" is not a valid/,
      ),
    ]);
    expect(objects.map((o) => o.origin)).toEqual([
      { file: 'charts/web/templates/deployment.yaml (rendered)', line: 1, column: 1 },
    ]);
  });

  it('mooring render names the template of an invalid object', async () => {
    const dir = await manifestDir(CHART);
    const result = await mooring('render', dir, '--offline', '-n', 'shop');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/templates\/bad\.yaml \(rendered\):2:1: ConfigMap .*_Settings: /);
  });

  it("passes helm's warnings on, paths named as in the repository", async () => {
    const dir = await manifestDir({
      'charts/web/Chart.yaml': CHART['Chart.yaml'],
      'charts/web/values.yaml': CHART['values.yaml'],
      'charts/web/templates/deployment.yaml': CHART['templates/deployment.yaml'],
    });
    // helm follows a symlink among the templates, and says so on standard error.
    await runTool('ln', ['-s', '../values.yaml', join(dir, 'charts/web/templates/values.txt')]);
    const file = await renderWeb(dir);
    expect(file.warnings).toEqual([expect.stringMatching(/^charts\/web: .*symbolic link/)]);
    expect(file.warnings?.join('\n')).not.toContain(dir);
  });
});

describe('helm: a dependency missing from charts/', () => {
  const chartYaml =
    'apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n  - {name: redis, version: 1.0.0, repository: https://charts.example.invalid}\n';
  const spec = (allowed: string[]): Deployment =>
    deployment.parse({
      name: 'shop',
      namespace: 'prod',
      source: 'app',
      helm: { chart: 'charts/web', allowedRepositories: allowed },
    });
  const files = { ...CHART, 'Chart.yaml': chartYaml };
  const inRepo = Object.fromEntries(Object.entries(files).map(([p, t]) => [`charts/web/${p}`, t]));

  it('says to run helm dependency build and commit charts/, from a folder', async () => {
    const dir = await manifestDir(inRepo);
    await expect(chartFromFolder(dir, spec(['https://charts.example.invalid']), undefined)).rejects.toThrow(
      'charts/web/Chart.yaml: dependency redis is not in charts/; run helm dependency build and commit charts/',
    );
    await expect(chartFromFolder(dir, spec([]), undefined)).rejects.toThrow(
      /charts\/web\/Chart\.yaml: dependency redis comes from https:\/\/charts\.example\.invalid, which is not in charts\/ and not an allowed repository; run helm dependency build and commit charts\//,
    );
  });

  it('says the same from a Git commit', async () => {
    const { repo, commit } = await fetchedRepo(`build-positions-chart-${Date.now().toString(36)}`, inRepo);
    await expect(
      chartFromGit(repo, commit, spec(['https://charts.example.invalid']), undefined),
    ).rejects.toThrow(
      'charts/web/Chart.yaml: dependency redis is not in charts/; run helm dependency build and commit charts/',
    );
  });
});
