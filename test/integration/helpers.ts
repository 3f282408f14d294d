// Shared helpers of the integration tests: clients for the test bed's servers and the CLI. The set-up of a test
// (namespace, repository, status receiver, agent, configuration) is the harness (harness.ts), re-exported here so
// that a test imports everything from this file.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { parse, stringify } from 'yaml';
import { KubeApi } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import { type ClusterConfig, loadKubeConfig } from '../../src/kube/client.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { keepDriftMarks } from '../../src/kube/drift-pass.ts';
import type { TestbedEnv } from '../testbed/testbed.ts';
import { cli } from '../unit/cli/run-cli.ts';
import { kubeConfig, manifestDir, tempDir, testbed } from './harness.ts';

export * from './harness.ts';

/** The test bed's cluster as mooring reads it (src/kube/kubeconfig.ts), for mooring's own KubeApi. */
export function clusterConfig(env: TestbedEnv = testbed()): ClusterConfig {
  return loadKubeConfig({ kubeconfig: env.kube.kubeconfig });
}

/**
 * The agent's view for a test of drift passes: a client of the test bed, its watch cache keeping drift marks (as
 * the agent keeps them while drift passes run) and discovery; `closers` gets what closes them.
 */
export function driftClient(closers: (() => void | Promise<void>)[]) {
  const api = new KubeApi(clusterConfig());
  const cache = new ClusterCache(api, { lingerMs: 5 * 60_000 });
  closers.push(
    () => cache.close(),
    () => api.close(),
  );
  keepDriftMarks(cache);
  return { api, cache, discovery: new Discovery(api) };
}

/** Writes a kubeconfig of one cluster, user and context to a fresh folder; returns the file's path. */
export async function writeKubeconfig(
  cluster: Record<string, unknown>,
  user: Record<string, unknown>,
  files: Record<string, string | Buffer> = {},
): Promise<string> {
  const dir = await tempDir('mooring-kubeconfig-');
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

/**
 * A kubeconfig of the test bed's cluster acting as ServiceAccount `name` of `namespace` (a token of an hour), for
 * tests of what mooring does with less than every right.
 */
export async function serviceAccountKubeconfig(namespace: string, name: string): Promise<string> {
  const core = kubeConfig().makeApiClient(CoreV1Api);
  const token = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const admin = parse(await readFile(testbed().kube.kubeconfig, 'utf8')) as {
    clusters: { cluster: Record<string, unknown> }[];
  };
  const cluster = admin.clusters[0]?.cluster;
  if (!cluster || !token.status?.token) throw new Error('no cluster or no token');
  return writeKubeconfig(cluster, { token: token.status.token });
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

/**
 * The CLI as a user's shell starts it (src/cli/main.ts, with what its launcher does before the commands load), with
 * `env` added to this process's environment.
 */
export function mooringShell(env: NodeJS.ProcessEnv, ...args: string[]): Promise<RunResult> {
  return runTool(
    process.execPath,
    [join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts'), ...args],
    {
      env: { ...process.env, ...env },
    },
  );
}

/** The test bed's kubectl with its kubeconfig: `kubectl('-n', ns, 'get', 'pods')`. */
export function kubectl(...args: string[]): Promise<RunResult> {
  const env = testbed();
  return runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, ...args]);
}

/**
 * The leader Lease of `agentNs` written by hand, as whoever may write Leases in the agent's namespace can: another
 * holder, renewed in the year 9999, for `seconds`. The leader gives way at its next renewal; it takes the lease back
 * once the record has not changed for the lease's duration (nobody renews it).
 */
export async function forgeLease(agentNs: string, seconds: number): Promise<void> {
  const forged = await kubectl(
    ...['-n', agentNs, 'patch', 'lease', 'mooring', '--type=merge', '-p'],
    JSON.stringify({
      spec: {
        holderIdentity: 'ghost',
        renewTime: '9999-12-31T00:00:00.000000Z',
        leaseDurationSeconds: seconds,
      },
    }),
  );
  expect(forged.code, forged.stderr).toBe(0);
}

/** Deletes a namespace without waiting for it to go (an agent's own namespace, after its test). */
export function deleteNamespace(name: string): Promise<RunResult> {
  return kubectl('delete', 'namespace', name, '--wait=false');
}

/**
 * The releases a deployment's ledger ConfigMap holds (`mooring-ledger-<deployment>` in the agent's namespace), as
 * stored, newest first; none while there is no ledger.
 */
export async function ledgerReleases<T>(agentNamespace: string, deployment: string): Promise<T[]> {
  const out = await kubectl(
    '-n',
    agentNamespace,
    'get',
    'configmap',
    `mooring-ledger-${deployment}`,
    '-o',
    'jsonpath={.data.releases\\.json}',
  );
  return JSON.parse(out.stdout || '[]') as T[];
}

/** Runs the mooring CLI in-process and captures what it prints. */
export const mooring: (...argv: string[]) => Promise<RunResult> = cli;

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

/** Polls /healthz every 200 ms, each answer given 1 s; keeps every failure once one answer came. */
export function pollHealth(port: () => number) {
  const health = { answered: 0, failed: [] as string[] };
  let polling = true;
  const loop = (async () => {
    while (polling) {
      const p = port();
      if (p) {
        const started = Date.now();
        try {
          const res = await fetch(`http://127.0.0.1:${p}/healthz`, { signal: AbortSignal.timeout(1000) });
          if (res.status === 200) health.answered += 1;
          else health.failed.push(`HTTP ${res.status}`);
        } catch (error) {
          health.failed.push(`${String(error)} after ${Date.now() - started} ms`);
        }
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const stop = async () => {
    polling = false;
    await loop;
    return health;
  };
  return {
    health,
    stop,
    /** Stops, and asserts that /healthz answered, every time within 1 s. */
    answeredThroughout: async () => {
      await stop();
      expect(health.answered).toBeGreaterThan(0);
      expect(health.failed, 'every /healthz poll answered within 1 s').toEqual([]);
    },
  };
}

/**
 * Applies the CustomResourceDefinition `manifest` (named `name`) with kubectl and waits until it is Established;
 * `cleanup`, when given, gets its deletion.
 */
export async function installCrd(
  manifest: string,
  name: string,
  cleanup?: (step: () => Promise<unknown>) => void,
): Promise<void> {
  const dir = await manifestDir({ 'crd.yaml': manifest });
  const applied = await kubectl('apply', '-f', join(dir, 'crd.yaml'));
  expect(applied.code, applied.stderr).toBe(0);
  cleanup?.(() => kubectl('delete', 'crd', name, '--wait=false'));
  const ready = await kubectl('wait', '--for=condition=Established', `crd/${name}`, '--timeout=60s');
  expect(ready.code, ready.stderr).toBe(0);
}

/**
 * A CustomResourceDefinition of objects (namespaced unless told) whose spec and status hold anything, with a
 * status subresource and these annotations (health rules, for one).
 */
export function crdManifest(
  group: string,
  plural: string,
  kind: string,
  annotations: Record<string, string> = {},
  scope: 'Namespaced' | 'Cluster' = 'Namespaced',
): string {
  const lines = Object.entries(annotations).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`);
  return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${plural}.${group}
${lines.length > 0 ? `  annotations:\n${lines.join('\n')}\n` : ''}spec:
  group: ${group}
  scope: ${scope}
  names: {kind: ${kind}, plural: ${plural}, singular: ${kind.toLowerCase()}}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
            status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`;
}

/**
 * The ConfigMap a Deployment's first container reads through envFrom now, and its data: which version of a
 * versioned configuration runs. Undefined while the Deployment or its reference is not there.
 */
export async function runningConfig(
  namespace: string,
  deployment = 'web',
): Promise<{ name: string; data: Record<string, string> } | undefined> {
  const kube = new KubeApi(clusterConfig());
  try {
    const d = await kube
      .request<{
        spec: { template: { spec: { containers: { envFrom?: { configMapRef?: { name: string } }[] }[] } } };
      }>('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/${deployment}`)
      .catch(() => undefined);
    const name = d?.spec.template.spec.containers[0]?.envFrom?.[0]?.configMapRef?.name;
    if (!name) return undefined;
    const cm = await kube.request<{ data: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${namespace}/configmaps/${name}`,
    );
    return { name, data: cm.data };
  } finally {
    kube.close();
  }
}

/** A deployment's releases as `mooring history -o json` prints them, newest first. */
export async function ledgerHistory<T>(deployment: string, configFile: string): Promise<T[]> {
  const out = await mooring('history', deployment, '--config', configFile, '-o', 'json');
  return (JSON.parse(out.stdout) as { items: T[] }).items;
}

/**
 * The leader lease of the agents leaderConfig configures: short for tests, and long enough that a holder on a busy
 * machine renews well within its deadline (two thirds of it, src/kube/lease.ts) every second.
 */
export const TEST_LEASE_MS = 6000;

/**
 * An agent configuration for leader election tests, in `dir`: one local source holding a ConfigMap (`cm.yaml`),
 * deployed to `namespace`; the agents' own namespace `agentNamespace`; a 4 s lease renewed every second.
 */
export async function leaderConfig(dir: string, agentNamespace: string, namespace: string): Promise<string> {
  const file = join(dir, 'mooring.yaml');
  await writeFile(
    join(dir, 'cm.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n',
  );
  await writeFile(
    file,
    `cluster: {kubeconfig: ${testbed().kube.kubeconfig}, namespace: ${agentNamespace}}
sources:
  local: [{name: folder, path: ${dir}}]
deployments:
  - {name: settings, namespace: ${namespace}, source: folder, paths: [cm.yaml]}
server: {port: 0, address: 127.0.0.1}
leaderElection: {enabled: true, leaseName: mooring, leaseDuration: ${TEST_LEASE_MS / 1000}s, renewInterval: 1s}
`,
  );
  return file;
}
