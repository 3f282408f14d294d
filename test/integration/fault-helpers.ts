// What the fault-injection tests share: the test bed's kube-apiserver killed, restarted or frozen on purpose, or
// behind the fault proxy (refusing streaming lists as an older server does); agents run as their own processes
// and what they cost (peak RSS, /healthz answers); and the checks every fault test ends with (the checks of what
// the agent left in the cluster are in faults-support.ts). The agent as its own process comes from the harness
// (harness.ts).
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect } from 'vitest';
import { parse } from 'yaml';
import { LAST_RESORT_MARK } from '../../src/cli/last-resort.ts';
import { KubeApi } from '../../src/kube/api.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { type Fault, FaultProxy } from '../testbed/fault-proxy.ts';
import { stateDir } from '../testbed/paths.ts';
import type { DaemonRecord } from '../testbed/processes.ts';
import { isRunning, stopDaemon } from '../testbed/processes.ts';
import { startBedDaemon } from '../testbed/testbed.ts';
import { api, type Cleanup } from './faults-support.ts';
import {
  type Agent,
  type AgentConfigSpec,
  type AgentProcess,
  type DeploymentSpec,
  type StatusReceiver,
  startAgent as startHarnessAgent,
  type TestRepo,
} from './harness.ts';
import {
  agentConfig,
  bareRepo,
  eventually,
  kubectl,
  manifestDir,
  peakRss,
  pollHealth,
  runTool,
  testbed,
  type watchHealth,
  writeKubeconfig,
} from './helpers.ts';
import { appName, configuredApp } from './scale-fixtures.ts';

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

/**
 * Sends SIGTERM to `agent` and waits for its exit: its code, or `running` if it has not exited within `boundMs`,
 * and how long it took.
 */
export async function terminate(
  agent: AgentProcess,
  boundMs: number,
): Promise<{ code: number | null | 'running'; took: number }> {
  const signalled = Date.now();
  agent.child.kill('SIGTERM');
  const code = await Promise.race([
    agent.exited,
    new Promise<'running'>((r) => setTimeout(() => r('running'), boundMs)),
  ]);
  return { code, took: Date.now() - signalled };
}

/**
 * Sends SIGTERM to `agent` and asserts what a stop must give: exit 0 within `boundMs`, `stopped` its last line (each
 * failure names the time taken and the last lines). Waits `giveUpMs` for the exit. Returns the log records.
 */
export async function stopsWithin(agent: AgentProcess, boundMs: number, giveUpMs: number) {
  const { code, took } = await terminate(agent, giveUpMs);
  const records = agent.logs();
  const last = `${took} ms; last: ${records
    .slice(-6)
    .map((l) => l.msg)
    .join(' | ')}`;
  expect(code, last).toBe(0);
  expect(records.at(-1)?.msg, last).toBe('stopped');
  expect(took, last).toBeLessThan(boundMs);
  return records;
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
    const { configMap, deployment } = configuredApp(appName(prefix, i), prefix, `{REV: "${rev}"}`);
    docs.push(`${configMap}\n---\n${deployment}`);
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

/**
 * throughProxy's kube-apiserver behind a fault proxy, and a client of the server itself (`direct`); `cleanup` gets
 * the steps that close all three.
 */
export async function proxiedServer(cleanup: (...steps: Cleanup[]) => void) {
  const bed = await throughProxy();
  const direct = api();
  cleanup(
    () => bed.proxy.close(),
    () => bed.api.close(),
    () => direct.close(),
  );
  return { ...bed, direct };
}

/** What a 1.30 API server without the WatchList gate answers a streaming list. */
export const STREAMING_LIST_REFUSED: Fault = {
  kind: 'status',
  status: 422,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message:
      'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
    reason: 'Invalid',
    code: 422,
  }),
};

/**
 * The configuration of an agent that deploys the folder `dir` as deployment web to `namespace`, reaching the
 * cluster through `kubeconfig` and keeping its state in `agentNs`; `deployment` adds fields to the deployment.
 */
export function folderAgentConfig(spec: {
  agentNs: string;
  kubeconfig: string;
  namespace: string;
  dir: string;
  deployment?: Record<string, unknown>;
}): Promise<string> {
  return agentConfig({
    cluster: { namespace: spec.agentNs, kubeconfig: spec.kubeconfig },
    deployments: [{ name: 'web', namespace: spec.namespace, source: 'folder', ...spec.deployment }],
    extra: { sources: { local: [{ name: 'folder', path: spec.dir }] } },
  });
}

/** The cleanup step that stops `agent` and deletes its namespace, without waiting. */
export function stopping(agent: Agent, agentNs: string): Cleanup {
  return async () => {
    await agent.stop();
    await kubectl('delete', 'namespace', agentNs, '--wait=false');
  };
}

/** A deployment of the agent's one Git source. */
type SourcedDeployment = Pick<DeploymentSpec, 'name' | 'namespace'> & Record<string, unknown>;

/**
 * An agent as its own process syncing `repo` into `crds` (deployments that may create CustomResourceDefinitions)
 * and `others`, reporting their commit statuses to `receiver`.
 */
export async function startCrdAgent(spec: {
  cluster: string;
  agentNs: string;
  repo: TestRepo;
  receiver: StatusReceiver;
  crds: SourcedDeployment[];
  others?: SourcedDeployment[];
}): Promise<AgentProcess> {
  const config = await agentConfig({
    cluster: { name: spec.cluster, namespace: spec.agentNs },
    git: [{ name: 'app', repo: spec.repo }],
    deployments: [
      ...spec.crds.map((d) => ({ source: 'app', allowClusterScoped: ['CustomResourceDefinition'], ...d })),
      ...(spec.others ?? []).map((d) => ({ source: 'app', ...d })),
    ],
    statuses: spec.receiver,
  });
  return startHarnessAgent(config, { process: true });
}

/**
 * Runs `body` once `agent` listens, its /healthz polled all along; then checks that every poll was answered within
 * 1 s, and that there were more than five.
 */
export async function whileHealthPolled(agent: AgentProcess, body: () => Promise<void>): Promise<void> {
  const poller = pollHealth(agent.port);
  try {
    await agent.listening();
    await body();
  } finally {
    const health = await poller.stop();
    expect(health.failed, 'every /healthz poll answered within 1 s').toEqual([]);
    expect(health.answered).toBeGreaterThan(5);
  }
}

/**
 * Gives the agent processes started by a describe block's tests a Git cache of their own (MOORING_CACHE_DIR, which
 * they inherit), a temporary folder removed by the block's last cleanup step.
 */
export function useAgentCache(prefix: string, cleanup: (...steps: Cleanup[]) => void): void {
  beforeAll(async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), prefix));
    process.env.MOORING_CACHE_DIR = cacheDir;
    cleanup(async () => {
      delete process.env.MOORING_CACHE_DIR;
      await rm(cacheDir, { recursive: true, force: true });
    });
  });
}

/** A fresh bare repository `<name>-<suffix>/app`, its folder removed after the tests. */
export async function scratchRepo(name: string, cleanup: (...steps: Cleanup[]) => void) {
  const suffix = Date.now().toString(36);
  const repo = await bareRepo(`${name}-${suffix}/app`);
  cleanup(() => rm(repo.path, { recursive: true, force: true }));
  return { repo, suffix };
}

/**
 * `mooring run --config FILE` of this configuration as its own process; after the tests it is ended (SIGTERM, if
 * it still runs) and its namespace deleted without waiting.
 */
export async function startFileAgent(
  config: AgentConfigSpec,
  cleanup: (...steps: Cleanup[]) => void,
): Promise<AgentProcess> {
  const dir = await manifestDir({ 'mooring.yaml': await agentConfig(config) });
  const agent = startAgent(`${dir}/mooring.yaml`);
  cleanup(async () => {
    if (agent.alive()) agent.child.kill('SIGTERM');
    await agent.exited;
    await kubectl('delete', 'namespace', config.cluster.namespace, '--wait=false');
  });
  return agent;
}

/** Polls `probe` as `eventually` does, recording an agent that exited as the last observation. */
export function whileAlive<T>(
  agent: AgentProcess,
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 180_000,
): Promise<T> {
  return eventually(
    what,
    async () => {
      if (!agent.alive()) throw new Error(`the agent exited:\n${agent.output().slice(-3000)}`);
      return probe();
    },
    timeoutMs,
  );
}

/**
 * What an agent cost while `health` watched it: its peak RSS and its /healthz answers, printed under `label`, and
 * `during`: what the agent logged in its longest gap and the machine's load then, for the message of a gap too long.
 */
export function footprint(label: string, agent: AgentProcess, health: ReturnType<typeof watchHealth>) {
  const rss = peakRss(agent.child.pid as number);
  const { longestGapMs, answers, gapEndedAt } = health.stop();
  process.stdout.write(
    `${label}: agent peak RSS ${(rss / (1024 * 1024)).toFixed(0)} MiB; longest /healthz gap ${longestGapMs} ms over ${answers} answers\n`,
  );
  const from = gapEndedAt - longestGapMs - 500;
  const logged = agent
    .logs()
    .filter((r) => {
      const at = Date.parse(String(r.time));
      return at >= from && at <= gapEndedAt;
    })
    .slice(-60)
    .map((r) => `${String(r.time)} ${r.msg}`);
  const load = readFileSync('/proc/loadavg', 'utf8').trim();
  const during = `longest /healthz gap ${longestGapMs} ms ending ${new Date(gapEndedAt).toISOString()}; load ${load}; the agent logged:\n${logged.join('\n')}`;
  return { rss, longestGapMs, answers, during };
}

/** Compacts etcd's history up to now (through etcd's own HTTP gateway), as the API server does every 5 minutes. */
export async function compactEtcd(): Promise<void> {
  const etcd = testbed().kube.etcd;
  const range = await fetch(`${etcd}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: 'AA==' }) });
  const revision = ((await range.json()) as { header: { revision: string } }).header.revision;
  const compacted = await fetch(`${etcd}/v3/kv/compaction`, {
    method: 'POST',
    body: JSON.stringify({ revision: Number(revision), physical: true }),
  });
  expect(compacted.ok).toBe(true);
}
