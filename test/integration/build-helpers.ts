// Set-up shared by the integration tests of building and deploying sources (Kustomize trees, charts, SOPS files,
// the CLI against a folder, the agent following a Git repository): folders of files at relative paths, a test-bed
// repository fetched as the agent fetches it, a pushed image and the registry source that follows it, a commit's
// status awaited, live objects read back with kubectl, the corpus' files, the agent on a configuration file, and
// the manifests many tests deploy (a Deployment `web`, a chart's Deployment named after its release).
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { gitSource } from '../../src/config/schema.ts';
import type { KubeObject } from '../../src/render/manifest.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { api } from './faults-support.ts';
import {
  type Agent,
  agentConfigFile,
  bareRepo,
  eventually,
  kubectl,
  manifestDir,
  type StatusReceiver,
  stableImageSource,
  startAgent,
  testbed,
} from './helpers.ts';

/** Writes these files under `dir` at their relative paths, subfolders made as needed. */
export async function writeTree(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
}

/**
 * A new repository `name` on the test bed's Git server holding `files`, read as the agent reads it (with the Git
 * server's credentials): the repository with its commit fetched, and the commit.
 */
export async function fetchedRepo(
  name: string,
  files: Record<string, string>,
): Promise<{ repo: GitRepository; commit: string }> {
  const commit = await (await bareRepo(name)).commit(files);
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
  return { repo, commit };
}

/** An image pushed as `<repository>:stable` to the test bed's registry: its name (host and repository), its digest. */
export async function pushStable(repository: string): Promise<{ image: string; digest: string }> {
  const env = testbed();
  const pushed = await pushImage({ registry: env.registry.url, repository, tag: 'stable' });
  return { image: `${env.registry.host}/${repository}`, digest: pushed.digest };
}

/** The agent's `sources` with one registry source `name` following the `stable` tag of `image` (plain HTTP). */
export function stableImageSources(name: string, image: string) {
  return { registry: [stableImageSource(image, '1h', name)] };
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

/** A Deployment `web` (label app: web) whose one container `container` runs `image`; `lines` follow the image. */
export function webDeployment(image: string, lines: string[] = [], container = 'web', replicas = 1): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: ${container}
          image: ${image}
${lines.map((line) => `          ${line}\n`).join('')}`;
}

/** The live object read back with kubectl; a kubectl error is thrown. */
export async function live<T extends KubeObject = KubeObject>(
  namespace: string,
  kind: string,
  name: string,
): Promise<T> {
  const out = await kubectl('-n', namespace, 'get', kind, name, '-o', 'json');
  if (out.code !== 0) throw new Error(out.stderr);
  return JSON.parse(out.stdout) as T;
}

const CORPUS = join(import.meta.dirname, '..', 'fixtures', 'corpus');

/** The registry the corpus' manifests name, for a test to replace with its own. */
export const CORPUS_REGISTRY = 'corpus.registry.invalid';

/**
 * The files of the corpus' `folder` ('' for all of it), README.md aside, as repository path -> content; with
 * `registry`, the images the corpus names moved there.
 */
export async function corpusFiles(folder: string, registry?: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(join(CORPUS, folder), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name === 'README.md') continue;
    const path = join(entry.parentPath, entry.name);
    const text = await readFile(path, 'utf8');
    files[relative(CORPUS, path)] =
      registry === undefined ? text : text.replaceAll(CORPUS_REGISTRY, registry);
  }
  return files;
}

/** The text of `files[path]` with `from` replaced by `to`; throws when the file does not hold `from`. */
export function edit(files: Record<string, string>, path: string, from: string, to: string): string {
  const text = files[path];
  if (text === undefined || !text.includes(from))
    throw new Error(`${path} does not hold ${JSON.stringify(from)}`);
  return text.replace(from, to);
}

/** The agent started on `config` written to a file, and a Kubernetes client; `cleanups` ends both. */
export async function agentOnFile(config: string, cleanups: (() => Promise<unknown>)[]) {
  const configFile = await agentConfigFile(config);
  const agent = startAgent({ file: configFile });
  const kube = api();
  cleanups.push(async () => kube.close());
  cleanups.push(() => agent.stop());
  return { agent, configFile, kube };
}

/** A chart's Deployment template named after the release, its container reading ConfigMap `<release>-<configMap>`. */
export function releaseDeployment(configMap: string): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
        - name: web
          image: example/web:1
          envFrom: [{configMapRef: {name: {{ .Release.Name }}-${configMap}}}]
`;
}

/** A Deployment of one replica (label app: `app`) whose one container `app` runs app:1; `metadata` in flow style. */
export function appDeployment(metadata = '{name: web}', app = 'web'): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: ${metadata}
spec:
  replicas: 1
  selector: {matchLabels: {app: ${app}}}
  template:
    metadata: {labels: {app: ${app}}}
    spec: {containers: [{name: app, image: app:1}]}
`;
}
