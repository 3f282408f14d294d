// What the fault-injection tests share: the test bed's kube-apiserver killed, restarted or frozen on purpose, and
// the checks every fault test ends with (the checks of what the agent left in the cluster are in
// faults-support.ts). The agent as its own process comes from the harness (harness.ts).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { LAST_RESORT_MARK } from '../../src/cli/last-resort.ts';
import { KubeApi } from '../../src/kube/api.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { FaultProxy } from '../testbed/fault-proxy.ts';
import { stateDir } from '../testbed/paths.ts';
import type { DaemonRecord } from '../testbed/processes.ts';
import { isRunning, stopDaemon } from '../testbed/processes.ts';
import { startBedDaemon } from '../testbed/testbed.ts';
import { type AgentProcess, startAgent as startHarnessAgent } from './harness.ts';
import { eventually, runTool, testbed, writeKubeconfig } from './helpers.ts';

// The agent as a process and the status parser live in the harness; re-exported for the files that import them here.
export { type AgentProcess, startMooring, statusesByCommit } from './harness.ts';

async function apiServer(): Promise<DaemonRecord> {
  const daemons = JSON.parse(await readFile(join(stateDir(), 'daemons.json'), 'utf8')) as DaemonRecord[];
  const record = daemons.find((d) => d.name === 'kube-apiserver');
  if (!record) throw new Error('no kube-apiserver in the test bed');
  return record;
}

/** Whether the API server answers /readyz. */
async function ready(): Promise<boolean> {
  const env = testbed();
  const out = await runTool(env.tools.kubectl, [
    '--kubeconfig',
    env.kube.kubeconfig,
    '--request-timeout',
    '3s',
    'get',
    '--raw',
    '/readyz',
  ]).catch(() => undefined);
  return out?.stdout.trim() === 'ok';
}

/** SIGKILL to kube-apiserver: connections drop, new ones are refused. */
export async function killApiServer(): Promise<void> {
  const record = await apiServer();
  process.kill(record.pid, 'SIGKILL');
  await eventually('kube-apiserver gone', async () => (isRunning(record) ? undefined : true), 10_000);
}

/** Starts kube-apiserver again with the arguments it had, and waits until it is ready. */
export async function restartApiServer(): Promise<void> {
  const record = await apiServer();
  if (isRunning(record)) await stopDaemon(record);
  await startBedDaemon({ name: record.name, command: record.command, args: record.args });
  await eventually('kube-apiserver ready again', async () => ((await ready()) ? true : undefined), 60_000);
}

/** SIGSTOP to kube-apiserver for `ms`: connections stay open and nothing answers. */
export async function freezeApiServer(ms: number): Promise<void> {
  const record = await apiServer();
  process.kill(record.pid, 'SIGSTOP');
  try {
    await new Promise((r) => setTimeout(r, ms));
  } finally {
    process.kill(record.pid, 'SIGCONT');
  }
}

/** `mooring run --config FILE` as its own process: the harness's `startAgent({file}, {process: true})`. */
export function startAgent(configFile: string): AgentProcess {
  return startHarnessAgent({ file: configFile }, { process: true });
}

/** The process still runs and its last-resort handler never fired. */
export function assertAlive(agent: AgentProcess): void {
  if (!agent.alive()) throw new Error(`the agent exited:\n${agent.output().slice(-4000)}`);
  if (agent.output().includes(LAST_RESORT_MARK))
    throw new Error(`the agent's last-resort handler fired:\n${agent.output().slice(-4000)}`);
}

interface ConfigMapItem {
  metadata: { name: string };
  data?: Record<string, string>;
}

/** `count` small applications (ConfigMap + Deployment), whose configuration says `rev`. */
export function appsAt(count: number, rev: number, prefix = 'app'): string {
  const docs: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${String(i).padStart(3, '0')}`;
    docs.push(`apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-config}
data: {REV: "${rev}"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: 1
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
        - name: web
          image: registry.example.com/${prefix}:1.0.0
          envFrom: [{configMapRef: {name: ${name}-config}}]`);
  }
  return `${docs.join('\n---\n')}\n`;
}

/**
 * Every Deployment of `namespace` runs configuration `rev`, and the controller reports it available: the
 * deployment converged to that commit.
 */
export async function convergedTo(namespace: string, rev: number, count: number): Promise<boolean> {
  const env = testbed();
  const kubectl = (...args: string[]) =>
    runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, '-n', namespace, ...args]);
  const cms = JSON.parse((await kubectl('get', 'configmaps', '-o', 'json')).stdout) as {
    items: ConfigMapItem[];
  };
  const revOf = new Map(cms.items.map((c) => [c.metadata.name, c.data?.REV]));
  const deps = JSON.parse((await kubectl('get', 'deployments', '-o', 'json')).stdout) as {
    items: {
      spec: { template: { spec: { containers: { envFrom?: { configMapRef?: { name: string } }[] }[] } } };
      status?: { updatedReplicas?: number; availableReplicas?: number };
    }[];
  };
  if (deps.items.length !== count) return false;
  return deps.items.every((d) => {
    const ref = d.spec.template.spec.containers[0]?.envFrom?.[0]?.configMapRef?.name;
    return (
      ref !== undefined &&
      revOf.get(ref) === String(rev) &&
      d.status?.updatedReplicas === 1 &&
      d.status.availableReplicas === 1
    );
  });
}

/**
 * The test bed's kube-apiserver behind a fault proxy: a kubeconfig that speaks plain http to the proxy (which
 * speaks TLS onward and passes the token on), a client of it, and discovery.
 */
export async function throughProxy() {
  const known = parse(await readFile(testbed().kube.kubeconfig, 'utf8')) as {
    clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
    users: { user: Record<string, unknown> }[];
  };
  const cluster = known.clusters[0]?.cluster;
  const user = known.users[0]?.user;
  if (!cluster || !user) throw new Error('the test bed kubeconfig has no cluster or user');
  const ca = Buffer.from(cluster['certificate-authority-data'], 'base64');
  const proxy = await FaultProxy.start(cluster.server, { ca });
  const kubeconfig = await writeKubeconfig({ server: proxy.url }, user);
  const api = new KubeApi(loadKubeConfig({ kubeconfig }));
  return { proxy, kubeconfig, api, discovery: new Discovery(api) };
}
