// What an agent's sync leaves as it is (src/kube/drift-check.ts unmovedSinceWrite, ApplyOptions.unmoved): an
// object whose manifest is the one the agent last wrote, and whose copy in the watch cache is still the one that
// write left, is not read, dry-run or written again. On the real control plane: a second commit that changes one
// application's settings sends nothing about its Service and ServiceAccount; an object changed by hand since is
// read, dry-run and put back as before; a set with one object the server refuses still writes nothing; and with
// the managed fields kept (an agent running drift passes), a Deployment whose status its controller moved is left
// as it is too.
import { afterAll, describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { keepDriftMarks } from '../../src/kube/drift-pass.ts';
import { type DeployRequest, deploy } from '../../src/sync/deploy.ts';
import { clusterConfig, kubectl, recordingApi, type SentRequest, useNamespace } from './helpers.ts';

/** One application in the shape most Git repositories hold: settings, an identity, a Service, a Deployment. */
const app = (round: number, extra = '') => `apiVersion: v1
kind: ConfigMap
metadata: {name: shop-settings}
data: {ROUND: "${round}"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shop-flags, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {checkout: "on"}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: shop}
---
apiVersion: v1
kind: Service
metadata: {name: shop}
spec: {selector: {app: shop}, ports: [{port: 80}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      serviceAccountName: shop
      containers:
        - name: web
          image: registry.example.com/shop:1.0.0
          envFrom: [{configMapRef: {name: shop-settings}}]
${extra}`;

/** The requests sent about one object (its path ends with the resource and name). */
const about = (sent: readonly SentRequest[], resource: string, name: string) =>
  sent.filter((s) => new RegExp(`/${resource}/${name}$`).test(s.path));

describe('a sync leaves what is unmoved since its last write', () => {
  const ns = useNamespace('unmoved');
  const agentNs = useNamespace('unmoved-agent');
  const closers: (() => void | Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  function setUp(fieldOwners: boolean, versionHistory?: number) {
    const api = new KubeApi(clusterConfig());
    const cache = new ClusterCache(api, { lingerMs: 5 * 60_000 });
    closers.push(
      () => cache.close(),
      () => api.close(),
    );
    keepDriftMarks(cache, 'mooring', fieldOwners);
    const discovery = new Discovery(api);
    const sent: SentRequest[] = [];
    const sync = (owner: string, text: string) => {
      sent.length = 0;
      const request: DeployRequest = {
        files: [{ path: 'app.yaml', text }],
        namespace: ns(),
        application: 'shop',
        images: [],
        timeoutMs: 120_000,
        dryRun: false,
        fieldManager: 'mooring',
        concurrency: 4,
        inventory: { owner, namespace: agentNs(), prune: true, allowEmpty: false, emptyAdvice: '' },
        ...(versionHistory !== undefined ? { versionHistory } : {}),
      };
      return deploy({ api: recordingApi(api, sent), discovery, cache }, request);
    };
    return { sync, sent };
  }

  it('sends nothing about unmoved objects, and puts back what was changed by hand', async () => {
    const { sync, sent } = setUp(false);
    const first = await sync('shop', app(1));
    expect(first.outcome, first.summary).toBe('stable');

    // A commit that changes the settings: a new version, the Deployment that reads it, nothing else.
    const second = await sync('shop', app(2));
    expect(second.outcome, second.summary).toBe('stable');
    expect(second.applied.map((a) => [a.target.plan.object, a.action])).toEqual([
      [`ConfigMap ${ns()}/shop-settings-v001`, 'created'],
      [`ConfigMap ${ns()}/shop-flags`, 'unchanged'],
      [`ServiceAccount ${ns()}/shop`, 'unchanged'],
      [`Service ${ns()}/shop`, 'unchanged'],
      [`Deployment ${ns()}/shop`, 'configured'],
    ]);
    expect(about(sent, 'serviceaccounts', 'shop')).toEqual([]);
    expect(about(sent, 'services', 'shop')).toEqual([]);
    expect(about(sent, 'configmaps', 'shop-flags')).toEqual([]);
    // What changed took its dry run and its write.
    expect(about(sent, 'deployments', 'shop').filter((s) => s.method === 'PATCH')).toEqual([
      expect.objectContaining({ dryRun: true }),
      expect.objectContaining({ dryRun: false }),
    ]);

    // Changed by hand: its resourceVersion moved, so the next sync reads it, dry-runs it and puts it back.
    const edited = await kubectl(
      '-n',
      ns(),
      'patch',
      'configmap',
      'shop-flags',
      '--type=merge',
      '-p',
      '{"data":{"checkout":"off"}}',
    );
    expect(edited.code, edited.stderr).toBe(0);
    const third = await sync('shop', app(3));
    expect(third.outcome, third.summary).toBe('stable');
    const flags = third.applied.find((a) => a.target.plan.object === `ConfigMap ${ns()}/shop-flags`);
    expect(flags?.action).toBe('configured');
    expect(about(sent, 'configmaps', 'shop-flags').map((s) => [s.method, s.dryRun])).toEqual([
      ['GET', false],
      ['PATCH', true],
      ['PATCH', false],
    ]);
    const data = await kubectl('-n', ns(), 'get', 'configmap', 'shop-flags', '-o', 'jsonpath={.data}');
    expect(JSON.parse(data.stdout)).toEqual({ checkout: 'on' });
    // Deleted by hand: not in the cache any more, so it is created again.
    expect((await kubectl('-n', ns(), 'delete', 'serviceaccount', 'shop')).code).toBe(0);
    const fourth = await sync('shop', app(4));
    expect(fourth.outcome, fourth.summary).toBe('stable');
    expect(fourth.applied.find((a) => a.target.plan.object === `ServiceAccount ${ns()}/shop`)?.action).toBe(
      'created',
    );

    // All or nothing: one object the server refuses, and nothing of the set is written, changed or not.
    const refused = await sync(
      'shop',
      app(
        5,
        `---
apiVersion: v1
kind: Service
metadata: {name: shop-broken}
spec: {selector: {app: shop}, ports: [{port: 700000}]}
`,
      ),
    );
    expect(refused.outcome).toBe('error');
    expect(refused.summary).toContain('shop-broken');
    expect(
      sent.filter((s) => s.method !== 'GET' && !s.dryRun && /configmaps|deployments|services/.test(s.path)),
    ).toEqual([]);
    const versions = await kubectl('-n', ns(), 'get', 'configmap', '-o', 'name');
    expect(versions.stdout).not.toContain('shop-settings-v004');
  });

  it('with managed fields kept, leaves a Deployment whose controller moved only its status', async () => {
    const { sync, sent } = setUp(true);
    const first = await sync('shop-watched', app(1).replaceAll('shop', 'watched'));
    expect(first.outcome, first.summary).toBe('stable');
    // Only the Service changes: the Deployment's controller has written its status since (a new resourceVersion),
    // and its managed fields show nothing of the manifest touched, so it is left as it is.
    const second = await sync(
      'shop-watched',
      app(1).replaceAll('shop', 'watched').replace('ports: [{port: 80}]', 'ports: [{port: 8080}]'),
    );
    expect(second.outcome, second.summary).toBe('stable');
    expect(second.applied.map((a) => [a.target.plan.object, a.action])).toEqual([
      [`ConfigMap ${ns()}/watched-settings-v000`, 'unchanged'],
      [`ConfigMap ${ns()}/watched-flags`, 'unchanged'],
      [`ServiceAccount ${ns()}/watched`, 'unchanged'],
      [`Service ${ns()}/watched`, 'configured'],
      [`Deployment ${ns()}/watched`, 'unchanged'],
    ]);
    expect(about(sent, 'deployments', 'watched')).toEqual([]);
    // The changed Service is known from the cache too (the same object, no client-side apply's fields): dry-run and
    // written, not read (drift-check.ts cachedSinceWrite).
    expect(about(sent, 'services', 'watched').map((s) => [s.method, s.dryRun])).toEqual([
      ['PATCH', true],
      ['PATCH', false],
    ]);
  });

  it("collects old versions from the watch cache once it has shown the sync's own new version: no list", async () => {
    const { sync, sent } = setUp(false, 1);
    const text = (round: number) => app(round).replaceAll('shop', 'kept');
    expect((await sync('shop-kept', text(1))).outcome).toBe('stable');
    const second = await sync('shop-kept', text(2));
    expect(second.outcome, second.summary).toBe('stable');
    // Collected past one version: v000 is beyond the limit and still read by the Deployment's old ReplicaSet, so it
    // is kept, which shows the collection saw it; it saw it in the cache, with v001 (written by this sync) shown.
    expect(second.history?.kept).toEqual([
      {
        object: `ConfigMap ${ns()}/kept-settings-v000`,
        reason: expect.stringMatching(/^still referenced by /),
      },
    ]);
    const listed = sent.filter((s) => s.method === 'GET' && /\/namespaces\/[^/]+\/configmaps$/.test(s.path));
    expect(listed).toEqual([]);
  });
});
