// Set-up shared by the integration tests of building and deploying sources (Kustomize trees, charts, SOPS files,
// the CLI against a folder, the agent following a Git repository): folders of files at relative paths, a test-bed
// repository fetched as the agent fetches it, a pushed image and the registry source that follows it, a commit's
// status awaited, live objects read back with kubectl.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gitSource } from '../../src/config/schema.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { type Agent, eventually, kubectl, manifestDir, type StatusReceiver, testbed } from './helpers.ts';

/** Writes these files under `dir` at their relative paths, subfolders made as needed. */
export async function writeTree(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
}

/** A temporary folder holding these files at relative paths, removed after the test file. */
export async function tree(files: Record<string, string>): Promise<string> {
  const dir = await manifestDir({});
  await writeTree(dir, files);
  return dir;
}

/** The test bed's repository `name` read as the agent reads it (with the Git server's credentials), `commit` fetched. */
export async function fetchedRepo(name: string, commit: string): Promise<GitRepository> {
  const env = testbed();
  process.env.MOORING_TEST_BUILD_GIT_USER = env.git.username;
  process.env.MOORING_TEST_BUILD_GIT_PASSWORD = env.git.password;
  const repo = new GitRepository(
    gitSource.parse({
      name: 'app',
      url: `${env.git.url}/${name}.git`,
      credentials: {
        username: { env: 'MOORING_TEST_BUILD_GIT_USER' },
        password: { env: 'MOORING_TEST_BUILD_GIT_PASSWORD' },
      },
    }),
    { cacheDir: await manifestDir({}) },
  );
  await repo.fetch(commit);
  return repo;
}

/** An image pushed as `<repository>:stable` to the test bed's registry: its name (host and repository), its digest. */
export async function pushStable(repository: string): Promise<{ image: string; digest: string }> {
  const env = testbed();
  const pushed = await pushImage({ registry: env.registry.url, repository, tag: 'stable' });
  return { image: `${env.registry.host}/${repository}`, digest: pushed.digest };
}

/** The agent's `sources` with one registry source `name` following the `stable` tag of `image` (plain HTTP). */
export function stableImageSource(name: string, image: string) {
  return {
    registry: [{ name, image, policy: { type: 'fixed', tag: 'stable' }, insecure: true, interval: '1h' }],
  };
}

/** Waits for commit `sha`'s status to end; if it does not, the error carries the agent's error lines. */
export async function untilEnded(
  agent: Agent,
  receiver: StatusReceiver,
  sha: string,
  what: string,
): Promise<void> {
  await eventually(what, async () => receiver.ended(sha), 90_000).catch((error: unknown) => {
    throw new Error(`${String(error)}\n${agent.lines.filter((l) => l.includes('"level":50')).join('\n')}`);
  });
}

/** The live object read back with kubectl, or undefined when there is none. */
export async function liveObject<T>(namespace: string, kind: string, name: string): Promise<T | undefined> {
  const out = await kubectl('-n', namespace, 'get', kind, name, '-o', 'json', '--ignore-not-found');
  return out.stdout.trim() ? (JSON.parse(out.stdout) as T) : undefined;
}
