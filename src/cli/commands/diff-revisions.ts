// `mooring diff --base REF --head REF [--deployment NAME] --config FILE | PATH…`: what a change between two
// revisions of the Git checkout the command runs in would do, rendered exactly as a sync renders (the one reader of
// a deployment's manifests, then render with the deployment's options; the head with the base's versions known),
// without a cluster. `-o markdown` prints what the agent's pull-request comment holds, `-o json` the previews for
// any CI system to post, `-o text` (the default) unified diffs. Exit codes as kubectl diff's: 0 no change, 1
// changes, 2 a deployment that does not render (its preview is still printed) or bad input.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfigFile, parseConfig } from '../../config/load.ts';
import {
  configSchema,
  type Deployment,
  deployment,
  gitSource,
  type MooringConfig,
} from '../../config/schema.ts';
import { StalledError } from '../../errors.ts';
import { previewChanges } from '../../render/preview-diff.ts';
import { previewMarkdown, previewText } from '../../report/preview-text.ts';
import { openCheckout } from '../../sources/git/local-checkout.ts';
import { GitRepository } from '../../sources/git/repository.ts';
import { concerns } from '../../sync/agent-sources.ts';
import { type DeploymentPreview, previewDeployment } from '../../sync/preview.ts';
import { EXIT_FAILED, EXIT_USAGE, ExitError } from '../exit-codes.ts';

export interface RevisionDiffFlags {
  base?: string;
  head?: string;
  deployment?: string;
  config?: string;
  output?: string;
  namespace?: string;
  application?: string;
  recursive?: boolean;
  ageKeyFile?: string;
  /** The Git checkout to read (the current folder by default). */
  checkout?: string;
  /** Decrypt SOPS files (otherwise left out: a pull request's templates could show their values). */
  decrypt?: boolean;
  /** Read a configuration inside the checkout as the head has it, rather than as the base does. */
  configFromHead?: boolean;
}

/** A checkout as a Git source (for reading it with GitRepository's bounded reader); named by its folder. */
function checkoutSource(dir: string) {
  return {
    ...gitSource.parse({ name: 'checkout', url: 'https://checkout.invalid/' }),
    url: pathToFileURL(dir).href,
  };
}

/**
 * The configuration: a file outside the checkout as it is; one inside it as the base revision has it, since the
 * head is the change under review (a pull request must not choose how it is previewed), unless told otherwise.
 */
async function configAtBase(
  file: string,
  checkout: { dir: string; gitdir: string },
  base: string,
  cacheDir: string,
  fromHead: boolean,
): Promise<MooringConfig> {
  const rel = relative(checkout.dir, resolve(file)).split(sep).join('/');
  if (fromHead || rel.startsWith('..') || isAbsolute(rel)) return loadConfigFile(file, { secrets: false });
  const repo = new GitRepository(checkoutSource(checkout.dir), { cacheDir, localGitdir: checkout.gitdir });
  const found = await repo.files(base, [rel], [], { recursive: false }).catch(() => []);
  const text = found.find((f) => f.path === rel)?.text;
  if (text === undefined)
    throw new StalledError(
      `${file} is not in the base ${base.slice(0, 12)}: the configuration is read as the base has it (give --config-from-head to read it as it is now)`,
    );
  return parseConfig(text, `${file} (at ${base.slice(0, 12)})`);
}

export const REVISION_OUTPUTS = ['text', 'markdown', 'json'] as const;

export async function runRevisionDiff(
  paths: readonly string[],
  flags: RevisionDiffFlags,
  print: (text: string) => void,
  printErr: (text: string) => void,
): Promise<void> {
  if (flags.base === undefined || flags.head === undefined)
    throw new ExitError('error: give both --base and --head', EXIT_USAGE);
  const output = flags.output ?? 'text';
  if (!(REVISION_OUTPUTS as readonly string[]).includes(output))
    throw new ExitError(
      `error: -o must be one of ${REVISION_OUTPUTS.join(', ')} with --base/--head`,
      EXIT_USAGE,
    );
  if (paths.length > 0 && (flags.config !== undefined || flags.deployment !== undefined))
    throw new ExitError('error: give manifest paths or --config [--deployment NAME], not both', EXIT_USAGE);
  if (paths.length === 0 && flags.config === undefined)
    throw new ExitError('error: give manifest paths, or --config FILE [--deployment NAME]', EXIT_USAGE);
  if (flags.deployment !== undefined && flags.config === undefined)
    throw new ExitError('error: --deployment needs --config (the agent configuration)', EXIT_USAGE);

  const checkout = await openCheckout(
    flags.checkout ?? (paths[0] !== undefined && paths[0] !== '-' ? paths[0] : process.cwd()),
  );
  const base = await checkout.resolve(flags.base);
  const head = await checkout.resolve(flags.head);
  const cacheDir = await mkdtemp(join(tmpdir(), 'mooring-diff-'));
  try {
    await diffRevisions();
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }

  async function diffRevisions(): Promise<void> {
    let config: MooringConfig;
    let specs: Deployment[];
    let repoFor: (spec: Deployment) => GitRepository;
    if (flags.config !== undefined) {
      config = await configAtBase(flags.config, checkout, base, cacheDir, flags.configFromHead === true);
      if (flags.ageKeyFile)
        config = { ...config, decryption: { ...config.decryption, ageKeyFile: flags.ageKeyFile } };
      specs = config.deployments.filter((d) => config.sources.git.some((g) => g.name === d.source));
      if (flags.deployment !== undefined) {
        const one = config.deployments.find((d) => d.name === flags.deployment);
        if (!one) {
          const known = config.deployments.map((d) => d.name).join(', ') || 'none';
          throw new StalledError(
            `${flags.config}: no deployment ${flags.deployment} (deployments: ${known})`,
          );
        }
        if (!specs.includes(one))
          throw new StalledError(
            `deployment ${one.name} does not read a Git source: it has no revisions to compare`,
          );
        specs = [one];
      }
      // Each Git source is read from this checkout (its paths are relative to the checkout's root).
      const repos = new Map<string, GitRepository>();
      repoFor = (spec) => {
        const source = config.sources.git.find((g) => g.name === spec.source);
        if (!source) throw new StalledError(`deployment ${spec.name} reads no Git source`);
        let repo = repos.get(source.name);
        if (!repo) {
          repo = new GitRepository(source, { cacheDir, localGitdir: checkout.gitdir });
          repos.set(source.name, repo);
        }
        return repo;
      };
    } else {
      // Paths of the checkout, read at both revisions as one deployment of them would be.
      const inside = paths.map((p) => {
        const rel = relative(checkout.dir, resolve(p)).split(sep).join('/');
        if (rel.startsWith('..')) throw new StalledError(`${p} is outside the checkout ${checkout.dir}`);
        return rel === '' ? '.' : rel;
      });
      const source = checkoutSource(checkout.dir);
      config = configSchema.parse({});
      config = { ...config, sources: { ...config.sources, git: [source] } };
      if (flags.ageKeyFile)
        config = { ...config, decryption: { ...config.decryption, ageKeyFile: flags.ageKeyFile } };
      specs = [
        deployment.parse({
          name: 'paths',
          namespace: flags.namespace ?? 'default',
          ...(flags.application ? { application: flags.application } : {}),
          source: 'checkout',
          paths: inside,
          recursive: flags.recursive ?? false,
          prune: true,
        }),
      ];
      const repo = new GitRepository(source, { cacheDir, localGitdir: checkout.gitdir });
      repoFor = () => repo;
    }

    const previews: DeploymentPreview[] = [];
    for (const spec of specs) {
      const repo = repoFor(spec);
      // Without --deployment, the deployments the change concerns (as the agent previews a pull request).
      if (
        flags.deployment === undefined &&
        flags.config !== undefined &&
        !(await concerns(repo, spec, base, head))
      )
        continue;
      previews.push(
        await previewDeployment({
          config,
          spec,
          repo,
          base,
          head,
          cacheDir,
          decrypt: flags.decrypt === true,
        }),
      );
    }
    if (previews.length === 0)
      printErr(
        `no deployment reads a file that changes between ${base.slice(0, 12)} and ${head.slice(0, 12)}`,
      );
    if (output === 'json') print(JSON.stringify({ base, head, previews }, null, 2));
    else if (output === 'markdown') print(previewMarkdown(previews, { base, head }));
    else if (previews.length > 0) print(previewText(previews));
    if (previews.some((p) => p.error !== undefined)) throw new ExitError('', EXIT_USAGE);
    if (previews.some((p) => p.diff && (previewChanges(p.diff) || p.diff.images.length > 0)))
      throw new ExitError('', EXIT_FAILED);
  }
}
