// `mooring rollback`: re-applies exactly a recorded release (its commit's manifests as its sync built them, read
// by the one reader of a deployment's manifests; its image digests; the
// versioned ConfigMaps and Secrets come back under the same names because their content is the same), waits for
// stability, and sets a rollback fence so that the agent leaves the deployment alone until a new commit or image
// arrives, or `mooring resume`. A chart source's version and an OCI artifact's digest are restored as recorded,
// like image digests.
import type { MooringConfig } from '../config/schema.ts';
import type { DeployReport, Logger, Release, SyncReporter } from '../contract.ts';
import { errorMessage, NotFoundError, StalledError } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { ClusterCache } from '../kube/cache.ts';
import type { Discovery } from '../kube/discovery.ts';
import { chartLookup } from '../kube/lookup-server.ts';
import { current, type Ledger, recordedDependencies } from '../report/ledger.ts';
import { artifactSource, followedArtifacts, isOciSourced } from '../sources/artifact-poller.ts';
import { createArtifactPoller } from '../sources/create-poller.ts';
import { deploymentManifests } from '../sources/deployment-manifests.ts';
import { GitRepository } from '../sources/git/repository.ts';
import { syncDeployment } from './sync-deployment.ts';

export interface RollbackDeps {
  api: KubeApi;
  discovery: Discovery;
  cache?: ClusterCache | undefined;
  ledger: Ledger;
  log: Logger;
  cacheDir: string;
  reporters?: readonly SyncReporter[];
  /**
   * Called once the release is found and its manifests built, before anything is written (the CLI holds the running
   * agent off the deployment here: src/cli/rollback-hold.ts), so that a rollback refused stops no sync.
   */
  beforeApply?: () => Promise<void>;
}

/** The release a rollback goes to: the one asked for, else the newest stable release before the current one. */
export function rollbackTarget(
  releases: readonly Release[],
  to: number | undefined,
  deployment: string,
): Release {
  if (to !== undefined) {
    const release = releases.find((r) => r.id === to);
    if (!release) {
      const known = releases.map((r) => r.id).join(', ') || 'none';
      // Not found, as every command's (exit 1), as `kubectl rollout undo --to-revision` of one it does not have.
      throw new NotFoundError(`deployment ${deployment} has no release ${to} (releases: ${known})`);
    }
    if (release.result !== 'stable') {
      throw new StalledError(
        `release ${to} of deployment ${deployment} ended ${release.result}: only stable releases are rolled back to`,
      );
    }
    return release;
  }
  const now = releases.find((r) => r.result === 'stable');
  const previous = releases.find(
    (r) => r.result === 'stable' && r.id !== now?.id && r.revision !== now?.revision,
  );
  if (!previous)
    throw new StalledError(`deployment ${deployment} has no earlier stable release to roll back to`);
  return previous;
}

export async function rollback(
  deps: RollbackDeps,
  config: MooringConfig,
  name: string,
  to: number | undefined,
): Promise<{ target: Release; report: DeployReport; release: Release | undefined }> {
  const spec = config.deployments.find((d) => d.name === name);
  if (!spec) throw new StalledError(`no deployment ${name} in the configuration`);
  const source = config.sources.git.find((s) => s.name === spec.source);
  const oci = isOciSourced(config, spec);
  if (!source && !oci)
    throw new StalledError(`deployment ${name} reads a local folder, which keeps no history to roll back to`);
  const data = await deps.ledger.read(name);
  const target = rollbackTarget(data.releases, to, name);
  if (source && !target.commit)
    throw new StalledError(`release ${target.id} of deployment ${name} records no commit`);
  for (const artifact of followedArtifacts(config, spec))
    if (artifactSource(config, artifact)?.kind !== 'image' && !target.images[artifact])
      throw new StalledError(`release ${target.id} of deployment ${name} records no version of ${artifact}`);

  const repo = source ? new GitRepository(source, { cacheDir: deps.cacheDir }) : undefined;
  // Exactly as the sync built it: the chart rendered (a chart source's package at the recorded version and
  // digest), kustomizations built, SOPS files decrypted.
  const ctx = {
    config,
    capabilities: () => deps.discovery.capabilities(),
    cacheDir: deps.cacheDir,
    // The chart's generated values are read back as the sync reads them: a rollback keeps the password.
    lookup: chartLookup(deps.api, { exclude: [config.cluster.namespace] }),
  };
  // The chart dependencies the release recorded are fetched again at their versions and digests.
  const at = {
    artifacts: target.images,
    dependencies: [...(target.dependencies ?? []), ...recordedDependencies(data.releases)],
    restoreDependencies: true,
  };
  const files = await deploymentManifests(
    ctx,
    spec,
    repo && target.commit ? { git: repo, commit: target.commit, ...at } : at,
  );

  // The recorded commit's and digests' signatures were checked again by that read, with today's keys.
  const signed = files[0]?.signedBy;
  const artifactsSigned = files[0]?.artifactsSignedBy;
  if (signed || artifactsSigned)
    deps.log.info(
      { deployment: spec.name, commit: signed, artifacts: artifactsSigned },
      "rollback: the release's signatures verify with today's keys",
    );

  // Where the sources are now: only a commit or artifact past these lifts the fence.
  const heads = {
    commit: repo ? (await repo.resolve()).commit : undefined,
    images: {} as Record<string, string>,
  };
  for (const artifact of followedArtifacts(config, spec)) {
    const found = artifactSource(config, artifact);
    if (!found) continue;
    try {
      const poller = await createArtifactPoller(found);
      try {
        heads.images[artifact] = (await poller.poll({})).digest;
      } finally {
        poller.client.close();
      }
    } catch (error) {
      const known = current(data)?.images[artifact]?.digest;
      deps.log.warn(
        { source: artifact, err: errorMessage(error) },
        'cannot read the artifact head; using the current release',
      );
      if (known) heads.images[artifact] = known;
    }
  }

  await deps.beforeApply?.();
  const { report, release } = await syncDeployment(
    {
      api: deps.api,
      discovery: deps.discovery,
      cache: deps.cache,
      ledger: deps.ledger,
      log: deps.log,
      reporters: deps.reporters ?? [],
    },
    {
      config,
      deployment: spec,
      commit: target.commit,
      files,
      images: target.images,
      revision: target.revision,
      trigger: 'rollback',
      // Set with the release, in the same write: never a rolled-back release without its fence.
      fence: { heads },
      // The names the release gave its versions, for those pruned since (render.ts: a version's number).
      restore: target.versions,
    },
  );
  return { target, report, release };
}
