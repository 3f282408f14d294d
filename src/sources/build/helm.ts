// Helm charts as a source format: a chart folder (on disk: a CLI path, or a Git tree checked out for the agent) is
// rendered with `helm template`, and its output goes through mooring's own render like any manifest file (digests,
// versioned ConfigMaps and Secrets, monikers). Arguments are those Argo CD passes: the release name, the
// namespace, the cluster's version and API versions (so `.Capabilities` in templates sees the real cluster), the
// values files in order and inline values last. Helm runs through the one runner (tool.ts: a minimal environment,
// bounded time, output and memory) without network or plugins: its home, cache and config are a throwaway
// folder, and chart dependencies must already be in the chart's `charts/` folder unless the configuration names
// their repository as allowed. Each rendered object is placed in its template (origins.ts: errors name
// `charts/web/templates/deployment.yaml (rendered):12:3`), and what helm prints on standard error when it
// succeeds (a symlink followed, a value that cannot be merged) goes with the output as its warnings.
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, relative, sep } from 'node:path';
import type { ChartDependency } from '../../contract.ts';
import { StalledError } from '../../errors.ts';
import { isAllowedRepositoryUrl } from '../../http/repository-url.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { parseYaml } from '../../yaml/parse.ts';
import { stringifyYaml } from '../../yaml/write.ts';
import { readBounded } from '../local/bounded-read.ts';
import { copyResolved, refuseLeadingOutside, refuseSymlinksOutside, workTreeOf } from '../local/symlinks.ts';
import type { IdentitySource } from '../sops/decrypt.ts';
import { type Staged, sopsFilesUnder, stageDecrypted } from '../sops/tree.ts';
import { helmBinary, helmEnv, helmTemplateArgs } from './helm-args.ts';
import { refuseOutsideSchemaReferences } from './helm-schema.ts';
import { type LookupRequest, renderWithLookup } from './lookup.ts';
import { helmWrittenAt } from './origins.ts';
import { runToolWithWarnings, type ToolLimits, type ToolRun } from './tool.ts';

/** `lookup`: the chart's lookups read live objects through an endpoint of the render's own (lookup.ts). */
export interface ChartRequest extends LookupRequest {
  /** The chart folder (holding Chart.yaml). */
  chart: string;
  /** How the chart is named in messages (its path in the repository). */
  label: string;
  releaseName: string;
  namespace: string;
  /** Values files, relative to the chart or absolute, applied in order. */
  valuesFiles: readonly string[];
  /** Inline values, applied after the files. */
  values?: Record<string, unknown> | undefined;
  /** `key=value` for helm's --set and --set-string, passed as they are: helm reads them (after every values file). */
  set?: readonly string[] | undefined;
  setString?: readonly string[] | undefined;
  /** `v1.20.2`: the cluster's version, as `.Capabilities.KubeVersion`. */
  kubeVersion?: string | undefined;
  /** `apps/v1`, `apps/v1/Deployment`…: the cluster's API versions, as `.Capabilities.APIVersions`. */
  apiVersions?: readonly string[] | undefined;
  /**
   * Group-versions the cluster lists whose discovery failed (an aggregated API whose server is down): each is said in
   * the output's warnings, as helm and kubectl say "unable to retrieve the complete list of server APIs", since an
   * object the chart gates on it may be rendered differently.
   */
  unavailableApis?:
    | readonly { groupVersion: string; status: number; kept: boolean; reason?: string | undefined }[]
    | undefined;
  /** Repositories (URL prefixes) a dependency may come from when it is not in `charts/`. */
  allowedRepositories?: readonly string[] | undefined;
  /** The helm binary (`helm` on PATH by default; `MOORING_HELM` overrides). */
  helm?: string | undefined;
  /** The bounds of the helm run (render.toolTimeout, toolMaxOutputBytes, toolMemoryBytes). */
  limits?: ToolLimits | undefined;
  /**
   * The age identities for SOPS files in the chart folder or among the values files (as helm-secrets users keep
   * `secrets.yaml`): with them such files are decrypted in a private copy that helm renders (sops/tree.ts).
   */
  identities?: IdentitySource | undefined;
  /** The folder the labels of the chart and values files are relative to ('' for paths as given). */
  treeRoot?: string | undefined;
  /**
   * Fetches dependencies that are missing from `charts/` and come from an allowed repository into the chart
   * folder it is given (charts/dependencies.ts), returning what it fetched. Without it such a dependency is refused.
   */
  fetchDependencies?:
    | ((chartDir: string, label: string, missing: readonly MissingDependency[]) => Promise<ChartDependency[]>)
    | undefined;
  /**
   * Whether the chart folder is a private copy (a checkout, an extracted package) that dependencies may be
   * written into; otherwise (a folder of the user's) the chart is copied first.
   */
  privateFolder?: boolean | undefined;
}

interface ChartYaml {
  name?: string;
  dependencies?: { name?: string; version?: string; repository?: string; alias?: string }[];
}

/**
 * Whether a folder holds a chart: a Chart.yaml. Not read here; one that is not a regular file (a symlink to a device
 * that never ends, a pipe, a folder) is refused by name.
 */
export async function isChart(dir: string): Promise<boolean> {
  const path = join(dir, 'Chart.yaml');
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) return false;
  if (!info.isFile()) throw new StalledError(`${path}: not a regular file (a device, a pipe or a folder)`);
  return true;
}

/** A dependency Chart.yaml names that `charts/` does not hold, to be fetched (sources/charts/dependencies.ts). */
export interface MissingDependency {
  name: string;
  /** The version (or semver range) Chart.yaml asks for. */
  version: string;
  repository: string;
}

/**
 * The dependencies that are neither vendored in `charts/` nor `file://` paths: those from an allowed repository
 * are returned (to be fetched, when the request can), any other is refused.
 */
async function missingDependencies(request: ChartRequest): Promise<MissingDependency[]> {
  const chartYaml = join(request.chart, 'Chart.yaml');
  let chart: ChartYaml;
  try {
    chart = (parseYaml(await readBounded(chartYaml), { file: `${request.label}/Chart.yaml` }) ??
      {}) as ChartYaml;
  } catch (error) {
    throw new StalledError(`${request.label}/Chart.yaml: ${(error as Error).message}`);
  }
  const vendored = await readdir(join(request.chart, 'charts')).catch(() => [] as string[]);
  const missing: MissingDependency[] = [];
  const declared = Array.isArray(chart.dependencies) ? chart.dependencies : [];
  for (const dep of declared) {
    const name = typeof dep?.name === 'string' ? dep.name : '';
    if (vendored.some((entry) => entry === name || (entry.startsWith(`${name}-`) && entry.endsWith('.tgz'))))
      continue;
    const repository = typeof dep?.repository === 'string' ? dep.repository : '';
    if (repository.startsWith('file://')) continue;
    const allowed = isAllowedRepository(
      repository,
      request.allowedRepositories ?? [],
      `${request.label}/Chart.yaml: dependency ${name} is refused: its repository`,
    );
    if (allowed && request.fetchDependencies) {
      missing.push({ name, version: typeof dep.version === 'string' ? dep.version : '*', repository });
      continue;
    }
    throw new StalledError(
      allowed
        ? `${request.label}/Chart.yaml: dependency ${name} is not in charts/; run helm dependency build and commit charts/`
        : `${request.label}/Chart.yaml: dependency ${name} comes from ${repository || 'no repository'}, which is not in charts/ and not an allowed repository; run helm dependency build and commit charts/`,
    );
  }
  return missing;
}

/**
 * Whether `repository` lies under one of the allowed prefixes, compared parsed (src/http/repository-url.ts): the
 * same origin and the prefix's path segments (`https://charts.example.com` does not allow
 * `https://charts.example.com.evil.io`, nor `oci://reg/myorg/charts` `oci://reg/myorg/charts/../../evilorg`). A
 * repository with a `..` segment or an encoded separator is refused with a StalledError that starts with `what`.
 */
export function isAllowedRepository(repository: string, allowed: readonly string[], what: string): boolean {
  if (repository === '' || allowed.length === 0) return false;
  return isAllowedRepositoryUrl(repository, allowed, what);
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

/** The chart's files decrypted into a private copy, when the chart folder or a values file holds a SOPS file. */
async function stageChart(request: ChartRequest): Promise<Staged | undefined> {
  if (!request.identities) return undefined;
  const root = request.treeRoot ?? '';
  const label = (path: string) => (root === '' ? path : relative(root, path).split(sep).join('/'));
  const places = [
    { disk: request.chart, label: request.label },
    ...request.valuesFiles.map((disk) => ({ disk, label: label(disk) })),
  ];
  // The repository a chart folder's links stay in, as renderChart checked them.
  const boundary = request.treeRoot || (await workTreeOf(request.chart)) || request.chart;
  const encrypted = await sopsFilesUnder(places, boundary);
  if (encrypted.length === 0) return undefined;
  return stageDecrypted(places, encrypted, request.identities, root, boundary);
}

/** The chart rendered by `helm template`, as one manifest file named after the chart. */
export async function renderChart(request: ChartRequest): Promise<ManifestFile> {
  // helm follows every symlink of a chart folder: none may lead outside the repository (local/symlinks.ts).
  const boundary = request.treeRoot || (await workTreeOf(request.chart)) || request.chart;
  await refuseSymlinksOutside(request.chart, boundary, request.label);
  if (request.treeRoot) {
    // A source's values files are the repository's too (the CLI's --values are the user's own choice).
    const root = request.treeRoot;
    for (const file of request.valuesFiles)
      await refuseLeadingOutside(file, boundary, relative(root, file).split(sep).join('/'));
  }
  const missing = await missingDependencies(request);
  if (missing.length === 0 || request.privateFolder) return render(request, missing);
  // Dependencies are written into the chart's charts/ folder: a folder of the user's is copied first.
  const copy = await mkdtemp(join(tmpdir(), 'mooring-chart-copy-'));
  try {
    const chart = join(copy, basename(request.chart) || 'chart');
    await copyResolved(request.chart, chart, boundary, request.label);
    const file = await render({ ...request, chart, privateFolder: true }, missing);
    // Messages name the user's folder, never the copy.
    return file;
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

async function render(request: ChartRequest, missing: readonly MissingDependency[]): Promise<ManifestFile> {
  const dependencies =
    missing.length > 0 && request.fetchDependencies
      ? await request.fetchDependencies(request.chart, request.label, missing)
      : [];
  const staged = await stageChart(request);
  const onDisk = (path: string) => (staged ? staged.at(path) : path);
  // helm loads what a values schema refers to, from the machine or the network: only within itself here.
  try {
    await refuseOutsideSchemaReferences(onDisk(request.chart), request.label, request.allowedRepositories);
  } catch (error) {
    await staged?.remove();
    throw error;
  }
  const home = await mkdtemp(join(tmpdir(), 'mooring-helm-'));
  try {
    let inlineValuesFile: string | undefined;
    if (request.values && Object.keys(request.values).length > 0) {
      inlineValuesFile = join(home, 'inline-values.yaml');
      await writeFile(inlineValuesFile, stringifyYaml(request.values));
    }
    const args = helmTemplateArgs({
      releaseName: request.releaseName,
      chart: onDisk(request.chart),
      namespace: request.namespace,
      kubeVersion: request.kubeVersion,
      apiVersions: request.apiVersions,
      valuesFiles: request.valuesFiles.map(onDisk),
      inlineValuesFile,
      set: request.set,
      setString: request.setString,
    });
    const env = helmEnv(home);
    const helm = helmBinary(request.helm);
    const helmRun: ToolRun = {
      binary: helm,
      configuredBy: 'MOORING_HELM',
      args,
      env,
      home,
      label: request.label,
      step: 'helm template',
      ...request.limits,
      secrets: staged?.secrets,
      clean: (why: string) => {
        // Temporary folders (a checkout, a decrypted copy, helm's home) mean nothing to the reader.
        let text = staged ? staged.clean(why) : why;
        text = text
          .split(`${request.chart}/`)
          .join(`${request.label}/`)
          .split(request.chart)
          .join(request.label);
        const root = request.treeRoot ?? '';
        if (root !== '') text = text.split(`${root}/`).join('');
        return text.split(`${home}/`).join('').split(home).join('.');
      },
    };
    const { stdout: text, warnings } = await renderWithLookup(request, home, (extra) =>
      runToolWithWarnings({ ...helmRun, args: [...args, ...extra] }),
    );
    // The values decrypted into the chart's copy go with its output: whatever later quotes the rendered objects (a
    // render error, the audit log) redacts them.
    for (const api of request.unavailableApis ?? [])
      warnings.push(
        `${request.label}: the cluster's discovery of ${api.groupVersion} failed (HTTP ${api.status}${
          api.reason ? `; ${api.reason}` : ''
        }): .Capabilities ${api.kept ? 'holds its kinds as last read' : 'leaves it out'}`,
      );
    const writtenAt = helmWrittenAt(text, request.label);
    return {
      path: `${request.label} (helm template ${request.releaseName})`,
      text,
      perDocument: true,
      ...(staged ? { secrets: staged.secrets } : {}),
      ...(warnings.length > 0 ? { warnings } : {}),
      ...(writtenAt ? { writtenAt } : {}),
      ...(dependencies.length > 0 ? { dependencies } : {}),
    };
  } finally {
    await rm(home, { recursive: true, force: true });
    await staged?.remove();
  }
}

/** The cluster's capabilities as helm's flags want them, from discovery answers. */
export function apiVersionsOf(
  groups: readonly { groupVersion: string; kinds: readonly string[] }[],
): string[] {
  const versions: string[] = [];
  for (const g of groups) {
    versions.push(g.groupVersion);
    for (const kind of g.kinds) versions.push(`${g.groupVersion}/${kind}`);
  }
  return versions.sort();
}
