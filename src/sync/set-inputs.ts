// What a deployment set's repository gives at a commit (docs/deployment-sets.md): the folders a gitDirectories set
// matches, or the files a gitFiles set reads as inputs (each refused by name when it breaks a rule). One reader for
// the agent's polls and for the command line, which expands a Git set to find one of its deployments.

import type { DeploymentSet } from '../config/schema-sets.ts';
import { MAX_SET_DEPLOYMENTS, MAX_SET_FILE_BYTES } from '../config/schema-sets.ts';
import { type Found, fileInput, gitGenerator } from '../config/sets.ts';
import type { GitRepository } from '../sources/git/repository.ts';

/** The set's inputs at `commit` (already fetched), and the files refused, each naming the set, the file and why. */
export async function readSetInputs(
  set: DeploymentSet,
  repo: GitRepository,
  commit: string,
): Promise<{ found: Found[]; refused: string[] }> {
  const generator = gitGenerator(set);
  const found: Found[] = [];
  const refused: string[] = [];
  if (generator?.gitDirectories) {
    const { directories, exclude } = generator.gitDirectories;
    found.push(...(await repo.folders(commit, directories, exclude, MAX_SET_DEPLOYMENTS)));
  } else if (generator?.gitFiles) {
    const { files, exclude, maxFileBytes } = generator.gitFiles;
    for (const file of await repo.globFiles(
      commit,
      files,
      exclude,
      maxFileBytes,
      MAX_SET_DEPLOYMENTS,
      MAX_SET_FILE_BYTES,
    )) {
      const input = fileInput(file.path, file.text);
      if ('problem' in input) refused.push(`deployment set ${set.name}, ${input.label}: ${input.problem}`);
      else found.push(input);
    }
  }
  return { found, refused };
}
