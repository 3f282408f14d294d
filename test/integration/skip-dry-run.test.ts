// Argo CD's `SkipDryRunOnMissingResource=true` on the real test bed: a custom resource whose CRD is not in the set
// (another deployment or an operator installs it, as Crossplane's providers install theirs) skips the dry run that
// would refuse it, and is written when its wave comes, once the cluster serves its kind. Without the option the set
// is refused whole, as before; with it and a CRD that never comes, the deploy fails naming the kind.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { deploy } from '../../src/sync/deploy.ts';
import { proxiedServer } from './fault-helpers.ts';
import {
  clusterConfig,
  crdManifest,
  kubectl,
  manifestDir,
  mooring,
  testbed,
  useNamespace,
} from './helpers.ts';

/** The "operator": installs these CRDs `afterMs` into what runs beside it, as an operator does at run time. */
function operatorInstalls(afterMs: number, crds: string): Promise<void> {
  return (async () => {
    await new Promise((resolve) => setTimeout(resolve, afterMs));
    const made = await kubectl('apply', '-f', await manifestDir({ 'crds.yaml': crds }));
    expect(made.code, made.stderr).toBe(0);
  })();
}

describe("Argo CD's SkipDryRunOnMissingResource", () => {
  const ns = useNamespace('skipdry');
  const group = `skip-${randomBytes(3).toString('hex')}.example.io`;
  afterAll(async () => {
    await kubectl('delete', 'crd', `providerconfigs.${group}`, `widgets.${group}`, '--ignore-not-found');
  });
  const base = () => ['--kubeconfig', testbed().kube.kubeconfig, '-n', ns()];
  const flags = (timeout: string) => [...base(), '--timeout', timeout];
  const files = (options: string) => ({
    'settings.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: provider-settings, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {region: north}
`,
    'provider.yaml': `apiVersion: ${group}/v1
kind: ProviderConfig
metadata:
  name: default
  annotations: {argocd.argoproj.io/sync-options: "${options}"}
spec: {credentials: {source: Secret}}
---
apiVersion: ${group}/v1
kind: Widget
metadata:
  name: first
  annotations: {argocd.argoproj.io/sync-options: "${options}"}
spec: {size: 3}
`,
  });
  const exists = async (...what: string[]) =>
    (await kubectl('get', ...what, '-o', 'name', '--ignore-not-found')).stdout.trim() !== '';

  it('refuses the set whole without the option, as a kind the cluster does not serve', async () => {
    const dir = await manifestDir(files('ServerSideApply=true'));
    const run = await mooring('deploy', dir, ...flags('20s'));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`ProviderConfig ${ns()}/default: the cluster serves no kind ProviderConfig`);
    expect(await exists('configmap', 'provider-settings', '-n', ns())).toBe(false);
  }, 60_000);

  it('writes the objects once an operator installs their CRDs, each in its scope, and keeps them', async () => {
    const dir = await manifestDir(files('ServerSideApply=true,SkipDryRunOnMissingResource=true'));
    // Before the CRDs: the diff shows them as they would be created, not validated.
    const before = await mooring('diff', dir, ...base());
    expect(before.code, before.stderr).toBe(1);
    expect(before.stdout).toContain('ProviderConfig');
    expect(before.stdout).toContain('size: 3');
    // The "operator": the CRDs appear a few seconds into the deploy, one cluster-scoped, one namespaced.
    const operator = operatorInstalls(
      3000,
      `${crdManifest(group, 'providerconfigs', 'ProviderConfig', {}, 'Cluster')}---\n${crdManifest(group, 'widgets', 'Widget')}`,
    );
    const run = await mooring('deploy', dir, ...flags('60s'), '--prune');
    await operator;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/3\/3 stable/);
    expect(await exists('configmap', 'provider-settings', '-n', ns())).toBe(true);
    expect(await exists(`providerconfigs.${group}`, 'default')).toBe(true);
    expect(await exists(`widgets.${group}`, 'first', '-n', ns())).toBe(true);
    // Deployed again with prune: the cluster-scoped one, placed in the namespace while its scope was unknown, is the
    // same object as now, not something to prune.
    const again = await mooring('deploy', dir, ...flags('60s'), '--prune');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toContain('pruned');
    expect(again.stdout).toMatch(/3\/3 stable/);
    expect(await exists(`providerconfigs.${group}`, 'default')).toBe(true);
    const diff = await mooring('diff', dir, ...base());
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);
  }, 120_000);

  // A deployment may not write cluster-scoped objects (allowClusterScoped): a kind unknown when the set was checked
  // was held to the boundary as one of its namespace; served cluster-scoped, it is held again, and refused.
  // A hook takes the option too, as Argo CD's hooks do: it waits for its kind in its phase, and is held to the
  // boundary again once the kind is served.
  it.each([
    [
      'an object of the release',
      '',
      `its kind is served cluster-scoped, outside this deployment's namespaces`,
    ],
    [
      'a Helm hook',
      ', helm.sh/hook: post-install',
      `its kind is served cluster-scoped, outside this deployment's namespaces`,
    ],
  ])(
    'refuses a kind served cluster-scoped that the deployment may not write: %s',
    async (_, hook, why) => {
      const other = `scope-${randomBytes(3).toString('hex')}.example.io`;
      const api = new KubeApi(clusterConfig());
      try {
        const operator = operatorInstalls(2000, crdManifest(other, 'tenants', 'Tenant', {}, 'Cluster'));
        const report = await deploy(
          { api, discovery: new Discovery(api) },
          {
            files: [
              {
                path: 'tenant.yaml',
                text: `apiVersion: ${other}/v1\nkind: Tenant\nmetadata:\n  name: everyone\n  annotations: {argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true${hook}}\n`,
              },
            ],
            namespace: ns(),
            application: 'scoped',
            images: [],
            timeoutMs: 30_000,
            dryRun: false,
            fieldManager: 'mooring',
            concurrency: 4,
            renderOptions: { boundary: { namespaces: [ns()], clusterScoped: false } },
          },
        );
        await operator;
        expect(['error', 'failed']).toContain(report.outcome);
        expect(report.summary).toContain(why);
        expect(await exists(`tenants.${other}`, 'everyone')).toBe(false);
      } finally {
        api.close();
        await kubectl('delete', 'crd', `tenants.${other}`, '--ignore-not-found');
      }
    },
    60_000,
  );

  // The API server failing discovery while the kind is awaited (twenty 503s on its group-version): the client's own
  // retries ride them out within the deploy's deadline, and the object is written.
  it('waits out discovery failing while it waits for the kind', async () => {
    const other = `flaky-${randomBytes(3).toString('hex')}.example.io`;
    const cleanups: (() => unknown)[] = [];
    const bed = await proxiedServer((...steps) => cleanups.push(...(steps as (() => unknown)[])));
    try {
      const dir = await manifestDir({
        'gizmo.yaml': `apiVersion: ${other}/v1
kind: Gizmo
metadata:
  name: spinning
  annotations: {argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true}
spec: {speed: 2}
`,
      });
      const operator = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 2000));
        bed.proxy.set(
          { kind: 'status', status: 503, body: 'the server is currently unable to handle the request' },
          {
            match: (r) => r.method === 'GET' && (r.path.split('?')[0] ?? '') === `/apis/${other}/v1`,
            times: 20,
          },
        );
        const crds = await manifestDir({ 'crd.yaml': crdManifest(other, 'gizmos', 'Gizmo') });
        expect((await kubectl('apply', '-f', crds)).code).toBe(0);
      })();
      const run = await mooring(
        'deploy',
        dir,
        '--kubeconfig',
        bed.kubeconfig,
        '-n',
        ns(),
        '--timeout',
        '90s',
      );
      await operator;
      expect(run.code, run.stderr).toBe(0);
      expect(bed.proxy.count('status')).toBe(20);
      expect(await exists(`gizmos.${other}`, 'spinning', '-n', ns())).toBe(true);
    } finally {
      bed.proxy.pass();
      for (const c of cleanups.reverse()) await c();
      await kubectl('delete', 'crd', `gizmos.${other}`, '--ignore-not-found');
    }
  }, 150_000);

  // At scale: a hundred custom resources of a kind not served yet among three hundred objects. They wait for their
  // kind together, one look at discovery a second for the kind, not one per object, and all are written once served.
  it('waits for a kind once for a hundred of its objects, and writes them all with the rest of the set', async () => {
    const other = `many-${randomBytes(3).toString('hex')}.example.io`;
    const cleanups: (() => unknown)[] = [];
    const bed = await proxiedServer((...steps) => cleanups.push(...(steps as (() => unknown)[])));
    try {
      const manifests: Record<string, string> = {};
      for (let i = 0; i < 200; i++)
        manifests[`cm-${i}.yaml`] =
          `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: many-${i}, annotations: {strategy.spinnaker.io/versioned: "false"}}\ndata: {i: "${i}"}\n`;
      for (let i = 0; i < 100; i++)
        manifests[`sprocket-${i}.yaml`] =
          `apiVersion: ${other}/v1\nkind: Sprocket\nmetadata:\n  name: s-${i}\n  annotations: {argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true}\nspec: {teeth: ${i}}\n`;
      const dir = await manifestDir(manifests);
      const waitMs = 6000;
      const operator = operatorInstalls(waitMs, crdManifest(other, 'sprockets', 'Sprocket'));
      const started = Date.now();
      const run = await mooring(
        'deploy',
        dir,
        '--kubeconfig',
        bed.kubeconfig,
        '-n',
        ns(),
        '--timeout',
        '120s',
      );
      await operator;
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/300\/300 stable/);
      const listed = await kubectl('get', `sprockets.${other}`, '-n', ns(), '-o', 'name');
      expect(listed.stdout.trim().split('\n')).toHaveLength(100);
      // Discovery of the group-version while the kind was awaited: about two reads a second, whatever the count.
      const seconds = (Date.now() - started) / 1000;
      const looks = bed.proxy.requests.filter(
        (r) => r.method === 'GET' && (r.path.split('?')[0] ?? '') === `/apis/${other}/v1`,
      ).length;
      expect(looks).toBeLessThan(2 * seconds + 10);
    } finally {
      for (const c of cleanups.reverse()) await c();
      await kubectl('delete', 'crd', `sprockets.${other}`, '--ignore-not-found');
    }
  }, 180_000);

  it('runs a hook of a kind an operator installs during the deploy once the kind is served', async () => {
    const other = `hooked-${randomBytes(3).toString('hex')}.example.io`;
    const operator = operatorInstalls(3000, crdManifest(other, 'reports', 'Report'));
    try {
      const dir = await manifestDir({
        'settings.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: hooked-settings, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {a: b}
`,
        'report.yaml': `apiVersion: ${other}/v1
kind: Report
metadata:
  name: after-sync
  annotations: {argocd.argoproj.io/hook: PostSync, argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true}
spec: {ok: true}
`,
      });
      const run = await mooring('deploy', dir, ...flags('60s'));
      await operator;
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain('(PostSync hook) succeeded');
      expect(await exists(`reports.${other}`, 'after-sync', '-n', ns())).toBe(true);
    } finally {
      await operator.catch(() => undefined);
      await kubectl('delete', 'crd', `reports.${other}`, '--ignore-not-found');
    }
  }, 90_000);

  // The kinds a commit names are its author's: discovery's memory of kinds found missing stays bounded however many
  // new ones come, and a kind found missing is asked about again once its half second has passed.
  it('remembers kinds found missing briefly and boundedly', async () => {
    const api = new KubeApi(clusterConfig());
    try {
      const discovery = new Discovery(api);
      const group = `absent-${randomBytes(3).toString('hex')}.example.io/v1`;
      for (let i = 0; i < 1500; i++)
        await expect(discovery.resource(group, `Kind${i}`)).rejects.toThrow('the cluster serves no kind');
      const held = (discovery as unknown as { missed: Map<string, number> }).missed;
      expect(held.size).toBeGreaterThan(0);
      expect(held.size).toBeLessThanOrEqual(1024);
      // Within half a second the answer is remembered; after it, asked again.
      const at = Date.now();
      await expect(discovery.resource(group, 'Kind1499')).rejects.toThrow('the cluster serves no kind');
      expect(held.get(`${group}|Kind1499`)).toBeLessThanOrEqual(at);
      await new Promise((resolve) => setTimeout(resolve, 600));
      await expect(discovery.resource(group, 'Kind1499')).rejects.toThrow('the cluster serves no kind');
      expect(held.get(`${group}|Kind1499`)).toBeGreaterThan(at);
    } finally {
      api.close();
    }
  }, 120_000);

  it('fails the deploy naming the kind when its CRD never comes', async () => {
    const other = `never-${randomBytes(3).toString('hex')}.example.io`;
    const dir = await manifestDir({
      'settings.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: never-settings, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {region: south}
`,
      'gadget.yaml': `apiVersion: ${other}/v1
kind: Gadget
metadata:
  name: lonely
  annotations: {argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true}
`,
    });
    const run = await mooring('deploy', dir, ...flags('4s'));
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBe(2);
    expect(run.stderr).toContain(`the cluster did not serve Gadget in ${other}/v1 within 4 s`);
    // What the option let through was written, as Argo CD writes the rest of a sync.
    expect(await exists('configmap', 'never-settings', '-n', ns())).toBe(true);
  }, 60_000);
});
