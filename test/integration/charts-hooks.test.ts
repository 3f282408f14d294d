// The corpus' certgen chart (test/fixtures/charts/certgen: an ingress controller's admission certificates made by
// hook Jobs) on the test bed, whose API server runs the ServiceAccount admission plugin: a Job whose ServiceAccount
// is gone gets no Pod and never completes. Helm's hook rules, as `helm install` / `helm upgrade` apply them: the
// ServiceAccount, Role and RoleBinding hooks run in each phase of each event they name and are deleted once the
// whole phase succeeded, after the Job that runs under them; install hooks on a release's first deploy, even
// when the namespace already holds other objects of the same owner (its CRDs).
import { cp, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api, BatchV1Api, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { Ledger } from '../../src/report/ledger.ts';
import {
  clusterConfig,
  crdManifest,
  deployTo,
  eventually,
  kubeConfig,
  kubectl,
  manifestDir,
  mooring,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const FIXTURE = join(import.meta.dirname, '../fixtures/charts/certgen');

/** The chart in a folder of its own, so that a test may give it other values. */
async function chartCopy(): Promise<string> {
  const dir = join(await tempDir('mooring-certgen-'), 'certgen');
  await cp(FIXTURE, dir, { recursive: true });
  return dir;
}

/** The chart's files under `under/`, for a commit. */
async function chartFiles(under: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(FIXTURE, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) {
      const path = join(entry.parentPath, entry.name);
      files[`${under}/${path.slice(FIXTURE.length + 1)}`] = await readFile(path, 'utf8');
    }
  return files;
}

const SA = 'serviceaccount/certgen-admission';
const ROLE = 'role.rbac.authorization.k8s.io/certgen-admission';
const BINDING = 'rolebinding.rbac.authorization.k8s.io/certgen-admission';
const CREATE = 'job.batch/certgen-admission-create';
const PATCH = 'job.batch/certgen-admission-patch';

/** The hook lines of a deploy's output, in order, without their outcome. */
function hookLines(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((l) => / \([a-z-]+ hook\) /.test(l))
    .map((l) => l.replace(/ succeeded, deleted$/, ' ok'));
}

/** Each phase as Helm runs it: by weight, then name, then kind; deleted only once the phase succeeded. */
function expectedHooks(event: 'install' | 'upgrade'): string[] {
  const line = (object: string, phase: string) => `${object} (${phase}-${event} hook) ok`;
  return [
    line(SA, 'pre'),
    line(ROLE, 'pre'),
    line(BINDING, 'pre'),
    line(CREATE, 'pre'),
    line(SA, 'post'),
    line(ROLE, 'post'),
    line(BINDING, 'post'),
    line(PATCH, 'post'),
  ];
}

describe('certgen chart: hooks on four events with their ServiceAccount', () => {
  const ns = useNamespace('charts-hooks');
  beforeAll(() => {
    process.env.MOORING_HELM = testbed().tools.helm;
  });

  /** The hook objects left in the namespace (none, once each phase deleted its own). */
  const leftOver = async () => {
    const namespace = ns();
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const rbac = kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    const batch = kubeConfig().makeApiClient(BatchV1Api);
    const names = [
      ...(await core.listNamespacedServiceAccount({ namespace })).items.map((o) => `sa/${o.metadata?.name}`),
      ...(await rbac.listNamespacedRole({ namespace })).items.map((o) => `role/${o.metadata?.name}`),
      ...(await rbac.listNamespacedRoleBinding({ namespace })).items.map(
        (o) => `binding/${o.metadata?.name}`,
      ),
      ...(await batch.listNamespacedJob({ namespace })).items.map((o) => `job/${o.metadata?.name}`),
    ];
    // The namespace's own default ServiceAccount is no hook.
    return names.filter((n) => n !== 'sa/default');
  };
  const gatewayImage = async () =>
    (
      await kubeConfig()
        .makeApiClient(AppsV1Api)
        .readNamespacedDeployment({ name: 'certgen-gateway', namespace: ns() })
    ).spec?.template.spec?.containers[0]?.image;

  it('install, redeploy, a values change: each event runs its hooks in both phases, deleted after each phase', async () => {
    const chart = await chartCopy();
    const install = await deployTo(ns(), chart, '--timeout', '90s');
    expect(install.code, install.stdout + install.stderr).toBe(0);
    // The Jobs completed: under ServiceAccount admission, their ServiceAccount was there when their Pods were made.
    expect(hookLines(install.stdout)).toEqual(expectedHooks('install'));
    const lines = install.stdout.split('\n');
    const created = lines.findIndex((l) => l.startsWith('deployment.apps/certgen-gateway created'));
    expect(created).toBeGreaterThan(lines.indexOf(`${CREATE} (pre-install hook) succeeded, deleted`));
    expect(created).toBeLessThan(lines.indexOf(`${PATCH} (post-install hook) succeeded, deleted`));
    expect(
      await eventually('hook objects deleted', async () => ((await leftOver()).length ? undefined : [])),
    ).toEqual([]);
    expect(await gatewayImage()).toBe('gateway:1.0');

    // Nothing changed: as `helm upgrade` does, the upgrade hooks run again; the release objects are unchanged.
    const again = await deployTo(ns(), chart, '--timeout', '90s');
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(hookLines(again.stdout)).toEqual(expectedHooks('upgrade'));
    expect(again.stdout).toContain('deployment.apps/certgen-gateway unchanged');

    // A values change: the upgrade hooks again, around the Deployment's change.
    const values = join(await tempDir(), 'values.yaml');
    await writeFile(values, 'gateway: {image: "gateway:1.1"}\n');
    const changed = await deployTo(ns(), chart, '--values', values, '--timeout', '90s');
    expect(changed.code, changed.stdout + changed.stderr).toBe(0);
    expect(hookLines(changed.stdout)).toEqual(expectedHooks('upgrade'));
    expect(changed.stdout).toContain('deployment.apps/certgen-gateway configured');
    expect(await gatewayImage()).toBe('gateway:1.1');
    expect(
      await eventually('hook objects deleted', async () => ((await leftOver()).length ? undefined : [])),
    ).toEqual([]);
  }, 300_000);
});

describe('certgen chart after its CRDs in the same namespace', () => {
  const ns = useNamespace('charts-hooks-crds');
  const group = `certgen${Date.now().toString(36)}.example.com`;
  beforeAll(() => {
    process.env.MOORING_HELM = testbed().tools.helm;
  });
  afterAll(async () => {
    await kubectl('delete', 'crd', `gateways.${group}`, '--wait=false', '--ignore-not-found');
  });

  it('runs the install hooks: the chart is a release of its own, not an upgrade of the CRD set', async () => {
    const crds = await manifestDir({ 'crds.yaml': crdManifest(group, 'gateways', 'Gateway') });
    const first = await deployTo(ns(), crds);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const chart = await deployTo(ns(), await chartCopy(), '--timeout', '90s');
    expect(chart.code, chart.stdout + chart.stderr).toBe(0);
    expect(hookLines(chart.stdout)).toEqual(expectedHooks('install'));
  }, 180_000);
});

describe('certgen chart in the agent: install, upgrade, rollback', () => {
  const ns = useNamespace('charts-hooks-agent');
  const agentNs = useNamespace('charts-hooks-agent-mooring');

  it('records install hooks, then upgrade hooks; a rollback runs none of them, as helm rollback', async () => {
    process.env.MOORING_HELM = testbed().tools.helm;
    const { repo, receiver, configFile, first, agent } = await startGitAgent({
      repo: `charts-hooks-${Date.now().toString(36)}/certgen`,
      files: await chartFiles('certgen'),
      cluster: { namespace: agentNs() },
      deployments: [
        {
          name: 'certgen',
          namespace: ns(),
          helm: { chart: 'certgen', valuesFiles: ['certgen/values.yaml'] },
        },
      ],
    });
    const api = new KubeApi(clusterConfig());
    const releases = async () => (await new Ledger(api, agentNs()).read('certgen')).releases;
    /** A release's hook runs as `phase object outcome deleted`. */
    const runs = (release: Awaited<ReturnType<typeof releases>>[number] | undefined) =>
      (release?.hooks ?? []).map((h) => `${h.hook} ${h.object} ${h.outcome}${h.deleted ? ' deleted' : ''}`);
    const expected = (event: string) =>
      ['pre', 'post'].flatMap((phase) => [
        `${phase}-${event} ServiceAccount ${ns()}/certgen-admission succeeded deleted`,
        `${phase}-${event} Role ${ns()}/certgen-admission succeeded deleted`,
        `${phase}-${event} RoleBinding ${ns()}/certgen-admission succeeded deleted`,
        `${phase}-${event} Job ${ns()}/certgen-admission-${phase === 'pre' ? 'create' : 'patch'} succeeded deleted`,
      ]);
    const image = async () =>
      (
        await kubeConfig()
          .makeApiClient(AppsV1Api)
          .readNamespacedDeployment({ name: 'certgen-gateway', namespace: ns() })
      ).spec?.template.spec?.containers[0]?.image;
    try {
      expect(await eventually('install', async () => receiver.ended(first), 90_000)).toMatchObject({
        state: 'success',
      });
      expect(runs((await releases())[0])).toEqual(expected('install'));

      const upgraded = await repo.commit({
        'certgen/values.yaml': (await readFile(join(FIXTURE, 'values.yaml'), 'utf8')).replace(
          'gateway:1.0',
          'gateway:1.1',
        ),
      });
      expect(await eventually('upgrade', async () => receiver.ended(upgraded), 90_000)).toMatchObject({
        state: 'success',
      });
      expect(runs((await releases())[0])).toEqual(expected('upgrade'));
      expect(await image()).toBe('gateway:1.1');

      // The chart has no rollback hooks: `helm rollback` would run none, and neither does mooring.
      const back = await mooring('rollback', 'certgen', '--config', configFile);
      expect(back.code, back.stdout + back.stderr).toBe(0);
      const rolled = (await releases())[0];
      expect(rolled).toMatchObject({ trigger: 'rollback', result: 'stable' });
      expect(runs(rolled)).toEqual([]);
      expect(await image()).toBe('gateway:1.0');
    } finally {
      api.close();
      await agent.stop();
    }
  }, 300_000);
});
