// `mooring diff` on the real control plane, Git server and registry: a changed field is a hunk and exit 1, an
// unchanged set exits 0, Secret values never appear, new objects show whole, prune is previewed, the agent's
// deployment is diffed from its Git source and its current release's images, and bad input exits 2.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { current, Ledger } from '../../src/report/ledger.ts';
import { pushStable, stableImageSources, webDeployment } from './build-helpers.ts';
import {
  clusterConfig,
  deployTo,
  eventually,
  kubeConfig,
  manifestDir,
  mooring,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

function web(replicas: number, color: string, ...lines: string[]): string {
  return webDeployment('nginx:1.25', [`env: [{name: COLOR, value: ${color}}]`, ...lines], 'web', replicas);
}

/** The lines of a diff that remove or add something (not the ---/+++ headers). */
function changes(stdout: string): string[] {
  return stdout.split('\n').filter((l) => /^[-+](?![-+]{2} )/.test(l));
}

describe('mooring diff', () => {
  const ns = useNamespace('diff');
  const kube = () => ['--kubeconfig', testbed().kube.kubeconfig, '-n', ns()];
  const diff = (dir: string, ...extra: string[]) => mooring('diff', dir, ...kube(), ...extra);
  const replicasOf = async (name: string) =>
    (await kubeConfig().makeApiClient(AppsV1Api).readNamespacedDeployment({ name, namespace: ns() })).spec
      ?.replicas;

  it('prints a hunk for a changed field and exits 1; an unchanged folder prints none and exits 0', async () => {
    const dir = await manifestDir({ 'web.yaml': web(1, 'blue') });
    const deployed = await deployTo(ns(), dir, '--application', 'fields');
    expect(deployed.code, deployed.stderr).toBe(0);

    const same = await diff(dir, '--application', 'fields');
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).not.toContain('@@');
    expect(changes(same.stdout)).toEqual([]);
    expect(same.stdout).toContain('0 objects changed, 0 added, 1 unchanged');

    await writeFile(join(dir, 'web.yaml'), web(3, 'green'));
    const changed = await diff(dir, '--application', 'fields');
    expect(changed.code, changed.stderr).toBe(1);
    const lines = changed.stdout.split('\n');
    expect(lines).toContain(`--- live Deployment ${ns()}/web`);
    expect(lines).toContain(`+++ desired Deployment ${ns()}/web`);
    expect(lines.some((l) => /^@@ -\d+,\d+ \+\d+,\d+ @@$/.test(l))).toBe(true);
    expect(changes(changed.stdout)).toEqual([
      '-  replicas: 1',
      '+  replicas: 3',
      '-              value: blue',
      '+              value: green',
    ]);
    expect(changed.stdout).toContain('1 object changed, 0 added, 0 unchanged');
    // A diff writes nothing.
    expect(await replicasOf('web')).toBe(1);
  });

  it('shows a changed Secret value as (changed), a new version of a versioned Secret as added, never a value', async () => {
    const files = (password: string, token: string) => ({
      'secrets.yaml': `apiVersion: v1
kind: Secret
metadata:
  name: db
  annotations: {strategy.spinnaker.io/versioned: "false"}
stringData: {password: ${password}, user: admin}
---
apiVersion: v1
kind: Secret
metadata: {name: api-token}
data: {token: ${b64(token)}}
`,
      'app.yaml': web(1, 'blue', 'envFrom: [{secretRef: {name: api-token}}]').replace(/web/g, 'api'),
    });
    const dir = await manifestDir(files('hunter2-plain', 'tok-first-7f3a'));
    const deployed = await deployTo(ns(), dir, '--application', 'secrets');
    expect(deployed.code, deployed.stderr).toBe(0);

    const next = files('correct-horse-battery', 'tok-second-91c2');
    for (const [name, text] of Object.entries(next)) await writeFile(join(dir, name), text);
    const result = await diff(dir, '--application', 'secrets');
    expect(result.code, result.stderr).toBe(1);
    const out = result.stdout;
    expect(out).toContain(`--- live Secret ${ns()}/db`);
    expect(changes(out)).toContain('-  password: (old value)');
    expect(changes(out)).toContain('+  password: (changed)');
    // The new version of the versioned Secret is a new object, its values masked.
    expect(out).toContain(`+++ desired Secret ${ns()}/api-token-v001`);
    expect(out).toContain('+  token: (added)');
    expect(out).toMatch(/^-\s+name: api-token-v000$/m);
    expect(out).toMatch(/^\+\s+name: api-token-v001$/m);
    for (const value of ['hunter2-plain', 'correct-horse-battery', 'tok-first-7f3a', 'tok-second-91c2']) {
      for (const form of [value, b64(value)]) {
        expect(out).not.toContain(form);
        expect(result.stderr).not.toContain(form);
      }
    }
    expect(out).toContain('2 objects changed, 1 added');
  });

  it('shows a new object whole, as added, and previews prune with --prune', async () => {
    const extra = `apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
  annotations: {strategy.spinnaker.io/versioned: "false"}
data: {k: v}
`;
    const dir = await manifestDir({ 'web.yaml': web(1, 'blue').replace(/web/g, 'shop'), 'old.yaml': extra });
    const deployed = await deployTo(ns(), dir, '--application', 'shop');
    expect(deployed.code, deployed.stderr).toBe(0);

    // A new object.
    await writeFile(join(dir, 'new.yaml'), extra.replace('name: extra', 'name: fresh'));
    const added = await diff(dir, '--application', 'shop');
    expect(added.code, added.stderr).toBe(1);
    const lines = added.stdout.split('\n');
    const at = lines.indexOf(`+++ desired ConfigMap ${ns()}/fresh`);
    expect(at).toBeGreaterThan(0);
    expect(lines[at - 1]).toBe(`--- live ConfigMap ${ns()}/fresh`);
    const count = Number(/^@@ -0,0 \+1,(\d+) @@$/.exec(lines[at + 1] ?? '')?.[1]);
    expect(count).toBeGreaterThan(5);
    const body = lines.slice(at + 2, at + 2 + count);
    expect(body.slice(0, 3)).toEqual(['+apiVersion: v1', '+kind: ConfigMap', '+metadata:']);
    expect(body.every((l) => l.startsWith('+'))).toBe(true);
    expect(body).toContain('+  name: fresh');
    expect(body).toContain('+  k: v');
    expect(added.stdout).toContain('0 objects changed, 1 added, 2 unchanged');

    // An object the last deploy applied and the files no longer hold: prune is shown only when asked for.
    await writeFile(join(dir, 'new.yaml'), '');
    await writeFile(join(dir, 'old.yaml'), '');
    const quiet = await diff(dir, '--application', 'shop');
    expect(quiet.code, quiet.stdout + quiet.stderr).toBe(0);
    expect(quiet.stdout).not.toContain('would prune');
    const pruned = await diff(dir, '--application', 'shop', '--prune');
    expect(pruned.code, pruned.stderr).toBe(1);
    expect(pruned.stdout).toContain(`would prune: ConfigMap ${ns()}/extra`);
    expect(pruned.stdout).toContain('0 objects changed, 0 added, 1 unchanged, 1 to prune');

    // Files that render nothing are refused as deploy refuses them, unless --allow-empty says it is meant.
    await writeFile(join(dir, 'web.yaml'), '');
    const empty = await diff(dir, '--application', 'shop', '--prune');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/no objects/);
    const all = await diff(dir, '--application', 'shop', '--prune', '--allow-empty');
    expect(all.code, all.stderr).toBe(1);
    expect(all.stdout).toContain(`would prune: Deployment ${ns()}/shop`);
    expect(all.stdout).toContain(`would prune: ConfigMap ${ns()}/extra`);
  });

  it('exits 2 for bad input, naming the file', async () => {
    const missing = join(await manifestDir({}), 'nope.yaml');
    const gone = await diff(missing);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain(missing);

    const dir = await manifestDir({
      'bad.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\ndata: {a: b}\n',
    });
    const bad = await diff(dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/bad\.yaml:\d+/);
    expect(bad.stdout).not.toContain('@@');

    const neither = await mooring('diff', ...kube());
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain('--deployment');
  });
});

describe('mooring diff --deployment', () => {
  const ns = useNamespace('diff-agent');
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it("diffs the agent's deployment: its Git source's head and its current release's images", async () => {
    const suffix = Date.now().toString(36);
    const { image, digest } = await pushStable(`diff-${suffix}/web`);
    const app = (replicas: number) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {GREETING: hello}\n---\n` +
      web(replicas, 'blue', 'envFrom: [{configMapRef: {name: web-config}}]').replace(
        'nginx:1.25',
        `${image}:stable`,
      );
    const agentNamespace = `mooring-${suffix}`;
    // The agent deploys the first commit with the image's digest, records the release, and is stopped.
    const { repo, configFile, agent } = await startGitAgent({
      repo: `diff-${suffix}`,
      files: { 'apps/web/app.yaml': app(1) },
      source: { interval: '1h' },
      cluster: { namespace: agentNamespace },
      deployments: [{ name: 'web', namespace: ns(), paths: ['apps/web'], images: ['web-image'] }],
      statuses: false,
      extra: { sources: stableImageSources('web-image', image) },
      start: { level: 'warn' },
    });
    const stop = () => agent.stop();
    stops.push(stop);
    const api = new KubeApi(clusterConfig());
    try {
      const release = await eventually('a stable release', async () =>
        current(await new Ledger(api, agentNamespace).read('web')),
      );
      expect(release.images['web-image']?.digest).toBe(digest);
    } finally {
      api.close();
    }
    await stop();
    stops.splice(stops.indexOf(stop), 1);

    const diff = () => mooring('diff', '--deployment', 'web', '--config', configFile);
    // Nothing changed since: the images come from the release (the manifests name only the tag).
    const same = await diff();
    expect(same.code, same.stdout + same.stderr).toBe(0);
    expect(changes(same.stdout)).toEqual([]);
    expect(same.stdout).toContain('0 objects changed, 0 added, 2 unchanged');

    const head = await repo.commit({ 'apps/web/app.yaml': app(2) });
    const changed = await diff();
    expect(changed.code, changed.stderr).toBe(1);
    expect(changed.stderr).toContain(head.slice(0, 12));
    expect(changed.stdout).toContain(`--- live Deployment ${ns()}/web`);
    expect(changes(changed.stdout)).toEqual(['-  replicas: 1', '+  replicas: 2']);

    const unknown = await mooring('diff', '--deployment', 'nope', '--config', configFile);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no deployment nope');
  });
});
