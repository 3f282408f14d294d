// The deployments of a configuration's sets that read a repository (gitDirectories, gitFiles, pullRequests), for a
// command given one of them by name (`rollback`, `diff --deployment`, `suspend`, …): the running agent makes them
// from its sources, so the command reads those sources as the agent does (the same reader of a set's folders and
// files, the same questions to the forge about pull requests) at their current commit, and expands the sets with
// what it read. A deployment written in the file, or of a list or clusters set, needs none of it.
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { MooringConfig } from '../config/schema.ts';
import { type Found, gitGenerator, pullRequestGenerator, withSets } from '../config/sets.ts';
import { errorMessage } from '../errors.ts';
import { GitRepository } from '../sources/git/repository.ts';
import { PullRequestSets } from '../sync/pull-request-sets.ts';
import { readSetInputs } from '../sync/set-inputs.ts';
import { commandLogger } from './command-log.ts';
import { printable } from './printable.ts';

/**
 * `config` with its repository sets' deployments when `deployment` is none of its own; a source that cannot be read
 * is said on stderr, and its sets yield nothing (the command then says which deployments it knows).
 */
export async function withRepositorySets(
  config: MooringConfig,
  deployment: string | undefined,
): Promise<MooringConfig> {
  if (deployment === undefined || config.deployments.some((d) => d.name === deployment)) return config;
  const sets = config.deploymentSets.filter((s) => gitGenerator(s) || pullRequestGenerator(s));
  if (sets.length === 0) return config;
  const cacheDir = process.env.MOORING_CACHE_DIR ?? join(homedir(), '.cache', 'mooring', 'sources');
  const log = commandLogger();
  const found = new Map<string, Found[]>();
  const repos = new Map<string, GitRepository>();
  const repoOf = (name: string) => {
    const source = config.sources.git.find((g) => g.name === name);
    if (!source) return undefined;
    const repo = repos.get(name) ?? new GitRepository(source, { cacheDir });
    repos.set(name, repo);
    return repo;
  };
  const pullRequestSources = new Set<string>();
  for (const set of sets) {
    const git = gitGenerator(set);
    const pulls = pullRequestGenerator(set);
    if (pulls) pullRequestSources.add(pulls.source);
    const repo = git && repoOf(git.source);
    if (!repo) continue;
    try {
      const tip = await repo.resolve();
      await repo.fetch(tip);
      found.set(set.name, (await readSetInputs(set, repo, tip.commit)).found);
    } catch (error) {
      process.stderr.write(
        printable(
          `warning: deployment set ${set.name}: cannot read source ${git.source}: ${errorMessage(error)}\n`,
        ),
      );
    }
  }
  const pullRequests = new PullRequestSets({ config: () => config, log });
  for (const source of pullRequestSources) {
    const repo = repoOf(source);
    if (!repo) continue;
    try {
      // As the agent's polls would, one after another, until every pull request is decided (at most 20 polls of
      // 50 questions each).
      for (let round = 0; round < 20; round++) {
        const asked = await pullRequests.poll(source, repo, {
          found: (set, _at, inputs) => found.set(set, [...inputs]),
          removed: () => undefined,
        });
        if (asked === 0) break;
      }
    } catch (error) {
      process.stderr.write(
        printable(`warning: the pull requests of source ${source} cannot be read: ${errorMessage(error)}\n`),
      );
    }
  }
  return withSets(config, found).config;
}
