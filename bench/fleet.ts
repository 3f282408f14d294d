// Benchmark of the agent at fleet scale, measured as fluxcd/flux-benchmark measures Flux (N Kustomizations of
// four objects from one source): `mooring run --config` (the built CLI, a child process) with N deployments of a
// ConfigMap, a ServiceAccount, a Service and a Deployment of one replica each (support/fleet-apps.ts), one folder
// per application in one monorepo on the test bed's Git server, one Git source polled every 10 s, the deployments
// spread over 20 namespaces. For each size:
//  1. first sync: from the agent's start until every deployment's first release is stable (the agent's log: one
//     line per finished sync, with its deployment, revision and outcome);
//  2. fleet rollout: one commit changing all N applications, from the push until every one is stable again;
//  3. one-app latency: one commit changing one application, from the push until it is stable; once left to the
//     10 s poll and once with the generic webhook sent right after the push (median of --samples each);
//  4. the agent's RSS once idle (settled, 30 s after the last sync) and its peak (VmHWM) over the whole run;
//  5. drift passes: the agent is started again with `drift.interval` set; its first pass judges from the marks of
//     what was written that the ledgers saved (docs/drift.md, "After a restart"), the next from its own; both read
//     the watch cache first and send dry runs only for objects that moved (none here). Each pass's time and Kubernetes requests are
//     read from the agent's summary line of the pass ("drift pass ended", src/kube/drift-pass.ts).
// Printed beside Flux's published figures and this machine's hardware; goals (at 1,000 on 2 cores) are printed
// with met / NOT MET, never asserted. Each size's namespaces are deleted, and gone, before the next starts.
// Run: npm run bench:fleet [-- --sizes 100,500,1000 --samples 3 --concurrency 20 --concurrency-max 64 --qps 200 --qps-max 1000 --cli dist/cli/main.js]
// After the agent, each size's floor (`--floor yes|no|only`, support/fleet-floor.ts): the same applications written
// by a raw server-side-apply loop into fresh namespaces and waited on until available, first and at the next round:
// what the API server, etcd, the controllers and the kubelet need, printed beside the agent's figures as a ratio.
// `--set` makes the deployments with one deployment set instead of one entry each, and times a commit adding 50
// application folders and one removing them (docs/deployment-sets.md).
// Starts the test bed when none runs (and stops only a bed it started). Needs `npm run build` first.
//
// `--vs flux` runs Flux on the same test bed after the agent, size by size (support/flux-fleet.ts): source-controller
// and kustomize-controller (built once by scripts/flux.sh) outside the cluster with the bed's kubeconfig, one
// GitRepository of a repository of the same content polled every 10 s as the agent's source, one Kustomization per
// application with fluxcd/flux-benchmark's settings (interval 60m, retryInterval 2m, timeout 1m, prune, wait,
// targetNamespace as the agent's deployment; kustomize-controller --concurrent=20, source-controller --concurrent=10).
// Each figure is taken as the agent's (for Flux's one-app "webhook", the annotation notification-controller's
// Receiver writes), printed for both with the ratio mooring / flux and an "ahead of Flux" goal line each. The
// controllers are stopped, and Flux's objects, namespaces and CRDs deleted, before the next run. docs/fleet.md.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { commitFiles, createBareRepo } from '../test/testbed/git-repos.ts';
import { REPO_ROOT } from '../test/testbed/paths.ts';
import { down, up } from '../test/testbed/testbed.ts';
import { AgentProcess, sleep } from './support/agent-process.ts';
import { benchCluster, createNamespace, deleteNamespace, namespacesGone, settle } from './support/cluster.ts';
import {
  appFiles,
  appName,
  fleetFiles,
  freePort,
  genericHook,
  kubeRequestsByVerb,
  StableIndex,
  since,
} from './support/fleet-apps.ts';
import { type FleetFloor, fleetFloor } from './support/fleet-floor.ts';
import { fluxBuild, fluxVersion } from './support/flux.ts';
import { type FluxFigures, fluxFleet } from './support/flux-fleet.ts';
import { printVsFlux } from './support/flux-report.ts';
import { goal, launcherEnv, median, mib, sec } from './support/process.ts';

/** The peaks of each phase (VmHWM is reset after each, so that the next phase's peak is its own). */
const peaksSeen: number[] = [];

const { values: flags } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100,500,1000' },
    /** One-app changes measured each way (poll, webhook); their medians are printed. */
    samples: { type: 'string', default: '3' },
    /** Deployments synced at once: Flux's benchmark runs kustomize-controller with --concurrency 20. */
    concurrency: { type: 'string', default: '20' },
    /** The agent's concurrencyMax: above --concurrency, the syncs in flight follow the API server up to it. */
    'concurrency-max': { type: 'string', default: '' },
    /**
     * The agent's request budget (cluster.qps; burst twice it). Empty: the agent's default (200, up to 1,000 a second
     * by the adaptive rules while cluster.qpsMax is unset). A fleet of 1,000
     * deployments raises it as a Flux installation of that size raises --kube-api-qps.
     */
    qps: { type: 'string', default: '' },
    /** The agent's cluster.qpsMax: above its qps, the request budget follows the API server up to it. */
    'qps-max': { type: 'string', default: '' },
    /**
     * Seconds between drift passes in step 5. By default half a second per deployment, at least 20: a first pass
     * without saved marks checks every object (about 14 requests per deployment) and must end before the next
     * begins.
     */
    'drift-interval': { type: 'string' },
    /**
     * A folder for V8 CPU profiles of the agent (`--cpu-prof`): one per agent process, written when it stops. Read
     * them with `node scripts/cpu-profile.ts FILE`.
     */
    'cpu-prof': { type: 'string' },
    /**
     * A folder for a V8 heap snapshot of the agent once idle after the first sync (`fleet-<size>-idle.heapsnapshot`),
     * with the heap's figures at that moment in the log. Read it with `node scripts/heap-summary.ts FILE`.
     */
    'heap-snapshot': { type: 'string' },
    /**
     * With --heap-snapshot: also a snapshot this many seconds into the fleet rollout (where the run's RSS peak is),
     * named fleet-N-rollout.heapsnapshot. Writing it pauses the agent for seconds: that run's times are not figures.
     */
    'heap-snapshot-rollout': { type: 'string', default: '' },
    /**
     * A folder for the agent's sampled allocations during the first sync and the fleet rollout
     * (`fleet-<size>-<phase>.heapprofile`, collected objects included): who allocates. Read them with
     * `node scripts/alloc-profile.ts FILE`.
     */
    'alloc-prof': { type: 'string' },
    /** A file that receives the agent's whole log (appended), to read the timeline of a sync afterwards. */
    'agent-log': { type: 'string' },
    /** Leave out step 5 (the drift passes). */
    'no-drift': { type: 'boolean', default: false },
    /** The built CLI to run; another build of mooring can be measured this way. */
    cli: { type: 'string', default: join(REPO_ROOT, 'dist/cli/main.js') },
    /** `flux`: run Flux's source- and kustomize-controller on the same fleet after the agent, and compare. */
    vs: { type: 'string' },
    /**
     * The deployments made by one deployment set (docs/deployment-sets.md) instead of one entry each: a
     * Git-directories set over `apps/<namespace>/<app>`; then 50 folders added by one commit and removed (pruned) by
     * another, each timed until every deployment concerned ended its sync.
     */
    set: { type: 'boolean', default: false },
    /**
     * The cluster's floor (support/fleet-floor.ts): after the agent, each size's applications written by a raw
     * server-side-apply loop and waited on until available, first and at the next round. `no` leaves it out, `only`
     * measures it alone.
     */
    floor: { type: 'string', default: 'yes' },
    /** The floor loop's requests at once. */
    'loop-concurrency': { type: 'string', default: '32' },
  },
});
if (!['yes', 'no', 'only'].includes(flags.floor))
  throw new Error(`--floor: yes, no or only, not '${flags.floor}'`);
if (flags.vs !== undefined && flags.vs !== 'flux')
  throw new Error(`--vs: only flux is known, not '${flags.vs}'`);
const sizes = flags.sizes.split(',').map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n < 20))
  throw new Error('--sizes: whole numbers of at least 20');
const samples = Number(flags.samples);
const concurrency = Number(flags.concurrency);
const concurrencyMax = flags['concurrency-max'] ? Number(flags['concurrency-max']) : undefined;
const qps = flags.qps ? Number(flags.qps) : undefined;
const qpsMax = flags['qps-max'] ? Number(flags['qps-max']) : undefined;
const NAMESPACES = 20;
const POLL = '10s';
const SETTLE_MS = 30_000;
const CLI = flags.cli;
const nodeArgs = flags['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${flags['cpu-prof']}`] : [];
Object.assign(process.env, launcherEnv(CLI));
if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
const say = (line = '') => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

interface Figures {
  size: number;
  firstSyncMs: number;
  rolloutMs: number;
  pollMs: number[];
  webhookMs: number[];
  idleKiB: number;
  peakKiB: number;
  /** The agent's CPU seconds in its first syncs (its start included) and in the fleet rollout. */
  cpu: { first: number; rollout: number };
  drift: { intervalS: number; passes: DriftPassLine[] } | undefined;
  /** The agent's Kubernetes requests per deployment: its first syncs (with its start), and one rollout's syncs. */
  requestsPerSync: { first: number; rollout: number };
  /** The same requests by verb (for `--vs flux`). */
  verbs: { first: Map<string, number> | undefined; rollout: Map<string, number> | undefined };
  /** With --set: a commit adding 50 application folders until each is stable, one removing them until each is pruned. */
  set?: { addMs: number; removeMs: number } | undefined;
}

/** How many folders the set's steps add and remove. */
const SET_STEP = 50;

/**
 * The repository's files as the run lays them out: `apps/<app>/…` (one deployment entry each), or with --set
 * `apps/<namespace index>/<app>/…`, so that the set's template takes the namespace from the folder.
 */
function laidOut(files: Record<string, string | null>): Record<string, string | null> {
  if (!flags.set) return files;
  return Object.fromEntries(
    Object.entries(files).map(([path, text]) => {
      const app = /^apps\/app-(\d+)\//.exec(path);
      return [app ? `apps/${Number(app[1]) % NAMESPACES}/${path.slice('apps/'.length)}` : path, text];
    }),
  );
}

/** The agent's summary of one drift pass (src/kube/drift-pass.ts). */
interface DriftPassLine {
  deployments: number;
  unchecked: number;
  objects: number;
  moved: number;
  drifted: number;
  requests: number;
  reads: number;
  dryRuns: number;
  writes: number;
  elapsedMs: number;
}

const { env, started } = await up((line) => note(`testbed: ${line}`));
if (!started)
  note(
    'testbed: a running test bed is used, with what earlier work left in it (objects, etcd history): for figures to compare, stop it first',
  );
const c = benchCluster(env.kube.kubeconfig);
const suffix = Date.now().toString(36);
const work = await mkdtemp(join(tmpdir(), 'mooring-bench-fleet-'));
const SECRET = 'fleet-bench-webhook-secret';
const results: Figures[] = [];
const floors = new Map<number, FleetFloor>();
const fluxResults: FluxFigures[] = [];
let fluxDir = '';
try {
  await writeFile(join(work, 'git-username'), env.git.username, { mode: 0o600 });
  await writeFile(join(work, 'git-password'), env.git.password, { mode: 0o600 });
  await writeFile(join(work, 'webhook-secret'), SECRET, { mode: 0o600 });
  if (flags.vs === 'flux') {
    note('Flux: building the controllers (scripts/flux.sh; once per machine)');
    fluxDir = await fluxBuild();
  }
  for (const size of sizes) {
    if (flags.floor !== 'only')
      try {
        results.push(await fleet(size));
      } catch (error) {
        // One size that does not finish still leaves the others' figures.
        say(`${size} deployments: not measured: ${String(error).slice(0, 2000)}`);
      }
    if (flags.floor !== 'no')
      try {
        note(`${size}: the cluster's floor (a raw server-side-apply loop, then the controllers)`);
        const names = Array.from({ length: NAMESPACES }, (_, k) => `fleet-${suffix}-${size}-floor-${k}`);
        const floor = await fleetFloor(c, size, names, Number(flags['loop-concurrency']), patiently);
        note(`${size}: floor: first ${sec(floor.firstMs)}, rollout ${sec(floor.rolloutMs)}`);
        floors.set(size, floor);
      } catch (error) {
        say(`${size} deployments: the floor not measured: ${String(error).slice(0, 2000)}`);
      }
    if (fluxDir)
      try {
        fluxResults.push(
          await fluxFleet(size, {
            env,
            c,
            dir: fluxDir,
            work,
            suffix,
            samples,
            namespaces: NAMESPACES,
            poll: POLL,
            settleMs: SETTLE_MS,
            note,
            patiently,
          }),
        );
      } catch (error) {
        say(`${size} deployments: Flux not measured: ${String(error).slice(0, 2000)}`);
      }
  }
} finally {
  c.agent.destroy();
  await rm(work, { recursive: true, force: true });
  if (started) await down();
}
print(results);
printFloors(results);
if (fluxDir) printVsFlux(say, fluxVersion(fluxDir), POLL, results, fluxResults);

async function fleet(size: number): Promise<Figures> {
  const namespaces = Array.from({ length: NAMESPACES }, (_, k) => `fleet-${suffix}-${size}-${k}`);
  const home = `fleet-${suffix}-${size}-agent`;
  const all = [...namespaces, home];
  const names = Array.from({ length: size }, (_, i) => appName(i));
  let agent: AgentProcess | undefined;
  try {
    for (const ns of all) await patiently(() => createNamespace(c, ns));
    const repoName = `fleet-${suffix}-${size}`;
    const repo = await createBareRepo(env.git.root, repoName);
    const first = await commitFiles(repo, laidOut(fleetFiles(size, 0)), { message: 'the fleet' });
    const port = await freePort();
    const configFile = join(work, `fleet-${size}.yaml`);
    await writeFile(configFile, stringify(config(size, repoName, namespaces, home, port)));

    note(`${size}: agent starting`);
    agent = new AgentProcess(CLI, configFile, join(work, `cache-${size}`), nodeArgs, flags['agent-log']);
    const seen = new StableIndex(agent);
    if (flags['alloc-prof']) await agent.probe('alloc-start');
    const start = Date.now();
    await agent.until(`${size}: first syncs`, () => names.every((d) => seen.has(d, first)), 60 * 60_000);
    const firstSyncMs = Date.now() - start;
    const firstCpu = agent.cpuSeconds();
    note(`${size}: every first sync stable after ${sec(firstSyncMs)}`);
    await peakSoFar(agent, size, 'the first syncs');
    await allocations(agent, size, 'first');
    const afterFirst = await kubeRequests(port);
    const firstVerbs = await kubeRequestsByVerb(port);
    const firstResources = await kubeRequestsByVerb(port, true);
    note(`${size}: requests per deployment in the first syncs: ${perVerb(firstVerbs, size)}`);
    note(`${size}: the same by resource: ${perVerb(firstResources, size)}`);
    await settled(namespaces, size);
    await sleep(SETTLE_MS);
    const idleKiB = agent.rss().now;
    if (flags['heap-snapshot']) await idleHeap(agent, size, flags['heap-snapshot']);

    const beforeRollout = await kubeRequests(port);
    const rolloutVerbs = await kubeRequestsByVerb(port);
    const rolloutResources = await kubeRequestsByVerb(port, true);
    if (flags['alloc-prof']) await agent.probe('alloc-start');
    const rolloutCpuFrom = agent.cpuSeconds();
    const pushed = Date.now();
    const head = await commitFiles(repo, laidOut(fleetFiles(size, 1)), { message: 'every app' });
    const during = rolloutHeap(agent, size);
    await agent.until(`${size}: fleet rollout`, () => names.every((d) => seen.has(d, head)), 60 * 60_000);
    await during();
    const rolloutMs = Date.now() - pushed;
    const cpu = { first: firstCpu, rollout: agent.cpuSeconds() - rolloutCpuFrom };
    note(`${size}: agent CPU: first syncs ${cpu.first.toFixed(1)} s, rollout ${cpu.rollout.toFixed(1)} s`);
    const requestsPerSync = {
      first: afterFirst / size,
      rollout: ((await kubeRequests(port)) - beforeRollout) / size,
    };
    note(`${size}: fleet rollout stable after ${sec(rolloutMs)}`);
    await peakSoFar(agent, size, 'the rollout');
    await allocations(agent, size, 'rollout');
    const verbs = { first: firstVerbs, rollout: since(await kubeRequestsByVerb(port), rolloutVerbs) };
    note(`${size}: requests per deployment in the rollout: ${perVerb(verbs.rollout, size)}`);
    const byResource = since(await kubeRequestsByVerb(port, true), rolloutResources);
    note(`${size}: the same by resource: ${perVerb(byResource, size)}`);
    await settled(namespaces, size);

    const one = async (i: number, round: number, hook: boolean): Promise<number> => {
      const at = Date.now();
      const sha = await commitFiles(repo, laidOut(appFiles(i, round)), { message: `${appName(i)} alone` });
      if (hook) {
        const status = await genericHook(port, SECRET, ['fleet']);
        if (status !== 202) throw new Error(`the generic webhook answered ${status}`);
      }
      await agent?.until(`${size}: ${appName(i)}`, () => seen.has(appName(i), sha), 10 * 60_000);
      return Date.now() - at;
    };
    const pollMs: number[] = [];
    const webhookMs: number[] = [];
    for (let s = 0; s < samples; s++) {
      // Apart from the last poll by a varying amount, so that the samples do not all meet it at the same phase.
      await sleep(3000 + s * 3300);
      pollMs.push(await one((s * 7) % size, 2 + s, false));
      await sleep(2000);
      webhookMs.push(await one((s * 7 + 3) % size, 2 + s, true));
    }
    const peakKiB = Math.max(agent.rss().peak, ...peaksSeen);
    peaksSeen.length = 0;
    note(
      `${size}: one app: poll ${pollMs.map(sec).join(', ')}; webhook ${webhookMs.map(sec).join(', ')}; ` +
        `RSS idle ${mib(idleKiB)}, peak ${mib(peakKiB)}`,
    );
    const set = flags.set ? await setSteps(agent, repo, size, seen) : undefined;
    await agent.stop();
    if (flags['no-drift'])
      return {
        size,
        firstSyncMs,
        rolloutMs,
        pollMs,
        webhookMs,
        idleKiB,
        peakKiB,
        cpu,
        drift: undefined,
        requestsPerSync,
        verbs,
        set,
      };

    // Drift passes, by an agent started again on the same fleet (nothing new to deploy) with drift.interval set.
    const intervalS = Number(flags['drift-interval'] ?? Math.max(20, Math.ceil(size / 2)));
    const driftFile = join(work, `fleet-${size}-drift.yaml`);
    const driftConfig = {
      ...config(size, repoName, namespaces, home, port),
      drift: { interval: `${intervalS}s` },
    };
    await writeFile(driftFile, stringify(driftConfig));
    note(`${size}: agent started again with drift.interval ${intervalS}s`);
    agent = new AgentProcess(CLI, driftFile, join(work, `cache-${size}`), nodeArgs, flags['agent-log']);
    const passes = driftPasses(agent);
    await agent.until(
      `${size}: two drift passes`,
      () => passes.length >= 2,
      3 * intervalS * 1000 + 20 * 60_000,
    );
    for (const p of passes) note(`${size}: drift pass: ${describePass(p)}`);
    const drift = { intervalS, passes: passes.slice(0, 2) };
    return {
      size,
      firstSyncMs,
      rolloutMs,
      pollMs,
      webhookMs,
      idleKiB,
      peakKiB,
      cpu,
      drift,
      requestsPerSync,
      verbs,
      set,
    };
  } finally {
    await agent?.stop();
    for (const ns of all) await patiently(() => deleteNamespace(c, ns)).catch(() => undefined);
    note(`${size}: waiting for the namespaces to go`);
    await patiently(() => namespacesGone(c, all)).catch((error: unknown) => note(String(error)));
  }
}

/**
 * The Kubernetes requests the agent has sent so far: the sum of its mooring_kube_requests_total, watch streams left
 * out (NaN when its metrics cannot be read).
 */
async function kubeRequests(port: number): Promise<number> {
  const byVerb = await kubeRequestsByVerb(port);
  return byVerb ? [...byVerb.values()].reduce((a, b) => a + b, 0) : Number.NaN;
}

/** Requests per deployment by verb (or verb and resource), for the log: `get 9.1, list 2.0, …`; none of 0.0. */
function perVerb(byVerb: Map<string, number> | undefined, size: number): string {
  return [...(byVerb ?? [])]
    .filter(([, n]) => n / size >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([verb, n]) => `${verb} ${(n / size).toFixed(1)}`)
    .join(', ');
}

/** The drift passes the agent sums up in its log, as they end (its own 'data' listener beside AgentProcess's). */
function driftPasses(agent: AgentProcess): DriftPassLine[] {
  const passes: DriftPassLine[] = [];
  let partial = '';
  agent.child.stdout?.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes('"drift pass ended"')) continue;
      try {
        passes.push(JSON.parse(line) as DriftPassLine);
      } catch {}
    }
  });
  return passes;
}

function describePass(p: DriftPassLine): string {
  return (
    `${sec(p.elapsedMs)}, ${p.requests} requests (${p.reads} reads, ${p.dryRuns} dry runs, ${p.writes} writes) ` +
    `for ${p.deployments - p.unchecked} deployments, ${p.objects} objects, ${p.moved} moved, ${p.drifted} drifted`
  );
}

/** With --alloc-prof, the allocations sampled since 'alloc-start', written to the folder. */
async function allocations(agent: AgentProcess, size: number, phase: string): Promise<void> {
  const dir = flags['alloc-prof'];
  if (!dir) return;
  await mkdir(dir, { recursive: true });
  const answer = await agent.probe('alloc-stop', join(dir, `fleet-${size}-${phase}.heapprofile`));
  note(`${size}: allocations of the ${phase}: ${answer.snapshot ?? answer.error ?? 'not written'}`);
}

/** The agent's heap once idle, said in the log, and a snapshot of it in `dir` (taken after the RSS figure). */
/** A heap snapshot --heap-snapshot-rollout seconds into the rollout, if asked; the function waits for it. */
function rolloutHeap(agent: AgentProcess, size: number): () => Promise<void> {
  const dir = flags['heap-snapshot'];
  const seconds = Number(flags['heap-snapshot-rollout']);
  if (!dir || !(seconds > 0)) return async () => undefined;
  const file = join(dir, `fleet-${size}-rollout.heapsnapshot`);
  const taken = new Promise<void>((resolve) => {
    setTimeout(() => {
      agent.probe('snapshot', file).then(
        () => {
          note(`${size}: heap snapshot ${seconds} s into the rollout in ${file}`);
          resolve();
        },
        (error: unknown) => {
          note(`${size}: no heap snapshot in the rollout: ${error}`);
          resolve();
        },
      );
    }, seconds * 1000);
  });
  return () => taken;
}

async function idleHeap(agent: AgentProcess, size: number, dir: string): Promise<void> {
  const { usage, v8 } = await agent.probe('usage');
  const spaces = v8.spaces.map(([name, , physical]) => `${name} ${mib(physical / 1024)}`).join(', ');
  note(
    `${size}: idle heap used ${mib(usage.heapUsed / 1024)} of ${mib(usage.heapTotal / 1024)}, external ` +
      `${mib(usage.external / 1024)} (array buffers ${mib(usage.arrayBuffers / 1024)}), RSS ${mib(usage.rss / 1024)}; ${spaces}`,
  );
  const file = join(dir, `fleet-${size}-idle.heapsnapshot`);
  await agent.probe('snapshot', file);
  note(`${size}: heap snapshot in ${file}`);
}

/**
 * Notes the RSS peak (VmHWM) of the phase that just ended, with the memory probe's highest heap and native figures
 * in it, then resets both: which phase makes the run's peak, and whether it is V8's heap or native memory.
 */
async function peakSoFar(agent: AgentProcess, size: number, phase: string): Promise<void> {
  const peakKiB = agent.rss().peak;
  peaksSeen.push(peakKiB);
  const { peak } = await agent.probe('usage');
  const m = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;
  note(
    `${size}: RSS peak in ${phase} ${mib(peakKiB)} (highest heap used ${m(peak.heapUsed)} of ${m(peak.heapTotal)}, external ${m(peak.external)}, array buffers ${m(peak.arrayBuffers)})`,
  );
  await agent.resetPeaks();
}

/** Waits until the controllers and the kubelet are idle: every Deployment rolled out, as many pods Ready. */
async function settled(namespaces: readonly string[], size: number): Promise<void> {
  for (const [k, ns] of namespaces.entries()) {
    const expected = Math.floor(size / NAMESPACES) + (k < size % NAMESPACES ? 1 : 0);
    await patiently(() => settle(c, ns, expected));
  }
}

/**
 * The benchmark's own reads of the API server, retried for two minutes while it cannot be reached: the test bed is
 * shared, and a test that restarts the API server must not end a run of many minutes.
 */
async function patiently<T>(read: () => Promise<T>): Promise<T> {
  const until = Date.now() + 120_000;
  for (;;) {
    try {
      return await read();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (Date.now() > until || (code !== 'ECONNREFUSED' && code !== 'ECONNRESET')) throw error;
      note(`the API server cannot be reached (${code}); trying again`);
      await sleep(2000);
    }
  }
}

/**
 * With --set: one commit adding SET_STEP application folders, timed until each new deployment is stable at it; then
 * one removing them (the set prunes on removal), timed until each ended its last sync, its objects pruned.
 */
async function setSteps(
  agent: AgentProcess,
  repo: string,
  size: number,
  seen: StableIndex,
): Promise<{ addMs: number; removeMs: number }> {
  const added = Array.from({ length: SET_STEP }, (_, k) => size + k);
  const files: Record<string, string> = {};
  for (const i of added) Object.assign(files, appFiles(i, 0));
  let at = Date.now();
  const sha = await commitFiles(repo, laidOut(files), { message: `${SET_STEP} apps more` });
  await agent.until(
    `${size}: ${SET_STEP} folders added`,
    () => added.every((i) => seen.has(appName(i), sha)),
    30 * 60_000,
  );
  const addMs = Date.now() - at;
  note(`${size}: set: ${SET_STEP} folders added, every one stable after ${sec(addMs)}`);
  at = Date.now();
  await commitFiles(repo, laidOut(Object.fromEntries(Object.keys(files).map((path) => [path, null]))), {
    message: `${SET_STEP} apps fewer`,
  });
  const gone = new Set(added.map(appName));
  await agent.until(
    `${size}: ${SET_STEP} folders removed`,
    () => {
      const ended = new Set(
        agent.syncs
          .filter((s) => s.at >= at && s.outcome === 'stable' && gone.has(s.deployment))
          .map((s) => s.deployment),
      );
      return ended.size === gone.size;
    },
    30 * 60_000,
  );
  const removeMs = Date.now() - at;
  note(`${size}: set: ${SET_STEP} folders removed, every one pruned after ${sec(removeMs)}`);
  return { addMs, removeMs };
}

function config(size: number, repo: string, namespaces: readonly string[], home: string, port: number) {
  return {
    apiVersion: 'mooring.io/v1alpha1',
    kind: 'AgentConfig',
    cluster: {
      name: 'testbed',
      kubeconfig: env.kube.kubeconfig,
      namespace: home,
      ...(qps ? { qps, burst: qps * 2 } : {}),
      ...(qpsMax ? { qpsMax } : {}),
    },
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
    ...(flags.set
      ? {
          deploymentSets: [
            {
              name: 'fleet',
              generator: { gitDirectories: { source: 'fleet', directories: ['apps/*/*'] } },
              template: {
                name: '{{path.basename}}',
                namespace: `fleet-${suffix}-${size}-{{path.1}}`,
                source: 'fleet',
                paths: ['{{path}}'],
                stability: { timeout: '10m' },
              },
              removal: { budget: SET_STEP, prune: true },
              allowedNamespaces: [`fleet-${suffix}-${size}-*`],
            },
          ],
        }
      : {
          deployments: Array.from({ length: size }, (_, i) => ({
            name: appName(i),
            namespace: namespaces[i % NAMESPACES],
            source: 'fleet',
            paths: [`apps/${appName(i)}`],
            stability: { timeout: '10m' },
          })),
        }),
    concurrency,
    ...(concurrencyMax !== undefined ? { concurrencyMax } : {}),
    server: {
      port,
      address: '127.0.0.1',
      webhooks: { generic: { secret: { file: join(work, 'webhook-secret') } } },
    },
  };
}

function print(figures: readonly Figures[]): void {
  if (figures.length === 0) return;
  const cores = cpus();
  say();
  say(
    `machine: ${cores.length} cores (${cores[0]?.model.trim() ?? 'unknown'}), ${mib(totalmem() / 1024)} memory; ` +
      `agent --concurrency ${concurrency}${concurrencyMax !== undefined ? ` (up to ${concurrencyMax}, following the server)` : ' (the default: up to twice it, following the server)'}, request budget ${qps ? `${qps}/s, burst ${qps * 2}` : 'the default (200/s, burst 400, up to 1,000/s following the server)'}${qpsMax ? ` (up to ${qpsMax}/s, following the server)` : ''}, Git poll every ${POLL}, ${NAMESPACES} namespaces, 4 objects per deployment`,
  );
  say(
    'Flux (fluxcd/flux-benchmark, published): first sync of 1,000 in 4 m 16 s on a 16-core runner, ' +
      'kustomize-controller at 2 CPU, --concurrency 20; peak 175 Mi',
  );
  say();
  const cols = [
    'deployments',
    'first sync',
    'fleet rollout',
    'one app, poll',
    'one app, webhook',
    'RSS idle',
    'RSS peak',
  ];
  say(cols.map((h) => h.padStart(18)).join(''));
  for (const f of figures) {
    const row = [
      String(f.size),
      sec(f.firstSyncMs),
      sec(f.rolloutMs),
      `${sec(median(f.pollMs))} (med)`,
      `${sec(median(f.webhookMs))} (med)`,
      mib(f.idleKiB),
      mib(f.peakKiB),
    ];
    say(row.map((x) => x.padStart(18)).join(''));
  }
  say();
  say("the agent's CPU seconds (its process, every thread: the garbage collector's included):");
  for (const f of figures)
    say(
      `  ${f.size} deployments: first syncs ${f.cpu.first.toFixed(1)} s, fleet rollout ${f.cpu.rollout.toFixed(1)} s`,
    );
  say();
  say('drift passes (an agent started again with drift.interval set; nothing changed by hand):');
  for (const f of figures) {
    const [cold, quiet] = f.drift?.passes ?? [];
    say(`  ${f.size} deployments, drift.interval ${f.drift?.intervalS ?? '?'} s:`);
    say(`    first pass after the start (the marks the ledgers saved): ${cold ? describePass(cold) : '-'}`);
    say(`    next pass (its own marks):                             ${quiet ? describePass(quiet) : '-'}`);
  }
  say(
    "  (the watch cache's own lists and watches, one pair per kind and namespace, are not in these counts)",
  );
  say();
  say(
    "Kubernetes API requests per deployment per sync (the agent's mooring_kube_requests_total, watch streams left out):",
  );
  for (const f of figures)
    say(
      `  ${f.size} deployments: first sync ${f.requestsPerSync.first.toFixed(1)} (the agent's start included), ` +
        `fleet rollout ${f.requestsPerSync.rollout.toFixed(1)}`,
    );
  for (const f of figures)
    if (f.set)
      say(
        `  ${f.size} deployments from one deployment set: a commit adding ${SET_STEP} folders, every one stable after ` +
          `${sec(f.set.addMs)}; one removing them, every one pruned after ${sec(f.set.removeMs)}`,
      );
  say();
  const at = figures.find((f) => f.size === 1000);
  if (!at) {
    say('goals (at 1,000 deployments on 2 cores): not judged, 1,000 was not among --sizes');
    return;
  }
  say(`goals at 1,000 deployments (this machine: ${cores.length} cores):`);
  say(goal('first sync of 1,000', sec(at.firstSyncMs), 'at most 60 s', at.firstSyncMs <= 60_000));
  say(goal('fleet rollout of 1,000', sec(at.rolloutMs), 'at most 90 s', at.rolloutMs <= 90_000));
  const hook = median(at.webhookMs);
  say(goal('one-app latency with a webhook (median)', sec(hook), 'at most 3 s', hook <= 3000));
  say(goal('agent RSS idle', mib(at.idleKiB), 'at most 150 MiB', at.idleKiB <= 150 * 1024));
  say(goal('agent RSS peak (VmHWM)', mib(at.peakKiB), 'at most 175 MiB', at.peakKiB <= 175 * 1024));
}

/** Each size's floor, and the agent's figures against it where both were measured. */
function printFloors(figures: readonly Figures[]): void {
  if (floors.size === 0) return;
  say();
  say(
    "the cluster's floor (support/fleet-floor.ts: a raw server-side-apply loop of the same applications, then the " +
      'controllers until every Deployment is available; no Git, render, dry run, ledger or poll):',
  );
  for (const [size, f] of floors) {
    const agent = figures.find((x) => x.size === size);
    const ratio = (ms: number | undefined, floorMs: number) =>
      ms === undefined ? '' : `; the agent ${sec(ms)}, ${(ms / floorMs).toFixed(2)}x`;
    say(
      `  ${size} deployments, loop c=${f.concurrency}: first ${sec(f.firstMs)} (loop ${sec(f.firstLoopMs)})` +
        `${ratio(agent?.firstSyncMs, f.firstMs)}; rollout ${sec(f.rolloutMs)} (loop ${sec(f.rolloutLoopMs)})` +
        ratio(agent?.rolloutMs, f.rolloutMs),
    );
  }
}
