// What the fault-injection tests share: the test bed's kube-apiserver killed, restarted or frozen on purpose; the
// agent as its own process (so that it can be killed too), with its log lines; and the checks every fault test
// ends with (the checks of what the agent left in the cluster are in faults-support.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LAST_RESORT_MARK } from '../../src/cli/last-resort.ts';
import type { CapturedRequest } from '../contract/github-openapi.ts';
import { stateDir } from '../testbed/paths.ts';
import type { DaemonRecord } from '../testbed/processes.ts';
import { isRunning, stopDaemon } from '../testbed/processes.ts';
import { startBedDaemon } from '../testbed/testbed.ts';
import { eventually, runTool, testbed } from './helpers.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

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

export interface AgentProcess {
  child: ChildProcess;
  /** Every line it printed, stdout and stderr. */
  output: () => string;
  logs: () => { msg: string; [key: string]: unknown }[];
  exited: Promise<number | null>;
  alive: () => boolean;
}

/** `mooring run --config FILE` as its own process, as a user (or a pod) runs it. */
export function startAgent(configFile: string): AgentProcess {
  return startMooring(['run', '--config', configFile]);
}

/** A long-running mooring command (`run --config`, `run --watch`) as its own process. */
export function startMooring(args: string[]): AgentProcess {
  const child = spawn(process.execPath, [MAIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  return {
    child,
    output: () => out,
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as { msg: string }];
          } catch {
            return [];
          }
        }),
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
    alive: () => child.exitCode === null && child.signalCode === null,
  };
}

/** The process still runs and its last-resort handler never fired. */
export function assertAlive(agent: AgentProcess): void {
  if (!agent.alive()) throw new Error(`the agent exited:\n${agent.output().slice(-4000)}`);
  if (agent.output().includes(LAST_RESORT_MARK))
    throw new Error(`the agent's last-resort handler fired:\n${agent.output().slice(-4000)}`);
}

interface StatusBody {
  state: string;
  context: string;
  description: string;
}

/** Commit statuses captured for `context`, by commit, in the order they were posted. */
export function statusesByCommit(captured: CapturedRequest[], context: string): Map<string, StatusBody[]> {
  const byCommit = new Map<string, StatusBody[]>();
  for (const r of captured) {
    const match = /\/statuses\/([0-9a-f]{40})$/.exec(r.path);
    const body = r.body as StatusBody;
    if (!match?.[1] || body.context !== context) continue;
    byCommit.set(match[1], [...(byCommit.get(match[1]) ?? []), body]);
  }
  return byCommit;
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
