// A deployment's manifests at a revision: the one reader every path uses (the agent's sync, `mooring rollback`,
// `mooring diff --deployment`, `mooring run --watch`, and the CLI's `render`, `deploy` and `diff` of paths), so
// that each gets exactly what the sync builds: a Helm chart rendered with the deployment's values and the
// cluster's capabilities, kustomizations built (what they may read checked), plain files read with their limits,
// SOPS files decrypted. A rollback of a Kustomize or Helm deployment therefore rebuilds the recorded commit as its
// sync did, not the raw files of the commit. A chart from a chart source and manifests from an OCI artifact are
// fetched at the version and digest the sync deploys (or the release recorded) through the one download path
// (artifact-fetch.ts), bounded and checked like Git content.

import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { append } from '../arrays.ts';
import type { Deployment, MooringConfig } from '../config/schema.ts';
import { StalledError, TransientError } from '../errors.ts';
import { RenderError } from '../render/errors.ts';
import { documentLimits, type ManifestFile } from '../render/parse.ts';
import { checkYaml } from '../yaml/count.ts';
import { YamlLimitError } from '../yaml/errors.ts';
import { yamlLimitsOf } from '../yaml/limits.ts';
import { parseYaml } from '../yaml/parse.ts';
import { MANIFEST_WORKER_HEAP_MB, readDocumentsAsync, WORKER_THRESHOLD } from '../yaml/parse-async.ts';
import type { ArtifactAt, ExtractedArtifact, FetchContext } from './artifact-fetch.ts';
import { artifactSource, followedArtifacts, isOciSourced } from './artifact-poller.ts';
import {
  type ChartReading,
  type ClusterCapabilities,
  chartFromFolder,
  chartFromGit,
  packagedChart,
} from './build/chart-files.ts';
import { apiVersionsOf, type ChartRequest, isChart, renderChart } from './build/helm.ts';
import { KUSTOMIZATION_NAMES, kustomizeOptions } from './build/kustomize.ts';
import { kustomizeGit, kustomizeLocal } from './build/kustomize-sources.ts';
import type { ChartLookup } from './build/lookup.ts';
import { toolLimits } from './build/tool.ts';
import type { ChartDependency } from './charts/dependencies.ts';
import type { GitRepository } from './git/repository.ts';
import { readBounded } from './local/bounded-read.ts';
import { DEFAULT_READ_LIMITS, type ReadLimits, readManifestFiles, STDIN_PATH } from './local/files.ts';
import { SignatureRefusal } from './registry/cosign.ts';
import { type AgeIdentity, loadAgeIdentities } from './sops/age-keys.ts';
import { decryptFiles, maySopsText, omitEncrypted } from './sops/decrypt.ts';

export type { ClusterCapabilities } from './build/chart-files.ts';

/** What reading needs of the configuration, and the cluster's capabilities for a chart (asked only for one). */
export interface ManifestContext {
  config: Pick<MooringConfig, 'render' | 'decryption' | 'sources'>;
  capabilities?: (() => Promise<ClusterCapabilities>) | undefined;
  /**
   * Serves a chart's `lookup` of live objects (build/lookup.ts): the agent's and the CLI's renders against a
   * cluster; never an offline render or a preview of a pull request (whose author would read the live Secrets).
   */
  lookup?: ChartLookup | undefined;
  /** Where fetched charts and artifacts are kept (artifact-fetch.ts). */
  cacheDir?: string | undefined;
  /** The agent's pollers, whose clients fetching shares. */
  poller?: FetchContext['poller'];
  /**
   * Aborted when the agent stops or the sync that reads is stopped: the downloads it makes (without a poller of the
   * agent's) and the tools it runs (helm, kustomize) are given up then.
   */
  signal?: AbortSignal | undefined;
  /**
   * `omit`: SOPS-encrypted files are not decrypted (a preview of a pull request): plain ones are left out with a
   * warning, and a chart or kustomization that needs one fails saying so. Decrypted by default.
   */
  sops?: 'decrypt' | 'omit' | undefined;
  /**
   * A large file is read on this thread rather than in a worker: for a command that has nothing else to answer
   * while it reads (the CLI's render, deploy, diff), the worker is only its start-up and a copy of every value.
   * Such a file is then read once, by render's parse (render/parse.ts), with the same limits and refusals: read
   * here in advance, its documents would be copied whole again by each parse.
   */
  readInThread?: boolean | undefined;
}

const NOT_DECRYPTED = 'previews do not decrypt SOPS files unless preview.decrypt allows it';

/**
 * Where the deployment's source is: a Git repository at a commit, or (no `git`) its local folder now or its OCI
 * artifact; and the chart version or artifact digest of each artifact source it follows (by source name).
 */
export type SourceAt = ({ git: GitRepository; commit: string } | { git?: undefined }) & {
  artifacts?: Readonly<Record<string, ArtifactAt>> | undefined;
  /**
   * Chart dependencies the deployment's releases recorded (the ledger): a version fetched again must have the
   * recorded digest; with `restoreDependencies` (a rollback) the first recorded version of each is the one fetched.
   */
  dependencies?: readonly ChartDependency[] | undefined;
  restoreDependencies?: boolean | undefined;
};

/**
 * The manifests of deployment `spec` at the source's revision, as the sync builds them, with SOPS files
 * decrypted (the key file is read only when a file is encrypted).
 */
export async function deploymentManifests(
  ctx: ManifestContext,
  spec: Deployment,
  at: SourceAt,
): Promise<ManifestFile[]> {
  // The signatures of the artifacts it follows, first: nothing of an unverified chart or artifact is read.
  const artifactsSignedBy = await verifiedArtifacts(ctx, spec, at);
  const keys = identities(ctx);
  const limits = toolLimits(ctx.config.render, ctx.signal);
  const reading = (chart: ExtractedArtifact | undefined, privateFolder = false): ChartReading => ({
    fetched: chart,
    privateFolder,
    fetchDependencies: dependencyFetcher(ctx, at.dependencies, at.restoreDependencies),
    lookup: ctx.lookup,
  });
  const files = await vetted(ctx, await sourceFiles());
  // Decrypted text is read again (a file decryption left alone is not).
  const plain = ctx.sops === 'omit' ? omitEncrypted(files, NOT_DECRYPTED) : await decryptFiles(files, keys);
  const manifests = await vetted(ctx, plain, new Set(files));
  // Who signed the commit, when its source verifies signatures (checked already by every read of the commit):
  // the release records it.
  const signer = at.git ? await at.git.signer(at.commit) : undefined;
  const signed = Object.keys(artifactsSignedBy).length > 0;
  if (!signer && !signed) return manifests;
  const signedBy = signer && `${signer.key}${signer.identity ? ` (${signer.identity})` : ''}`;
  return manifests.map((f) => ({
    ...f,
    ...(signedBy ? { signedBy } : {}),
    ...(signed ? { artifactsSignedBy } : {}),
  }));

  async function sourceFiles(): Promise<ManifestFile[]> {
    const chart = spec.helm?.chartSource !== undefined ? await fetchChart(spec.helm.chartSource) : undefined;
    try {
      return await read(chart);
    } finally {
      await chart?.remove();
    }
  }

  /** The package of the deployment's chart source at the version its sync deploys. */
  async function fetchChart(name: string): Promise<ExtractedArtifact> {
    const version = at.artifacts?.[name];
    if (!version)
      throw new TransientError(`deployment ${spec.name}: no version of chart source ${name} is known yet`);
    const fetched = await (await fetchModule()).extractArtifact(ctx, name, version);
    try {
      const source = ctx.config.sources.charts.find((c) => c.name === name);
      return { ...fetched, dir: await packagedChart(fetched.dir, source?.chart ?? '') };
    } catch (error) {
      await fetched.remove();
      throw error instanceof StalledError && error.constructor === StalledError
        ? new StalledError(`${fetched.label}: ${error.message}`)
        : error;
    }
  }

  async function read(chart: ExtractedArtifact | undefined): Promise<ManifestFile[]> {
    if (isOciSourced(ctx.config, spec)) return ociFiles(chart);
    if (at.git) {
      const { git: repo, commit } = at;
      await repo.fetch(commit);
      if (spec.helm)
        return chartFromGit(repo, commit, spec, await ctx.capabilities?.(), keys, limits, reading(chart));
      const recursive = spec.recursive;
      const files = await repo.files(commit, spec.paths, spec.exclude, { recursive });
      const options = kustomizeOptions(ctx.config, ctx.signal);
      return kustomizeGit(repo, commit, spec.paths, spec.exclude, files, options, recursive);
    }
    const local = ctx.config.sources.local.find((s) => s.name === spec.source);
    if (!local) throw new Error(`deployment ${spec.name}: no source ${spec.source}`);
    // One tree for the whole read: a source folder that is a symlink, switched to another tree as each commit is
    // published (git-sync does so), is checked and read, by mooring and by the tools, where it led when the read
    // began; the check of one tree never vouches for the tree a tool then reads. Files keep the source's names.
    const root = await realpath(local.path).catch(() => local.path);
    const files = spec.helm
      ? await chartFromFolder(root, spec, await ctx.capabilities?.(), keys, limits, reading(chart))
      : await folderFiles(root);
    return root === local.path ? files : files.map((f) => namedUnder(f, root, local.path));
  }

  /** The paths of a folder as a deployment reads them: kustomizations built, manifest files read. */
  async function folderFiles(root: string): Promise<ManifestFile[]> {
    const given = spec.paths.map((p) => (p === '.' ? root : `${root}/${p}`));
    const paths = spec.recursive ? given : await flatten(given);
    const read = await readManifestFiles(paths, readLimits(ctx));
    return kustomizeLocal(paths, read, kustomizeOptions(ctx.config, ctx.signal), root);
  }

  /**
   * The manifests of the OCI artifact the sync deploys, extracted into a temporary folder and read as a folder is
   * (its chart rendered, or its paths read); files are named by their path in the artifact.
   */
  async function ociFiles(chart: ExtractedArtifact | undefined): Promise<ManifestFile[]> {
    const digest = at.artifacts?.[spec.source];
    if (!digest)
      throw new TransientError(
        `deployment ${spec.name}: no digest of oci source ${spec.source} is known yet`,
      );
    const artifact = await (await fetchModule()).extractArtifact(ctx, spec.source, digest);
    const inside = (text: string) => text.split(`${artifact.dir}/`).join('').split(artifact.dir).join('.');
    try {
      const files = spec.helm
        ? await chartFromFolder(
            artifact.dir,
            spec,
            await ctx.capabilities?.(),
            keys,
            limits,
            reading(chart, true),
          )
        : await folderFiles(artifact.dir);
      return files.map((f) => ({ ...f, path: inside(f.path) }));
    } catch (error) {
      // A plain refusal names the artifact and its paths, not the temporary folder (typed ones keep their type).
      if (error instanceof StalledError && error.constructor === StalledError)
        throw new StalledError(`${artifact.label}: ${inside(error.message)}`);
      throw error;
    } finally {
      await artifact.remove();
    }
  }
}

/**
 * The signers of the artifacts deployment `spec` follows whose sources verify signatures (registry/cosign.ts),
 * each digest checked now with the source's keys of now (a rollback's recorded digests included): a digest that
 * does not verify, or a followed source with no digest yet, refuses the read, so nothing of it is deployed.
 */
async function verifiedArtifacts(
  ctx: ManifestContext,
  spec: Deployment,
  at: SourceAt,
): Promise<Record<string, string>> {
  const signers: Record<string, string> = {};
  for (const name of followedArtifacts(ctx.config, spec)) {
    const found = artifactSource(ctx.config, name);
    if (!found?.source.verify) continue;
    const shared = ctx.poller?.(name);
    const artifact = at.artifacts?.[name];
    if (!artifact) {
      const why = shared?.verifier?.lastRefusal();
      throw new SignatureRefusal(
        `deployment ${spec.name}: no verified digest of ${found.kind} source ${name} yet${why ? `: ${why}` : ''}`,
      );
    }
    // Loaded here, by the first check without a shared poller (a rollback, the CLI): the registry client and its
    // schemas are no part of reading manifests otherwise (`mooring render` of a chart starts helm sooner without them).
    const poller =
      shared ??
      (await (await import('./create-poller.ts')).createArtifactPoller(found, { signal: ctx.signal }));
    try {
      if (!poller.verifier) throw new StalledError(`source ${name} cannot check signatures`);
      signers[name] = (await poller.verifier.verify(artifact.digest)).key;
    } finally {
      if (!shared) poller.client.close();
    }
  }
  return signers;
}

/** Paths given on the command line (and the folder `run --watch` watches), read as `kubectl apply -f` reads them. */
export interface LocalPaths {
  /** Files, folders, and `-` for standard input. */
  paths: readonly string[];
  /**
   * Whether folders are walked into their subfolders (`-R`, as kubectl). Without it a folder gives the manifest
   * files directly in it; a folder holding a kustomization or a chart is built whole either way.
   */
  recursive: boolean;
  /** For a chart folder among the paths (a folder holding Chart.yaml, rendered with `helm template`). */
  chart: {
    namespace: string;
    /** The release name; the chart's own name when absent. */
    releaseName?: string | undefined;
    valuesFiles?: readonly string[] | undefined;
    /** `key=value` as helm's --set and --set-string read them, after the values files. */
    set?: readonly string[] | undefined;
    setString?: readonly string[] | undefined;
    allowedRepositories?: readonly string[] | undefined;
    /** Further namespaces the set may name (--allow-namespace): a lookup reads there too, as a deployment's does. */
    allowedNamespaces?: readonly string[] | undefined;
  };
  /** Told which paths are chart folders, before anything is rendered (to refuse chart flags without one). */
  onCharts?: ((charts: readonly string[]) => void) | undefined;
}

/**
 * The manifests of local paths, through the same builders, limits and decryption as a deployment's: each chart
 * folder rendered (with the cluster's capabilities when known), kustomizations built, plain files read.
 */
export async function pathManifests(ctx: ManifestContext, local: LocalPaths): Promise<ManifestFile[]> {
  const keys = identities(ctx);
  const limits = toolLimits(ctx.config.render, ctx.signal);
  const charts: string[] = [];
  const rest: string[] = [];
  for (const path of local.paths) {
    const folder = path !== STDIN_PATH && (await stat(path).catch(() => undefined))?.isDirectory();
    if (folder && (await isChart(path))) charts.push(path);
    else if (folder && !local.recursive) append(rest, await folderLevel(path));
    else rest.push(path);
  }
  local.onCharts?.(charts);
  const files: ManifestFile[] = [];
  if (rest.length > 0) {
    const read = await readManifestFiles(rest, readLimits(ctx));
    append(files, await kustomizeLocal(rest, read, kustomizeOptions(ctx.config, ctx.signal)));
  }
  const caps = charts.length > 0 ? await ctx.capabilities?.() : undefined;
  for (const chart of charts) {
    files.push(
      await renderChart({
        chart,
        label: chart,
        releaseName: local.chart.releaseName ?? (await chartName(chart)) ?? 'release',
        namespace: local.chart.namespace,
        valuesFiles: local.chart.valuesFiles ?? [],
        set: local.chart.set,
        setString: local.chart.setString,
        allowedRepositories: local.chart.allowedRepositories,
        fetchDependencies: dependencyFetcher(ctx, undefined, false),
        kubeVersion: caps?.kubeVersion,
        apiVersions: caps ? apiVersionsOf(caps.apiVersions) : undefined,
        unavailableApis: caps?.unavailable,
        identities: keys,
        limits,
        lookup: ctx.lookup,
        lookupNamespaces: [local.chart.namespace, ...(local.chart.allowedNamespaces ?? [])],
      }),
    );
  }
  const read = await vetted(ctx, files);
  return vetted(ctx, await decryptFiles(read, keys), new Set(read));
}

/**
 * The files, each counted against the YAML limits before anything composes it (decryption here, render as it reads
 * a small one), and a large
 * one counted and read in the same pass in a worker thread (yaml/parse-async.ts; on this thread for the CLI,
 * ManifestContext.readInThread): the agent keeps answering while
 * a hostile file is refused, and render receives its documents as values (ManifestFile.documents) instead of
 * composing them on the event loop. Past a limit, the sync fails naming the file and line (render would refuse it
 * the same way). A file in `done` (read before decryption, unchanged by it) is not read again.
 */
async function vetted(
  ctx: ManifestContext,
  files: ManifestFile[],
  done: ReadonlySet<ManifestFile> = new Set(),
): Promise<ManifestFile[]> {
  const limits = yamlLimitsOf(ctx.config.render);
  const out: ManifestFile[] = [];
  for (const file of files) {
    if (done.has(file)) {
      out.push(file);
      continue;
    }
    // A file past maxFileBytes is refused by render for its size, before anything reads it; a tool's output is held
    // to it one document at a time (render/parse.ts documentLimits).
    const tooLarge =
      !file.perDocument && Buffer.byteLength(file.text, 'utf8') > ctx.config.render.maxFileBytes;
    if (file.documents || tooLarge || file.text.length <= WORKER_THRESHOLD || ctx.readInThread) {
      // A small text that decryption would compose is counted here. Any other small text is counted by render as
      // it reads it (render/parse.ts), with the same refusal: counted in both places, it was lexed twice a sync.
      if (!file.documents && !tooLarge && maySopsText(file.text))
        refusedIfPast(file, () => checkYaml(file.text, file.path, limits));
      out.push(file);
      continue;
    }
    try {
      const options = { file: file.path, limits, ...documentLimits(file, ctx.config.render) };
      const documents = await readDocumentsAsync(file.text, { ...options, heapMb: MANIFEST_WORKER_HEAP_MB });
      out.push({ ...file, documents });
    } catch (error) {
      refusedIfPast(file, () => {
        throw error;
      });
    }
  }
  return out;
}

/** Runs `check`; a YamlLimitError becomes the RenderError render would give, at the place the user wrote. */
function refusedIfPast(file: ManifestFile, check: () => unknown): void {
  try {
    check();
  } catch (error) {
    if (!(error instanceof YamlLimitError)) throw error;
    const built = { file: file.path, line: error.line, column: error.column };
    throw new RenderError(error.reason, { origin: file.writtenAt?.(built)?.origin ?? built });
  }
}

/** The bounds of local files as the render settings give them (a file, all of standard input). */
function readLimits(ctx: ManifestContext): ReadLimits {
  const { maxFileBytes, toolMaxOutputBytes } = ctx.config.render;
  return { ...DEFAULT_READ_LIMITS, maxFileBytes, maxStdinBytes: toolMaxOutputBytes };
}

/** Fetches a chart's dependencies from its allowed repositories through the download path (charts/dependencies.ts). */
function dependencyFetcher(
  ctx: ManifestContext,
  pinned: readonly ChartDependency[] | undefined,
  restore: boolean | undefined,
): ChartRequest['fetchDependencies'] {
  return async (chartDir, label, missing) => {
    const { fetchDependencies } = await import('./charts/dependencies.ts');
    return fetchDependencies(chartDir, label, missing, { fetch: ctx, pinned, restore });
  };
}

/** The download path, loaded when a deployment first needs a chart or an artifact (not carried otherwise). */
function fetchModule(): Promise<typeof import('./artifact-fetch.ts')> {
  return import('./artifact-fetch.ts');
}

function identities(ctx: ManifestContext): () => Promise<AgeIdentity[]> {
  if (ctx.sops === 'omit')
    return () => Promise.reject(new StalledError(`a SOPS-encrypted file is needed here: ${NOT_DECRYPTED}`));
  return () => loadAgeIdentities(ctx.config.decryption.ageKeyFile);
}

const MANIFEST = /\.(ya?ml|json)$/i;

/**
 * A folder read without -R: itself when it holds a kustomization (built whole), else the manifest files directly
 * in it (sorted, hidden ones skipped), as `kubectl apply -f DIR`.
 */
async function folderLevel(folder: string): Promise<string[]> {
  const names = (await readdir(folder)).filter((name) => !name.startsWith('.')).sort();
  if (names.some((name) => (KUSTOMIZATION_NAMES as readonly string[]).includes(name))) return [folder];
  const files: string[] = [];
  for (const name of names) {
    if (!MANIFEST.test(name)) continue;
    const path = join(folder, name);
    const info = await stat(path).catch(() => undefined);
    if (info?.isFile()) files.push(path);
    // A named pipe would hold the read until some writer came, a device never ends (docs/security.md).
    else if (info && !info.isDirectory())
      throw new StalledError('not a regular file (a named pipe, socket or device)', {
        subject: { describe: path },
      });
  }
  return files;
}

/** Paths with each folder read without its subfolders (folderLevel). */
async function flatten(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const path of paths) {
    const folder = (await stat(path).catch(() => undefined))?.isDirectory();
    append(out, folder ? await folderLevel(path) : [path]);
  }
  return out;
}

/** Whether a folder has subfolders that -R would read (for the hint when a folder alone gives nothing). */
export async function hasSubfolders(folder: string): Promise<boolean> {
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  return entries.some((e) => e.isDirectory() && !e.name.startsWith('.'));
}

/**
 * Files of a folder (not its subfolders) in a format mooring does not render but a peer does (Argo CD evaluates
 * Jsonnet): named when the folder renders nothing, so the message says why. At most `max`, sorted.
 */
export async function unrenderedFormats(folder: string, max = 3): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile() && /\.(jsonnet|libsonnet)$/.test(e.name))
    .map((e) => e.name)
    .sort()
    .slice(0, max);
}

/** The chart's name from its Chart.yaml, for a release named after it. */
async function chartName(folder: string): Promise<string | undefined> {
  try {
    const file = join(folder, 'Chart.yaml');
    const doc = parseYaml(await readBounded(file), { file }) as { name?: unknown } | null;
    return typeof doc?.name === 'string' ? doc.name : undefined;
  } catch {
    return undefined;
  }
}

/** A file read under `real`, named under `shown` (the folder as the configuration names it). */
function namedUnder(file: ManifestFile, real: string, shown: string): ManifestFile {
  const rename = (path: string) =>
    path === real ? shown : path.startsWith(`${real}/`) ? `${shown}${path.slice(real.length)}` : path;
  const writtenAt = file.writtenAt;
  return {
    ...file,
    path: rename(file.path),
    ...(writtenAt
      ? {
          writtenAt: (at, object) => {
            const found = writtenAt(at, object);
            return (
              found && {
                origin: { ...found.origin, file: rename(found.origin.file) },
                locate: (path, built) => {
                  const origin = found.locate(path, built);
                  return { ...origin, file: rename(origin.file) };
                },
              }
            );
          },
        }
      : {}),
  };
}
