// Prune with an inventory, on the real test bed: a running agent deletes the objects of a file removed from the
// Git repository at the next sync and says so in its commit status and release; an object annotated
// mooring.io/prune: disabled survives; an object that another deployment also applies is never pruned; manifests
// that render nothing prune nothing and fail the sync; versions beyond the history are collected while those a
// live workload refers to stay. `mooring deploy --prune` does the same for an application.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InventoryStore } from '../../src/kube/inventory.ts';
import { githubStatusValidator, statusReceiver } from '../contract/github-openapi.ts';
import { commitFiles, createBareRepo } from '../testbed/git-repos.ts';
import { api, ledgerOf, postedStatuses, startAgent, unended } from './faults-support.ts';
import { eventually, manifestDir, mooring, runTool, testbed, useNamespace } from './helpers.ts';

const deployment = (name: string, configMap: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: 1
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
        - name: web
          image: example/web:1
          envFrom: [{configMapRef: {name: ${configMap}}}]
`;

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
metadata: {name: extra}
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

  async function exists(kind: string, name: string): Promise<boolean> {
    const env = testbed();
    const result = await runTool(env.tools.kubectl, [
      '--kubeconfig',
      env.kube.kubeconfig,
      '-n',
      ns(),
      'get',
      kind,
      name,
      '-o',
      'name',
      '--ignore-not-found',
    ]);
    return result.stdout.trim() !== '';
  }

  async function names(kind: string): Promise<string[]> {
    const env = testbed();
    const result = await runTool(env.tools.kubectl, [
      '--kubeconfig',
      env.kube.kubeconfig,
      '-n',
      ns(),
      'get',
      kind,
      '-o',
      'jsonpath={.items[*].metadata.name}',
    ]);
    return result.stdout.trim().split(/\s+/).filter(Boolean).sort();
  }

  it('deletes the objects of a removed file at the next sync, keeps annotated and shared ones, and refuses an empty render', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repoPath = `prune-${suffix}/app`;
    const repo = await createBareRepo(env.git.root, repoPath);
    const receiver = await statusReceiver();
    cleanups.push(receiver.close);
    const kube = api();
    cleanups.push(() => kube.close());
    const agentNs = `mooring-prune-${suffix}`;
    cleanups.push(async () => {
      await runTool(env.tools.kubectl, [
        '--kubeconfig',
        env.kube.kubeconfig,
        'delete',
        'namespace',
        agentNs,
        '--wait=false',
      ]);
    });
    const secrets = await manifestDir({ user: env.git.username, password: env.git.password, token: 't' });
    const first = await commitFiles(repo, APP);
    const status = `commitStatus: {provider: github, apiUrl: "${receiver.url}", token: {file: ${secrets}/token}}`;
    const agent = startAgent(`
cluster: {name: prune, kubeconfig: ${env.kube.kubeconfig}, namespace: ${agentNs}}
sources:
  git:
    - {name: app, url: "${env.git.url}/${repoPath}.git", interval: 1s, credentials: {username: {file: ${secrets}/user}, password: {file: ${secrets}/password}}}
deployments:
  - {name: shop, namespace: ${ns()}, source: app, paths: [app], stability: {timeout: 2m}, ${status}}
  - {name: other, namespace: ${ns()}, source: app, paths: [other], stability: {timeout: 2m}, ${status}}
audit: {file: ${secrets}/audit.jsonl}
server: {port: 0, address: 127.0.0.1}
`);
    cleanups.push(() => agent.stop());
    const statuses = () => postedStatuses(receiver.captured);
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
    const second = await commitFiles(repo, {
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
    const audit = (await readFile(join(secrets, 'audit.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { commit: string; action: string; object: unknown });
    expect(
      audit
        .filter((r) => r.commit === second && r.action === 'pruned')
        .map((r) => r.object)
        .sort(),
    ).toEqual([`ConfigMap ${ns()}/extra-v000`, `Service ${ns()}/extra-svc`]);

    // The path now holds only a file without objects: nothing is applied or pruned, and the commit fails.
    const third = await commitFiles(repo, { 'app/web.yaml': '# nothing here yet\n' });
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
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repoPath = `prune-history-${suffix}/app`;
    const repo = await createBareRepo(env.git.root, repoPath);
    const kube = api();
    cleanups.push(() => kube.close());
    const agentNs = `mooring-prune-h-${suffix}`;
    cleanups.push(async () => {
      await runTool(env.tools.kubectl, [
        '--kubeconfig',
        env.kube.kubeconfig,
        'delete',
        'namespace',
        agentNs,
        '--wait=false',
      ]);
    });
    const secrets = await manifestDir({ user: env.git.username, password: env.git.password });
    // `legacy` names the first version literally (no replicas: it runs no Pods): it must keep v000 alive.
    const files = (round: number) => ({
      'app.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: limits}
data: {round: "${round}"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: legacy}
spec:
  replicas: 0
  selector: {matchLabels: {app: legacy}}
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers: [{name: c, image: example/web:1, envFrom: [{configMapRef: {name: limits-v000}}]}]
`,
    });
    let last = await commitFiles(repo, files(0));
    const agent = startAgent(`
cluster: {name: history, kubeconfig: ${env.kube.kubeconfig}, namespace: ${agentNs}}
sources:
  git:
    - {name: app, url: "${env.git.url}/${repoPath}.git", interval: 1s, credentials: {username: {file: ${secrets}/user}, password: {file: ${secrets}/password}}}
deployments:
  - {name: limits, namespace: ${ns()}, source: app, versionHistory: 2, stability: {timeout: 2m}}
server: {port: 0, address: 127.0.0.1}
`);
    cleanups.push(() => agent.stop());
    const deployed = async (sha: string) =>
      (await ledgerOf(kube, agentNs, 'limits')).releases.find(
        (r) => r.commit === sha && r.result === 'stable',
      );
    await eventually('round 0 deployed', () => deployed(last), 90_000);
    for (let round = 1; round <= 5; round++) {
      last = await commitFiles(repo, files(round));
      await eventually(`round ${round} deployed`, () => deployed(last), 90_000);
    }
    const versions = (await names('configmap')).filter((n) => n.startsWith('limits-'));
    // Two newest kept by the history, v000 by the Deployment that names it; v001..v003 collected.
    expect(versions).toEqual(['limits-v000', 'limits-v004', 'limits-v005']);
  }, 240_000);

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
    const env = testbed();
    const base = [
      '--kubeconfig',
      env.kube.kubeconfig,
      '-n',
      ns(),
      '--application',
      'cli-app',
      '--timeout',
      '1m',
    ];
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
});
