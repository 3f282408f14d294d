// `mooring diff PATH… | --deployment NAME --config FILE`: the field-level change a deploy would make, from a
// server-side dry run of the rendered set against the live objects, as unified diffs (Secret values masked), and
// what prune would delete. Exit codes as kubectl diff's: 0 nothing would change, 1 something would, 2 bad input or
// any error (the diff could not be made).
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { loadConfigFile } from '../../config/load.ts';
import { renderOptionsFor } from '../../config/render-options.ts';
import type { Deployment, MooringConfig } from '../../config/schema.ts';
import { errorMessage, StalledError } from '../../errors.ts';
import { commandKubeApi, type KubeApi } from '../../kube/api.ts';
import { loadKubeConfig } from '../../kube/client.ts';
import { Discovery } from '../../kube/discovery.ts';
import { chartLookup } from '../../kube/lookup-server.ts';
import { describeWarning } from '../../kube/warnings.ts';
import { diffSummary } from '../../render/diff-text.ts';
import { filesRedactor } from '../../render/redact.ts';
import { current, Ledger, recordedVersions } from '../../report/ledger.ts';
import type { ArtifactAt } from '../../sources/artifact-fetch.ts';
import { artifactSource, followedArtifacts, isOciSourced } from '../../sources/artifact-poller.ts';
import { createArtifactPoller } from '../../sources/create-poller.ts';
import { deploymentManifests } from '../../sources/deployment-manifests.ts';
import { GitRepository } from '../../sources/git/repository.ts';
import type { DeployRequest } from '../../sync/deploy.ts';
import { liveDiff } from '../../sync/live-diff.ts';
import { cliOwner } from '../../sync/prune.ts';
import { type ClusterFlags, clusterAccess, manifestBoundary, withManifestFlags } from '../cluster-flags.ts';
import { chosenCluster } from '../config-cluster.ts';
import { EXIT_FAILED, EXIT_USAGE, ExitError } from '../exit-codes.ts';
import { cliRenderOptions, type LocalInputFlags, readLocalInput, withReadFlags } from '../local-input.ts';
import { checkedNames } from '../names.ts';
import { withRepositorySets } from '../set-deployments.ts';
import { runRevisionDiff } from './diff-revisions.ts';
import { parseImageFlag } from './render.ts';

interface DiffFlags extends ClusterFlags, LocalInputFlags {
  application?: string;
  image: string[];
  allowNamespace: string[];
  agentNamespace: string;
  prune?: boolean;
  allowEmpty?: boolean;
  deployment?: string;
  config?: string;
  cluster?: string;
  concurrency: string;
  base?: string;
  head?: string;
  output?: string;
  checkout?: string;
  decrypt?: boolean;
  configFromHead?: boolean;
}

/** What to diff: the deploy request, the cluster, and whose inventory prune would read (when it would prune). */
interface DiffInput {
  api: KubeApi;
  request: Omit<DeployRequest, 'dryRun' | 'timeoutMs' | 'concurrency'>;
  prune: { owner: string; inventoryNamespace: string } | undefined;
  notes: string[];
}

async function pathInput(
  paths: readonly string[],
  flags: DiffFlags,
  concurrency: number,
): Promise<DiffInput> {
  const images = flags.image.map(parseImageFlag);
  // Names given on the command line are checked before anything is read or asked.
  if (flags.namespace !== undefined) checkedNames(flags.namespace, flags.application);
  const clusterConfig = loadKubeConfig(clusterAccess(flags));
  const { namespace, application } = checkedNames(
    flags.namespace ?? clusterConfig.namespace ?? 'default',
    flags.application,
  );
  // SOPS files are decrypted as read (the key file is read only when a file is encrypted); a chart is rendered.
  const api = commandKubeApi(clusterConfig, { maxSockets: concurrency * 2 });
  let files: Awaited<ReturnType<typeof readLocalInput>>;
  try {
    const discovery = new Discovery(api);
    files = await readLocalInput(paths, flags, namespace, {
      allowEmptyFlag: true,
      capabilities: () => discovery.capabilities(),
      lookup: chartLookup(api, { exclude: [flags.agentNamespace] }),
    });
  } catch (error) {
    api.close();
    throw error;
  }
  return {
    api,
    request: {
      files,
      namespace,
      application,
      images,
      renderOptions: { ...cliRenderOptions(flags), boundary: manifestBoundary(flags, namespace) },
      hashKeyNamespace: flags.agentNamespace,
      // As deploy: an empty render of an application that had objects is refused (nothing is written here).
      inventory: {
        owner: cliOwner(namespace, application),
        namespace: flags.agentNamespace,
        prune: false,
        allowEmpty: flags.allowEmpty ?? false,
        emptyAdvice: 'Give --allow-empty if it is meant to have none.',
        bestEffort: true,
      },
    },
    prune: flags.prune
      ? { owner: cliOwner(namespace, application), inventoryNamespace: flags.agentNamespace }
      : undefined,
    notes: files.flatMap((f) => f.warnings ?? []).map((w) => `warning: ${w}`),
  };
}

/**
 * The chart version and OCI artifact digest a sync of `spec` would deploy now, each polled by its source's policy;
 * one that cannot be polled is taken from the current release, with a note saying so.
 */
async function artifactsNow(
  config: MooringConfig,
  spec: Deployment,
  recorded: Record<string, ArtifactAt>,
  notes: string[],
): Promise<Record<string, ArtifactAt>> {
  const out: Record<string, ArtifactAt> = {};
  for (const name of followedArtifacts(config, spec)) {
    const found = artifactSource(config, name);
    if (!found || found.kind === 'image') continue;
    const poller = await createArtifactPoller(found);
    try {
      const polled = await poller.poll({});
      out[name] = { tag: polled.tag, digest: polled.digest };
      notes.push(
        `deployment ${spec.name}: ${poller.reference} ${polled.tag} (${polled.digest.slice(0, 19)})`,
      );
    } catch (error) {
      const known = recorded[name];
      if (!known) throw error;
      out[name] = known;
      notes.push(
        `warning: ${errorMessage(error)}; using ${known.tag ?? known.digest} of the current release`,
      );
    } finally {
      poller.client.close();
    }
  }
  return out;
}

/** The agent's deployment `name`: its source's manifests now, the images of its current release, its options. */
async function deploymentInput(
  name: string,
  file: string,
  flags: DiffFlags,
  concurrency: number,
): Promise<DiffInput> {
  // The cluster and the sources are read; secrets of status providers and webhooks need not be here.
  // A deployment a Git or pull-request set makes: the sets are read as the agent reads them.
  const loaded = await withRepositorySets(await loadConfigFile(file, { secrets: false }), name);
  // Of several clusters, the deployment's (or --cluster's): its kubeconfig, ledger and inventory (docs/clusters.md).
  const config = loaded.deployments.some((d) => d.name === name)
    ? chosenCluster(loaded, flags, name)
    : loaded;
  const spec = config.deployments.find((d) => d.name === name);
  if (!spec) {
    const known = config.deployments.map((d) => d.name).join(', ') || 'none';
    throw new StalledError(`${file}: no deployment ${name} (deployments: ${known})`);
  }
  const clusterConfig = loadKubeConfig({
    kubeconfig: flags.kubeconfig ?? config.cluster.kubeconfig,
    context: flags.context ?? config.cluster.context,
    inCluster: !flags.kubeconfig && !flags.context ? config.cluster.inCluster : false,
  });
  const api = commandKubeApi(clusterConfig, { maxSockets: concurrency * 2 });
  try {
    const notes: string[] = [];
    const git = config.sources.git.find((s) => s.name === spec.source);
    const local = config.sources.local.find((s) => s.name === spec.source);
    if (!git && !local && !isOciSourced(config, spec))
      throw new StalledError(`${file}: deployment ${name} reads source ${spec.source}, which is not defined`);
    // The manifests exactly as the agent reads them: a chart rendered, kustomizations built, SOPS files decrypted.
    const ctx = {
      config: { ...config, decryption: { ageKeyFile: flags.ageKeyFile ?? config.decryption.ageKeyFile } },
      capabilities: () => new Discovery(api).capabilities(),
      lookup: chartLookup(api, { exclude: [config.cluster.namespace] }),
    };
    let commit: string | undefined;
    let repo: GitRepository | undefined;
    if (git) {
      const cacheDir = process.env.MOORING_CACHE_DIR ?? join(homedir(), '.cache', 'mooring', 'sources');
      repo = new GitRepository(git, { cacheDir });
      commit = (await repo.resolve()).commit;
      notes.push(`deployment ${name}: manifests of ${repo.url} at ${commit.slice(0, 12)}`);
    }
    // The images the agent runs now: those of the deployment's current release.
    const recorded = await new Ledger(api, config.cluster.namespace).read(name);
    const release = current(recorded);
    // Its chart and manifest artifacts as a sync would deploy them now: the version each policy picks.
    const artifacts = await artifactsNow(config, spec, release?.images ?? {}, notes);
    const files: DeployRequest['files'] = await deploymentManifests(
      ctx,
      spec,
      repo && commit ? { git: repo, commit, artifacts } : { artifacts },
    );
    for (const warning of files.flatMap((f) => f.warnings ?? [])) notes.push(`warning: ${warning}`);
    if (!release && spec.images.length > 0)
      notes.push(
        `deployment ${name} has no stable release yet: its images are left as the manifests name them`,
      );
    return {
      api,
      request: {
        files,
        namespace: spec.namespace,
        application: spec.application ?? spec.namespace,
        images: Object.values(release?.images ?? {})
          .filter((i) => i.kind === undefined)
          .map((i) => ({
            name: i.image,
            tag: i.tag,
            digest: i.digest,
          })),
        renderOptions: renderOptionsFor(config, spec),
        hashKeyNamespace: config.cluster.namespace,
        fieldManager: config.apply.fieldManager,
        // A new version is numbered as the next sync numbers it: above every name the releases recorded.
        usedVersions: recordedVersions(recorded.releases),
        inventory: {
          owner: spec.name,
          namespace: config.cluster.namespace,
          prune: false,
          allowEmpty: spec.allowEmpty,
          emptyAdvice: `Set allowEmpty: true on deployment ${spec.name} if it is meant to have none.`,
        },
      },
      prune: spec.prune ? { owner: spec.name, inventoryNamespace: config.cluster.namespace } : undefined,
      notes,
    };
  } catch (error) {
    api.close();
    throw error;
  }
}

async function runDiff(
  paths: string[],
  flags: DiffFlags,
  print: (text: string) => void,
  printErr: (text: string) => void,
): Promise<void> {
  // Two revisions of the checkout, rendered without a cluster (diff-revisions.ts).
  if (flags.base !== undefined || flags.head !== undefined)
    return runRevisionDiff(paths, { ...flags, recursive: flags.recursive }, print, printErr);
  if (flags.output !== undefined)
    throw new ExitError(
      'error: -o is for --base/--head; a diff against the cluster prints unified diffs',
      EXIT_USAGE,
    );
  const concurrency = Number(flags.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64)
    throw new ExitError('error: --concurrency must be an integer from 1 to 64', EXIT_USAGE);
  if (flags.deployment !== undefined && paths.length > 0)
    throw new ExitError('error: give manifest paths or --deployment, not both', EXIT_USAGE);
  if (flags.deployment === undefined && paths.length === 0)
    throw new ExitError('error: give manifest paths, or --deployment NAME --config FILE', EXIT_USAGE);
  if (flags.deployment !== undefined && !flags.config)
    throw new ExitError('error: --deployment needs --config (the agent configuration)', EXIT_USAGE);

  const input =
    flags.deployment !== undefined
      ? await deploymentInput(flags.deployment, flags.config as string, flags, concurrency)
      : await pathInput(paths, flags, concurrency);
  const { api } = input;
  try {
    for (const note of input.notes) printErr(note);
    // The server's words may quote a field, and a field a value decrypted from a SOPS file.
    const redact = filesRedactor(input.request.files);
    const { diffs, pruned, warnings } = await liveDiff(
      { api, discovery: new Discovery(api) },
      input.request,
      input.prune,
      concurrency,
    ).catch((error: unknown) => {
      throw new ExitError(`error: ${redact(errorMessage(error))}`, EXIT_USAGE);
    });
    for (const d of diffs) {
      if (d.change === 'recreated')
        print(`${d.object}: would be deleted and created again (strategy recreate)`);
      else if (d.text) print(d.text.trimEnd());
    }
    for (const p of pruned) print(`would prune: ${p}`);
    for (const w of warnings) printErr(`warning: ${redact(describeWarning(w))}`);
    print(diffSummary(diffs, pruned.length));
    if (pruned.length > 0 || diffs.some((d) => d.change !== 'unchanged'))
      throw new ExitError('', EXIT_FAILED);
  } finally {
    api.close();
  }
}

export function diffCommand(
  program: Command,
  print: (text: string) => void,
  printErr: (text: string) => void,
): void {
  const command = withReadFlags(
    withManifestFlags(
      program
        .command('diff')
        .description('show what a deploy would change, field by field, from a server-side dry run'),
    ),
  )
    .option('--prune', 'also show what a deploy with --prune would delete')
    .option('--allow-empty', 'files that render no objects are not an error (as for deploy)')
    .option('--deployment <name>', "the agent's deployment of that name (with --config), instead of paths")
    .option('--config <file>', 'the agent configuration (with --deployment)')
    .option('--cluster <name>', "with --deployment: which of the configuration's clusters (docs/clusters.md)")
    .option('--concurrency <n>', 'objects dry-run at once', '8')
    .option(
      '--base <revision>',
      'compare two revisions of the Git checkout, without a cluster: the base (a branch, tag or commit)',
    )
    .option('--head <revision>', "with --base: the head (a pull request's commit, HEAD)")
    .option(
      '--config-from-head',
      'with --base/--head: read a --config inside the checkout as it is now, not at --base',
    )
    .option('--decrypt', 'with --base/--head: decrypt SOPS files (left out otherwise)')
    .option('--checkout <dir>', 'with --base/--head: the Git checkout to read (default: the current folder)')
    .option('-o, --output <format>', 'with --base/--head: text, markdown (the pull-request comment) or json');
  // Paths, or --deployment instead.
  command.registeredArguments[0]?.argOptional();
  command.action(async (paths: string[], flags: DiffFlags) => {
    try {
      await runDiff(paths, flags, print, printErr);
    } catch (error) {
      if (error instanceof ExitError) throw error;
      // As kubectl diff: an exit code above 1 says the diff could not be made, whatever the reason.
      throw new ExitError(`error: ${errorMessage(error)}`, EXIT_USAGE);
    }
  });
}
