// A deployment's manifests at a revision: the one reader every path uses (the agent's sync, `mooring rollback`,
// `mooring diff --deployment`), so that each gets exactly what the sync built: a Helm chart rendered with the
// deployment's values and the cluster's capabilities, kustomizations built (what they may read checked), plain
// files read with their limits, SOPS files decrypted. A rollback of a Kustomize or Helm deployment therefore
// rebuilds the recorded commit as its sync did, not the raw files of the commit.
import type { Deployment, MooringConfig } from '../config/schema.ts';
import type { ManifestFile } from '../render/parse.ts';
import { type ClusterCapabilities, chartFromFolder, chartFromGit } from './build/chart-files.ts';
import { kustomizeOptions } from './build/kustomize.ts';
import { kustomizeGit, kustomizeLocal } from './build/kustomize-sources.ts';
import { toolLimits } from './build/tool.ts';
import type { GitRepository } from './git/repository.ts';
import { readManifestFiles } from './local/files.ts';
import { type AgeIdentity, loadAgeIdentities } from './sops/age-keys.ts';
import { decryptFiles } from './sops/decrypt.ts';

export type { ClusterCapabilities } from './build/chart-files.ts';

/** What reading needs of the configuration, and the cluster's capabilities for a chart (asked only for one). */
export interface ManifestContext {
  config: Pick<MooringConfig, 'render' | 'decryption' | 'sources'>;
  capabilities?: (() => Promise<ClusterCapabilities>) | undefined;
}

/** Where the deployment's source is: a Git repository at a commit, or (no `git`) its local folder now. */
export type SourceAt = { git: GitRepository; commit: string } | { git?: undefined };

/**
 * The manifests of deployment `spec` at the source's revision, as the sync builds them, with SOPS files
 * decrypted (the key file is read only when a file is encrypted).
 */
export async function deploymentManifests(
  ctx: ManifestContext,
  spec: Deployment,
  at: SourceAt,
): Promise<ManifestFile[]> {
  const keys = (): Promise<AgeIdentity[]> => loadAgeIdentities(ctx.config.decryption.ageKeyFile);
  const limits = toolLimits(ctx.config.render);
  const files = await sourceFiles();
  return decryptFiles(files, keys);

  async function sourceFiles(): Promise<ManifestFile[]> {
    if (at.git) {
      const { git: repo, commit } = at;
      await repo.fetch(commit);
      if (spec.helm) return chartFromGit(repo, commit, spec, await ctx.capabilities?.(), keys, limits);
      const files = await repo.files(commit, spec.paths, spec.exclude);
      return kustomizeGit(repo, commit, spec.paths, spec.exclude, files, kustomizeOptions(ctx.config));
    }
    const local = ctx.config.sources.local.find((s) => s.name === spec.source);
    if (!local) throw new Error(`deployment ${spec.name}: no source ${spec.source}`);
    if (spec.helm) return chartFromFolder(local.path, spec, await ctx.capabilities?.(), keys, limits);
    const paths = spec.paths.map((p) => (p === '.' ? local.path : `${local.path}/${p}`));
    return kustomizeLocal(paths, await readManifestFiles(paths), kustomizeOptions(ctx.config), local.path);
  }
}
