// The Helm chart (charts/mooring) with the test bed's real helm and cluster: lint with the default and the
// non-default values, the values schema refusing nonsense, the rendered objects (a restricted pod with probes,
// an agent configuration the agent itself accepts, RBAC per scope), then a real install whose objects exist and
// whose RBAC grants what the agent needs and no more, and an uninstall that leaves nothing cluster-wide.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseConfig } from '../../src/config/load.ts';
import { manifestDir, runTool, testbed, useNamespace } from './helpers.ts';

const CHART = fileURLToPath(new URL('../../charts/mooring', import.meta.url));
const CI_VALUES = `${CHART}/ci/namespaced-values.yaml`;
const RELEASE_NS = 'mooring-system';
const packageVersion: string = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
).version;

/**
 * The rule the chart adds wherever the agent deploys, and in its own namespace: Events written, and the warnings of
 * what a stability wait waits on listed (docs/events.md).
 */
const EVENTS_RULE = { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'list'] };
/** In the agent's own namespace, Events on its ledger ConfigMaps are only written. */
const LEDGER_EVENTS_RULE = { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] };

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are read field by field, as kubectl does
type Manifest = Record<string, any>;

function helm(...args: string[]) {
  return runTool(testbed().tools.helm, args, { timeoutMs: 90_000 });
}

function kubectl(...args: string[]) {
  return runTool(testbed().tools.kubectl, ['--kubeconfig', testbed().kube.kubeconfig, ...args]);
}

/** `helm template` of the chart as release `rel` in RELEASE_NS, parsed into objects. */
async function render(...args: string[]): Promise<Manifest[]> {
  const out = await helm('template', 'rel', CHART, '-n', RELEASE_NS, ...args);
  expect(out.code, out.stderr).toBe(0);
  return parseAllDocuments(out.stdout)
    .map((doc) => doc.toJS() as Manifest | null)
    .filter((o): o is Manifest => o !== null);
}

function only(objects: Manifest[], kind: string, name?: string): Manifest {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  expect(found.map((o) => `${o.kind}/${o.metadata.name}`)).toHaveLength(1);
  return found[0] as Manifest;
}

function ofKind(objects: Manifest[], kind: string): Manifest[] {
  return objects.filter((o) => o.kind === kind);
}

function agentConfig(objects: Manifest[]) {
  const text = only(objects, 'ConfigMap', 'rel-mooring').data['mooring.yaml'];
  expect(typeof text).toBe('string');
  return parseConfig(text, 'mooring.yaml');
}

describe('helm chart: lint and values schema', () => {
  it('Chart.yaml carries the package version as appVersion', () => {
    const chart = parse(readFileSync(`${CHART}/Chart.yaml`, 'utf8'));
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'mooring', version: '0.1.0' });
    expect(chart.appVersion).toBe(packageVersion);
  });

  it('lints with the default values and with the non-default CI values', async () => {
    for (const args of [[], ['-f', CI_VALUES]]) {
      const lint = await helm('lint', '--strict', CHART, ...args);
      expect(lint.code, lint.stdout + lint.stderr).toBe(0);
      expect(lint.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    }
  });

  it.each([
    { set: ['replicaCount=-1'], field: '/replicaCount' },
    { set: ['replicaCount=1.5'], field: '/replicaCount' },
    { set: ['rbac.scope=galaxy'], field: '/rbac/scope' },
    { set: ['image.pullPolicy=Sometimes'], field: '/image/pullPolicy' },
    { set: ['service.port=70000'], field: '/service/port' },
    { set: ['service.port=0'], field: '/service/port' },
    { set: ['rbac.namespaces={Prod_EU}'], field: '/rbac/namespaces/0' },
    { set: ['config=everything'], field: '/config' },
    { set: ['config.cluster.kubeconfig=/etc/kubeconfig'], field: '/config/cluster' },
    { set: ['config.leaderElection.enabled=false'], field: '/config/leaderElection' },
    { set: ['config.server.port=0'], field: '/config/server/port' },
    {
      set: ['replicaCount=2', 'leaderElection.enabled=false', 'leaderElection.mode=standby'],
      field: '/leaderElection',
    },
    { set: ['leaderElection.leaseDuration=soon'], field: '/leaderElection/leaseDuration' },
    { set: ['existingSecrets[0].name=git-credentials'], field: '/existingSecrets/0' },
    { set: ['replicas=3'], field: 'replicas' },
  ])('rejects $set', async ({ set, field }) => {
    const lint = await helm('lint', CHART, ...set.flatMap((s) => ['--set', s]));
    expect(lint.code, lint.stdout).not.toBe(0);
    expect(lint.stdout + lint.stderr).toContain("values don't meet the specifications of the schema");
    expect(lint.stdout + lint.stderr).toContain(field);
  });
});

describe('helm chart: rendered objects', () => {
  it('runs the agent in a restricted pod with probes, its config, a cache and a writable /tmp', async () => {
    const objects = await render();
    const deployment = only(objects, 'Deployment', 'rel-mooring');
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.terminationGracePeriodSeconds).toBe(60);
    expect(pod.serviceAccountName).toBe('rel-mooring');
    expect(pod.containers).toHaveLength(1);
    const container = pod.containers[0];
    expect(container.image).toBe(`ghcr.io/mooring/mooring:${packageVersion}`);
    expect(container.args).toEqual(['run', '--config', '/etc/mooring/mooring.yaml']);
    expect(container.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 10001,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.resources).toEqual({
      requests: { cpu: '100m', memory: '256Mi' },
      limits: { memory: '512Mi' },
    });
    const env = Object.fromEntries(container.env.map((e: Manifest) => [e.name, e.value ?? e.valueFrom]));
    expect(env).toMatchObject({
      MOORING_CACHE_DIR: '/var/cache/mooring/sources',
      MOORING_LOG_LEVEL: 'info',
      POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } },
    });
    const mounts = Object.fromEntries(container.volumeMounts.map((m: Manifest) => [m.name, m]));
    expect(mounts.config).toMatchObject({ mountPath: '/etc/mooring', readOnly: true });
    expect(mounts.cache?.mountPath).toBe('/var/cache/mooring');
    expect(mounts.tmp?.mountPath).toBe('/tmp');
    const volumes = Object.fromEntries(pod.volumes.map((v: Manifest) => [v.name, v]));
    expect(volumes.config?.configMap).toEqual({ name: 'rel-mooring' });
    expect(volumes.cache?.emptyDir).toEqual({ sizeLimit: '1Gi' });
    expect(volumes.tmp?.emptyDir).toEqual({ sizeLimit: '64Mi' });
    // One replica with leader election: a rolling update is safe (the new pod waits for the Lease).
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy).toBeUndefined();

    const service = only(objects, 'Service', 'rel-mooring');
    expect(service.spec.ports).toEqual([{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }]);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
    expect(ofKind(objects, 'Ingress')).toEqual([]);
    expect(ofKind(objects, 'ServiceMonitor')).toEqual([]);
  });

  it('holds a configuration the agent accepts, in its cluster and namespace, with leader election', async () => {
    const config = agentConfig(await render());
    expect(config.cluster).toMatchObject({ name: 'default', inCluster: true, namespace: RELEASE_NS });
    expect(config.leaderElection).toMatchObject({ enabled: true, leaseName: 'mooring' });
    // A renewal interval of exactly half the duration, in units of its own, is one the agent takes.
    const half = agentConfig(
      await render(
        '--set',
        'leaderElection.renewInterval=7500ms',
        '--set',
        'leaderElection.leaseDuration=0.25m',
      ),
    );
    expect(half.leaderElection).toMatchObject({ leaseDuration: 15_000, renewInterval: 7_500 });
    expect(config.server.port).toBe(8080);
    expect(config.deployments).toEqual([]);
  });

  it('passes the non-default configuration through, secret references pointing at mounted Secrets', async () => {
    const objects = await render('-f', CI_VALUES);
    const config = agentConfig(objects);
    expect(config.cluster).toMatchObject({ name: 'ci-eu', inCluster: true, namespace: RELEASE_NS });
    expect(config.leaderElection).toMatchObject({ enabled: true, leaseName: 'mooring-ci' });
    expect(config.deployments.map((d) => `${d.name}@${d.namespace}`)).toEqual([
      'web@shop-prod',
      'web-staging@shop-staging',
    ]);
    expect(config.drift.interval).toBe(600_000);

    const deployment = only(objects, 'Deployment');
    expect(deployment.spec.replicas).toBe(2);
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    // The container listens where the agent's config says; the Service targets it by name.
    expect(config.server.port).toBe(9090);
    expect(container.ports[0]).toMatchObject({ name: 'http', containerPort: 9090 });
    expect(only(objects, 'Service', 'rel-mooring').spec.ports[0]).toMatchObject({
      port: 8080,
      targetPort: 'http',
    });
    expect(deployment.spec.template.metadata.annotations['example.com/team']).toBe('platform');
    expect(deployment.spec.template.metadata.labels['example.com/tier']).toBe('delivery');

    // Every {file: …} reference of the config lies under the mount of an existing Secret, read-only.
    const secretMounts = container.volumeMounts.filter((m: Manifest) => m.name.startsWith('secret-'));
    expect(secretMounts.every((m: Manifest) => m.readOnly === true)).toBe(true);
    const mountOf = (file: string) => secretMounts.find((m: Manifest) => file.startsWith(`${m.mountPath}/`));
    const files = [
      config.sources.git[0]?.credentials?.password?.file,
      ((u) => (typeof u === 'object' ? u.file : undefined))(config.sources.git[0]?.credentials?.username),
      config.sources.registry[0]?.credentials?.dockerConfigJson?.file,
      config.deployments[0]?.commitStatus.token?.file,
    ];
    for (const file of files) {
      expect(file).toBeDefined();
      const mount = mountOf(file as string);
      expect(mount, file).toBeDefined();
      const volume = pod.volumes.find((v: Manifest) => v.name === mount.name);
      expect(volume.secret.secretName).toMatch(/^(git|registry)-credentials$/);
    }
    // ... and every {env: …} reference is an environment variable filled from a Secret.
    const webhookEnv = config.server.webhooks.github?.secret.env;
    const fromSecret = container.env.find((e: Manifest) => e.name === webhookEnv);
    expect(fromSecret?.valueFrom?.secretKeyRef).toEqual({ name: 'mooring-webhooks', key: 'github' });
  });

  it("renders the chart README's install example into a configuration the agent accepts", async () => {
    const readme = readFileSync(`${CHART}/README.md`, 'utf8');
    const example = /```yaml\n# mooring-values\.yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const file = join(await manifestDir({ 'mooring-values.yaml': example as string }), 'mooring-values.yaml');
    const lint = await helm('lint', '--strict', CHART, '-f', file);
    expect(lint.code, lint.stdout).toBe(0);
    const objects = await render('-f', file);
    const config = agentConfig(objects);
    expect(config.deployments.map((d) => d.name)).toEqual(['web']);
    expect(config.sources.git[0]?.credentials?.token?.file).toBe('/var/run/secrets/mooring/git/token');
    expect(only(objects, 'Ingress').spec.rules[0].host).toBe('mooring.example.com');
  });

  it('rolls the pod when the configuration changes, and only then', async () => {
    const checksum = async (...args: string[]) =>
      only(await render(...args), 'Deployment').spec.template.metadata.annotations['checksum/config'];
    const a = await checksum('--set', 'config.cluster.name=alpha');
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(await checksum('--set', 'config.cluster.name=alpha', '--set', 'logLevel=debug')).toBe(a);
    expect(await checksum('--set', 'config.cluster.name=beta')).not.toBe(a);
    expect(
      await checksum('--set', 'config.cluster.name=alpha', '--set', 'leaderElection.leaseName=x'),
    ).not.toBe(a);
  });

  it('without leader election: the configuration says so and pods are replaced, never overlapped', async () => {
    const objects = await render('--set', 'leaderElection.enabled=false');
    expect(agentConfig(objects).leaderElection.enabled).toBe(false);
    expect(only(objects, 'Deployment').spec.strategy).toEqual({ type: 'Recreate' });
    const role = only(objects, 'Role', 'rel-mooring-state');
    // The ledger and outbox ConfigMaps, and the content-hash key: created once, then only that Secret is read.
    expect(role.rules).toEqual([
      expect.objectContaining({ resources: ['configmaps'] }),
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['mooring-content-hash-key'],
        verbs: ['get'],
      },
      // Events on the ledger ConfigMaps (docs/events.md).
      LEDGER_EVENTS_RULE,
    ]);
  });

  it('cluster scope: one ClusterRole with rbac.clusterRules, bound to the ServiceAccount, and the state Role', async () => {
    const objects = await render(
      '--set-json',
      'rbac.extraRules=[{"nonResourceURLs":["/metrics"],"verbs":["get"]}]',
    );
    const serviceAccount = only(objects, 'ServiceAccount', 'rel-mooring');
    const clusterRole = only(objects, 'ClusterRole', `rel-mooring-${RELEASE_NS}`);
    expect(clusterRole.rules).toEqual([
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
      { nonResourceURLs: ['/metrics'], verbs: ['get'] },
      EVENTS_RULE,
    ]);
    const binding = only(objects, 'ClusterRoleBinding', clusterRole.metadata.name);
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: clusterRole.metadata.name,
    });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: serviceAccount.metadata.name, namespace: RELEASE_NS },
    ]);
    const state = only(objects, 'Role', 'rel-mooring-state');
    expect(state.metadata.namespace).toBe(RELEASE_NS);
    expect(state.rules).toContainEqual({
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'create', 'update'],
    });
    expect(only(objects, 'RoleBinding', 'rel-mooring-state').roleRef.name).toBe('rel-mooring-state');
    expect(ofKind(objects, 'Role')).toHaveLength(1);
    // Replicas sharing the work list the membership Leases and delete their own when they stop.
    const shared = only(await render('--set', 'replicaCount=3'), 'Role', 'rel-mooring-state');
    expect(shared.rules).toContainEqual({
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'list', 'create', 'update', 'delete'],
    });
    // …and read the Pods of the release namespace, which members must be (never patch them).
    expect(shared.rules).toContainEqual({ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] });
    expect(only(objects, 'Role', 'rel-mooring-state').rules).not.toContainEqual(
      expect.objectContaining({ resources: ['pods'], verbs: ['get', 'list'] }),
    );
  });

  it('other clusters: the agent reads only the kubeconfig Secrets its configuration names', async () => {
    const objects = await render(
      '--set-json',
      'config.clusters=[{"name":"eu-1","kubeconfigSecret":{"name":"eu-1-kubeconfig"},"labels":{"tier":"main"}},{"name":"eu-2","kubeconfigSecret":{"name":"eu-2-kubeconfig","key":"config"}}]',
    );
    expect(only(objects, 'Role', 'rel-mooring-state').rules).toContainEqual({
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: ['eu-1-kubeconfig', 'eu-2-kubeconfig'],
      verbs: ['get'],
    });
    expect(agentConfig(objects).clusters.map((c) => c.name)).toEqual(['eu-1', 'eu-2']);
    // Without other clusters, no Secret beyond the content hash key is readable.
    const rules = only(await render(), 'Role', 'rel-mooring-state').rules as { resourceNames?: string[] }[];
    expect(rules.flatMap((r) => r.resourceNames ?? [])).toEqual(['mooring-content-hash-key']);
  });

  it('namespaces scope: a Role and RoleBinding per target namespace, nothing cluster-wide but reading them', async () => {
    const objects = await render('-f', CI_VALUES);
    // rbac.namespaces (shop-staging) plus the namespaces of the configured deployments (shop-prod).
    const roles = ofKind(objects, 'Role').filter((r) => r.metadata.name === 'rel-mooring');
    expect(roles.map((r) => r.metadata.namespace).sort()).toEqual(['shop-prod', 'shop-staging']);
    for (const role of roles) {
      expect(role.rules).toEqual([
        { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
        {
          apiGroups: ['batch'],
          resources: ['jobs'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
        EVENTS_RULE,
      ]);
      const binding = only(
        objects.filter((o) => o.metadata.namespace === role.metadata.namespace),
        'RoleBinding',
        'rel-mooring',
      );
      expect(binding.roleRef).toMatchObject({ kind: 'Role', name: 'rel-mooring' });
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'rel-mooring', namespace: RELEASE_NS },
      ]);
    }
    expect(only(objects, 'Role', 'rel-mooring-state').metadata.namespace).toBe(RELEASE_NS);
    // The only cluster-scoped grant: `get` on exactly these Namespaces (the agent reads its own at start).
    const clusterRoles = ofKind(objects, 'ClusterRole');
    expect(clusterRoles).toHaveLength(1);
    expect(clusterRoles[0]?.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['namespaces'],
        verbs: ['get'],
        resourceNames: [RELEASE_NS, 'shop-prod', 'shop-staging'],
      },
    ]);

    const strict = await render('-f', CI_VALUES, '--set', 'rbac.namespaceAccess=false');
    expect(ofKind(strict, 'ClusterRole')).toEqual([]);
    expect(ofKind(strict, 'ClusterRoleBinding')).toEqual([]);
    expect(ofKind(strict, 'Role')).toHaveLength(3);
    expect(ofKind(strict, 'RoleBinding')).toHaveLength(3);
  });

  it('exposes only the webhooks through the Ingress and /metrics through the ServiceMonitor', async () => {
    // The ServiceMonitor is rendered where the cluster serves its CRD.
    const objects = await render(
      '-f',
      CI_VALUES,
      '--api-versions',
      'monitoring.coreos.com/v1/ServiceMonitor',
    );
    expect(ofKind(await render('-f', CI_VALUES), 'ServiceMonitor')).toEqual([]);
    const ingress = only(objects, 'Ingress');
    expect(ingress.apiVersion).toBe('networking.k8s.io/v1');
    expect(ingress.spec.ingressClassName).toBe('nginx');
    expect(ingress.spec.tls).toEqual([{ hosts: ['mooring.example.com'], secretName: 'mooring-tls' }]);
    expect(ingress.spec.rules).toEqual([
      {
        host: 'mooring.example.com',
        http: {
          paths: [
            {
              path: '/hooks/',
              pathType: 'Prefix',
              // The webhook Service: the leader's Pod only.
              backend: { service: { name: 'rel-mooring-webhooks', port: { number: 8080 } } },
            },
          ],
        },
      },
    ]);
    const monitor = only(objects, 'ServiceMonitor');
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(monitor.metadata.labels.release).toBe('kube-prometheus-stack');
    expect(monitor.spec.selector.matchLabels).toEqual(only(objects, 'Service', 'rel-mooring').spec.selector);
    expect(monitor.spec.endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '15s' }]);
  });

  it('renders and lints the values people add: PDB, NetworkPolicy, spread, digest, labels, probes, status page', async () => {
    const set = [
      'podDisruptionBudget.enabled=true',
      'networkPolicy.enabled=true',
      'networkPolicy.ingressFrom[0].namespaceSelector.matchLabels.team=edge',
      'topologySpreadConstraints[0].maxSkew=1',
      'topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname',
      'topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway',
      `image.digest=sha256:${'a'.repeat(64)}`,
      'service.annotations.example\\.com/lb=internal',
      'commonLabels.team=platform',
      'revisionHistoryLimit=5',
      'startupProbe.httpGet.path=/healthz',
      'startupProbe.httpGet.port=http',
      'startupProbe.failureThreshold=60',
      'statusPage.enabled=true',
      'statusPage.tokenSecret.name=status-token',
      'statusPage.ingress.enabled=true',
      'statusPage.ingress.host=status.example.com',
      'grafanaDashboard.enabled=true',
      'prometheusRule.enabled=true',
      'prometheusRule.ignoreCapabilities=true',
    ].flatMap((v) => ['--set', v]);
    const lint = await helm('lint', '--strict', CHART, ...set);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    const objects = await render(...set);
    expect(only(objects, 'PodDisruptionBudget').spec).toMatchObject({ minAvailable: 1 });
    expect(only(objects, 'NetworkPolicy').spec.ingress[0].from).toEqual([
      { namespaceSelector: { matchLabels: { team: 'edge' } } },
    ]);
    const deployment = only(objects, 'Deployment');
    const pod = deployment.spec.template.spec;
    expect(deployment.spec.revisionHistoryLimit).toBe(5);
    expect(pod.topologySpreadConstraints[0]).toMatchObject({
      maxSkew: 1,
      topologyKey: 'kubernetes.io/hostname',
    });
    expect(pod.containers[0].image).toBe(`ghcr.io/mooring/mooring@sha256:${'a'.repeat(64)}`);
    expect(pod.containers[0].startupProbe).toMatchObject({
      failureThreshold: 60,
      httpGet: { path: '/healthz' },
    });
    for (const o of objects) expect(o.metadata.labels?.team, `${o.kind}/${o.metadata.name}`).toBe('platform');
    expect(only(objects, 'Service', 'rel-mooring').metadata.annotations).toEqual({
      'example.com/lb': 'internal',
    });
    // The webhook Service selects the leader's Pod only.
    expect(only(objects, 'Service', 'rel-mooring-webhooks').spec.selector).toEqual({
      'app.kubernetes.io/name': 'mooring',
      'app.kubernetes.io/instance': 'rel',
      'mooring.io/leader': 'true',
    });
    // The status page: enabled in the agent's configuration with its token mounted, its own Service and Ingress.
    const config = agentConfig(objects);
    expect(config.server.statusPage).toMatchObject({
      enabled: true,
      token: { file: '/var/run/secrets/mooring/status-page/token' },
    });
    expect(pod.volumes).toContainEqual({
      name: 'status-page-token',
      secret: { secretName: 'status-token', defaultMode: 288, items: [{ key: 'token', path: 'token' }] },
    });
    expect(only(objects, 'Ingress', 'rel-mooring-status').spec.rules[0].http.paths[0]).toMatchObject({
      path: '/status',
      backend: { service: { name: 'rel-mooring-status' } },
    });
    expect(only(objects, 'ConfigMap', 'rel-mooring-dashboard').metadata.labels.grafana_dashboard).toBe('1');
    expect(only(objects, 'PrometheusRule').spec.groups[0].rules).toHaveLength(5);
    // helm test: a Pod that asks /readyz through the Service.
    const test = only(objects, 'Pod');
    expect(test.metadata.annotations['helm.sh/hook']).toBe('test');
    expect(test.spec.containers[0].command.join(' ')).toContain('http://rel-mooring:8080/readyz');
    // The leader labels its Pod: the state Role lets it patch pods of its namespace.
    const state = only(objects, 'Role', 'rel-mooring-state');
    expect(state.rules).toContainEqual({ apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] });
  });

  it.each([
    { set: ['config.concurrency=four'], field: '/config/concurrency' },
    { set: ['config.nonsense=1'], field: "additional properties 'nonsense'" },
    { set: ['statusPage.enabled=true'], field: 'statusPage.tokenSecret.name' },
    {
      set: ['leaderElection.renewInterval=8s'],
      field: 'leaderElection.renewInterval (8s) must be at most half of leaderElection.leaseDuration (15s)',
    },
    {
      set: ['leaderElection.renewInterval=1m', 'leaderElection.leaseDuration=1m30s'],
      field: 'leaderElection.renewInterval (1m) must be at most half',
    },
  ])('refuses $set', async ({ set, field }) => {
    const out = await helm('template', 'rel', CHART, ...set.flatMap((s) => ['--set', s]));
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(field);
  });

  it('creates no ServiceAccount or RBAC when told not to', async () => {
    const objects = await render(
      '--set',
      'rbac.create=false',
      '--set',
      'serviceAccount.create=false',
      '--set',
      'serviceAccount.name=agent',
    );
    // The Pod is `helm test`'s (templates/tests/readyz.yaml).
    expect(objects.map((o) => o.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'Pod',
      'Service',
      'Service',
    ]);
    expect(only(objects, 'Deployment').spec.template.spec.serviceAccountName).toBe('agent');
  });
});

describe('helm chart: install on the test bed', () => {
  const namespace = useNamespace('helm-chart');
  const target = useNamespace('helm-target');
  const installed: string[] = [];
  const image = () => `${testbed().registry.host}/mooring/mooring`;

  afterAll(async () => {
    // Cluster-scoped objects outlive the namespace: uninstall whatever a failed test left behind.
    for (const release of installed.splice(0)) {
      await helm('uninstall', release, '-n', namespace(), '--kubeconfig', testbed().kube.kubeconfig);
    }
  });

  async function install(release: string, ...args: string[]) {
    const out = await helm(
      'install',
      release,
      CHART,
      '-n',
      namespace(),
      '--kubeconfig',
      testbed().kube.kubeconfig,
      // The test-bed kubelet only fakes pods: no image is pulled and the release is not waited on.
      '--wait=hookOnly',
      '--set',
      `image.repository=${image()}`,
      ...args,
    );
    expect(out.code, out.stderr).toBe(0);
    installed.push(release);
    return out;
  }

  async function get(kind: string, name: string, ns?: string): Promise<Manifest> {
    const out = await kubectl('get', kind, name, ...(ns ? ['-n', ns] : []), '-o', 'json');
    expect(out.code, `${kind}/${name}: ${out.stderr}`).toBe(0);
    return JSON.parse(out.stdout);
  }

  async function canI(serviceAccount: string, ...args: string[]): Promise<boolean> {
    const out = await kubectl(
      'auth',
      'can-i',
      ...args,
      '--as',
      `system:serviceaccount:${namespace()}:${serviceAccount}`,
    );
    expect(out.stdout.trim(), out.stderr).toMatch(/^(yes|no)$/);
    return out.stdout.trim() === 'yes';
  }

  it('installs with cluster scope: its objects exist and the agent may deploy anywhere', async () => {
    const ns = namespace();
    const out = await install('agent', '--set', 'config.cluster.name=testbed');
    expect(out.stdout).toContain('STATUS: deployed');
    expect(out.stdout).toContain(`kubectl -n ${ns} logs deployment/agent-mooring`);

    const deployment = await get('deployment', 'agent-mooring', ns);
    expect(deployment.spec.template.spec.containers[0].image).toBe(`${image()}:${packageVersion}`);
    expect(deployment.spec.template.spec.serviceAccountName).toBe('agent-mooring');
    await get('serviceaccount', 'agent-mooring', ns);
    await get('service', 'agent-mooring', ns);
    await get('role', 'agent-mooring-state', ns);
    await get('rolebinding', 'agent-mooring-state', ns);
    const clusterRole = await get('clusterrole', `agent-mooring-${ns}`);
    expect(clusterRole.rules).toEqual([{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }, EVENTS_RULE]);
    await get('clusterrolebinding', `agent-mooring-${ns}`);
    // The configuration as the API server stored it is one the agent accepts.
    const configMap = await get('configmap', 'agent-mooring', ns);
    const config = parseConfig(configMap.data['mooring.yaml'], 'mooring.yaml');
    expect(config.cluster).toMatchObject({ name: 'testbed', inCluster: true, namespace: ns });

    // What the agent does, as the API server's authorizer sees its ServiceAccount.
    expect(await canI('agent-mooring', 'create', 'configmaps', '-n', ns)).toBe(true);
    expect(await canI('agent-mooring', 'update', 'leases.coordination.k8s.io', '-n', ns)).toBe(true);
    expect(await canI('agent-mooring', 'get', `namespace/${ns}`)).toBe(true);
    expect(await canI('agent-mooring', 'patch', 'deployments.apps', '-n', target())).toBe(true);
    expect(await canI('agent-mooring', 'create', 'clusterroles.rbac.authorization.k8s.io')).toBe(true);
    expect(await canI('default', 'create', 'configmaps', '-n', ns)).toBe(false);
  });

  it('installs with namespaces scope: the agent may deploy into its target namespaces only', async () => {
    const ns = namespace();
    await install(
      'scoped',
      '--set',
      'rbac.scope=namespaces',
      '--set',
      `rbac.namespaces={${target()}}`,
      '--set',
      'leaderElection.leaseName=scoped',
    );
    const role = await get('role', 'scoped-mooring', target());
    expect(role.rules).toEqual([{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }, EVENTS_RULE]);
    await get('rolebinding', 'scoped-mooring', target());
    await get('role', 'scoped-mooring-state', ns);
    await get('deployment', 'scoped-mooring', ns);
    const absent = await kubectl('get', 'clusterrole', `scoped-mooring-${ns}`);
    expect(absent.code).not.toBe(0);
    expect(absent.stderr).toContain('NotFound');

    expect(await canI('scoped-mooring', 'create', 'deployments.apps', '-n', target())).toBe(true);
    expect(await canI('scoped-mooring', 'delete', 'secrets', '-n', target())).toBe(true);
    expect(await canI('scoped-mooring', 'create', 'configmaps', '-n', ns)).toBe(true);
    expect(await canI('scoped-mooring', 'create', 'leases.coordination.k8s.io', '-n', ns)).toBe(true);
    expect(await canI('scoped-mooring', 'get', `namespace/${ns}`)).toBe(true);
    expect(await canI('scoped-mooring', 'get', `namespace/${target()}`)).toBe(true);
    expect(await canI('scoped-mooring', 'create', 'deployments.apps', '-n', 'default')).toBe(false);
    expect(await canI('scoped-mooring', 'create', 'deployments.apps', '-n', ns)).toBe(false);
    expect(await canI('scoped-mooring', 'get', 'namespace/kube-system')).toBe(false);
    expect(await canI('scoped-mooring', 'list', 'namespaces')).toBe(false);
    expect(await canI('scoped-mooring', 'create', 'clusterroles.rbac.authorization.k8s.io')).toBe(false);
  });

  it('uninstalls, leaving nothing cluster-wide behind', async () => {
    const ns = namespace();
    for (const release of installed.splice(0)) {
      const out = await helm('uninstall', release, '-n', ns, '--kubeconfig', testbed().kube.kubeconfig);
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout).toContain(`release "${release}" uninstalled`);
    }
    const left = await kubectl(
      'get',
      'clusterroles,clusterrolebindings',
      '-l',
      'app.kubernetes.io/name=mooring',
      '-o',
      'name',
    );
    expect(left.code, left.stderr).toBe(0);
    expect(left.stdout.split('\n').filter((line) => line.includes(ns))).toEqual([]);
    const deployments = await kubectl('get', 'deployments', '-n', ns, '-o', 'name');
    expect(deployments.stdout.trim()).toBe('');
    const roles = await kubectl('get', 'roles', '-n', target(), '-o', 'name');
    expect(roles.stdout.trim()).toBe('');
  });
});
