// Prune with an inventory, on the real test bed: a running agent deletes the objects of a file removed from the
// Git repository at the next sync and says so in its commit status and release; an object annotated
// mooring.io/prune: disabled survives; an object that another deployment also applies is never pruned; manifests
// that render nothing prune nothing and fail the sync; versions beyond the history are collected while those a
// live workload refers to stay. `mooring deploy --prune` does the same for an application.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { InventoryStore } from '../../src/kube/inventory.ts';
import { githubStatusValidator } from '../contract/github-openapi.ts';
import { proxiedServer } from './fault-helpers.ts';
import { api, ledgerOf } from './faults-support.ts';
import {
  configMapManifest,
  crdManifest,
  deleteNamespace,
  deploymentManifest,
  eventually,
  kubeConfig,
  kubectl,
  manifestDir,
  mooring,
  serviceAccountKubeconfig,
  startAgent,
  startGitAgent,
  tempDir,
  testbed,
  unended,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';
import { apps } from './scale-fixtures.ts';

const deployment = (name: string, configMap: string) => stringify(deploymentManifest({ name, configMap }));

const APP = {
  'app/web.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
---
${deployment('web', 'settings')}`,
  'app/extra.yaml': `apiVersion: v1
kind: Service
metadata: {name: extra-svc}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
  # Nothing refers to it: versioned because it says so, so that prune deletes every version of an artifact.
  annotations: {strategy.spinnaker.io/versioned: "true"}
data: {a: "1"}
`,
  'app/keep.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: keep
  annotations: {mooring.io/prune: disabled, strategy.spinnaker.io/versioned: "false"}
data: {a: "1"}
`,
  'app/shared.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  annotations: {strategy.spinnaker.io/versioned: "false"}
data: {a: "1"}
`,
  'other/shared.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  annotations: {strategy.spinnaker.io/versioned: "false"}
data: {a: "1"}
`,
  'other/other.yaml': `apiVersion: v1
kind: Service
metadata: {name: other}
spec:
  selector: {app: other}
  ports: [{port: 80}]
`,
};

describe('prune', () => {
  const ns = useNamespace('prune');
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  /** `mooring deploy` flags of application `application` in the test's namespace, with a timeout when given. */
  const appFlags = (application: string, timeout?: string) => [
    '--kubeconfig',
    testbed().kube.kubeconfig,
    '-n',
    ns(),
    '--application',
    application,
    ...(timeout ? ['--timeout', timeout] : []),
  ];

  async function exists(kind: string, name: string): Promise<boolean> {
    const result = await kubectl('-n', ns(), 'get', kind, name, '-o', 'name', '--ignore-not-found');
    return result.stdout.trim() !== '';
  }

  async function names(kind: string): Promise<string[]> {
    const result = await kubectl('-n', ns(), 'get', kind, '-o', 'jsonpath={.items[*].metadata.name}');
    return result.stdout.trim().split(/\s+/).filter(Boolean).sort();
  }

  it('deletes the objects of a removed file at the next sync, keeps annotated and shared ones, and refuses an empty render', async () => {
    const suffix = Date.now().toString(36);
    const kube = api();
    cleanups.push(() => kube.close());
    const agentNs = `mooring-prune-${suffix}`;
    cleanups.push(async () => {
      await deleteNamespace(agentNs);
    });
    const secrets = await tempDir();
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `prune-${suffix}/app`,
      files: APP,
      cluster: { name: 'prune', namespace: agentNs },
      deployments: [
        { name: 'shop', namespace: ns(), paths: ['app'] },
        { name: 'other', namespace: ns(), paths: ['other'] },
      ],
      extra: { audit: { file: `${secrets}/audit.jsonl` } },
    });
    cleanups.push(() => agent.stop());
    const statuses = () => receiver.statuses();
    const ended = (sha: string, context: string) =>
      statuses().find((s) => s.sha === sha && s.context.endsWith(context) && s.state !== 'pending');
    await eventually(
      'the first commit deployed by both deployments',
      async () => (ended(first, '/shop') && ended(first, '/other') ? true : undefined),
      90_000,
    );
    expect(ended(first, '/shop')?.state).toBe('success');
    expect(await exists('service', 'extra-svc')).toBe(true);
    expect(await names('configmap')).toEqual(
      expect.arrayContaining(['extra-v000', 'keep', 'settings-v000', 'shared']),
    );
    const inventory = await new InventoryStore(kube, agentNs).read('shop');
    expect(inventory?.map((e) => `${e.kind} ${e.artifact ?? e.name}`).sort()).toEqual([
      'ConfigMap extra',
      'ConfigMap keep',
      'ConfigMap settings',
      'ConfigMap shared',
      'Deployment web',
      'Service extra-svc',
    ]);

    // extra.yaml, keep.yaml and shop's copy of shared.yaml are removed from the repository.
    const second = await repo.commit({
      'app/extra.yaml': null,
      'app/keep.yaml': null,
      'app/shared.yaml': null,
    });
    await eventually('the removal synced', async () => ended(second, '/shop'), 90_000);
    const done = ended(second, '/shop');
    expect(done?.state).toBe('success');
    expect(done?.description).toMatch(/^2\/2 stable in .*, 2 pruned$/);
    expect(await exists('service', 'extra-svc')).toBe(false);
    const left = await names('configmap');
    expect(left).not.toContain('extra-v000');
    expect(left).toEqual(expect.arrayContaining(['keep', 'settings-v000', 'shared']));
    const release = (await ledgerOf(kube, agentNs, 'shop')).releases[0];
    expect(release?.commit).toBe(second);
    expect(
      release?.objects
        .filter((o) => o.action === 'pruned')
        .map((o) => o.object)
        .sort(),
    ).toEqual([`ConfigMap ${ns()}/extra-v000`, `Service ${ns()}/extra-svc`]);
    expect(agent.logged('pruned').map((r) => r.object)).toHaveLength(2);
    // The audit records are appended after the commit status is posted: waited for, not read at once.
    const audit = await eventually('the removal audited', async () => {
      const records = (await readFile(join(secrets, 'audit.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { commit: string; action: string; object: unknown });
      return records.filter((r) => r.commit === second && r.action === 'pruned').length >= 2
        ? records
        : undefined;
    });
    expect(
      audit
        .filter((r) => r.commit === second && r.action === 'pruned')
        .map((r) => r.object)
        .sort(),
    ).toEqual([`ConfigMap ${ns()}/extra-v000`, `Service ${ns()}/extra-svc`]);

    // The path now holds only a file without objects: nothing is applied or pruned, and the commit fails.
    const third = await repo.commit({ 'app/web.yaml': '# nothing here yet\n' });
    await eventually('the empty render reported', async () => ended(third, '/shop'), 90_000);
    expect(ended(third, '/shop')?.state).toBe('failure');
    expect(ended(third, '/shop')?.description).toMatch(/renders no objects.*allowEmpty: true/);
    expect(await exists('deployment', 'web')).toBe(true);
    expect(await names('configmap')).toEqual(expect.arrayContaining(['keep', 'settings-v000', 'shared']));
    expect(unended(statuses())).toEqual([]);
    const validate = githubStatusValidator();
    for (const request of receiver.captured) expect(validate(request), request.path).toEqual([]);
  }, 240_000);

  it('collects versions beyond the history, keeping those a live workload refers to', async () => {
    const suffix = Date.now().toString(36);
    const kube = api();
    cleanups.push(() => kube.close());
    const agentNs = `mooring-prune-h-${suffix}`;
    cleanups.push(async () => {
      await deleteNamespace(agentNs);
    });
    // `legacy` names the first version literally (no replicas: it runs no Pods): it must keep v000 alive.
    const files = (round: number) => ({
      'app.yaml': yamlDocuments(
        configMapManifest('limits', { round: String(round) }),
        deploymentManifest({ name: 'legacy', replicas: 0, container: 'c', configMap: 'limits-v000' }),
      ),
    });
    const { repo, first, agent } = await startGitAgent({
      repo: `prune-history-${suffix}/app`,
      files: files(0),
      cluster: { name: 'history', namespace: agentNs },
      // `legacy` names a version, not `limits`: every ConfigMap versioned all the same.
      deployments: [{ name: 'limits', namespace: ns(), versionHistory: 2, versioning: 'all' }],
      statuses: false,
    });
    let last = first;
    cleanups.push(() => agent.stop());
    const deployed = async (sha: string) =>
      (await ledgerOf(kube, agentNs, 'limits')).releases.find(
        (r) => r.commit === sha && r.result === 'stable',
      );
    await eventually('round 0 deployed', () => deployed(last), 90_000);
    for (let round = 1; round <= 5; round++) {
      last = await repo.commit(files(round));
      await eventually(`round ${round} deployed`, () => deployed(last), 90_000);
    }
    const versions = (await names('configmap')).filter((n) => n.startsWith('limits-'));
    // Two newest kept by the history, v000 by the Deployment that names it; v001..v003 collected.
    expect(versions).toEqual(['limits-v000', 'limits-v004', 'limits-v005']);
  }, 240_000);

  it('numbers the versions of an artifact that comes back above those its releases recorded', async () => {
    const suffix = Date.now().toString(36);
    const kube = api();
    cleanups.push(() => kube.close());
    const agentNs = `mooring-prune-r-${suffix}`;
    cleanups.push(async () => {
      await deleteNamespace(agentNs);
    });
    const app = (round: string) => ({
      'app.yaml': yamlDocuments(
        configMapManifest('returning', { round }),
        deploymentManifest({ name: 'returns', replicas: 0, container: 'c', configMap: 'returning' }),
      ),
      'keep.yaml': yamlDocuments(
        configMapManifest('anchor-for-returning', { a: '1' }, { 'strategy.spinnaker.io/versioned': 'false' }),
      ),
    });
    const { repo, first, agent, configFile } = await startGitAgent({
      repo: `prune-return-${suffix}/app`,
      files: app('a'),
      cluster: { name: 'returns', namespace: agentNs },
      deployments: [{ name: 'returns', namespace: ns(), prune: true }],
      statuses: false,
    });
    cleanups.push(() => agent.stop());
    const deployed = async (sha: string) =>
      (await ledgerOf(kube, agentNs, 'returns')).releases.find(
        (r) => r.commit === sha && r.result === 'stable',
      );
    const versions = async () => (await names('configmap')).filter((n) => n.startsWith('returning-'));
    await eventually('v000 deployed', () => deployed(first), 90_000);
    const second = await repo.commit(app('b'));
    await eventually('v001 deployed', () => deployed(second), 90_000);
    expect(await versions()).toEqual(['returning-v000', 'returning-v001']);
    // The workload and its configuration leave the set: prune deletes them, every version included.
    const gone = await repo.commit({ 'app.yaml': null });
    await eventually('removed', () => deployed(gone), 90_000);
    await eventually(
      'every version pruned',
      async () => (await versions()).length === 0 || undefined,
      90_000,
    );
    // Back with other content: a new number, never returning-v000 again (the ledger names it for content "a").
    // `mooring diff` shows the name the next sync applies: the agent is stopped until it is read.
    await agent.stop();
    const back = await repo.commit(app('c'));
    const diff = await mooring('diff', '--deployment', 'returns', '--config', configFile);
    expect(diff.code, diff.stdout + diff.stderr).toBe(1);
    expect(diff.stdout).toContain('returning-v002');
    expect(diff.stdout).not.toContain('returning-v000');
    const again = startAgent({ file: configFile });
    cleanups.push(() => again.stop());
    await eventually('back', () => deployed(back), 90_000);
    expect(await versions()).toEqual(['returning-v002']);
    const release = await deployed(back);
    expect(release?.versions).toEqual(['ConfigMap returning-v002']);
    // A rollback to the first release restores the name it recorded for content "a" (pruned since), not v003.
    const firstRelease = await deployed(first);
    const undo = await mooring(
      'rollback',
      'returns',
      '--to',
      String(firstRelease?.id),
      '--config',
      configFile,
    );
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(await versions()).toEqual(['returning-v000', 'returning-v002']);
    const restored = JSON.parse(
      (await kubectl('-n', ns(), 'get', 'configmap', 'returning-v000', '-o', 'json')).stdout,
    ) as { data: Record<string, string> };
    expect(restored.data).toEqual({ round: 'a' });
    const workload = await kubectl('-n', ns(), 'get', 'deployment', 'returns', '-o', 'json');
    expect(workload.stdout).toContain('"name": "returning-v000"');
  }, 300_000);

  it('keeps the versions a custom kind of render.referencePaths refers to, in the history and in prune', async () => {
    // A custom kind whose controller keeps copies of it, each with the configuration it ran (as Knative keeps
    // Revisions): the copies are not in the set, but render.referencePaths says where they name a ConfigMap.
    const suffix = Date.now().toString(36);
    const group = `refs-${suffix}.mooring.test`;
    const crds = await manifestDir({
      'crds.yaml': `${crdManifest(group, 'sites', 'Site')}---\n${crdManifest(group, 'siterevisions', 'SiteRevision')}`,
    });
    const created = await kubectl('apply', '-f', crds);
    expect(created.code, created.stderr).toBe(0);
    cleanups.push(async () => {
      await kubectl('delete', '-f', crds, '--wait=false');
    });
    await kubectl('wait', '--for=condition=Established', `crd/sites.${group}`, `crd/siterevisions.${group}`);
    const kube = api();
    cleanups.push(() => kube.close());
    const agentNs = `mooring-prune-r-${suffix}`;
    cleanups.push(async () => {
      await deleteNamespace(agentNs);
    });
    const config = (color: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: site-config
data: {color: ${color}}
`;
    const site = (configMap?: string) => `apiVersion: ${group}/v1
kind: Site
metadata: {name: shop}
spec: {${configMap ? `configMap: ${configMap}` : 'static: true'}}
`;
    const { repo, first, agent } = await startGitAgent({
      repo: `prune-custom-refs-${suffix}/app`,
      files: { 'site.yaml': site('site-config'), 'config.yaml': config('blue') },
      cluster: { name: 'custom-refs', namespace: agentNs },
      deployments: [{ name: 'site', namespace: ns(), versionHistory: 1 }],
      extra: {
        render: {
          referencePaths: [
            { group, kind: 'Site', path: 'spec.configMap', target: 'ConfigMap' },
            { group, kind: 'SiteRevision', path: 'spec.configMap', target: 'ConfigMap' },
          ],
        },
      },
      statuses: false,
    });
    cleanups.push(() => agent.stop());
    const deployed = async (sha: string) =>
      (await ledgerOf(kube, agentNs, 'site')).releases.find((r) => r.commit === sha && r.result === 'stable');
    await eventually('the first commit deployed', () => deployed(first), 90_000);
    expect(await names('configmap')).toContain('site-config-v000');
    // The controller's copy of the Site at its first version.
    const copy = await manifestDir({
      'copy.yaml': `apiVersion: ${group}/v1
kind: SiteRevision
metadata: {name: shop-1, namespace: ${ns()}}
spec: {configMap: site-config-v000}
`,
    });
    expect((await kubectl('apply', '-f', copy)).code).toBe(0);

    // Two new versions: the history (one version) keeps the newest, and v000, which the copy names; v001 is
    // collected.
    const second = await repo.commit({ 'config.yaml': config('green') });
    await eventually('the second commit deployed', () => deployed(second), 90_000);
    const third = await repo.commit({ 'config.yaml': config('red') });
    await eventually('the third commit deployed', () => deployed(third), 90_000);
    let versions = (await names('configmap')).filter((n) => n.startsWith('site-config-'));
    expect(versions).toEqual(['site-config-v000', 'site-config-v002']);

    // The ConfigMap leaves the set: prune deletes the version nothing refers to and keeps the copy's.
    const fourth = await repo.commit({ 'site.yaml': site(), 'config.yaml': null });
    await eventually('the fourth commit deployed', () => deployed(fourth), 90_000);
    versions = (await names('configmap')).filter((n) => n.startsWith('site-config-'));
    expect(versions).toEqual(['site-config-v000']);
    const recorded = await new InventoryStore(kube, agentNs).read(`site`);
    expect(recorded?.map((e) => `${e.kind} ${e.name}`)).toContain('ConfigMap site-config-v000');

    // Once the copy is gone, the next sync prunes the version.
    expect((await kubectl('delete', '-f', copy)).code).toBe(0);
    const fifth = await repo.commit({ 'site.yaml': `${site()}# again\n` });
    await eventually('the fifth commit deployed', () => deployed(fifth), 90_000);
    expect((await names('configmap')).filter((n) => n.startsWith('site-config-'))).toEqual([]);
  }, 300_000);

  it('mooring deploy --prune deletes what an earlier deploy of the application applied, and only with --prune', async () => {
    const dir = await manifestDir({
      'a.yaml': `apiVersion: v1
kind: Service
metadata: {name: cli-a}
spec: {selector: {app: a}, ports: [{port: 80}]}
`,
      'b.yaml': `apiVersion: v1
kind: Service
metadata: {name: cli-b}
spec: {selector: {app: b}, ports: [{port: 80}]}
`,
    });
    const base = appFlags('cli-app', '1m');
    const first = await mooring(...['deploy', join(dir, 'a.yaml'), join(dir, 'b.yaml'), ...base]);
    expect(first.code, first.stderr).toBe(0);
    expect(await exists('service', 'cli-b')).toBe(true);

    // Without --prune, b stays; a dry run with --prune says what would go.
    const kept = await mooring(...['deploy', join(dir, 'a.yaml'), ...base]);
    expect(kept.code, kept.stderr).toBe(0);
    expect(await exists('service', 'cli-b')).toBe(true);
    const preview = await mooring(...['deploy', join(dir, 'a.yaml'), ...base, '--prune', '--dry-run']);
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toContain('service/cli-b would be pruned');
    expect(await exists('service', 'cli-b')).toBe(true);

    const pruned = await mooring(...['deploy', join(dir, 'a.yaml'), ...base, '--prune']);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain('service/cli-b pruned');
    expect(pruned.stdout).toMatch(/1\/1 stable in .*, 1 pruned/);
    expect(await exists('service', 'cli-b')).toBe(false);
    expect(await exists('service', 'cli-a')).toBe(true);

    // A file with no objects is refused: nothing pruned.
    await writeFile(join(dir, 'empty.yaml'), '# nothing\n');
    const empty = await mooring(...['deploy', join(dir, 'empty.yaml'), ...base, '--prune']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/renders no objects.*--allow-empty/);
    expect(await exists('service', 'cli-a')).toBe(true);
  }, 180_000);
  // What the tools whose manifests mooring deploys mean by "never delete this": a chart's CRDs and claims marked
  // keep by Helm, a Namespace marked by an Argo CD user, an object marked for Flux. Deleting such a CRD deletes every
  // custom resource of its kind in the cluster.
  it("keeps what Helm's resource-policy, Argo CD's Prune=false and Flux's prune: disabled keep, and says why", async () => {
    const cm = (name: string, annotations: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}
  annotations: {strategy.spinnaker.io/versioned: "false"${annotations ? `, ${annotations}` : ''}}
data: {a: "1"}
`;
    const dir = await manifestDir({
      'stay.yaml': cm('stay', ''),
      'marked.yaml': [
        cm('helm-kept', 'helm.sh/resource-policy: keep'),
        cm('argo-kept', 'argocd.argoproj.io/sync-options: "ServerSideApply=true, Prune=false"'),
        cm('argo-confirm', 'argocd.argoproj.io/sync-options: Prune=confirm'),
        cm('flux-kept', 'kustomize.toolkit.fluxcd.io/prune: disabled'),
        cm('plain', ''),
        cm('argo-other', 'argocd.argoproj.io/sync-options: Validate=false'),
        // Kept only when the application itself is deleted (deployment-sets.test.ts): a sync prunes it.
        cm('argo-delete', 'argocd.argoproj.io/sync-options: Delete=false'),
      ].join('---\n'),
    });
    const base = appFlags('foreign-keep');
    const first = await mooring(...['deploy', dir, ...base]);
    expect(first.code, first.stderr).toBe(0);
    const pruned = await mooring(...['deploy', join(dir, 'stay.yaml'), ...base, '--prune']);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain('configmap/plain pruned');
    expect(pruned.stdout).toContain('configmap/argo-other pruned');
    expect(pruned.stdout).toContain('configmap/argo-delete pruned');
    expect(pruned.stdout).toMatch(/3 pruned/);
    for (const [name, why] of [
      ['helm-kept', 'helm.sh/resource-policy: keep'],
      ['argo-kept', 'argocd.argoproj.io/sync-options: Prune=false'],
      ['argo-confirm', 'argocd.argoproj.io/sync-options: Prune=confirm'],
      ['flux-kept', 'kustomize.toolkit.fluxcd.io/prune: disabled'],
    ] as const) {
      expect(await exists('configmap', name), name).toBe(true);
      expect(pruned.stdout + pruned.stderr).toContain(why);
    }
    expect(await exists('configmap', 'plain')).toBe(false);
  }, 180_000);

  it('prunes the highest sync wave first, as Argo CD does, and within a wave workloads before what they use', async () => {
    const wave = (n: number) =>
      `argocd.argoproj.io/sync-wave: "${n}", strategy.spinnaker.io/versioned: "false"`;
    const dir = await manifestDir({
      'stay.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: waves-stay, annotations: {${wave(0)}}}
data: {a: "1"}
`,
      'gone.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: waves-early, annotations: {${wave(-1)}}}
data: {a: "1"}
---
apiVersion: v1
kind: Service
metadata: {name: waves-middle, annotations: {${wave(0)}}}
spec:
  selector: {app: waves-late}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: waves-late-config, annotations: {${wave(5)}}}
data: {a: "1"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: waves-late, annotations: {${wave(5)}}}
spec:
  replicas: 1
  selector: {matchLabels: {app: waves-late}}
  template:
    metadata: {labels: {app: waves-late}}
    spec: {containers: [{name: web, image: "web:1"}]}
`,
    });
    const base = appFlags('waves-prune');
    const first = await mooring(...['deploy', dir, ...base]);
    expect(first.code, first.stderr).toBe(0);
    const pruned = await mooring(...['deploy', join(dir, 'stay.yaml'), ...base, '--prune']);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout.split('\n').filter((l) => /^[a-z.]+\/\S+ pruned$/.test(l))).toEqual([
      'deployment/waves-late pruned',
      'configmap/waves-late-config pruned',
      'service/waves-middle pruned',
      'configmap/waves-early pruned',
    ]);
  }, 180_000);

  // The waves are the commit's to choose: forty versioned ConfigMaps in forty waves are forty runs of the prune, and
  // who refers to each version is read once, not once a wave (nothing deleted between them refers to anything).
  it('reads who refers to the versions once when a commit spreads them over many waves', async () => {
    const bed = await proxiedServer((...steps) => {
      cleanups.push(...steps);
    });
    const versioned = (i: number) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: spread-${i}
  annotations: {argocd.argoproj.io/sync-wave: "${i}", strategy.spinnaker.io/versioned: "true"}
data: {a: "${i}"}
`;
    const dir = await manifestDir({
      'stay.yaml': versioned(-1).replace('spread--1', 'spread-stay'),
      'gone.yaml': Array.from({ length: 40 }, (_, i) => versioned(i)).join('---\n'),
    });
    const base = ['--kubeconfig', bed.kubeconfig, '-n', ns(), '--application', 'spread', '--no-wait'];
    const first = await mooring(...['deploy', dir, ...base]);
    expect(first.code, first.stderr).toBe(0);
    const from = bed.proxy.requests.length;
    const pruned = await mooring(...['deploy', join(dir, 'stay.yaml'), ...base, '--prune']);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/40 pruned/);
    const replicaSetLists = bed.proxy.requests
      .slice(from)
      .filter(
        (r) =>
          r.method === 'GET' &&
          (r.path.split('?')[0] ?? '') === `/apis/apps/v1/namespaces/${ns()}/replicasets`,
      );
    expect(replicaSetLists.length).toBeLessThan(5);
  }, 180_000);

  it('prunes 120 objects of 40 removed applications in one deploy, leaving the 60 kept ones running', async () => {
    const dir = await manifestDir({ 'kept.yaml': apps(20, 'kept'), 'gone.yaml': apps(40, 'gone') });
    const base = appFlags('many', '5m');
    const first = await mooring(...['deploy', dir, ...base]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/180\/180 stable/);
    const pruned = await mooring(...['deploy', join(dir, 'kept.yaml'), ...base, '--prune']);
    expect(pruned.code, pruned.stderr).toBe(0);
    const lines = pruned.stdout.split('\n').filter((l) => /^[a-z.]+\/\S+ pruned$/.test(l));
    expect(lines).toHaveLength(120);
    // Reverse apply order: every workload before any Service, every Service before any ConfigMap.
    const firstOf = (kind: string) => lines.findIndex((l) => l.startsWith(`${kind}/`));
    const lastOf = (kind: string) => lines.map((l) => l.startsWith(`${kind}/`)).lastIndexOf(true);
    expect(lastOf('deployment')).toBeLessThan(firstOf('service'));
    expect(lastOf('service')).toBeLessThan(firstOf('configmap'));
    expect(pruned.stdout).toMatch(/60\/60 stable in .*, 120 pruned/);
    expect((await names('service')).filter((n) => n.startsWith('gone-'))).toEqual([]);
    expect((await names('configmap')).filter((n) => n.startsWith('gone-'))).toEqual([]);
    expect((await names('service')).filter((n) => n.startsWith('kept-'))).toHaveLength(20);
    // Foreground deletion: the Deployments' ReplicaSets and Pods go with them.
    await eventually(
      'the removed workloads gone with their ReplicaSets',
      async () => ((await names('replicaset')).some((n) => n.startsWith('gone-')) ? undefined : true),
      120_000,
    );
    expect((await names('deployment')).filter((n) => n.startsWith('kept-'))).toHaveLength(20);
  }, 600_000);
  it('keeps in the inventory what it could not delete, and prunes it once it may', async () => {
    // Everything in the application's namespace except deleting Services; ConfigMaps in the records namespace.
    const rules = (deleteServices: boolean) => [
      {
        apiGroups: ['', 'apps'],
        resources: ['configmaps', 'secrets', 'deployments', 'replicasets', 'pods'],
        verbs: ['*'],
      },
      {
        apiGroups: [''],
        resources: ['services'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', ...(deleteServices ? ['delete'] : [])],
      },
    ];
    const {
      kubeconfig: restricted,
      agentNs,
      setRules,
    } = await restrictedDeployer(ns(), rules(false), cleanups);
    const dir = await manifestDir({
      'a.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: f-a, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {a: "1"}
`,
      'b.yaml': `apiVersion: v1
kind: Service
metadata: {name: f-b}
spec: {selector: {app: b}, ports: [{port: 80}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: f-b, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {b: "1"}
`,
    });
    const base = [
      '--kubeconfig',
      restricted,
      '-n',
      ns(),
      '--application',
      'faulty',
      '--agent-namespace',
      agentNs,
    ];
    const first = await mooring(...['deploy', dir, ...base]);
    expect(first.code, first.stdout + first.stderr).toBe(0);

    // The Service may not be deleted: the deploy fails naming it and the rule; the ConfigMap of b is pruned. Exit
    // code 1, not 2: something was written (the ConfigMap's delete).
    const refused = await mooring(...['deploy', join(dir, 'a.yaml'), ...base, '--prune']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/prune Service .*\/f-b: 403 .*cannot delete resource "services"/);
    expect(refused.stdout).toContain('configmap/f-b pruned');
    expect(await exists('service', 'f-b')).toBe(true);
    expect(await exists('configmap', 'f-b')).toBe(false);
    const recorded = await new InventoryStore(api(), agentNs).read(`cli.${ns()}.faulty`);
    expect(recorded?.map((e) => `${e.kind} ${e.name}`).sort()).toEqual(['ConfigMap f-a', 'Service f-b']);

    // Allowed now: the next deploy of the same files deletes what the last one could not.
    await setRules(rules(true));
    const again = await mooring(...['deploy', join(dir, 'a.yaml'), ...base, '--prune']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain('service/f-b pruned');
    expect(await exists('service', 'f-b')).toBe(false);
  }, 120_000);
  it('prunes nothing after a deploy that did not become stable, and records the objects it applied', async () => {
    const never = (ready: boolean) =>
      stringify(
        deploymentManifest({
          name: 'slow',
          container: 'c',
          progressDeadlineSeconds: 600,
          behavior: ready ? 'ready' : 'never-ready',
        }),
      );
    const dir = await manifestDir({
      'old.yaml': `apiVersion: v1
kind: Service
metadata: {name: unstable-old}
spec: {selector: {app: old}, ports: [{port: 80}]}
`,
      'slow.yaml': never(false),
      'ready.yaml': never(true),
    });
    const base = appFlags('unstable');
    const first = await mooring(...['deploy', join(dir, 'old.yaml'), ...base]);
    expect(first.code, first.stderr).toBe(0);
    const timedOut = await mooring(
      ...['deploy', join(dir, 'slow.yaml'), ...base, '--prune', '--timeout', '5s'],
    );
    expect(timedOut.code).toBe(1);
    expect(timedOut.stdout).not.toContain('pruned');
    expect(await exists('service', 'unstable-old')).toBe(true);
    // Both are recorded: the Service still to prune, the Deployment applied before the wait gave up.
    const recorded = await new InventoryStore(api(), 'mooring').read(`cli.${ns()}.unstable`);
    expect(recorded?.map((e) => `${e.kind} ${e.name}`).sort()).toEqual([
      'Deployment slow',
      'Service unstable-old',
    ]);
    const stable = await mooring(
      ...['deploy', join(dir, 'ready.yaml'), ...base, '--prune', '--timeout', '2m'],
    );
    expect(stable.code, stable.stdout + stable.stderr).toBe(0);
    expect(stable.stdout).toContain('service/unstable-old pruned');
    expect(await exists('deployment', 'slow')).toBe(true);
  }, 180_000);
});

describe('a cluster-scoped custom resource shared by two applications', () => {
  const ns = useNamespace('prune-shared-cr');
  const group = `gw${Date.now().toString(36)}.mooring.test`;
  afterAll(async () => {
    await kubectl('delete', 'crd', `gatewayclasses.${group}`, '--wait=false');
  });

  it('has no namespace in render and inventory, and is kept while the other application applies it', async () => {
    const crd = await manifestDir({
      'crd.yaml': crdManifest(group, 'gatewayclasses', 'GatewayClass', {}, 'Cluster'),
    });
    expect((await kubectl('apply', '-f', join(crd, 'crd.yaml'))).code).toBe(0);
    expect(
      (
        await kubectl(
          'wait',
          '--for',
          'condition=established',
          `crd/gatewayclasses.${group}`,
          '--timeout=60s',
        )
      ).code,
    ).toBe(0);
    const shared = `apiVersion: ${group}/v1
kind: GatewayClass
metadata: {name: shared-gc}
spec: {controllerName: example.com/gateway}
`;
    const own = (app: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${app}-settings}
data: {a: "1"}
`;
    const dir = await manifestDir({
      'gc.yaml': shared,
      'one.yaml': own('one'),
      'two.yaml': own('two'),
    });
    const env = testbed();
    const as = (app: string) => [
      '--kubeconfig',
      env.kube.kubeconfig,
      '-n',
      ns(),
      '--application',
      app,
      '--timeout',
      '1m',
    ];
    for (const app of ['one', 'two']) {
      const done = await mooring(
        'deploy',
        join(dir, 'gc.yaml'),
        join(dir, `${app}.yaml`),
        ...as(app),
        '--prune',
      );
      expect(done.code, done.stderr).toBe(0);
    }
    const kube = api();
    try {
      const store = new InventoryStore(kube, 'mooring');
      const inventories = await store.all();
      const entries = [...inventories.values()].flat().filter((e) => e.apiVersion === `${group}/v1`);
      expect(entries).toHaveLength(2);
      for (const e of entries) expect(e.namespace ?? '').toBe('');
    } finally {
      kube.close();
    }
    // Application one stops applying it: it is kept, since application two still does.
    const without = await mooring('deploy', join(dir, 'one.yaml'), ...as('one'), '--prune');
    expect(without.code, without.stderr).toBe(0);
    expect(without.stdout).not.toMatch(/gatewayclass.*pruned/);
    expect((await kubectl('get', `gatewayclasses.${group}`, 'shared-gc')).code).toBe(0);
  }, 180_000);
});

describe('prune without leave to read who refers to a version', () => {
  const ns = useNamespace('prune-blind');
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });
  const exists = async (kind: string, name: string) =>
    (await kubectl('-n', ns(), 'get', kind, name, '-o', 'name', '--ignore-not-found')).stdout.trim() !== '';

  /** A versioned ConfigMap keeping no version but its newest. */
  const hist = (value: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: hist
  annotations: {strategy.spinnaker.io/versioned: "true", strategy.spinnaker.io/max-version-history: "1"}
data: {a: "${value}"}
`;

  it('keeps the versions of a removed artifact and those past the history while it may not read who refers to them, and deletes them once it may', async () => {
    // Every verb on what it deploys; listing the other kinds that refer to ConfigMaps only once allowed.
    const deploys = {
      apiGroups: ['', 'apps'],
      resources: ['configmaps', 'secrets', 'deployments', 'replicasets', 'pods'],
      verbs: ['*'],
    };
    const referring = [
      {
        apiGroups: ['apps'],
        resources: ['statefulsets', 'daemonsets', 'controllerrevisions'],
        verbs: ['list'],
      },
      { apiGroups: ['batch'], resources: ['jobs', 'cronjobs'], verbs: ['list'] },
      {
        apiGroups: [''],
        resources: ['replicationcontrollers', 'podtemplates', 'serviceaccounts'],
        verbs: ['list'],
      },
      { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['list'] },
    ];
    const { kubeconfig, agentNs, setRules } = await restrictedDeployer(ns(), [deploys], cleanups);
    const dir = await manifestDir({
      'conf.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: blind
  annotations: {strategy.spinnaker.io/versioned: "true"}
data: {a: "1"}
`,
      'other.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: blind-other, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {b: "1"}
`,
      'hist.yaml': hist('1'),
    });
    const base = [
      '--kubeconfig',
      kubeconfig,
      '-n',
      ns(),
      '--application',
      'blind',
      '--agent-namespace',
      agentNs,
    ];
    const first = await mooring(...['deploy', dir, ...base]);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(await exists('configmap', 'blind-v000')).toBe(true);

    // The versioned ConfigMap leaves the set; who uses its version cannot be read (no list on CronJobs and the
    // rest): kept, said, and still in the inventory.
    // A new version of hist: its old one is past the history, and is kept the same way.
    await rm(join(dir, 'conf.yaml'));
    await writeFile(join(dir, 'hist.yaml'), hist('2'));
    const blind = await mooring(...['deploy', dir, ...base, '--prune']);
    expect(blind.code, blind.stdout + blind.stderr).toBe(0);
    expect(blind.stdout).toMatch(
      /blind-v000 not pruned: not known whether a live object refers to it \(.*403/,
    );
    expect(blind.stdout).toMatch(/hist-v000 kept: not known whether a live object refers to it \(.*403/);
    expect(await exists('configmap', 'blind-v000')).toBe(true);
    expect(await exists('configmap', 'hist-v000')).toBe(true);
    expect(await exists('configmap', 'hist-v001')).toBe(true);
    const recorded = await new InventoryStore(api(), agentNs).read(`cli.${ns()}.blind`);
    expect(recorded?.map((e) => `${e.kind} ${e.name}`).sort()).toEqual([
      'ConfigMap blind-other',
      'ConfigMap blind-v000',
      'ConfigMap hist-v001',
    ]);

    // Allowed to list them: nothing refers to either, and the next deploy deletes both.
    await setRules([deploys, ...referring]);
    await writeFile(join(dir, 'hist.yaml'), hist('3'));
    const again = await mooring(...['deploy', dir, ...base, '--prune']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain('configmap/blind-v000 pruned');
    expect(await exists('configmap', 'blind-v000')).toBe(false);
    expect(await exists('configmap', 'hist-v000')).toBe(false);
    expect(await exists('configmap', 'hist-v001')).toBe(false);
    expect(await exists('configmap', 'hist-v002')).toBe(true);
  }, 120_000);
});

/**
 * A ServiceAccount `deployer` of `namespace`, bound to a Role of `rules` there and to every verb on
 * ConfigMaps in a records namespace of its own; its kubeconfig, and a way to change its rules.
 */
async function restrictedDeployer(
  namespace: string,
  rules: V1PolicyRule[],
  cleanups: (() => Promise<void> | void)[],
) {
  const core = kubeConfig().makeApiClient(CoreV1Api);
  const rbac = kubeConfig().makeApiClient(RbacAuthorizationV1Api);
  const agentNs = `${namespace}-records`;
  await core.createNamespace({ body: { metadata: { name: agentNs } } });
  cleanups.push(async () => {
    await core.deleteNamespace({ name: agentNs });
  });
  await core.createNamespacedServiceAccount({
    namespace: namespace,
    body: { metadata: { name: 'deployer' } },
  });
  await rbac.createNamespacedRole({ namespace: namespace, body: { metadata: { name: 'deployer' }, rules } });
  await rbac.createNamespacedRole({
    namespace: agentNs,
    body: {
      metadata: { name: 'records' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }],
    },
  });
  for (const [where, role] of [
    [namespace, 'deployer'],
    [agentNs, 'records'],
  ] as const) {
    await rbac.createNamespacedRoleBinding({
      namespace: where,
      body: {
        metadata: { name: 'deployer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
        subjects: [{ kind: 'ServiceAccount', name: 'deployer', namespace: namespace }],
      },
    });
  }
  const kubeconfig = await serviceAccountKubeconfig(namespace, 'deployer');
  const setRules = (next: V1PolicyRule[]) =>
    rbac.replaceNamespacedRole({
      name: 'deployer',
      namespace: namespace,
      body: { metadata: { name: 'deployer' }, rules: next },
    });
  return { kubeconfig, agentNs, setRules };
}

describe('an inventory line outside the deployment', () => {
  const ns = useNamespace('prune-bounded');
  const victimNs = useNamespace('prune-victim');
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('is never pruned: a line written into the inventory naming another namespace keeps its object, and says so', async () => {
    // Whoever may write ConfigMaps in the agent's namespace writes its inventories: a line naming an object of a
    // namespace the deployment may not write (one mooring applied, for another deployment) must not be deleted.
    const suffix = Date.now().toString(36);
    const agentNs = `mooring-prune-b-${suffix}`;
    cleanups.push(async () => {
      await deleteNamespace(agentNs);
    });
    const victim = await manifestDir({
      'victim.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: payments-db, namespace: ${victimNs()}}
data: {password: hunter2}
`,
    });
    const applied = await kubectl('apply', '--server-side', '--field-manager=mooring', '-f', victim);
    expect(applied.code, applied.stderr).toBe(0);
    const config = (name: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {a: "1"}
`;
    const { repo, first, agent, receiver } = await startGitAgent({
      repo: `prune-bounded-${suffix}/app`,
      files: { 'a.yaml': config('first'), 'b.yaml': config('second') },
      cluster: { name: 'bounded', namespace: agentNs },
      deployments: [{ name: 'bounded', namespace: ns() }],
    });
    cleanups.push(() => agent.stop());
    const kube = api();
    cleanups.push(() => kube.close());
    const deployed = async (sha: string) =>
      (await ledgerOf(kube, agentNs, 'bounded')).releases.find(
        (r) => r.commit === sha && r.result === 'stable',
      );
    await eventually('the first commit deployed', () => deployed(first), 90_000);
    const inventory = `mooring-inventory-bounded`;
    const read = await kubectl(
      '-n',
      agentNs,
      'get',
      'configmap',
      inventory,
      '-o',
      'jsonpath={.data.inventory}',
    );
    expect(read.stdout).toContain('ConfigMap');
    const forged = `${read.stdout.trimEnd()}\nv1 ConfigMap ${victimNs()} payments-db\nrbac.authorization.k8s.io/v1 ClusterRole  mooring-forged-${suffix}`;
    const patched = await kubectl(
      ...['-n', agentNs, 'patch', 'configmap', inventory, '--type=merge'],
      ...['-p', JSON.stringify({ data: { inventory: forged } })],
    );
    expect(patched.code, patched.stderr).toBe(0);

    // A commit that removes a file: the sync prunes, and reads the forged lines with the rest.
    const second = await repo.commit({ 'b.yaml': null });
    await eventually('the second commit deployed', () => deployed(second), 90_000);
    const left = await kubectl(
      '-n',
      victimNs(),
      'get',
      'configmap',
      'payments-db',
      '-o',
      'name',
      '--ignore-not-found',
    );
    expect(left.stdout.trim()).toBe('configmap/payments-db');
    const gone = await kubectl('-n', ns(), 'get', 'configmap', 'second', '-o', 'name', '--ignore-not-found');
    expect(gone.stdout.trim()).toBe('');
    const status = receiver.statuses().find((s) => s.sha === second && s.state !== 'pending');
    expect(status?.state).toBe('success');
    expect(agent.logged('not pruned').map((l) => `${l.object}: ${l.reason}`)).toEqual(
      expect.arrayContaining([
        `ConfigMap ${victimNs()}/payments-db: outside the deployment's namespaces (${ns()})`,
        `ClusterRole mooring-forged-${suffix}: a cluster-scoped ClusterRole, which the deployment may not write`,
      ]),
    );
  }, 240_000);
});
