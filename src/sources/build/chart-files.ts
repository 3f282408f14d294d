// The manifests of a deployment that names a Helm chart (`helm:` in its config): the chart folder of its source
// (a Git commit checked out into a temporary folder, or the local folder as it is) rendered by `helm template`
// with the deployment's values and the cluster's capabilities; the result goes through mooring's render. A chart
// from a chart source (a package fetched and extracted: `fetched`) is rendered the same way, with the values files
// of the deployment's source.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Deployment } from '../../config/schema.ts';
import { StalledError } from '../../errors.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { checkoutTree } from '../git/checkout.ts';
import type { GitRepository } from '../git/repository.ts';
import type { IdentitySource } from '../sops/decrypt.ts';
import { apiVersionsOf, isChart, renderChart } from './helm.ts';
import type { ToolLimits } from './tool.ts';

export interface ClusterCapabilities {
  kubeVersion: string;
  apiVersions: { groupVersion: string; kinds: string[] }[];
}

type Chart = NonNullable<Deployment['helm']>;

async function render(
  root: string,
  spec: Deployment,
  chart: Chart,
  caps: ClusterCapabilities | undefined,
  identities: IdentitySource | undefined,
  limits: ToolLimits | undefined,
  fetched?: { dir: string; label: string },
) {
  const dir = fetched ? fetched.dir : join(root, chart.chart ?? '.');
  const label = fetched ? fetched.label : (chart.chart ?? '.');
  if (!(await isChart(dir))) throw new StalledError(`deployment ${spec.name}: ${label} holds no Chart.yaml`);
  return renderChart({
    chart: dir,
    label,
    releaseName: chart.releaseName ?? spec.name,
    namespace: spec.namespace,
    valuesFiles: chart.valuesFiles.map((f) => join(root, f)),
    values: chart.values,
    kubeVersion: caps?.kubeVersion,
    apiVersions: caps ? apiVersionsOf(caps.apiVersions) : undefined,
    allowedRepositories: chart.allowedRepositories,
    identities,
    treeRoot: root,
    limits,
  });
}

/**
 * The chart folder of a package extracted into `dir`: helm packages a chart as `<name>/Chart.yaml`, so the one
 * folder that holds a Chart.yaml (the chart's name first).
 */
export async function packagedChart(dir: string, name: string): Promise<string> {
  if (await isChart(join(dir, name))) return join(dir, name);
  const entries = await readdir(dir, { withFileTypes: true });
  const charts: string[] = [];
  for (const e of entries) if (e.isDirectory() && (await isChart(join(dir, e.name)))) charts.push(e.name);
  if (charts.length !== 1 || charts[0] === undefined)
    throw new StalledError(
      `the package holds ${charts.length === 0 ? 'no chart' : 'several charts'} (a folder with Chart.yaml)`,
    );
  return join(dir, charts[0]);
}

/** The chart of deployment `spec` at a fetched `commit` of `repo`. */
export async function chartFromGit(
  repo: GitRepository,
  commit: string,
  spec: Deployment,
  caps: ClusterCapabilities | undefined,
  identities?: IdentitySource,
  limits?: ToolLimits,
  fetched?: { dir: string; label: string },
): Promise<ManifestFile[]> {
  const chart = spec.helm as Chart;
  const dir = await mkdtemp(join(tmpdir(), 'mooring-chart-'));
  try {
    await checkoutTree(repo, commit, dir);
    return [await render(dir, spec, chart, caps, identities, limits, fetched)];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The chart of deployment `spec` in a local folder. */
export async function chartFromFolder(
  folder: string,
  spec: Deployment,
  caps: ClusterCapabilities | undefined,
  identities?: IdentitySource,
  limits?: ToolLimits,
  fetched?: { dir: string; label: string },
): Promise<ManifestFile[]> {
  return [await render(folder, spec, spec.helm as Chart, caps, identities, limits, fetched)];
}
