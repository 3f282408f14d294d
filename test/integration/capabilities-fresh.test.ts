// A chart's `.Capabilities` sees CRDs installed after the process started. Many charts render a ServiceMonitor, a
// Certificate or a Gateway route only where the cluster serves the kind; helm install asks the cluster each time, so
// an agent that read the served kinds once at its start never rendered them until it was restarted.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { throughProxy } from './fault-helpers.ts';
import {
  clusterConfig,
  configMapManifest,
  crdManifest,
  eventually,
  installCrd,
  kubectl,
  manifestDir,
  mooring,
  startGitAgent,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

process.env.MOORING_HELM = testbed().tools.helm;

const served = (caps: Awaited<ReturnType<Discovery['capabilities']>>, groupVersion: string, kind: string) =>
  caps.apiVersions.some((v) => v.groupVersion === groupVersion && v.kinds.includes(kind));

describe('.Capabilities of a long-lived process', () => {
  const ns = useNamespace('caps');
  const crds: string[] = [];
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops.splice(0)) await stop();
    for (const crd of crds) await kubectl('delete', 'crd', crd, '--wait=false');
  });

  const install = async (group: string, plural: string, kind: string) => {
    crds.push(`${plural}.${group}`);
    await installCrd(crdManifest(group, plural, kind), `${plural}.${group}`);
  };

  it('shares one reading for a while, reads again after it, and at once after invalidate()', async () => {
    const group = `caps-${Date.now().toString(36)}${randomBytes(2).toString('hex')}.example.com`;
    const api = new KubeApi(clusterConfig());
    stops.push(async () => api.close());
    const discovery = new Discovery(api, { capabilitiesMaxAgeMs: 1_500 });
    // Reads of the group list, counted on the way to the real server.
    let groupReads = 0;
    const request = api.request.bind(api);
    api.request = ((method: string, path: string, ...rest: unknown[]) => {
      if (path === '/apis') groupReads++;
      return (request as (...args: unknown[]) => unknown)(method, path, ...rest);
    }) as typeof api.request;
    expect(await discovery.served(group, 'Capwidget')).toBeUndefined();
    const before = await discovery.capabilities();
    expect(before.kubeVersion).toMatch(/^v1\.\d+\.\d+$/);
    expect(served(before, 'apps/v1', 'Deployment')).toBe(true);
    expect(served(before, `${group}/v1`, 'Capwidget')).toBe(false);

    // Installed by someone else: the answer of the last moment is given again, then the new one.
    await install(group, 'capwidgets', 'Capwidget');
    expect(await discovery.capabilities()).toBe(before);
    // A kind asked for by a sync (a custom referrer of versions): a group missing from the last reading is read
    // again at once; a group it holds is answered from it.
    groupReads = 0;
    expect(await discovery.served(group, 'Capwidget')).toMatchObject({
      plural: 'capwidgets',
      namespaced: true,
    });
    expect(await discovery.served(group, 'Capwidget')).toMatchObject({ plural: 'capwidgets' });
    expect(await discovery.served('apps', 'Deployment')).toMatchObject({ plural: 'deployments' });
    expect(groupReads).toBe(1);
    await eventually(
      'the new kind served',
      async () => served(await discovery.capabilities(), `${group}/v1`, 'Capwidget') || undefined,
      30_000,
    );

    // A kind added to a group-version already served (not in /apis as a change): read again after invalidate(),
    // as the apply path calls it once the CRDs it wrote are established.
    const withWidget = await discovery.capabilities();
    await install(group, 'capgadgets', 'Capgadget');
    discovery.invalidate();
    const now = await discovery.capabilities();
    expect(now).not.toBe(withWidget);
    expect(served(now, `${group}/v1`, 'Capgadget')).toBe(true);
  }, 120_000);

  // An API server restarting resets connections: a discovery request's first attempt failing so is tried again, as
  // every read is, and the reading holds it; only a server error of an APIService the aggregator says is down is
  // done without at once.
  it('reads the discovery whose first request met a reset connection', async () => {
    const bed = await throughProxy();
    stops.push(
      async () => bed.proxy.close(),
      async () => bed.api.close(),
    );
    // A client that has had an answer (one that never had one takes a reset for no server there, and says so).
    await bed.api.request('GET', '/version');
    bed.proxy.set(
      { kind: 'reset', when: 'request' },
      // The group list, which holds every group-version's kinds where the server aggregates discovery.
      { match: (r) => (r.path.split('?')[0] ?? '') === '/apis', times: 1 },
    );
    const caps = await bed.discovery.capabilities();
    expect(bed.proxy.count('reset')).toBe(1);
    expect(served(caps, 'apps/v1', 'Deployment')).toBe(true);
    expect(caps.unavailable ?? []).toEqual([]);
  });

  it('does without an aggregated API whose server is down, as helm does, within seconds', async () => {
    // As metrics.k8s.io while metrics-server is down: registered, listed in /apis, its discovery a 503.
    const group = `down-${Date.now().toString(36)}${randomBytes(2).toString('hex')}.example.com`;
    // Three versions of it: helm logs two lines for each group-version whose discovery fails, more than the five
    // lines a tool's failure is quoted with, before its own error (below).
    const versions = ['v1', 'v2', 'v3'];
    const dir = await manifestDir({
      'apiservice.yaml': versions
        .map(
          (version) => `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: ${version}.${group}}
spec:
  group: ${group}
  version: ${version}
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: nowhere, namespace: default, port: 443}
`,
        )
        .join('---\n'),
    });
    const applied = await kubectl('apply', '-f', `${dir}/apiservice.yaml`);
    expect(applied.code, applied.stderr).toBe(0);
    stops.push(async () => {
      await kubectl('delete', 'apiservice', ...versions.map((v) => `${v}.${group}`), '--wait=false');
    });
    const api = new KubeApi(clusterConfig());
    stops.push(async () => api.close());
    await eventually(
      'the group listed and its discovery failing',
      async () => {
        const groups = await api.request<{ groups: { name: string }[] }>('GET', '/apis');
        if (!groups.groups.some((g) => g.name === group)) return undefined;
        const down = await new Promise((resolve) => {
          api.request('GET', `/apis/${group}/v1`, { retryForMs: 0 }).then(
            () => resolve(false),
            () => resolve(true),
          );
        });
        return down || undefined;
      },
      30_000,
    );
    const started = Date.now();
    const caps = await new Discovery(api).capabilities();
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(served(caps, 'apps/v1', 'Deployment')).toBe(true);
    expect(caps.apiVersions.some((v) => v.groupVersion === `${group}/v1`)).toBe(false);
    // Done without at once, as helm and kubectl do, since the aggregator says its server is unavailable; the reason
    // is its APIService's (a 503 of a group-version whose APIService is not known down is tried again for a while).
    expect(caps.unavailable).toContainEqual({
      groupVersion: `${group}/v1`,
      status: 503,
      kept: false,
      reason: `APIService v1.${group}: ServiceNotFound: service/nowhere in "default" is not present`,
    });
    // A chart rendered against the cluster says so, as helm says "unable to retrieve the complete list of server
    // APIs": what it gates on the group may be rendered otherwise.
    const chart = await manifestDir({
      'Chart.yaml': 'apiVersion: v2\nname: gated\nversion: 0.1.0\n',
      'templates/cm.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: gated}
data:
  served: {{ .Capabilities.APIVersions.Has "${group}/v1" | quote }}
`,
    });
    const rendered = await mooring(
      'render',
      chart,
      '--kubeconfig',
      testbed().kube.kubeconfig,
      '-n',
      'default',
    );
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(rendered.stdout).toContain('served: "false"');
    expect(rendered.stderr).toContain(
      `warning: ${chart}: the cluster's discovery of ${group}/v1 failed (HTTP 503; APIService v1.${group}: ServiceNotFound: service/nowhere in "default" is not present): .Capabilities leaves it out`,
    );

    // A chart with a `lookup` (helm then reads the cluster's discovery itself, through the render's lookup endpoint)
    // renders too, and its lookup reads the live object: the group-version that fails is answered with its failure,
    // as the API server answers it, not tried again until the render's tool timeout (one minute) has passed.
    const looked = await kubectl(
      'create',
      'configmap',
      'looked-up',
      '-n',
      'default',
      '--from-literal=kept=yes',
    );
    expect(looked.code, looked.stderr).toBe(0);
    stops.push(async () => {
      await kubectl('delete', 'configmap', 'looked-up', '-n', 'default', '--ignore-not-found');
    });
    const lookupChart = await manifestDir({
      'Chart.yaml': 'apiVersion: v2\nname: looks\nversion: 0.1.0\n',
      'templates/cm.yaml': `{{- $live := lookup "v1" "ConfigMap" .Release.Namespace "looked-up" }}
apiVersion: v1
kind: ConfigMap
metadata: {name: looks}
data:
  kept: {{ dig "data" "kept" "none" $live | quote }}
`,
    });
    const withLookup = await mooring(
      'render',
      lookupChart,
      '--kubeconfig',
      testbed().kube.kubeconfig,
      '-n',
      'default',
    );
    expect(withLookup.code, withLookup.stderr).toBe(0);
    expect(withLookup.stdout).toContain('kept: "yes"');

    // A chart that also brings a CRD and an object of it (a monitoring stack's shape) cannot be dry-run by helm before
    // the CRD is installed: it is rendered without lookup and said so. helm's error, logged after client-go's lines
    // about the failing group, is what decides that, and what the render's message would quote.
    const crdGroup = `looks-${randomBytes(3).toString('hex')}.example.com`;
    const withCrd = await manifestDir({
      'Chart.yaml': 'apiVersion: v2\nname: stack\nversion: 0.1.0\n',
      'crds/widgets.yaml': `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.${crdGroup}}
spec:
  group: ${crdGroup}
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
      'templates/widget.yaml': `apiVersion: ${crdGroup}/v1
kind: Widget
metadata: {name: w}
spec: {size: 1}
`,
      'templates/cm.yaml': `{{- $live := lookup "v1" "ConfigMap" .Release.Namespace "looked-up" }}
apiVersion: v1
kind: ConfigMap
metadata: {name: stack}
data:
  kept: {{ dig "data" "kept" "none" $live | quote }}
`,
    });
    const stack = await mooring(
      'render',
      withCrd,
      '--kubeconfig',
      testbed().kube.kubeconfig,
      '-n',
      'default',
    );
    expect(stack.code, stack.stderr).toBe(0);
    expect(stack.stdout).toContain('kind: Widget');
    expect(stack.stderr).toContain(
      'rendered without lookup, so values the chart keeps with lookup are made anew',
    );
    expect(stack.stderr).toContain('no matches for kind "Widget"');
  }, 180_000);

  it("renders what a chart gates on a kind once another deployment of the agent installed the kind's CRD", async () => {
    const suffix = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    const group = `monitors-${suffix}.example.com`;
    crds.push(`capprobes.${group}`);
    const chart = (color: string) => ({
      'chart/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 1.0.0\n',
      'chart/values.yaml': `color: ${color}\n`,
      'chart/templates/settings.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-settings}\ndata: {color: "{{ .Values.color }}"}\n',
      // As charts write their ServiceMonitor: only where the cluster serves the kind.
      'chart/templates/probe.yaml': `{{- if .Capabilities.APIVersions.Has "${group}/v1/Capprobe" }}
apiVersion: ${group}/v1
kind: Capprobe
metadata: {name: web}
spec: {path: /healthz}
{{- end }}
`,
    });
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `caps-${suffix}/app`,
      files: {
        ...chart('red'),
        'platform/base.yaml': yamlDocuments(configMapManifest('platform', { a: '1' })),
      },
      cluster: { name: 'caps', namespace: `mooring-caps-${suffix}` },
      deployments: [
        {
          name: 'platform',
          namespace: ns(),
          paths: ['platform'],
          allowClusterScoped: ['CustomResourceDefinition'],
        },
        { name: 'web', namespace: ns(), helm: { chart: 'chart' } },
      ],
    });
    stops.push(agent.stop);
    const ended = async (sha: string, deployment: string) => {
      const status = await eventually(
        `commit ${sha.slice(0, 7)} ends for ${deployment}`,
        async () =>
          receiver
            .statuses()
            .find((s) => s.sha === sha && s.context.endsWith(deployment) && s.state !== 'pending'),
        120_000,
      );
      expect(status.state, status.description).toBe('success');
    };
    await ended(first, 'platform');
    await ended(first, 'web');
    expect(await kubectl('-n', ns(), 'get', 'configmap', 'web-settings')).toMatchObject({ code: 0 });
    const probes = async () =>
      (await kubectl('-n', ns(), 'get', `capprobes.${group}`, '-o', 'name')).stdout.trim();

    // The platform deployment installs the CRD; the chart is changed after.
    const second = await repo.commit({ 'platform/crd.yaml': crdManifest(group, 'capprobes', 'Capprobe') });
    await ended(second, 'platform');
    const third = await repo.commit(chart('blue'));
    await ended(third, 'web');
    expect(await probes()).toBe(`capprobe.${group}/web`);
  }, 300_000);
});

describe('.Capabilities at a drift pass', () => {
  const ns = useNamespace('caps-drift');
  const stops: (() => Promise<void>)[] = [];
  const crds: string[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
    for (const crd of crds) await kubectl('delete', 'crd', crd, '--wait=false');
  });

  it('renders what a chart gates on a kind installed by hand, with no commit, at the next drift pass', async () => {
    // drift.interval set: each pass syncs the deployment at its revision, its chart rendered again with the
    // capabilities of now (read again after 30 s).
    const suffix = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    const group = `drifts-${suffix}.example.com`;
    crds.push(`capdrifts.${group}`);
    const { receiver, first, agent } = await startGitAgent({
      repo: `caps-drift-${suffix}/app`,
      files: {
        'chart/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 1.0.0\n',
        'chart/templates/settings.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: "1"}\n',
        'chart/templates/probe.yaml': `{{- if .Capabilities.APIVersions.Has "${group}/v1/Capdrift" }}
apiVersion: ${group}/v1
kind: Capdrift
metadata: {name: web}
spec: {path: /healthz}
{{- end }}
`,
      },
      cluster: { name: 'caps-drift', namespace: `mooring-capsd-${suffix}` },
      deployments: [{ name: 'web', namespace: ns(), helm: { chart: 'chart' } }],
      extra: { drift: { interval: '2s' } },
    });
    stops.push(agent.stop);
    await eventually(
      'the first commit deployed',
      async () => receiver.statuses().find((s) => s.sha === first && s.state === 'success'),
      120_000,
    );
    const crd = await manifestDir({ 'crd.yaml': crdManifest(group, 'capdrifts', 'Capdrift') });
    const created = await kubectl('apply', '-f', `${crd}/crd.yaml`);
    expect(created.code, created.stderr).toBe(0);
    const probes = async () =>
      (await kubectl('-n', ns(), 'get', `capdrifts.${group}`, '-o', 'name')).stdout.trim() || undefined;
    expect(await eventually('the object the chart gates on the kind', probes, 90_000)).toBe(
      `capdrift.${group}/web`,
    );
  }, 240_000);
});
