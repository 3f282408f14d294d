// How the CLI reads the manifests of its paths (render, deploy, diff): sources/local/manifests.ts with the flags
// of a chart folder (`--values`, `--release-name`) and of SOPS (`--age-key-file`).
import type { Command } from 'commander';
import { StalledError } from '../errors.ts';
import { type ManifestFile, parseManifestFiles } from '../render/parse.ts';
import { localManifests } from '../sources/local/manifests.ts';

export interface LocalInputFlags {
  ageKeyFile?: string | undefined;
  values?: string[] | undefined;
  releaseName?: string | undefined;
  /** deploy --allow-empty: no objects is what is meant (everything the inventory holds is pruned). */
  allowEmpty?: boolean | undefined;
}

/** Adds the flags of a Helm chart folder given as a path. */
export function withChartFlags<C extends Command>(command: C): C {
  command
    .option(
      '--values <file>',
      'a values file for a Helm chart folder among the paths (repeatable, applied in order)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--release-name <name>', "a Helm chart folder's release name (default: the chart's name)");
  return command;
}

/** The manifests of the paths, a chart folder among them rendered in `namespace` (see localManifests). */
export async function readLocalInput(
  paths: readonly string[],
  flags: LocalInputFlags,
  namespace: string,
  /** The command has --allow-empty (deploy, diff): the error says so. */
  options: { allowEmptyFlag?: boolean } = {},
): Promise<ManifestFile[]> {
  const files = await localManifests(paths, {
    ageKeyFile: flags.ageKeyFile,
    chart: { namespace, releaseName: flags.releaseName, valuesFiles: flags.values },
    onCharts: (charts) => {
      if (charts.length === 0 && ((flags.values?.length ?? 0) > 0 || flags.releaseName !== undefined))
        throw new StalledError(
          '--values and --release-name apply to a Helm chart folder, and no path is one',
        );
    },
  });
  // As kubectl's "no objects passed to apply": an empty folder or a file of comments is a mistake, not a no-op.
  const parsed = parseManifestFiles(files);
  if (!flags.allowEmpty && parsed.objects.length === 0 && parsed.errors.length === 0)
    throw new StalledError(
      `${paths.join(', ')} renders no objects${files.length === 0 ? ' (no .yaml, .yml or .json file)' : ''}${
        options.allowEmptyFlag ? '; give --allow-empty if that is meant' : ''
      }`,
    );
  return files;
}
