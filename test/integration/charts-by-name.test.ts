// A chart whose program reads its ConfigMap by name (test/fixtures/charts/by-name: an ingress controller started
// with --configmap=$(POD_NAMESPACE)/edge-proxy-controller), deployed on the test bed. By default only the ConfigMap
// the Deployment mounts gets versions; the one the controller reads by name keeps its name, through a change, a
// rollback, and a change of the versioning mode either way (prune leaves neither old versions nor an old plain
// object behind). `--versioning all` versions both, as before. `--set`/`--set-string` reach helm as helm reads
// them; `--create-namespace` creates the namespace of a set of CRDs alone.
import { randomBytes } from 'node:crypto';
import { cp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  crdManifest,
  deployTo,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const CHART = join(import.meta.dirname, '..', 'fixtures', 'charts', 'by-name');

process.env.MOORING_HELM = testbed().tools.helm;

async function chartFiles(dir = CHART, prefix = 'chart'): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    if ((await stat(path)).isDirectory()) Object.assign(files, await chartFiles(path, prefix));
    else files[`${prefix}/${relative(CHART, path)}`] = await readFile(path, 'utf8');
  }
  return files;
}

/** A copy of the chart with other values, for the CLI. */
async function chartWith(values: string): Promise<string> {
  const dir = join(await tempDir(), 'edge-proxy');
  await cp(CHART, dir, { recursive: true });
  await writeFile(join(dir, 'values.yaml'), values);
  return dir;
}

const VALUES = (bodySize: string, page: string) =>
  `controller:\n  image: example.invalid/edge-proxy/controller:1.0.0\n  replicas: 1\n  config:\n    proxy-body-size: ${bodySize}\n    use-forwarded-headers: "true"\nerrorPages:\n  notFound: ${page}\n`;

async function configMaps(ns: string): Promise<Map<string, Record<string, string>>> {
  const got = await kubectl('-n', ns, 'get', 'configmaps', '-o', 'json');
  expect(got.code, got.stderr).toBe(0);
  const items = (
    JSON.parse(got.stdout) as { items: { metadata: { name: string }; data?: Record<string, string> }[] }
  ).items;
  return new Map(
    items.filter((i) => i.metadata.name.startsWith('edge-proxy')).map((i) => [i.metadata.name, i.data ?? {}]),
  );
}

/** What the controller's Pod template mounts and the ConfigMap its flag names. */
async function controller(ns: string): Promise<{ mounted: string; flag: string }> {
  const got = await kubectl('-n', ns, 'get', 'deployment', 'edge-proxy-controller', '-o', 'json');
  expect(got.code, got.stderr).toBe(0);
  const spec = (
    JSON.parse(got.stdout) as {
      spec: {
        template: {
          spec: { volumes: { configMap: { name: string } }[]; containers: { args: string[] }[] };
        };
      };
    }
  ).spec.template.spec;
  const flag = spec.containers[0]?.args.find((a) => a.startsWith('--configmap=')) ?? '';
  return { mounted: spec.volumes[0]?.configMap.name ?? '', flag };
}

describe('a chart whose controller reads its ConfigMap by name, deployed by the agent', () => {
  const ns = useNamespace('by-name');
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it('keeps the name of what is read by name, versions what is mounted, through a change and a rollback', async () => {
    const suffix = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    const files = await chartFiles();
    const { repo, receiver, configFile, first, agent } = await startGitAgent({
      repo: `by-name-${suffix}/app`,
      files: { ...files, 'chart/values.yaml': VALUES('8m', 'one') },
      cluster: { name: 'by-name', namespace: `mooring-by-name-${suffix}` },
      deployments: [{ name: 'web', namespace: ns(), helm: { chart: 'chart', releaseName: 'edge-proxy' } }],
    });
    stops.push(agent.stop);
    const ended = (sha: string) =>
      eventually(
        `commit ${sha.slice(0, 7)} ends`,
        async () => receiver.statuses().find((s) => s.sha === sha && s.state !== 'pending'),
        120_000,
      );
    expect((await ended(first)).state).toBe('success');
    let maps = await configMaps(ns());
    expect([...maps.keys()].sort()).toEqual(['edge-proxy-controller', 'edge-proxy-error-pages-v000']);
    expect(maps.get('edge-proxy-controller')?.['proxy-body-size']).toBe('8m');
    expect(await controller(ns())).toEqual({
      mounted: 'edge-proxy-error-pages-v000',
      flag: '--configmap=$(POD_NAMESPACE)/edge-proxy-controller',
    });

    // A change to each: the one read by name is updated in place, the mounted one gets a new version.
    const second = await repo.commit({ ...files, 'chart/values.yaml': VALUES('16m', 'two') });
    expect((await ended(second)).state).toBe('success');
    maps = await configMaps(ns());
    expect([...maps.keys()].sort()).toEqual([
      'edge-proxy-controller',
      'edge-proxy-error-pages-v000',
      'edge-proxy-error-pages-v001',
    ]);
    expect(maps.get('edge-proxy-controller')?.['proxy-body-size']).toBe('16m');
    expect((await controller(ns())).mounted).toBe('edge-proxy-error-pages-v001');
    await agent.stop();

    // Rollback to the first release: both come back, under the same names.
    const history = await mooring('history', 'web', '--config', configFile, '-o', 'json');
    // Newest first: the oldest is the first commit's.
    const { items } = JSON.parse(history.stdout) as { items: { id: number; result: string }[] };
    expect(items.map((r) => r.result)).toEqual(['stable', 'stable']);
    const one = items.at(-1);
    const back = await mooring('rollback', 'web', '--to', String(one?.id), '--config', configFile);
    expect(back.code, back.stdout + back.stderr).toBe(0);
    maps = await configMaps(ns());
    expect(maps.get('edge-proxy-controller')?.['proxy-body-size']).toBe('8m');
    expect(maps.has('edge-proxy-controller-v000')).toBe(false);
    expect(await controller(ns())).toEqual({
      mounted: 'edge-proxy-error-pages-v000',
      flag: '--configmap=$(POD_NAMESPACE)/edge-proxy-controller',
    });
  });
});

describe('mooring deploy of the chart with --versioning', () => {
  const ns = useNamespace('by-name-cli');

  it('all: versions both (the old way); back to the default and again: prune leaves nothing dangling', async () => {
    const chart = await chartWith(VALUES('8m', 'one'));
    const all = await deployTo(ns(), chart, '--versioning', 'all', '--prune');
    expect(all.code, all.stdout + all.stderr).toBe(0);
    let maps = await configMaps(ns());
    expect([...maps.keys()].sort()).toEqual(['edge-proxy-controller-v000', 'edge-proxy-error-pages-v000']);

    // The default: the one read by name is applied under its name, and its old version is pruned.
    const referenced = await deployTo(ns(), chart, '--prune');
    expect(referenced.code, referenced.stdout + referenced.stderr).toBe(0);
    maps = await configMaps(ns());
    expect([...maps.keys()].sort()).toEqual(['edge-proxy-controller', 'edge-proxy-error-pages-v000']);
    expect(maps.get('edge-proxy-controller')?.['proxy-body-size']).toBe('8m');

    // And back: the plain one is pruned, the version it had is reused (same content).
    const again = await deployTo(ns(), chart, '--versioning', 'all', '--prune');
    expect(again.code, again.stdout + again.stderr).toBe(0);
    maps = await configMaps(ns());
    expect([...maps.keys()].sort()).toEqual(['edge-proxy-controller-v000', 'edge-proxy-error-pages-v000']);

    // none: every ConfigMap under its own name; the Deployment mounts the plain one. The version the Deployment's
    // old ReplicaSet still mounts is kept (and said), so `kubectl rollout undo` finds its configuration.
    const none = await deployTo(ns(), chart, '--versioning', 'none', '--prune');
    expect(none.code, none.stdout + none.stderr).toBe(0);
    expect(none.stdout + none.stderr).toMatch(/edge-proxy-error-pages-v000.*still referenced by ReplicaSet/);
    maps = await configMaps(ns());
    expect([...maps.keys()].sort()).toEqual([
      'edge-proxy-controller',
      'edge-proxy-error-pages',
      'edge-proxy-error-pages-v000',
    ]);
    expect((await controller(ns())).mounted).toBe('edge-proxy-error-pages');
  });

  it('--set and --set-string reach helm as helm reads them; without a chart they are refused', async () => {
    const rendered = await mooring(
      'render',
      '--offline',
      CHART,
      '-n',
      'edge',
      '-o',
      'yaml',
      '--set',
      'controller.config.proxy-body-size=32m,controller.replicas=3',
      '--set-string',
      'controller.config.worker-processes=4',
    );
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(rendered.stdout).toMatch(/proxy-body-size: "?32m"?/);
    expect(rendered.stdout).toMatch(/worker-processes: "4"/);
    expect(rendered.stdout).toMatch(/replicas: 3\b/);
    const stray = await mooring(
      'render',
      '--offline',
      await manifestDir({ 'a.yaml': 'kind: List\n' }),
      '--set',
      'a=b',
    );
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('(as --set and --set-string do), and no path is one');
  });
});

describe('mooring deploy --create-namespace of a set of CRDs alone', () => {
  const name = `by-name-crds-${randomBytes(3).toString('hex')}`;
  const group = `${name}.example.com`;
  afterAll(async () => {
    await kubectl('delete', 'namespace', name, '--wait=false');
    await kubectl('delete', 'crd', `gadgets.${group}`, '--wait=false');
  });

  it('creates the namespace', async () => {
    const dir = await manifestDir({ 'crd.yaml': crdManifest(group, 'gadgets', 'Gadget') });
    const got = await deployTo(name, dir, '--create-namespace');
    expect(got.code, got.stdout + got.stderr).toBe(0);
    expect(got.stdout).toContain(`namespace/${name} created`);
    const ns = await kubectl('get', 'namespace', name, '-o', 'json');
    expect(ns.code, ns.stderr).toBe(0);
    expect(JSON.parse(ns.stdout).metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'mooring',
    });
  });
});

describe("mooring deploy of a GitOps tool's install shape: settings read by name through the API", () => {
  const ns = useNamespace('by-api');
  const INSTALL = join(import.meta.dirname, '..', 'fixtures', 'kustomize', 'settings-by-api');

  const names = async (kind: string) => {
    const got = await kubectl('-n', ns(), 'get', kind, '-o', 'json');
    expect(got.code, got.stderr).toBe(0);
    const items = (
      JSON.parse(got.stdout) as { items: { metadata: { name: string }; data?: Record<string, string> }[] }
    ).items;
    return new Map(
      items.filter((i) => i.metadata.name !== 'kube-root-ca.crt').map((i) => [i.metadata.name, i.data ?? {}]),
    );
  };

  it('keeps the names of what its Role lets the server read, though its Deployments refer to them; a change is applied in place', async () => {
    const first = await deployTo(ns(), INSTALL);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    // Versioned, the server would find no `console-settings` and run without its settings.
    expect([...(await names('configmaps')).keys()].sort()).toEqual(['console-settings', 'worker-extras']);
    expect([...(await names('secrets')).keys()]).toContain('console-secret');
    expect([...(await names('secrets')).keys()].some((n) => /-v\d{3}$/.test(n))).toBe(false);
    const worker = await kubectl('-n', ns(), 'get', 'deployment', 'console-worker', '-o', 'json');
    expect(worker.stdout).toContain('"name": "console-settings"');

    // A changed setting: the same object, updated, as kubectl and Helm deliver it.
    const dir = join(await tempDir(), 'install');
    await cp(INSTALL, dir, { recursive: true });
    const settings = join(dir, 'settings.yaml');
    await writeFile(
      settings,
      (await readFile(settings, 'utf8')).replace(
        'https://console.example.test',
        'https://console.example.org',
      ),
    );
    const second = await deployTo(ns(), dir, '--prune');
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toContain('configmap/console-settings configured');
    const maps = await names('configmaps');
    expect([...maps.keys()].sort()).toEqual(['console-settings', 'worker-extras']);
    expect(maps.get('console-settings')?.url).toBe('https://console.example.org');
    const diff = await mooring('diff', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns());
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);

    // Without the RoleBinding, nothing shows a program reads them: the referenced ones get versions again.
    const rbac = join(dir, 'rbac.yaml');
    await writeFile(rbac, (await readFile(rbac, 'utf8')).split('\n---\n').slice(0, 2).join('\n---\n'));
    const third = await deployTo(ns(), dir, '--prune');
    expect(third.code, third.stdout + third.stderr).toBe(0);
    expect([...(await names('configmaps')).keys()].sort()).toEqual([
      'console-settings-v000',
      'worker-extras-v000',
    ]);
  });
});
