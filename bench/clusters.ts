// Benchmark of one agent deploying to several clusters (docs/clusters.md): `mooring run --config` (the built CLI, a
// child process) with the test bed's control planes (4 by default: its own and three more, each with its own etcd,
// API server, controller manager and kubelet), and one Git repository of D applications of four objects each
// (support/fleet-apps.ts). Every deployment targets every cluster and rolls out in two steps: the agent's own
// cluster (`c1`) first, then the others (`tier: main`) once c1 is stable at the revision. Measured:
//  1. first sync: from the agent's start until every deployment is stable in every cluster (step one's end too);
//  2. rollout: one commit changing every application, from the push until every target is stable at it, through
//     both steps (step one's end printed too);
//  3. the agent's RSS once idle (30 s after the rollout settled) and its peak (VmHWM) over the run;
//  4. the agent's Kubernetes requests per cluster (per target, by verb) in each phase, and the polls its clusters'
//     agents count (each poll of the one source feeds every cluster: src/sync/shared-sources.ts).
// Printed, never asserted. The namespaces are deleted, in every cluster, at the end.
// Run: npm run bench:clusters [-- --deployments 250 --clusters 4 --concurrency 20 --cli dist/cli/main.js]
// Starts the test bed (with its extra control planes) when none runs, and stops only a bed it started. Needs
// `npm run build` first.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { commitFiles, createBareRepo } from '../test/testbed/git-repos.ts';
import { REPO_ROOT } from '../test/testbed/paths.ts';
import { down, up } from '../test/testbed/testbed.ts';
import { AgentProcess, sleep } from './support/agent-process.ts';
import {
  type BenchCluster,
  benchCluster,
  createNamespace,
  deleteNamespace,
  namespacesGone,
  settle,
} from './support/cluster.ts';
import { appName, fleetFiles, freePort, StableIndex } from './support/fleet-apps.ts';
import { launcherEnv, mib, sec } from './support/process.ts';

const { values: flags } = parseArgs({
  options: {
    deployments: { type: 'string', default: '250' },
    /** Control planes in all, the test bed's own included (2 to 4). */
    clusters: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '20' },
    cli: { type: 'string', default: join(REPO_ROOT, 'dist/cli/main.js') },
  },
});
const size = Number(flags.deployments);
const count = Number(flags.clusters);
if (!Number.isInteger(size) || size < 10) throw new Error('--deployments: a whole number of at least 10');
if (!Number.isInteger(count) || count < 2 || count > 4) throw new Error('--clusters: 2 to 4');
const NAMESPACES = 10;
const POLL = '10s';
const SETTLE_MS = 30_000;
const CLI = flags.cli;
if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
Object.assign(process.env, launcherEnv(CLI));
const say = (line = '') => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

interface Kube {
  name: string;
  kubeconfig: string;
  client: BenchCluster;
}

/** A phase's figures: when step one (c1) and every target were stable, and the requests it sent per cluster. */
interface Phase {
  stepOneMs: number;
  allMs: number;
  requests: Map<string, Map<string, number>>;
}

const { env, started } = await up((line) => note(`testbed: ${line}`), { clusters: count });
if (!started)
  note(
    'testbed: a running test bed is used, with what earlier work left in it (objects, etcd history): for figures to compare, stop it first',
  );
const kubes: Kube[] = [
  { name: 'c1', kubeconfig: env.kube.kubeconfig },
  ...(env.clusters ?? [])
    .slice(0, count - 1)
    .map((c, k) => ({ name: `c${k + 2}`, kubeconfig: c.kubeconfig })),
].map((k) => ({ ...k, client: benchCluster(k.kubeconfig) }));
const suffix = Date.now().toString(36);
const namespaces = Array.from({ length: NAMESPACES }, (_, k) => `clusters-${suffix}-${k}`);
const home = `clusters-${suffix}-agent`;
const names = Array.from({ length: size }, (_, i) => appName(i));
const work = await mkdtemp(join(tmpdir(), 'mooring-bench-clusters-'));
let agent: AgentProcess | undefined;
try {
  await writeFile(join(work, 'git-username'), env.git.username, { mode: 0o600 });
  await writeFile(join(work, 'git-password'), env.git.password, { mode: 0o600 });
  for (const k of kubes) for (const ns of [...namespaces, home]) await createNamespace(k.client, ns);
  const repoName = `clusters-${suffix}`;
  const repo = await createBareRepo(env.git.root, repoName);
  const first = await commitFiles(repo, fleetFiles(size, 0), { message: 'the fleet' });
  const port = await freePort();
  const configFile = join(work, 'clusters.yaml');
  await writeFile(configFile, stringify(config(repoName, port)));

  note(`agent starting: ${size} deployments x ${count} clusters`);
  agent = new AgentProcess(CLI, configFile, join(work, 'cache'), []);
  const stable = new StableIndex(agent);
  const start = Date.now();
  const firstSync = await phase(agent, stable, first, start, port, new Map());
  note(`first sync: step one ${sec(firstSync.stepOneMs)}, every target ${sec(firstSync.allMs)}`);
  await settled();

  const before = await requestsByCluster(port);
  const polls = await repositoryPolls(port);
  const pushed = Date.now();
  const head = await commitFiles(repo, fleetFiles(size, 1), { message: 'every app' });
  const rollout = await phase(agent, stable, head, pushed, port, before);
  const pollsDuring = (await repositoryPolls(port)) - polls;
  note(`rollout: step one ${sec(rollout.stepOneMs)}, every target ${sec(rollout.allMs)}`);
  await settled();
  await sleep(SETTLE_MS);
  const rss = agent.rss();
  print(firstSync, rollout, rss.now, rss.peak, pollsDuring);
} finally {
  await agent?.stop();
  for (const k of kubes)
    for (const ns of [...namespaces, home]) await deleteNamespace(k.client, ns).catch(() => undefined);
  note('waiting for the namespaces to go');
  for (const k of kubes)
    await namespacesGone(k.client, [...namespaces, home]).catch((error: unknown) => note(String(error)));
  for (const k of kubes) k.client.agent.destroy();
  await rm(work, { recursive: true, force: true });
  if (started) await down();
}

/** Waits until every target is stable at `sha`, noting when step one (c1) was; the requests since `before`. */
async function phase(
  agent: AgentProcess,
  stable: StableIndex,
  sha: string,
  from: number,
  port: number,
  before: Map<string, Map<string, number>>,
): Promise<Phase> {
  // The agent's own cluster (c1) names none in its log lines.
  const stableIn = (cluster: string) =>
    names.filter((d) => stable.has(d, sha, cluster === 'c1' ? '' : cluster)).length;
  await agent.until('step one', () => stableIn('c1') === size, 60 * 60_000);
  const stepOneMs = Date.now() - from;
  await agent.until('every target', () => kubes.every((k) => stableIn(k.name) === size), 60 * 60_000);
  const allMs = Date.now() - from;
  const now = await requestsByCluster(port);
  const requests = new Map(
    [...now].map(([cluster, verbs]) => [
      cluster,
      new Map([...verbs].map(([verb, n]) => [verb, n - (before.get(cluster)?.get(verb) ?? 0)])),
    ]),
  );
  return { stepOneMs, allMs, requests };
}

/** Every cluster's Deployments rolled out and their pods Ready: the controllers idle before the next phase. */
async function settled(): Promise<void> {
  for (const k of kubes)
    for (const [n, ns] of namespaces.entries()) {
      const expected = Math.floor(size / NAMESPACES) + (n < size % NAMESPACES ? 1 : 0);
      await settle(k.client, ns, expected);
    }
}

/** The agent's Kubernetes requests so far, by cluster and verb (watch streams left out), from its /metrics. */
async function requestsByCluster(port: number): Promise<Map<string, Map<string, number>>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out = new Map<string, Map<string, number>>();
  for (const m of text.matchAll(/^mooring_kube_requests_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = m[1] ?? '';
    const verb = /verb="([^"]*)"/.exec(labels)?.[1] ?? '?';
    const cluster = /cluster="([^"]*)"/.exec(labels)?.[1] ?? '?';
    if (verb === 'watch') continue;
    const verbs = out.get(cluster) ?? new Map<string, number>();
    verbs.set(verb, (verbs.get(verb) ?? 0) + Number(m[2]));
    out.set(cluster, verbs);
  }
  return out;
}

/** The agent's polls of the repository so far (mooring_source_polls_total of the source `fleet`). */
async function repositoryPolls(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let polls = 0;
  for (const m of text.matchAll(/^mooring_source_polls_total\{([^}]*)\} (\S+)$/gm))
    if ((m[1] ?? '').includes('source="fleet"')) polls += Number(m[2]);
  return polls;
}

function config(repo: string, port: number) {
  const [own, ...others] = kubes;
  return {
    apiVersion: 'mooring.io/v1alpha1',
    kind: 'AgentConfig',
    cluster: { name: own?.name, kubeconfig: own?.kubeconfig, namespace: home, labels: { tier: 'canary' } },
    clusters: others.map((k) => ({
      name: k.name,
      kubeconfig: k.kubeconfig,
      namespace: home,
      labels: { tier: 'main' },
    })),
    sources: {
      git: [
        {
          name: 'fleet',
          url: `${env.git.url}/${repo}.git`,
          interval: POLL,
          credentials: {
            username: { file: join(work, 'git-username') },
            password: { file: join(work, 'git-password') },
          },
        },
      ],
    },
    deployments: names.map((name, i) => ({
      name,
      namespace: namespaces[i % NAMESPACES],
      source: 'fleet',
      paths: [`apps/${name}`],
      clusters: { selector: {} },
      rollout: [{ clusters: 'c1' }, { clusters: { selector: { tier: 'main' } } }],
      stability: { timeout: '10m' },
    })),
    concurrency: Number(flags.concurrency),
    server: { port, address: '127.0.0.1' },
  };
}

/** Requests per target of one cluster in a phase: `12.1 (patch 4.0, update 3.0, …)`. */
function perTarget(verbs: Map<string, number> | undefined): string {
  if (!verbs) return 'unknown';
  const total = [...verbs.values()].reduce((a, b) => a + b, 0);
  const byVerb = [...verbs]
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([verb, n]) => `${verb} ${(n / size).toFixed(1)}`)
    .join(', ');
  return `${(total / size).toFixed(1)} (${byVerb})`;
}

function print(first: Phase, rollout: Phase, idleKiB: number, peakKiB: number, polls: number): void {
  const cores = cpus();
  say();
  say(
    `machine: ${cores.length} cores (${cores[0]?.model.trim() ?? 'unknown'}), ${mib(totalmem() / 1024)} memory; ` +
      `${count} control planes on it; ${size} deployments x 4 objects, each in every cluster (${size * count} ` +
      `targets), rollout in two steps (c1, then ${kubes
        .slice(1)
        .map((k) => k.name)
        .join(', ')}); agent --concurrency ${flags.concurrency}, Git poll every ${POLL}`,
  );
  say();
  say(`${''.padEnd(22)}${'step one (c1)'.padStart(16)}${'every target'.padStart(16)}`);
  say(`${'first sync'.padEnd(22)}${sec(first.stepOneMs).padStart(16)}${sec(first.allMs).padStart(16)}`);
  say(
    `${'rollout of one commit'.padEnd(22)}${sec(rollout.stepOneMs).padStart(16)}${sec(rollout.allMs).padStart(16)}`,
  );
  say();
  say(`agent RSS: idle ${mib(idleKiB)}, peak ${mib(peakKiB)}`);
  say(
    `polls during the rollout, counted by the ${count} clusters' agents: ${polls} (${(polls / count).toFixed(0)} ` +
      'each; each poll of the one source feeds every cluster, src/sync/shared-sources.ts)',
  );
  say();
  say('Kubernetes requests per target (per deployment in one cluster), by cluster:');
  for (const k of kubes) {
    say(`  ${k.name}  first sync ${perTarget(first.requests.get(k.name))}`);
    say(`  ${''.padEnd(k.name.length)}  rollout    ${perTarget(rollout.requests.get(k.name))}`);
  }
}
