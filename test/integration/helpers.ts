// Shared helpers of the integration tests: clients for the test bed's servers and a namespace per test file.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, inject } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../../src/cli/program.ts';
import { type ClusterConfig, loadKubeConfig } from '../../src/kube/client.ts';
import type { TestbedEnv } from '../testbed/testbed.ts';

export function testbed(): TestbedEnv {
  return inject('testbed');
}

export function kubeConfig(env: TestbedEnv = testbed()): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(env.kube.kubeconfig);
  return kc;
}

/** The test bed's cluster as mooring reads it (src/kube/kubeconfig.ts), for mooring's own KubeApi. */
export function clusterConfig(env: TestbedEnv = testbed()): ClusterConfig {
  return loadKubeConfig({ kubeconfig: env.kube.kubeconfig });
}

/** Writes a kubeconfig of one cluster, user and context to a fresh folder; returns the file's path. */
export async function writeKubeconfig(
  cluster: Record<string, unknown>,
  user: Record<string, unknown>,
  files: Record<string, string | Buffer> = {},
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-kubeconfig-'));
  tempDirs.push(dir);
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), content);
  }
  const file = join(dir, 'config');
  await writeFile(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return file;
}

/** A fresh namespace for the calling test file, deleted (without waiting) when the file is done. */
export function useNamespace(prefix: string): () => string {
  let name = '';
  beforeAll(async () => {
    name = `${prefix}-${randomBytes(3).toString('hex')}`;
    await kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name, labels: { 'mooring.io/test': prefix } } } });
  });
  afterAll(async () => {
    if (name) await kubeConfig().makeApiClient(CoreV1Api).deleteNamespace({ name });
  });
  return () => name;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program (no shell) and resolves with its exit code and output, whatever the code. */
export function runTool(
  command: string,
  args: string[],
  options: { timeoutMs?: number; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<RunResult> {
  return new Promise((resolveRun) => {
    execFile(
      command,
      args,
      {
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 16 * 1024 * 1024,
        ...(options.cwd ? { cwd: options.cwd } : {}),
        ...(options.env ? { env: options.env } : {}),
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolveRun({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

/** The test bed's kubectl with its kubeconfig: `kubectl('-n', ns, 'get', 'pods')`. */
export function kubectl(...args: string[]): Promise<RunResult> {
  const env = testbed();
  return runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, ...args]);
}

/** Polls until `probe` returns a value, failing with the last observation after the deadline. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = 'nothing observed';
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not reached in ${timeoutMs} ms (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const tempDirs: string[] = [];
afterAll(async () => {
  for (const d of tempDirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A temporary folder holding these manifest files, removed after the test file. */
export async function manifestDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-manifests-'));
  tempDirs.push(dir);
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

/** Runs the mooring CLI in-process and captures what it prints. */
export async function mooring(...argv: string[]): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: (t) => (stdout += `${t}\n`),
    stderr: (t) => (stderr += `${t}\n`),
  });
  return { code, stdout, stderr };
}

export function deployTo(namespace: string, dir: string, ...extra: string[]): Promise<RunResult> {
  return mooring(
    'deploy',
    dir,
    '--kubeconfig',
    testbed().kube.kubeconfig,
    '-n',
    namespace,
    '--timeout',
    '2m',
    ...extra,
  );
}

/** A stream that keeps every line written to it: a logger's destination in tests. */
export function lineSink(): { destination: Writable; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { destination, lines };
}
