// One poll of a Git source: where does the ref point now, and which manifest files under a deployment's paths
// changed since the commit it last deployed. A poll that finds the ref where it was costs one request for the
// ref advertisement and fetches nothing.
import type { Artifact, PollResult } from '../artifact.ts';
import type { GitRepository } from './repository.ts';

export interface GitPollState {
  /** The commit the deployment last deployed (or last saw); absent before the first deploy. */
  lastCommit?: string | undefined;
}

export interface GitPollOptions {
  paths: readonly string[];
  exclude: readonly string[];
}

export async function pollGit(
  repo: GitRepository,
  state: GitPollState,
  options: GitPollOptions,
): Promise<PollResult & { commit: string }> {
  const resolved = await repo.resolve();
  const { commit } = resolved;
  const result = { source: repo.source.name, revision: commit, commit };
  if (commit === state.lastCommit) return { ...result, changed: false, artifacts: [] };

  await repo.fetch(resolved);
  const { files } = await repo.changedManifests(state.lastCommit, commit, options.paths, options.exclude);
  const info = files.length > 0 ? await repo.commitInfo(commit) : undefined;
  const provenance = info && { commit, author: info.author, subject: info.subject };
  const artifacts = files.map(
    (file): Artifact => ({
      type: 'git/file',
      source: repo.source.name,
      reference: `${repo.url}#${file.path}`,
      name: file.path,
      version: commit,
      ...(provenance ? { provenance } : {}),
    }),
  );
  return { ...result, changed: true, artifacts };
}
