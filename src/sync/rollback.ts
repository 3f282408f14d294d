// `mooring rollback`: re-applies exactly a recorded release (its commit's manifests as its sync built them, read
// by the one reader of a deployment's manifests; its image digests; the
// versioned ConfigMaps and Secrets come back under the same names because their content is the same), waits for
// stability, and sets a rollback fence so that the agent leaves the deployment alone until a new commit or image
// arrives, or `mooring resume`.
import type { MooringConfig } from '../config/schema.ts';
import type { DeployReport, Logger, SyncReporter } from '../contract.ts';
import { errorMessage, StalledError } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { ClusterCache } from '../kube/cache.ts';
import type { Discovery } from '../kube/discovery.ts';
import { current, type Ledger, type Release } from '../report/ledger.ts';
import { deploymentManifests } from '../sources/deployment-manifests.ts';
import { GitRepository } from '../sources/git/repository.ts';
import { createRegistryClient } from '../sources/registry/create.ts';
import { pollRegistry } from '../sources/registry/poll.ts';
import { syncDeployment } from './sync-deployment.ts';

export interface RollbackDeps {
  api: KubeApi;
  discovery: Discovery;
  cache?: ClusterCache | undefined;
  ledger: Ledger;
  log: Logger;
  cacheDir: string;
  reporters?: readonly SyncReporter[];
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
      throw new StalledError(`deployment ${deployment} has no release ${to} (releases: ${known})`);
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
  if (!source)
    throw new StalledError(`deployment ${name} reads a local folder, which keeps no history to roll back to`);
  const data = await deps.ledger.read(name);
  const target = rollbackTarget(data.releases, to, name);
  if (!target.commit) throw new StalledError(`release ${target.id} of deployment ${name} records no commit`);

  const repo = new GitRepository(source, { cacheDir: deps.cacheDir });
  // Exactly as the sync built it: the chart rendered, kustomizations built, SOPS files decrypted.
  const files = await deploymentManifests(
    { config, capabilities: () => deps.discovery.capabilities() },
    spec,
    { git: repo, commit: target.commit },
  );

  // Where the sources are now: only a commit or image past these lifts the fence.
  const heads = { commit: (await repo.resolve()).commit, images: {} as Record<string, string> };
  for (const imageSource of config.sources.registry.filter((r) => spec.images.includes(r.name))) {
    try {
      const polled = await pollRegistry(await createRegistryClient(imageSource), imageSource, {});
      heads.images[imageSource.name] = polled.digest;
    } catch (error) {
      const known = current(data)?.images[imageSource.name]?.digest;
      deps.log.warn(
        { source: imageSource.name, err: errorMessage(error) },
        'cannot read the image head; using the current release',
      );
      if (known) heads.images[imageSource.name] = known;
    }
  }

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
    },
  );
  if (report.outcome === 'stable' && release) {
    await deps.ledger.setFence(name, { release: release.id, since: new Date().toISOString(), heads });
  }
  return { target, report, release };
}
