import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KubeApi } from '../../src/kube/api.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { apiVersionsOf, isChart, renderChart } from '../../src/sources/build/helm.ts';
import { liveObject, pushStable, stableImageSources, untilEnded } from './build-helpers.ts';
import { api } from './faults-support.ts';
import {
  clusterConfig,
  deploymentYaml,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const CHART = {
  'Chart.yaml': 'apiVersion: v2\nname: web\nversion: 1.0.0\n',
  'values.yaml': 'replicas: 1\ncolor: blue\n',
  'templates/config.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
data:
  color: {{ .Values.color | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  hasApps: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}
`,
  'templates/deployment.yaml': `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "example/web:1"}]}
`,
  'templates/tests/test.yaml': `apiVersion: v1
kind: Pod
metadata: {name: web-test, annotations: {"helm.sh/hook": test}}
spec: {containers: [{name: t, image: busybox}]}
`,
};

describe('helm charts', () => {
  const ns = useNamespace('helm');
  it('renders with the release, namespace, the cluster capabilities, values files and inline values', async () => {
    const env = testbed();
    const dir = await manifestDir({ ...CHART, 'prod.yaml': 'replicas: 3\ncolor: green\n' });
    expect(await isChart(dir)).toBe(true);
    const api = new KubeApi(clusterConfig());
    const caps = await new Discovery(api).capabilities();
    api.close();
    expect(caps.kubeVersion).toMatch(/^v1\.\d+\.\d+$/);
    const file = await renderChart({
      chart: dir,
      label: 'charts/web',
      releaseName: 'shop',
      namespace: 'prod',
      valuesFiles: [join(dir, 'prod.yaml')],
      values: { color: 'red' },
      kubeVersion: caps.kubeVersion,
      apiVersions: apiVersionsOf(caps.apiVersions),
      helm: env.tools.helm,
    });
    expect(file.path).toBe('charts/web (helm template shop)');
    const objects = parseAllDocuments(file.text)
      .map(
        (d) =>
          d.toJS() as {
            kind: string;
            metadata: { name: string };
            spec?: { replicas: number };
            data?: Record<string, string>;
          },
      )
      .filter(Boolean);
    expect(objects.map((o) => `${o.kind} ${o.metadata.name}`).sort()).toEqual([
      'ConfigMap shop-config',
      'Deployment shop',
    ]);
    const config = objects.find((o) => o.kind === 'ConfigMap');
    // Inline values win over the values file, which wins over the chart's defaults.
    expect(config?.data).toEqual({ color: 'red', kube: caps.kubeVersion, hasApps: 'true' });
    expect(objects.find((o) => o.kind === 'Deployment')?.spec?.replicas).toBe(3);
  });

  it('refuses a dependency that is not in charts/, and names the chart in helm errors', async () => {
    const env = testbed();
    const withDependency = await manifestDir({
      ...CHART,
      'Chart.yaml':
        'apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n  - {name: redis, version: 1.0.0, repository: https://charts.example.invalid}\n',
    });
    await expect(
      renderChart({
        chart: withDependency,
        label: 'charts/web',
        releaseName: 'shop',
        namespace: 'prod',
        valuesFiles: [],
        helm: env.tools.helm,
      }),
    ).rejects.toThrow(
      /charts\/web\/Chart.yaml: dependency redis comes from .* not in charts\/ and not an allowed repository/,
    );
    const broken = await manifestDir({ ...CHART, 'templates/bad.yaml': '{{ .Values.nope.deeper }}\n' });
    await expect(
      renderChart({
        chart: broken,
        label: 'charts/web',
        releaseName: 'shop',
        namespace: 'prod',
        valuesFiles: [],
        helm: env.tools.helm,
      }),
    ).rejects.toThrow(/^charts\/web: helm template failed: .*bad\.yaml/);
  });
  it('the agent deploys a chart from Git: digests bound, configuration versioned, a commit status', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const { image, digest } = await pushStable(`helm-${suffix}/web`);
    const kube = api();
    const agentNs = `mooring-helm-${suffix}`;
    const chartFiles = (color: string) => ({
      'charts/web/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 1.0.0\n',
      'charts/web/values.yaml': `image: ${image}:stable\ncolor: blue\n`,
      'charts/web/templates/_helpers.tpl': '{{- define "web.name" -}}{{ .Release.Name }}-web{{- end -}}\n',
      'charts/web/templates/all.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ include "web.name" . }}-config}
data: {color: {{ .Values.color | quote }}}
---
${deploymentYaml({
  name: '{{ include "web.name" . }}',
  app: 'web',
  image: '{{ .Values.image }}',
  configMap: '{{ include "web.name" . }}-config',
})}`,
      'env/prod.yaml': `color: ${color}\n`,
    });
    // The agent finds helm as the product does: MOORING_HELM, else helm on PATH.
    process.env.MOORING_HELM = env.tools.helm;
    const { repo, receiver, configFile, first, agent } = await startGitAgent({
      repo: `helm-${suffix}/app`,
      files: chartFiles('green'),
      cluster: { name: 'helm', namespace: agentNs },
      deployments: [
        {
          name: 'shop',
          namespace: ns(),
          images: ['web-image'],
          helm: { chart: 'charts/web', valuesFiles: ['env/prod.yaml'], values: { extra: 1 } },
        },
      ],
      extra: { sources: stableImageSources('web-image', image) },
    });
    try {
      const ended = receiver.ended;
      await untilEnded(agent, receiver, first, 'the chart deployed');
      expect(ended(first)?.state).toBe('success');
      const deployment = await liveObject<{
        spec: {
          template: {
            spec: { containers: { image: string; envFrom: { configMapRef: { name: string } }[] }[] };
          };
        };
      }>(ns(), 'deployment', 'shop-web');
      const container = deployment?.spec.template.spec.containers[0];
      expect(container?.image).toBe(`${image}:stable@${digest}`);
      expect(container?.envFrom[0]?.configMapRef.name).toBe('shop-web-config-v000');
      // mooring diff reads the deployment as the agent does (the chart rendered): nothing to change.
      const diff = await mooring('diff', '--deployment', 'shop', '--config', configFile);
      expect(diff.code, diff.stdout + diff.stderr).toBe(0);
      expect(diff.stdout).toMatch(/0 objects changed, 0 added, 2 unchanged/);
      // A values file of the chart changed: a new version of its configuration.
      const second = await repo.commit({ 'env/prod.yaml': 'color: red\n' });
      await eventually('the values change deployed', async () => ended(second), 90_000);
      expect(ended(second)?.state).toBe('success');
      const config = await liveObject<{ data: Record<string, string> }>(
        ns(),
        'configmap',
        'shop-web-config-v001',
      );
      expect(config?.data).toEqual({ color: 'red' });
      const third = await repo.commit({ 'README.md': 'not the chart\n' });
      await eventually('the unrelated commit seen', async () =>
        agent.logged('commit changes none of its paths').length > 0 ? true : undefined,
      );
      expect(ended(third)).toBeUndefined();
      // A chart that no longer renders fails its commit, naming the chart; nothing is applied.
      const broken = await repo.commit({
        'charts/web/templates/bad.yaml': '{{ .Values.nope.deeper }}\n',
      });
      await eventually('the broken chart reported', async () => ended(broken), 90_000);
      expect(ended(broken)?.state).toBe('failure');
      expect(ended(broken)?.description).toMatch(/^charts\/web: helm template failed/);
    } finally {
      await agent.stop();
      await receiver.close();
      kube.close();
      await kubectl('delete', 'namespace', agentNs, '--wait=false');
    }
  }, 180_000);

  it('the agent deploys a chart whose helper and values are symlinks, and a commit to what they lead to', async () => {
    const suffix = Date.now().toString(36);
    const agentNs = `mooring-helm-links-${suffix}`;
    process.env.MOORING_HELM = testbed().tools.helm;
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `helm-links-${suffix}/app`,
      files: {
        'shared/values.yaml': 'color: green\n',
        'shared/tpl/_helpers.tpl': '{{- define "linked.name" -}}{{ .Release.Name }}-linked{{- end -}}\n',
        'charts/web/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 1.0.0\n',
        'charts/web/values.yaml': 'color: blue\n',
        'charts/web/templates/cm.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {color: {{ .Values.color | quote }}}\n',
      },
      cluster: { name: 'helm-links', namespace: agentNs },
      deployments: [{ name: 'shop', namespace: ns(), helm: { chart: 'charts/web' } }],
    });
    try {
      const ended = receiver.ended;
      await untilEnded(agent, receiver, first, 'the plain chart deployed');
      expect(ended(first)?.state).toBe('success');
      // The chart's values file and a templates folder become links to files shared by the repository's charts.
      const linked = await repo.commit(
        {
          'charts/web/values.yaml': null,
          'charts/web/templates/cm.yaml':
            'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ include "linked.name" . }}}\ndata: {color: {{ .Values.color | quote }}}\n',
        },
        {
          symlinks: {
            'charts/web/values.yaml': '../../shared/values.yaml',
            'charts/web/templates/common': '../../../shared/tpl',
          },
        },
      );
      await eventually('the linked chart deployed', async () => ended(linked), 90_000);
      expect(ended(linked)?.state, ended(linked)?.description).toBe('success');
      expect(
        (await liveObject<{ data: Record<string, string> }>(ns(), 'configmap', 'shop-linked'))?.data,
      ).toEqual({
        color: 'green',
      });
      // A commit that changes only the file a link leads to, outside the chart folder, concerns the chart.
      const shared = await repo.commit({ 'shared/values.yaml': 'color: red\n' });
      await eventually('the shared values deployed', async () => ended(shared), 90_000);
      expect(ended(shared)?.state).toBe('success');
      expect(
        (await liveObject<{ data: Record<string, string> }>(ns(), 'configmap', 'shop-linked'))?.data,
      ).toEqual({
        color: 'red',
      });
    } finally {
      await agent.stop();
      await receiver.close();
      await kubectl('delete', 'namespace', agentNs, '--wait=false');
    }
  }, 180_000);
});
