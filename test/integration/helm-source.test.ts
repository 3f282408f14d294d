// Helm charts as a source format, with the project's real helm: `helm template` run as Argo CD runs it (release
// name, namespace, the cluster's version and API versions, values files then inline values), its output read as
// manifests; dependencies only from the chart's own charts/ folder; helm's errors name the chart.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KubeApi } from '../../src/kube/api.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { apiVersionsOf, isChart, renderChart } from '../../src/sources/build/helm.ts';
import { clusterConfig, manifestDir, testbed } from './helpers.ts';

async function chart(files: Record<string, string>): Promise<string> {
  const dir = await manifestDir({});
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

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
  it('renders with the release, namespace, the cluster capabilities, values files and inline values', async () => {
    const env = testbed();
    const dir = await chart({ ...CHART, 'prod.yaml': 'replicas: 3\ncolor: green\n' });
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
    const withDependency = await chart({
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
    const broken = await chart({ ...CHART, 'templates/bad.yaml': '{{ .Values.nope.deeper }}\n' });
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
});
