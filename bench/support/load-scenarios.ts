// The agent's memory under load, measured in a child agent process on the test bed (bench/memory.ts runs these):
//  burst: 30 deployments, one Git repository each, receive 20 commits each in about a minute; every commit
//         changes a ConfigMap that the deployment's Deployment reads, so each sync rolls the Deployment out.
//  large: one deployment whose repository grows from its 100 manifests to 20,000 files in one commit (the other
//         19,900 under folders the deployment does not select), then three one-file commits.
// For each: RSS idle before (the agent's first syncs done, nothing moving), the peak (VmHWM, reset before the
// load), RSS once the load is over and nothing new happens for SETTLE_MS, and the same after a full garbage
// collection; with heap used / external / arrayBuffers at each point, from the probe (memory-probe.mjs).

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { commitFiles, createBareRepo } from '../../test/testbed/git-repos.ts';
import type { TestbedEnv } from '../../test/testbed/testbed.ts';
import { AgentProcess, type ProbeAnswer, sleep, type Usage } from './agent-process.ts';
import { type BenchCluster, createNamespace, deleteNamespace } from './cluster.ts';
import { goal, mib } from './process.ts';

const SETTLE_MS = 45_000;
const GOAL_RATIO = 1.25;

export interface ScenarioContext {
  env: TestbedEnv;
  cluster: BenchCluster;
  cli: string;
  work: string;
  suffix: string;
  say: (line?: string) => void;
  note: (line: string) => void;
  /** A folder for heap snapshots of each scenario's agent at idle and after its rest (bench:memory --heap-snapshot). */
  snapshots?: string | undefined;
}

interface Point {
  rssKiB: number;
  usage: Usage;
}

export interface ScenarioFigures {
  idle: Point;
  peakKiB: number;
  peakHeap: ProbeAnswer['peak'];
  after: Point;
  afterGc: Point;
  /** RSS every 15 s after the load ended, KiB. */
  curve: number[];
}

export async function burstScenario(
  ctx: ScenarioContext,
  deployments = 30,
  commits = 20,
): Promise<ScenarioFigures> {
  const { env, suffix } = ctx;
  const namespace = `bench-burst-${suffix}`;
  await createNamespace(ctx.cluster, namespace);
  try {
    const repos: string[] = [];
    const heads: string[] = [];
    for (let i = 0; i < deployments; i++) {
      const repo = await createBareRepo(env.git.root, `bench-burst-${suffix}-${i}`);
      repos.push(repo);
      heads.push(await commitFiles(repo, { 'app/app.yaml': burstApp(i, 0) }));
    }
    const config = agentConfig(
      ctx,
      namespace,
      repos.map((_, i) => ({
        source: `burst-${i}`,
        repo: `bench-burst-${suffix}-${i}`,
        deployment: `web-${i}`,
        paths: ['app'],
      })),
    );
    return await measure(
      ctx,
      'burst',
      config,
      heads.map((h, i) => [`web-${i}`, h]),
      async () => {
        let last: string[] = [];
        for (let round = 1; round <= commits; round++) {
          last = await Promise.all(
            repos.map((repo, i) => commitFiles(repo, { 'app/app.yaml': burstApp(i, round) })),
          );
          await sleep(1500);
        }
        return last.map((sha, i) => [`web-${i}`, sha]);
      },
    );
  } finally {
    await deleteNamespace(ctx.cluster, namespace).catch(() => undefined);
  }
}

export async function largeScenario(
  ctx: ScenarioContext,
  total = 20_000,
  selected = 100,
): Promise<ScenarioFigures> {
  const { env, suffix } = ctx;
  const namespace = `bench-large-${suffix}`;
  await createNamespace(ctx.cluster, namespace);
  try {
    const name = `bench-large-${suffix}`;
    const repo = await createBareRepo(env.git.root, name);
    const app: Record<string, string> = {};
    for (let i = 0; i < selected; i++) app[`app/cm-${pad(i)}.yaml`] = configMap(`app-${i}`, 0);
    const first = await commitFiles(repo, app);
    const config = agentConfig(ctx, namespace, [
      { source: 'large', repo: name, deployment: 'app', paths: ['app'] },
    ]);
    return await measure(ctx, 'large', config, [['app', first]], async (agent) => {
      const rest: Record<string, string> = { 'app/cm-00000.yaml': configMap('app-0', 1) };
      for (let i = 0; i < total - selected; i++)
        rest[`teams/t-${i % 100}/cm-${pad(i)}.yaml`] = configMap(`other-${i}`, 0);
      let head = await commitFiles(repo, rest, { message: 'the other teams move in' });
      for (let n = 2; n <= 4; n++) {
        await agent.until('the large commit deployed', () => agent.stableAt('app', head), 180_000);
        head = await commitFiles(repo, {
          [`app/cm-${pad(n)}.yaml`]: configMap(`app-${n}`, n),
          [`teams/t-${n}/cm-${pad(n)}.yaml`]: configMap(`other-${n}`, n),
        });
      }
      return [['app', head]];
    });
  } finally {
    await deleteNamespace(ctx.cluster, namespace).catch(() => undefined);
  }
}

/** Prints a scenario's figures and its goal line. */
export function report(ctx: ScenarioContext, title: string, f: ScenarioFigures): void {
  const heap = (u: Omit<Usage, 'rss'>) =>
    `heap used ${mib(u.heapUsed / 1024)} of ${mib(u.heapTotal / 1024)}, external ${mib(u.external / 1024)}, arrayBuffers ${mib(u.arrayBuffers / 1024)}`;
  ctx.say(title);
  ctx.say(`  idle before        RSS ${mib(f.idle.rssKiB).padStart(8)}   ${heap(f.idle.usage)}`);
  ctx.say(`  peak               RSS ${mib(f.peakKiB).padStart(8)}   ${heap(f.peakHeap)} (highest of each)`);
  ctx.say(
    `  after ${SETTLE_MS / 1000} s at rest  RSS ${mib(f.after.rssKiB).padStart(8)}   ${heap(f.after.usage)}`,
  );
  ctx.say(`  then a full GC     RSS ${mib(f.afterGc.rssKiB).padStart(8)}   ${heap(f.afterGc.usage)}`);
  ctx.say(`  RSS every 15 s after the last sync: ${f.curve.map((k) => mib(k)).join(', ')}`);
  const ratio = f.after.rssKiB / f.idle.rssKiB;
  ctx.say(
    goal(
      `${title.split(' ')[0]}: RSS at rest / idle`,
      ratio.toFixed(2),
      `at most ${GOAL_RATIO}`,
      ratio <= GOAL_RATIO,
    ),
  );
}

type Heads = [deployment: string, sha: string][];

async function measure(
  ctx: ScenarioContext,
  label: string,
  config: object,
  first: Heads,
  load: (agent: AgentProcess) => Promise<Heads>,
): Promise<ScenarioFigures> {
  const configFile = join(ctx.work, `${label}.yaml`);
  await writeFile(configFile, stringify(config));
  const agent = new AgentProcess(ctx.cli, configFile, join(ctx.work, `cache-${label}`));
  try {
    const started = Date.now();
    await agent.until(
      `${label}: first syncs`,
      () => first.every(([d, sha]) => agent.stableAt(d, sha)),
      240_000,
    );
    ctx.note(
      `${label}: ${first.length} first syncs stable after ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    await sleep(15_000);
    const idle = await point(agent);
    if (ctx.snapshots) await snapshot(ctx, agent, `${label}-idle`);
    await agent.resetPeaks();
    const loadStart = Date.now();
    const heads = await load(agent);
    ctx.note(
      `${label}: load pushed in ${((Date.now() - loadStart) / 1000).toFixed(1)} s; waiting for the syncs`,
    );
    await agent.until(
      `${label}: last syncs`,
      () => heads.every(([d, sha]) => agent.stableAt(d, sha)),
      240_000,
    );
    const lastEnd = Math.max(...agent.syncs.map((s) => s.at));
    ctx.note(
      `${label}: ${agent.syncs.length} syncs ended, the last ${((lastEnd - loadStart) / 1000).toFixed(1)} s into the load`,
    );
    const peakKiB = agent.rss().peak;
    const { peak: peakHeap } = await agent.probe('usage');
    const curve: number[] = [];
    for (let t = 15_000; t <= SETTLE_MS; t += 15_000) {
      await sleep(Math.max(0, lastEnd + t - Date.now()));
      curve.push(agent.rss().now);
    }
    const syncsAfter = agent.syncs.filter((s) => s.at > lastEnd).length;
    if (syncsAfter > 0) ctx.note(`${label}: ${syncsAfter} syncs ended while at rest (should be none)`);
    const after = await point(agent);
    if (ctx.snapshots) await snapshot(ctx, agent, `${label}-rest`);
    await agent.probe('gc');
    await sleep(2000);
    const afterGc = await point(agent);
    return { idle, peakKiB: Math.max(peakKiB, agent.rss().peak), peakHeap, after, afterGc, curve };
  } finally {
    await agent.stop();
  }
}

async function snapshot(ctx: ScenarioContext, agent: AgentProcess, name: string): Promise<void> {
  const file = join(ctx.snapshots as string, `${name}.heapsnapshot`);
  await agent.probe('snapshot', file);
  ctx.note(`${name}: heap snapshot ${file} (node scripts/heap-summary.ts FILE)`);
}

async function point(agent: AgentProcess): Promise<Point> {
  const { usage } = await agent.probe('usage');
  return { rssKiB: agent.rss().now, usage };
}

function agentConfig(
  ctx: ScenarioContext,
  namespace: string,
  items: { source: string; repo: string; deployment: string; paths: string[] }[],
): object {
  const credentials = {
    username: { file: join(ctx.work, 'git-username') },
    password: { file: join(ctx.work, 'git-password') },
  };
  return {
    apiVersion: 'mooring.io/v1alpha1',
    kind: 'AgentConfig',
    cluster: { name: 'testbed', kubeconfig: ctx.env.kube.kubeconfig, namespace },
    sources: {
      git: items.map((x) => ({
        name: x.source,
        url: `${ctx.env.git.url}/${x.repo}.git`,
        interval: '5s',
        credentials,
      })),
    },
    deployments: items.map((x) => ({
      name: x.deployment,
      namespace,
      source: x.source,
      paths: x.paths,
      stability: { timeout: '5m' },
    })),
    server: { port: 0, address: '127.0.0.1' },
  };
}

function pad(i: number): string {
  return String(i).padStart(5, '0');
}

function configMap(name: string, version: number): string {
  return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}
  labels: {app: ${name}, tier: backend}
data:
  VERSION: "${version}"
  LEVEL: info
  GREETING: hello from ${name}, a line long enough to look like real configuration text
`;
}

function burstApp(i: number, round: number): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: web-${i}-config}
data: {GREETING: "hello ${round}"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-${i}}
spec:
  replicas: 1
  revisionHistoryLimit: 2
  selector: {matchLabels: {app: web-${i}}}
  template:
    metadata: {labels: {app: web-${i}}}
    spec:
      containers:
        - name: web
          image: registry.example.com/web:1
          envFrom: [{configMapRef: {name: web-${i}-config}}]
`;
}
