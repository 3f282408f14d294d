// How the CLI reads the manifests of its paths (render, deploy, diff, run --watch): the one reader of
// sources/deployment-manifests.ts (`pathManifests`), with the flags of a chart folder (`--values`,
// `--release-name`, `--set`, `--set-string`, `--allowed-repository`), of SOPS (`--age-key-file`), of folders (`-R`), and of the render
// settings that errors name (`--allow-remote-bases`, `--cluster-scoped`, `--app-labels`, `--versioning`), each the CLI's form of an
// agent setting (docs/cli.md).
import type { Command } from 'commander';
import { Option } from 'commander';
import { MIN_TOOL_OUTPUT_BYTES, RENDER_DEFAULTS } from '../config/render-defaults.ts';
import type { MooringConfig } from '../config/schema.ts';
import { StalledError } from '../errors.ts';
import { type ManifestFile, parseManifestFiles } from '../render/parse.ts';
import type { RenderOptions } from '../render/render.ts';
import { VERSIONING_MODES, type VersioningMode } from '../render/versioning.ts';
import type { ChartLookup } from '../sources/build/lookup.ts';
import {
  type ClusterCapabilities,
  hasSubfolders,
  type ManifestContext,
  pathManifests,
  unrenderedFormats,
} from '../sources/deployment-manifests.ts';
import { STDIN_PATH } from '../sources/local/files.ts';
import { yamlLimitsOf } from '../yaml/limits.ts';

export interface LocalInputFlags {
  ageKeyFile?: string | undefined;
  values?: string[] | undefined;
  releaseName?: string | undefined;
  /** deploy --allow-empty: no objects is what is meant (everything the inventory holds is pruned). */
  allowEmpty?: boolean | undefined;
  recursive?: boolean | undefined;
  allowRemoteBases?: boolean | undefined;
  allowedRepository?: string[] | undefined;
  /** --allow-namespace: a chart's lookup reads these namespaces too (the boundary is the cluster flags'). */
  allowNamespace?: string[] | undefined;
  clusterScoped?: string[] | undefined;
  appLabels?: 'auto' | 'true' | 'false' | undefined;
  versioning?: VersioningMode | undefined;
  set?: string[] | undefined;
  setString?: string[] | undefined;
  maxFileBytes?: string | undefined;
  toolMaxOutputBytes?: string | undefined;
}

const repeat = (value: string, previous: string[] = []) => [...previous, value];

/** Adds the flags of reading local paths: folders, chart folders, SOPS, and the render settings. */
export function withReadFlags<C extends Command>(command: C): C {
  command
    .option('-R, --recursive', 'read folders with their subfolders (as kubectl apply -R)')
    .option('--age-key-file <file>', 'age identities for SOPS-encrypted files (default: $SOPS_AGE_KEY_FILE)')
    .option(
      '--values <file>',
      'a values file for a Helm chart folder among the paths (repeatable, applied in order)',
      repeat,
    )
    .option('--release-name <name>', "a Helm chart folder's release name (default: the chart's name)")
    .option(
      '--set <key=value>',
      "a value for a Helm chart folder, as helm's --set reads it (repeatable; after the values files)",
      repeat,
    )
    .option(
      '--set-string <key=value>',
      "a string value for a Helm chart folder, as helm's --set-string reads it (repeatable)",
      repeat,
    )
    .option(
      '--allowed-repository <url>',
      "a URL prefix a chart dependency missing from the chart's charts/ may come from, and a values schema's references may name (repeatable)",
      repeat,
    )
    .option(
      '--allow-remote-bases',
      'let kustomizations name remote bases (URLs in resources, bases, components)',
    )
    .option(
      '--cluster-scoped <group/Kind>',
      'a custom kind that is cluster-scoped, when the cluster cannot tell (offline; repeatable)',
      repeat,
    )
    .addOption(
      new Option(
        '--app-labels <when>',
        'the labels app.kubernetes.io/name and managed-by: on objects and on pod templates (true), on objects and on the pod templates of workloads mooring did not adopt from another tool (auto), or nowhere (false)',
      )
        .choices(['auto', 'true', 'false'])
        .default('auto'),
    )
    .addOption(
      new Option(
        '--versioning <mode>',
        'which ConfigMaps and Secrets get -vNNN versions: those a workload in the set refers to (referenced; the rest keep their names), every one (all), or none (strategy.spinnaker.io/versioned still decides first)',
      )
        .choices([...VERSIONING_MODES])
        .default('referenced'),
    )
    .option(
      '--max-file-bytes <size>',
      "the largest manifest file, and document of a chart's, a kustomization's or standard input's output (bytes, or 8Mi, 10M; default 4Mi)",
    )
    .option(
      '--tool-max-output-bytes <size>',
      'the most a helm or kustomize run, or standard input, may print in all (bytes, or 64Mi; default 32Mi)',
    );
  return command;
}

/** The agent's settings as the flags set them (the configuration's defaults otherwise). */
export function cliConfig(flags: LocalInputFlags): Pick<MooringConfig, 'render' | 'decryption' | 'sources'> {
  for (const kind of flags.clusterScoped ?? []) {
    if (!/^[a-z0-9.-]*\/[A-Za-z0-9]+$/.test(kind))
      throw new StalledError(
        `--cluster-scoped "${kind}" must be group/Kind (e.g. gateway.networking.k8s.io/GatewayClass)`,
      );
  }
  const sizes = {
    ...(flags.maxFileBytes !== undefined
      ? { maxFileBytes: sizeFlag('--max-file-bytes', flags.maxFileBytes) }
      : {}),
    ...(flags.toolMaxOutputBytes !== undefined
      ? { toolMaxOutputBytes: sizeFlag('--tool-max-output-bytes', flags.toolMaxOutputBytes) }
      : {}),
  };
  // Held to the bounds of the settings they stand for (render-defaults.ts, which the schema declares).
  if (sizes.maxFileBytes === 0) throw new StalledError('--max-file-bytes: must be more than 0');
  if (sizes.toolMaxOutputBytes !== undefined && sizes.toolMaxOutputBytes < MIN_TOOL_OUTPUT_BYTES)
    throw new StalledError(
      `--tool-max-output-bytes: must be at least ${MIN_TOOL_OUTPUT_BYTES} (1Mi), the bound of render.toolMaxOutputBytes`,
    );
  return {
    render: {
      ...RENDER_DEFAULTS,
      imagePaths: [],
      referencePaths: [],
      kustomize: { allowRemoteBases: flags.allowRemoteBases ?? false },
      ...sizes,
      clusterScoped: flags.clusterScoped ?? [],
      applyAppLabels: flags.appLabels !== 'false',
      podTemplateLabels: flags.appLabels === 'true' ? true : 'auto',
    },
    decryption: { ageKeyFile: flags.ageKeyFile },
    sources: { git: [], registry: [], local: [], charts: [], oci: [] },
  };
}

/** The render options the flags set (as the agent's renderOptionsFor, for the CLI). */
export function cliRenderOptions(flags: LocalInputFlags): Partial<RenderOptions> {
  const { render } = cliConfig(flags);
  return {
    clusterScoped: render.clusterScoped,
    applyAppLabels: render.applyAppLabels,
    podTemplateLabels: render.podTemplateLabels,
    versioning: flags.versioning ?? 'referenced',
    limits: {
      maxFileBytes: render.maxFileBytes,
      maxDocumentsPerFile: render.maxDocumentsPerFile,
      yaml: yamlLimitsOf(render),
    },
  };
}

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  K: 1000,
  M: 1000 ** 2,
  G: 1000 ** 3,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
};

/** `8Mi`, `10M`, `4194304`: a size flag in bytes, as Kubernetes writes quantities. */
export function sizeFlag(flag: string, value: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|K|M|G)?$/.exec(value.trim());
  const unit = UNITS[m?.[2] ?? ''];
  if (!m || unit === undefined || !Number.isSafeInteger(Number(m[1]) * unit))
    throw new StalledError(
      `${flag} "${value}" is not a size: give bytes, or a number with Ki, Mi, Gi, K, M or G`,
    );
  return Number(m[1]) * unit;
}

/** The manifests of the paths, a chart folder among them rendered in `namespace`. */
export async function readLocalInput(
  paths: readonly string[],
  flags: LocalInputFlags,
  namespace: string,
  options: ReadLocalOptions = {},
): Promise<ManifestFile[]> {
  return (await readLocalManifests(paths, flags, namespace, options)).files;
}

/** What reading local paths is told. */
export interface ReadLocalOptions {
  /** The command has --allow-empty (deploy, diff): the error says so. */
  allowEmptyFlag?: boolean;
  /** The cluster's version and API versions, for a chart folder (not asked offline). */
  capabilities?: () => Promise<ClusterCapabilities>;
  /** Where kustomize's and helm's warnings are printed (`warning: …`), before anything is rendered. */
  warn?: (text: string) => void;
  /** Serves a chart's `lookup` of live objects (not offline). */
  lookup?: ChartLookup;
}

/**
 * As readLocalInput, with the files parsed under the flags' limits (parseManifestFiles): for a caller that renders
 * them at once and need not parse them again. The objects are the caller's to change.
 */
export async function readLocalManifests(
  paths: readonly string[],
  flags: LocalInputFlags,
  namespace: string,
  options: ReadLocalOptions = {},
): Promise<{ files: ManifestFile[]; parsed: ReturnType<typeof parseManifestFiles> }> {
  // Nothing else to answer while the files are read: a large one is read on this thread (no worker to start).
  const ctx: ManifestContext = {
    config: cliConfig(flags),
    capabilities: options.capabilities,
    lookup: options.lookup,
    readInThread: true,
  };
  // A chart folder's subfolders are its templates, not manifests -R would read.
  let chartPaths: readonly string[] = [];
  const files = await pathManifests(ctx, {
    paths,
    recursive: flags.recursive ?? false,
    chart: {
      namespace,
      releaseName: flags.releaseName,
      valuesFiles: flags.values,
      set: flags.set,
      setString: flags.setString,
      allowedRepositories: flags.allowedRepository,
      allowedNamespaces: flags.allowNamespace,
    },
    onCharts: (charts) => {
      chartPaths = charts;
      const chartFlags =
        (flags.values?.length ?? 0) > 0 ||
        flags.releaseName !== undefined ||
        (flags.set?.length ?? 0) > 0 ||
        (flags.setString?.length ?? 0) > 0;
      if (charts.length === 0 && chartFlags)
        throw new StalledError(
          '--values and --release-name apply to a Helm chart folder (as --set and --set-string do), and no path is one',
        );
    },
  });
  for (const warning of files.flatMap((f) => f.warnings ?? [])) options.warn?.(`warning: ${warning}`);
  // As kubectl's "no objects passed to apply": an empty folder or a file of comments is a mistake, not a no-op.
  const parsed = parseManifestFiles(files, cliRenderOptions(flags).limits);
  if (!flags.allowEmpty && parsed.objects.length === 0 && parsed.errors.length === 0) {
    const nested = flags.recursive
      ? []
      : (
          await Promise.all(
            paths.map(async (p) =>
              p !== STDIN_PATH && !chartPaths.includes(p) && (await hasSubfolders(p)) ? p : [],
            ),
          )
        ).flat();
    // Jsonnet (an Argo CD application's) is not read: said, rather than an empty render.
    const jsonnet = (
      await Promise.all(
        paths.map(async (p) =>
          p !== STDIN_PATH && !chartPaths.includes(p)
            ? (await unrenderedFormats(p)).map((f) => `${p}/${f}`)
            : [],
        ),
      )
    ).flat();
    throw new StalledError(
      `${paths.join(', ')} renders no objects${files.length === 0 ? ' (no .yaml, .yml or .json file)' : ''}${
        jsonnet.length > 0
          ? `; ${jsonnet.join(', ')}: Jsonnet is not evaluated, render it to YAML or JSON first (jsonnet -y)`
          : ''
      }${nested.length > 0 ? `; ${nested.join(', ')} has subfolders: give -R to read them` : ''}${
        options.allowEmptyFlag ? '; give --allow-empty if that is meant' : ''
      }`,
    );
  }
  return { files, parsed };
}
