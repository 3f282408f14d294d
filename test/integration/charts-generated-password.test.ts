// A chart that generates its password once and keeps it with `lookup` (the shape of public database charts:
// test/fixtures/charts/generated-password), deployed on the test bed: a redeploy is a no-op (no new Secret
// version, no rollout, `mooring diff` exits 0), a values change keeps the password. The chart's lookups go through
// a loopback endpoint of the render's own (src/kube/lookup-server.ts), which reads only the deployment's
// namespaces and never writes: a chart that looks up another namespace's Secret gets nothing and a warning, and the
// endpoint refuses writes, other namespaces, cluster-wide lists and requests without its token. A lookup the API
// server fails is tried again, and fails the render when it cannot be read: never a render without the password.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { KubeApi } from '../../src/kube/api.ts';
import { openLookupEndpoint } from '../../src/kube/lookup-server.ts';
import { proxiedServer } from './fault-helpers.ts';
import { useCleanups } from './faults-support.ts';
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
  testbed,
  useNamespace,
} from './helpers.ts';

const CHART = fileURLToPath(new URL('../fixtures/charts/generated-password', import.meta.url));

describe('a chart that keeps its generated password with lookup', () => {
  const ns = useNamespace('genpw');
  const other = useNamespace('genpw-other');
  const agentTarget = useNamespace('genpw-agent');
  const cleanup = useCleanups();
  beforeAll(() => {
    process.env.MOORING_HELM = testbed().tools.helm;
  });

  const core = () => kubeConfig().makeApiClient(CoreV1Api);
  const secrets = async () =>
    (await core().listNamespacedSecret({ namespace: ns() })).items
      .map((s) => s.metadata?.name ?? '')
      .filter((n) => n.startsWith('r-db'))
      .sort();
  const password = async (name: string) =>
    (await core().readNamespacedSecret({ name, namespace: ns() })).data?.password;
  const generation = async () =>
    (await kubeConfig().makeApiClient(AppsV1Api).readNamespacedStatefulSet({ name: 'r-db', namespace: ns() }))
      .metadata?.generation;

  it('deploys, redeploys as a no-op, and keeps the password over a values change', async () => {
    const first = await deployTo(ns(), CHART, '--release-name', 'r');
    expect(first.code, first.stderr + first.stdout).toBe(0);
    expect(await secrets()).toEqual(['r-db-v000']);
    const kept = await password('r-db-v000');
    expect(kept).toMatch(/^[A-Za-z0-9+/=]{20,}$/);
    const generationBefore = await generation();

    const again = await deployTo(ns(), CHART, '--release-name', 'r');
    expect(again.code, again.stderr + again.stdout).toBe(0);
    expect(again.stdout).toContain('secret/r-db-v000 unchanged');
    expect(again.stdout).toContain('statefulset.apps/r-db unchanged');
    expect(await secrets()).toEqual(['r-db-v000']);
    expect(await generation()).toBe(generationBefore);

    const diff = await mooring(
      'diff',
      CHART,
      '--release-name',
      'r',
      '--kubeconfig',
      testbed().kube.kubeconfig,
      '-n',
      ns(),
    );
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);

    // A values change rolls the workload and keeps the password (the same Secret version).
    const values = await manifestDir({ 'values.yaml': 'maxConnections: 200\n' });
    const changed = await deployTo(
      ns(),
      CHART,
      '--release-name',
      'r',
      '--values',
      join(values, 'values.yaml'),
    );
    expect(changed.code, changed.stderr + changed.stdout).toBe(0);
    expect(changed.stdout).toContain('statefulset.apps/r-db configured');
    expect(await secrets()).toEqual(['r-db-v000']);
    expect(await password('r-db-v000')).toBe(kept);
  });

  // The lookup reads through the API server like every other read: when the server fails it, the render must not
  // go on without the live Secret, which would make a new password (a new version, a rollout with a password the
  // database's data does not know). A failure the client rides out keeps the password; one it cannot fails the
  // deploy before anything is written.
  it('keeps the password when the API server fails the lookup for a while, and writes nothing when it fails it throughout', async () => {
    const bed = await proxiedServer(cleanup);
    const deploy = (...extra: string[]) =>
      mooring(
        'deploy',
        CHART,
        '--release-name',
        'f',
        '--kubeconfig',
        bed.kubeconfig,
        '-n',
        ns(),
        '--timeout',
        '90s',
        ...extra,
      );
    const first = await deploy();
    expect(first.code, first.stderr + first.stdout).toBe(0);
    const names = async () =>
      (await core().listNamespacedSecret({ namespace: ns() })).items
        .map((s) => s.metadata?.name ?? '')
        .filter((n) => n.startsWith('f-db'))
        .sort();
    expect(await names()).toEqual(['f-db-v000']);
    const kept = (await core().readNamespacedSecret({ name: 'f-db-v000', namespace: ns() })).data?.password;

    // The chart's lookup asks for the Secret by the chart's name (the endpoint then finds its newest version):
    // that read, and only it, is failed.
    const lookedUp = (r: { method: string; path: string }) =>
      r.method === 'GET' && (r.path.split('?')[0] ?? '') === `/api/v1/namespaces/${ns()}/secrets/f-db`;
    bed.proxy.set(
      { kind: 'status', status: 503, body: 'etcdserver: request timed out' },
      { match: lookedUp, times: 4 },
    );
    const riddenOut = await deploy();
    expect(riddenOut.code, riddenOut.stderr + riddenOut.stdout).toBe(0);
    expect(bed.proxy.count('status')).toBe(4);
    expect(riddenOut.stdout).toContain('secret/f-db-v000 unchanged');
    expect(await names()).toEqual(['f-db-v000']);

    // Failed for longer than the deploy's requests are tried: the deploy fails, naming the lookup's failure, and
    // writes nothing (no new version, the workload untouched).
    const writesFrom = bed.proxy.requests.length;
    bed.proxy.set({ kind: 'status', status: 500, body: 'etcdserver: leader changed' }, { match: lookedUp });
    const failed = await deploy('--timeout', '30s');
    bed.proxy.pass();
    expect(failed.code, failed.stdout).not.toBe(0);
    expect(failed.stderr).toMatch(
      /error calling lookup: GET \/api\/v1\/namespaces\/[\w-]+\/secrets\/f-db: HTTP 500/,
    );
    expect(
      bed.proxy.requests
        .slice(writesFrom)
        .filter((r) => r.method !== 'GET' && !r.path.includes('dryRun=All') && !r.path.includes('/events'))
        .map((r) => `${r.method} ${r.path}`),
    ).toEqual([]);
    expect(await names()).toEqual(['f-db-v000']);
    expect((await core().readNamespacedSecret({ name: 'f-db-v000', namespace: ns() })).data?.password).toBe(
      kept,
    );
  }, 300_000);

  it('the agent keeps the password over its syncs, and mooring diff --deployment exits 0', async () => {
    const target = agentTarget();
    const suffix = Date.now().toString(36);
    const files: Record<string, string> = {};
    for (const path of await readdir(CHART, { recursive: true })) {
      const text = await readFile(join(CHART, path), 'utf8').catch(() => undefined);
      if (text !== undefined) files[`charts/db/${path}`] = text;
    }
    const agentNs = `mooring-genpw-${suffix}`;
    const { repo, receiver, configFile, first, agent } = await startGitAgent({
      repo: `genpw-${suffix}/app`,
      files,
      cluster: { name: 'genpw', namespace: agentNs },
      deployments: [{ name: 'db', namespace: target, helm: { chart: 'charts/db', releaseName: 'r' } }],
    });
    const ended = (sha: string) => receiver.statuses().find((st) => st.sha === sha && st.state !== 'pending');
    const secretsOf = async () =>
      (await core().listNamespacedSecret({ namespace: target })).items
        .filter((x) => x.metadata?.name?.startsWith('r-db'))
        .map((x) => [x.metadata?.name, x.data?.password]);
    try {
      await eventually('the chart deployed', async () => ended(first), 120_000);
      expect(ended(first)?.state).toBe('success');
      const before = await secretsOf();
      expect(before.map(([name]) => name)).toEqual(['r-db-v000']);
      // A commit in the chart's folder that changes none of its output: rendered and applied again, a no-op.
      const second = await repo.commit({ 'charts/db/README.md': 'A database.\n' });
      await eventually('the second commit synced', async () => ended(second), 120_000);
      expect(ended(second)?.state).toBe('success');
      expect(await secretsOf()).toEqual(before);
      const diff = await mooring('diff', '--deployment', 'db', '--config', configFile);
      expect(diff.code, diff.stdout + diff.stderr).toBe(0);
      expect(diff.stdout).toMatch(/0 objects changed, 0 added, 3 unchanged/);
    } finally {
      await agent.stop();
      await receiver.close();
      await kubectl('delete', 'namespace', agentNs, '--wait=false', '--ignore-not-found');
    }
  }, 300_000);

  it("gives a chart nothing of another namespace's Secret, and says so", async () => {
    await core().createNamespacedSecret({
      namespace: other(),
      body: { metadata: { name: 'admin' }, stringData: { token: 'other-namespace-secret' } },
    });
    const dir = await manifestDir({
      'Chart.yaml': 'apiVersion: v2\nname: peek\nversion: 0.1.0\n',
    });
    await mkdir(join(dir, 'templates'));
    await writeFile(
      join(dir, 'templates', 'peek.yaml'),
      `apiVersion: v1
kind: ConfigMap
metadata: {name: peek}
data:
  found: {{ (lookup "v1" "Secret" "${other()}" "admin") | toJson | quote }}
  system: {{ (lookup "v1" "Secret" "kube-system" "") | toJson | quote }}
`,
    );
    const result = await mooring('render', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns());
    expect(result.code, result.stderr).toBe(0);
    const rendered = parse(result.stdout) as { data: Record<string, string> };
    expect(rendered.data).toEqual({ found: '{}', system: '{}' });
    expect(result.stdout + result.stderr).not.toContain('other-namespace-secret');
    expect(result.stderr).toContain(
      `lookup refused: secrets in namespace ${other()}: not a namespace of the deployment (${ns()})`,
    );
    expect(result.stderr).toContain('lookup refused: secrets in namespace kube-system');
  });

  it('reads objects named with colons, and the namespaces --allow-namespace adds, without a warning', async () => {
    // RBAC names hold colons (cert-manager's `cert-manager-webhook:dynamic-serving`): helm's install check reads each
    // object the chart renders by name, and the chart may look one up. Neither is refused.
    const role = await kubectl(
      '-n',
      ns(),
      'create',
      'role',
      'web:dynamic-serving',
      '--verb=get',
      '--resource=secrets',
    );
    expect(role.code, role.stderr).toBe(0);
    await core().createNamespacedConfigMap({
      namespace: other(),
      body: { metadata: { name: 'shared' }, data: { zone: 'north' } },
    });
    const dir = await manifestDir({ 'Chart.yaml': 'apiVersion: v2\nname: colons\nversion: 0.1.0\n' });
    await mkdir(join(dir, 'templates'));
    await writeFile(
      join(dir, 'templates', 'objects.yaml'),
      `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: "web:dynamic-serving"}
rules: [{apiGroups: [""], resources: [secrets], verbs: [get]}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: seen}
data:
  role: {{ dig "metadata" "name" "" (lookup "rbac.authorization.k8s.io/v1" "Role" .Release.Namespace "web:dynamic-serving") | quote }}
  zone: {{ dig "data" "zone" "" (lookup "v1" "ConfigMap" "${other()}" "shared") | quote }}
`,
    );
    const flags = ['--kubeconfig', testbed().kube.kubeconfig, '-n', ns(), '--allow-namespace', other()];
    const result = await mooring('render', dir, ...flags);
    expect(result.code, result.stderr).toBe(0);
    const seen = parseAllDocuments(result.stdout)
      .map((d) => d.toJS() as { kind: string; data?: Record<string, string> })
      .find((o) => o.kind === 'ConfigMap');
    expect(seen?.data).toEqual({ role: 'web:dynamic-serving', zone: 'north' });
    expect(result.stderr).not.toContain('lookup refused');
    // Without --allow-namespace, the other namespace is not read, and that is said.
    const narrow = await mooring('render', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns());
    expect(narrow.stderr).toContain(`lookup refused: configmaps in namespace ${other()}`);
    expect(narrow.stderr).not.toContain('web:dynamic-serving');
  });

  it('reads a lookup of a whole collection in pages, as one list, and refuses one past its bound by name', async () => {
    // 620 ConfigMaps: two pages of the relay's 500.
    const path = `/api/v1/namespaces/${ns()}/configmaps`;
    const api = new KubeApi(clusterConfig());
    try {
      for (let i = 0; i < 620; i += 40)
        await Promise.all(
          Array.from({ length: Math.min(40, 620 - i) }, (_, j) =>
            api.request('POST', path, {
              body: { metadata: { name: `many-${i + j}` }, data: { n: String(i + j) } },
            }),
          ),
        );
      const dir = await manifestDir({ 'Chart.yaml': 'apiVersion: v2\nname: counts\nversion: 0.1.0\n' });
      await mkdir(join(dir, 'templates'));
      await writeFile(
        join(dir, 'templates', 'count.yaml'),
        `apiVersion: v1
kind: ConfigMap
metadata: {name: count}
data:
  {{- $all := lookup "v1" "ConfigMap" .Release.Namespace "" }}
  kind: {{ $all.kind | quote }}
  count: {{ len $all.items | quote }}
`,
      );
      const result = await mooring('render', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns());
      expect(result.code, result.stderr).toBe(0);
      const rendered = parse(result.stdout) as { data: Record<string, string> };
      // And the namespace's own kube-root-ca.crt, when the controller has written it.
      const listed = await api.request<{ items: unknown[] }>('GET', path);
      expect(listed.items.length).toBeGreaterThanOrEqual(620);
      expect(rendered.data).toEqual({ kind: 'ConfigMapList', count: String(listed.items.length) });

      const endpoint = await openLookupEndpoint(api, [ns()], { maxListBytes: 20_000 });
      try {
        const config = JSON.parse(endpoint.kubeconfig) as {
          clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
          users: { user: { token: string } }[];
        };
        const answer = await new Promise<{ code: number; body: string }>((resolve, reject) => {
          const req = request(
            `${config.clusters[0]?.cluster.server}${path}`,
            {
              ca: Buffer.from(config.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64'),
              agent: false,
              headers: { authorization: `Bearer ${config.users[0]?.user.token}` },
            },
            (res) => {
              let body = '';
              res.on('data', (chunk: Buffer) => {
                body += chunk.toString();
              });
              res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
            },
          );
          req.on('error', reject);
          req.end();
        });
        expect(answer.code).toBe(500);
        const why = `configmaps in namespace ${ns()}: a lookup of the whole collection reads more than 20000 bytes of objects, the most a chart's lookup may read; look the objects up by name`;
        expect((JSON.parse(answer.body) as { message: string }).message).toBe(why);
        expect(endpoint.refusals()).toEqual([why]);
      } finally {
        await endpoint.close();
      }
    } finally {
      api.close();
    }
  }, 180_000);

  it('renders a chart whose custom resources need its own CRD without lookup, and says so', async () => {
    const group = `${ns()}.example.com`;
    const dir = await manifestDir({ 'Chart.yaml': 'apiVersion: v2\nname: gizmos\nversion: 0.1.0\n' });
    await mkdir(join(dir, 'templates'));
    await writeFile(
      join(dir, 'templates', 'all.yaml'),
      `${crdManifest(group, 'gizmos', 'Gizmo')}---
apiVersion: ${group}/v1
kind: Gizmo
metadata: {name: g}
spec: {x: 1}
---
apiVersion: v1
kind: Secret
metadata: {name: pw}
data:
  password: {{ dig "data" "password" (randAlphaNum 8 | b64enc) (lookup "v1" "Secret" .Release.Namespace "pw") }}
`,
    );
    const result = await mooring('render', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns());
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('kind: Gizmo');
    expect(result.stderr).toContain(
      'rendered without lookup, so values the chart keeps with lookup are made anew (helm template failed: Error: unable to build kubernetes objects from release manifest: resource mapping not found',
    );
  });

  it('refuses writes, other namespaces, cluster-wide reads and requests without its token', async () => {
    await core().createNamespacedSecret({
      namespace: ns(),
      body: { metadata: { name: 'mine' }, stringData: { k: 'v' } },
    });
    const api = new KubeApi(clusterConfig());
    const endpoint = await openLookupEndpoint(api, [ns()], { exclude: ['mooring'] });
    const config = JSON.parse(endpoint.kubeconfig) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
      users: { user: { token: string } }[];
    };
    const server = config.clusters[0]?.cluster.server ?? '';
    const ca = Buffer.from(config.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64');
    const token = config.users[0]?.user.token ?? '';
    const ask = (method: string, path: string, auth = `Bearer ${token}`) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          `${server}${path}`,
          { method, ca, agent: false, headers: { authorization: auth } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(method === 'GET' || method === 'DELETE' ? undefined : '{}');
      });
    try {
      expect(server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(await ask('GET', `/api/v1/namespaces/${ns()}/secrets/mine`)).toBe(200);
      expect(await ask('GET', `/api/v1/namespaces/${ns()}/secrets/mine`, 'Bearer wrong')).toBe(401);
      expect(await ask('GET', `/api/v1/namespaces/${ns()}/secrets/mine`, '')).toBe(401);
      expect(await ask('POST', `/api/v1/namespaces/${ns()}/secrets`)).toBe(405);
      expect(await ask('PUT', `/api/v1/namespaces/${ns()}/secrets/mine`)).toBe(405);
      expect(await ask('DELETE', `/api/v1/namespaces/${ns()}/secrets/mine`)).toBe(405);
      expect(await ask('PATCH', `/api/v1/namespaces/${ns()}/secrets/mine`)).toBe(405);
      expect(await ask('GET', `/api/v1/namespaces/${other()}/secrets/admin`)).toBe(404);
      expect(await ask('GET', '/api/v1/namespaces/kube-system/secrets')).toBe(404);
      expect(await ask('GET', '/api/v1/namespaces/mooring/secrets')).toBe(404);
      expect(await ask('GET', '/api/v1/secrets')).toBe(404);
      expect(await ask('GET', '/api/v1/nodes')).toBe(404);
      expect(await ask('GET', `/api/v1/namespaces/${ns()}/secrets/mine/..%2f..%2fother`)).toBe(404);
      expect(await ask('GET', `/api/v1/namespaces/${ns()}/pods/x/exec`)).toBe(404);
      expect(endpoint.refusals().join('\n')).toContain('PUT');
      // The Secret is still there, unchanged.
      expect((await core().readNamespacedSecret({ name: 'mine', namespace: ns() })).data?.k).toBe('dg==');
    } finally {
      await endpoint.close();
      api.close();
    }
    // Closed with the render: nothing answers any more.
    await expect(ask('GET', '/version')).rejects.toThrow(/ECONNREFUSED/);
  });
});
