// The manifests of a deployment that names a Helm chart (`helm:` in its config): the chart folder of its source
// (a Git commit checked out into a temporary folder, or the local folder as it is) rendered by `helm template`
// with the deployment's values and the cluster's capabilities; the result goes through mooring's render. A chart
// from a chart source (a package fetched and extracted: `fetched`) is rendered the same way, with the values files
// of the deployment's source.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Deployment } from '../../config/schema.ts';
import { StalledError } from '../../errors.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { checkoutTree, refuseSkippedLinks } from '../git/checkout.ts';
import type { GitRepository } from '../git/repository.ts';
import type { IdentitySource } from '../sops/decrypt.ts';
import { apiVersionsOf, type ChartRequest, isChart, renderChart } from './helm.ts';
import type { ChartLookup } from './lookup.ts';

export { packagedChart } from './helm.ts';

import type { ToolLimits } from './tool.ts';

export interface ClusterCapabilities {
  kubeVersion: string;
  apiVersions: { groupVersion: string; kinds: string[] }[];
  /** Group-versions whose discovery failed (src/kube/discovery.ts): warned of with the chart's output. */
  unavailable?:
    | readonly { groupVersion: string; status: number; kept: boolean; reason?: string | undefined }[]
    | undefined;
}

type Chart = NonNullable<Deployment['helm']>;

/** How a chart is read beyond its folder: a package fetched in its place, and how dependencies are fetched. */
export interface ChartReading {
  /** The chart is this extracted package (a chart source's), not a folder of the source. */
  fetched?: { dir: string; label: string } | undefined;
  /** Fetches dependencies from allowed repositories (helm.ts); without it they are refused. */
  fetchDependencies?: ChartRequest['fetchDependencies'];
  /** Whether the folder read is a private copy (a checkout, an extracted artifact) rather than the user's. */
  privateFolder?: boolean | undefined;
  /** Serves the chart's `lookup` of live objects in the deployment's namespaces (lookup.ts); none offline. */
  lookup?: ChartLookup | undefined;
}

async function render(
  root: string,
  spec: Deployment,
  chart: Chart,
  caps: ClusterCapabilities | undefined,
  identities: IdentitySource | undefined,
  limits: ToolLimits | undefined,
  reading: ChartReading = {},
) {
  const { fetched } = reading;
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
    set: Object.entries(chart.set).map(([key, value]) => `${key}=${value}`),
    setString: Object.entries(chart.setString).map(([key, value]) => `${key}=${value}`),
    kubeVersion: caps?.kubeVersion,
    apiVersions: caps ? apiVersionsOf(caps.apiVersions) : undefined,
    unavailableApis: caps?.unavailable,
    allowedRepositories: chart.allowedRepositories,
    identities,
    treeRoot: root,
    limits,
    fetchDependencies: reading.fetchDependencies,
    // A fetched package is extracted into a folder of its own.
    privateFolder: fetched !== undefined || reading.privateFolder,
    lookup: reading.lookup,
    lookupNamespaces: [spec.namespace, ...spec.allowedNamespaces],
  });
}

/** The chart of deployment `spec` at a fetched `commit` of `repo`. */
export async function chartFromGit(
  repo: GitRepository,
  commit: string,
  spec: Deployment,
  caps: ClusterCapabilities | undefined,
  identities?: IdentitySource,
  limits?: ToolLimits,
  reading: ChartReading = {},
): Promise<ManifestFile[]> {
  const chart = spec.helm as Chart;
  const dir = await mkdtemp(join(tmpdir(), 'mooring-chart-'));
  try {
    const skipped = await checkoutTree(repo, commit, dir);
    // A link helm would read that was not written (it leads outside the repository, or nowhere) fails the render:
    // a values file or a chart file missing would render other objects, silently.
    const read = [...(reading.fetched ? [] : [chart.chart ?? '.']), ...chart.valuesFiles];
    refuseSkippedLinks(skipped, read, `deployment ${spec.name}'s chart`);
    // The checkout is the sync's own: fetched dependencies are written into it.
    return [await render(dir, spec, chart, caps, identities, limits, { ...reading, privateFolder: true })];
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
  reading: ChartReading = {},
): Promise<ManifestFile[]> {
  return [await render(folder, spec, spec.helm as Chart, caps, identities, limits, reading)];
}
