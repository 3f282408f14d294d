// Benchmark of mooring's footprint, in one run:
//  1. start-up: `node dist/cli/main.js version` against `node -e 0`, alternating, median of several runs.
//     Goal: at most 0.3 s more.
//  2. the agent idle: `node dist/cli/main.js run --config FILE` with three Git sources (one deployment each, two
//     of them binding an image of the two registry sources) on the test bed's Git server and registry. Once the
//     three first syncs are stable, its RSS is sampled for --idle-minutes (default 10). Goal: at most 80 MiB.
//  3. burst and large (support/load-scenarios.ts): the agent after a burst of 30 deployments x 20 commits, and
//     after its repository grew to 20,000 files: RSS idle before, the peak, RSS once at rest for 45 s, with heap
//     used / external / arrayBuffers at each point. Goal: at rest within 1.25 times the idle RSS. About 4 min.
// Run: npm run bench:memory [-- --idle-minutes 10 --repeat 9 --parts startup,agent,burst,large]
// (the default parts are startup, burst and large: about 5 minutes; the ten idle minutes of `agent` on request)
// Starts the test bed when none runs (and stops only a bed it started). Needs `npm run build` first.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { commitFiles, createBareRepo } from '../test/testbed/git-repos.ts';
import { pushImage } from '../test/testbed/oci-push.ts';
import { REPO_ROOT } from '../test/testbed/paths.ts';
import { down, up } from '../test/testbed/testbed.ts';
import { benchCluster, createNamespace, deleteNamespace } from './support/cluster.ts';
import { burstScenario, largeScenario, report, type ScenarioContext } from './support/load-scenarios.ts';
import { goal, launcherEnv, launcherFlags, median, mib, timed } from './support/process.ts';

/** Thrown to skip the rest of the run (the idle agent) and still clean up. */
class Done extends Error {}

const { values: flags } = parseArgs({
  options: {
    'idle-minutes': { type: 'string', default: '10' },
    repeat: { type: 'string', default: '9' },
    /** startup, agent, burst, large: which to measure. */
    parts: { type: 'string', default: 'startup,burst,large' },
    /**
     * A folder for a V8 heap snapshot of the idle agent at the end of its idle period (part `agent`); read it with
     * `node scripts/heap-summary.ts FILE`.
     */
    'heap-snapshot': { type: 'string' },
  },
});
const parts = new Set(flags.parts.split(','));
const idleMs = Number(flags['idle-minutes']) * 60_000;
const repeat = Number(flags.repeat);
const CLI = join(REPO_ROOT, 'dist/cli/main.js');
// The launcher's environment (glibc's arena settings) for every mooring process this benchmark starts.
Object.assign(process.env, launcherEnv(CLI));
if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
const say = (line = '') => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

// 1. Start-up, before anything else runs.
if (parts.has('startup')) {
  const mooringMs: number[] = [];
  const nodeMs: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const m = await timed(process.execPath, [...launcherFlags(CLI), CLI, 'version']);
    if (m.code !== 0) throw new Error(`mooring version exited ${m.code}: ${m.output}`);
    mooringMs.push(m.ms);
    nodeMs.push((await timed(process.execPath, ['-e', '0'])).ms);
  }
  const extra = (median(mooringMs) - median(nodeMs)) / 1000;
  say(
    `start-up, median of ${repeat}: mooring version ${median(mooringMs).toFixed(0)} ms, node -e 0 ${median(nodeMs).toFixed(0)} ms`,
  );
  say(goal('start-up over node -e 0', `${extra.toFixed(2)} s`, 'at most 0.30 s', extra <= 0.3));
}
if (!parts.has('agent') && !parts.has('burst') && !parts.has('large')) process.exit(0);

const { env, started } = await up((line) => note(`testbed: ${line}`));
if (!started)
  note(
    'testbed: a running test bed is used, with what earlier work left in it (objects, etcd history): for figures to compare, stop it first',
  );
const c = benchCluster(env.kube.kubeconfig);
const suffix = Date.now().toString(36);
const work = await mkdtemp(join(tmpdir(), 'mooring-bench-memory-'));
const namespaces = [`bench-agent-${suffix}`, ...['a', 'b', 'c'].map((x) => `bench-idle-${x}-${suffix}`)];
let agent: ReturnType<typeof spawn> | undefined;
try {
  await writeFile(join(work, 'git-username'), env.git.username, { mode: 0o600 });
  await writeFile(join(work, 'git-password'), env.git.password, { mode: 0o600 });
  // 3. Under load, each in its own agent.
  const ctx: ScenarioContext = {
    env,
    cluster: c,
    cli: CLI,
    work,
    suffix,
    say,
    note,
    snapshots: flags['heap-snapshot'],
  };
  if (parts.has('burst')) report(ctx, 'burst of 30 deployments x 20 commits', await burstScenario(ctx));
  if (parts.has('large'))
    report(ctx, 'large repository of 20,000 files (100 selected)', await largeScenario(ctx));
  if (!parts.has('agent')) throw new Done();

  // 2. The agent, idle.
  for (const ns of namespaces) await createNamespace(c, ns);
  const images = [];
  for (const x of ['a', 'b']) {
    const repository = `bench-${suffix}/web-${x}`;
    await pushImage({ registry: env.registry.url, repository, tag: 'stable' });
    images.push({
      name: `image-${x}`,
      image: `${env.registry.host}/${repository}`,
      policy: { type: 'fixed', tag: 'stable' },
      insecure: true,
    });
  }
  const git = [];
  const deployments = [];
  for (const [i, x] of ['a', 'b', 'c'].entries()) {
    const repoName = `bench-${suffix}-${x}`;
    const repo = await createBareRepo(env.git.root, repoName);
    const image =
      i < 2 ? `${env.registry.host}/bench-${suffix}/web-${x}:stable` : 'registry.example.com/web:1';
    await commitFiles(repo, { 'app/app.yaml': app(image) });
    git.push({
      name: `manifests-${x}`,
      url: `${env.git.url}/${repoName}.git`,
      credentials: {
        username: { file: join(work, 'git-username') },
        password: { file: join(work, 'git-password') },
      },
    });
    deployments.push({
      name: `web-${x}`,
      namespace: `bench-idle-${x}-${suffix}`,
      source: `manifests-${x}`,
      paths: ['app'],
      images: i < 2 ? [`image-${x}`] : [],
      stability: { timeout: '5m' },
    });
  }
  // Intervals are the defaults (Git every minute, registries every five): an agent at rest, as deployed.
  const config = {
    apiVersion: 'mooring.io/v1alpha1',
    kind: 'AgentConfig',
    cluster: { name: 'testbed', kubeconfig: env.kube.kubeconfig, namespace: namespaces[0] },
    sources: { git, registry: images },
    deployments,
    server: { port: 0, address: '127.0.0.1' },
  };
  const configFile = join(work, 'mooring.yaml');
  await writeFile(configFile, stringify(config));

  note('agent: starting, waiting for the three first syncs');
  const snapshotDir = flags['heap-snapshot'];
  const snapshotFlags = snapshotDir
    ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`]
    : [];
  const child = spawn(
    process.execPath,
    [...launcherFlags(CLI), ...snapshotFlags, CLI, 'run', '--config', configFile],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MOORING_CACHE_DIR: join(work, 'cache') },
    },
  );
  agent = child;
  let stable = 0;
  let log = '';
  child.stdout.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-20_000);
    stable += chunk.toString().split('"outcome":"stable"').length - 1;
  });
  child.stderr.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000)));
  const startedAt = Date.now();
  while (stable < 3) {
    if (child.exitCode !== null) throw new Error(`the agent exited ${child.exitCode}:\n${log}`);
    if (Date.now() - startedAt > 5 * 60_000)
      throw new Error(`the agent's first syncs took over 5 min:\n${log}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  note(
    `agent: three deployments stable after ${((Date.now() - startedAt) / 1000).toFixed(1)} s; idle for ${idleMs / 60_000} min`,
  );

  const status = () => readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status())?.[1] ?? 0);
  const samples: number[] = [];
  const idleStart = Date.now();
  while (Date.now() - idleStart < idleMs) {
    if (child.exitCode !== null) throw new Error(`the agent exited ${child.exitCode}:\n${log}`);
    samples.push(kib('VmRSS'));
    await new Promise((r) => setTimeout(r, 5000));
  }
  const last = kib('VmRSS');
  const peak = Math.max(...samples, last);
  say(
    `agent idle ${idleMs / 60_000} min (3 Git, 2 registry sources, 3 deployments): RSS at start ${mib(samples[0] ?? 0)}, at the end ${mib(last)}, highest ${mib(peak)}, VmHWM ${mib(kib('VmHWM'))}`,
  );
  // Anonymous (heap, malloc, V8's pages) against file-backed (the node binary's and libraries' pages read in).
  say(`  of the RSS at the end: anonymous ${mib(kib('RssAnon'))}, file-backed ${mib(kib('RssFile'))}`);
  say(goal('agent RSS after the idle period', mib(last), 'at most 80 MiB', last <= 80 * 1024));
  if (snapshotDir) {
    // Taken after the figures: writing a snapshot takes memory of its own.
    child.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 10_000));
    note(`agent: heap snapshot written in ${snapshotDir}`);
  }
} catch (error) {
  if (!(error instanceof Done)) throw error;
} finally {
  if (agent && agent.exitCode === null) {
    const exited = new Promise((r) => agent?.once('exit', r));
    agent.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  }
  if (parts.has('agent')) for (const ns of namespaces) await deleteNamespace(c, ns).catch(() => undefined);
  c.agent.destroy();
  await rm(work, { recursive: true, force: true });
  if (started) await down();
}

function app(image: string): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {GREETING: hello}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: ${image}
          envFrom: [{configMapRef: {name: web-config}}]
`;
}
