// The manifests of local paths as the CLI and `run --watch` deploy them: standard input (`-`), files, folders
// walked, Kustomize trees built, a Helm chart folder (one holding Chart.yaml) rendered with `helm template`, and
// SOPS files decrypted (in a private copy for those a build reads: sops/tree.ts). The key file is read only when a
// file is encrypted.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { ManifestFile } from '../../render/parse.ts';
import { isChart, renderChart } from '../build/helm.ts';
import type { KustomizeOptions } from '../build/kustomize.ts';
import { kustomizeLocal } from '../build/kustomize-sources.ts';
import { loadAgeIdentities } from '../sops/age-keys.ts';
import { decryptFiles, type IdentitySource } from '../sops/decrypt.ts';
import { readManifestFiles, STDIN_PATH } from './files.ts';

export interface LocalManifestOptions {
  /** `--age-key-file`; else the environment as sops reads it. */
  ageKeyFile?: string | undefined;
  kustomize?: KustomizeOptions | undefined;
  /** For a chart folder among the paths. */
  chart: {
    namespace: string;
    /** The release name; the chart's own name when absent. */
    releaseName?: string | undefined;
    valuesFiles?: readonly string[] | undefined;
  };
  /** Told which paths are chart folders, before anything is rendered (to refuse chart flags without one). */
  onCharts?: ((charts: readonly string[]) => void) | undefined;
}

/** The chart's name from its Chart.yaml, for a release named after it. */
async function chartName(folder: string): Promise<string | undefined> {
  try {
    const doc = parse(await readFile(join(folder, 'Chart.yaml'), 'utf8')) as { name?: unknown } | null;
    return typeof doc?.name === 'string' ? doc.name : undefined;
  } catch {
    return undefined;
  }
}

export async function localManifests(
  paths: readonly string[],
  options: LocalManifestOptions,
): Promise<ManifestFile[]> {
  const identities: IdentitySource = () => loadAgeIdentities(options.ageKeyFile);
  const charts: string[] = [];
  const rest: string[] = [];
  for (const path of paths) {
    const folder = path !== STDIN_PATH && (await stat(path).catch(() => undefined))?.isDirectory();
    if (folder && (await isChart(path))) charts.push(path);
    else rest.push(path);
  }
  options.onCharts?.(charts);
  const files: ManifestFile[] = [];
  if (rest.length > 0) {
    files.push(
      ...(await kustomizeLocal(rest, await readManifestFiles(rest), { ...options.kustomize, identities })),
    );
  }
  for (const chart of charts) {
    files.push(
      await renderChart({
        chart,
        label: chart,
        releaseName: options.chart.releaseName ?? (await chartName(chart)) ?? 'release',
        namespace: options.chart.namespace,
        valuesFiles: options.chart.valuesFiles ?? [],
        identities,
      }),
    );
  }
  return decryptFiles(files, identities);
}
