// Benchmark of a deploy, side by side in one run on the test bed's control plane, each contender into a fresh
// namespace and each starting only once the previous one's pods are settled:
//  1. the whole job a user waits for: `mooring deploy` (the built CLI, waiting for stability) against
//     `kubectl apply --server-side -f DIR` + `kubectl wait --for=condition=available deployment --all`, of the same
//     hydrated objects. Goal: mooring at most 0.5x kubectl's time. Then `mooring deploy` again into the same
//     namespace with a tenth of the objects changed (a label on the Service and Deployment of every fifth
//     application): the redeploy a user waits for, with the record its first deploy kept of what it wrote.
//  2. the ceiling: a raw loop of parallel server-side-apply PATCHes (concurrency tuned), against mooring's apply
//     phase (render output to last write, measured in this process on the same Applier the CLI runs), with and
//     without the whole-set dry run. Goal: mooring's throughput at least 0.6 of the loop's (its dry run is one
//     more server-side apply per object). A single run of either moves by a third on two cores (the API server,
//     etcd and the controllers share them with the client), so both run --repeat times, alternating, and the
//     medians are compared. The apply phase is told, as the CLI's inventory tells it, which objects it applied
//     before: none in a first deploy. Then the loop writes the changed set of part 1 whole again into its
//     namespace (it knows nothing of what changed). Goal: part 1's redeploy, the whole job, at least 0.9 of the
//     loop's throughput. And the whole deploy of part 1 against the cluster's floor (the loop, then the controllers
//     until every Deployment is available). Goal: at most 1.2x.
//  3. mooring deploy's peak RSS (VmHWM) for the largest set. Goal: at most 150 MiB.
//  4. then bench/memory.ts: start-up against `node -e 0` (goal: at most 0.3 s more) and the agent idle for ten
//     minutes with three Git and two registry sources (goal: at most 80 MiB).
// Sizes default to 1,000 and 4,000 objects (a quarter each Deployments, Services, ConfigMaps, Secrets; one replica).
// Run: npm run bench:apply [-- --sizes 1000,4000 --concurrency 32 --loop-concurrency 8,16,32,64 --repeat 3
//   --parts wait,ceiling,memory --idle-minutes 10]
// Starts the test bed when none runs (and stops only a bed it started). Needs `npm run build` first.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI_BUDGET, KubeApi } from '../src/kube/api.ts';
import { Applier, type ApplyTarget } from '../src/kube/apply.ts';
import { loadKubeConfig } from '../src/kube/client.ts';
import { Discovery } from '../src/kube/discovery.ts';
import type { ManifestFile } from '../src/render/parse.ts';
import { REPO_ROOT } from '../test/testbed/paths.ts';
import { down, up } from '../test/testbed/testbed.ts';
import { benchCluster, createNamespace, deleteNamespace, namespacesGone, settle } from './support/cluster.ts';
import { hydrate, manifests, writeManifests } from './support/objects.ts';
import { goal, launcherEnv, launcherFlags, median, mib, type Run, sec, timed } from './support/process.ts';
import { ssaLoop } from './support/ssa-loop.ts';

const { values: flags } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,4000' },
    // mooring's --concurrency in both parts: the loop's best candidate, so that both push at the same width.
    concurrency: { type: 'string', default: '32' },
    'loop-concurrency': { type: 'string', default: '8,16,32,64' },
    /** Runs of the apply phase and of the tuned loop, alternating; their medians are compared. */
    repeat: { type: 'string', default: '3' },
    timeout: { type: 'string', default: '30m' },
    /**
     * wait: the waiting ratio and peak RSS; ceiling: the apply phase against the raw loop; memory: then
     * bench/memory.ts (start-up against node -e 0, and the agent idle for --idle-minutes).
     */
    parts: { type: 'string', default: 'wait,ceiling,memory' },
    'idle-minutes': { type: 'string', default: '10' },
    /** The built CLI to run; another build of mooring can be compared this way. */
    cli: { type: 'string', default: join(REPO_ROOT, 'dist/cli/main.js') },
  },
});
const sizes = flags.sizes.split(',').map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n <= 0 || n % 4 !== 0))
  throw new Error('--sizes: positive multiples of 4');
const concurrency = Number(flags.concurrency);
const loopCandidates = flags['loop-concurrency'].split(',').map(Number);
const repeat = Number(flags.repeat);
if (!Number.isInteger(repeat) || repeat < 1) throw new Error('--repeat: a positive whole number');
const CLI = flags.cli;
// The launcher's environment (glibc's arena settings) for every mooring process this benchmark starts.
Object.assign(process.env, launcherEnv(CLI));
if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);

const say = (line = '') => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const { env, started } = await up((line) => note(`testbed: ${line}`));
if (!started)
  note(
    'testbed: a running test bed is used, with what earlier work left in it (objects, etcd history): for figures to compare, stop it first',
  );
const c = benchCluster(env.kube.kubeconfig);
const suffix = Date.now().toString(36);
const created: string[] = [];
const work = await mkdtemp(join(tmpdir(), 'mooring-bench-'));

let runs = 0;
async function freshNamespace(role: string, size: number): Promise<string> {
  const name = `bench-${role}-${size}-${suffix}-${++runs}`;
  await createNamespace(c, name);
  created.push(name);
  return name;
}

function mustSucceed(what: string, run: Run): Run {
  if (run.code !== 0) throw new Error(`${what} exited ${run.code}:\n${run.output.slice(-3000)}`);
  return run;
}

/** kubectl's whole job: apply, then wait for the Deployments (the set has no other workload kinds). */
async function kubectlRun(size: number, files: readonly ManifestFile[]) {
  const ns = await freshNamespace('kubectl', size);
  const dir = join(work, `kubectl-${size}`);
  await mkdir(dir);
  await writeFile(join(dir, 'hydrated.yaml'), hydrate(files, ns).yaml);
  const base = ['--kubeconfig', env.kube.kubeconfig];
  const apply = mustSucceed(
    'kubectl apply',
    await timed(env.tools.kubectl, [...base, 'apply', '--server-side', '-f', dir]),
  );
  const wait = mustSucceed(
    'kubectl wait',
    await timed(env.tools.kubectl, [
      ...base,
      'wait',
      '--for=condition=available',
      'deployment',
      '--all',
      '-n',
      ns,
      `--timeout=${flags.timeout}`,
    ]),
  );
  const settledMs = await settle(c, ns, size / 4);
  return { ns, apply, wait, totalMs: apply.ms + wait.ms, settledMs };
}

async function mooringRun(size: number, source: string, changed?: string) {
  const ns = await freshNamespace('mooring', size);
  const deployOnce = async (from: string) =>
    mustSucceed(
      'mooring deploy',
      await timed(process.execPath, [
        ...launcherFlags(CLI),
        CLI,
        'deploy',
        from,
        '--kubeconfig',
        env.kube.kubeconfig,
        '-n',
        ns,
        '--application',
        'bench',
        '--timeout',
        flags.timeout,
        '--concurrency',
        String(concurrency),
      ]),
    );
  const run = await deployOnce(source);
  const summary = run.output.trim().split('\n').at(-1) ?? '';
  const settledMs = await settle(c, ns, size / 4);
  // The same command again, a tenth of the set changed: the whole job of a redeploy, with the record the first
  // deploy kept of what it wrote.
  const again = changed === undefined ? undefined : await deployOnce(changed);
  if (again) await settle(c, ns, size / 4);
  return { ns, run, summary, settledMs, again };
}

/** The Applier and client the CLI uses, `run` on them, timed; the client closed after. */
async function timedApply(
  targets: readonly ApplyTarget[],
  options: { validate: boolean; applied: boolean },
): Promise<{ ms: number; cpuMs: number }> {
  // The client `mooring deploy` makes: its sockets and its request budget.
  const api = new KubeApi(loadKubeConfig({ kubeconfig: env.kube.kubeconfig }), {
    maxSockets: concurrency * 2,
    ...CLI_BUDGET,
  });
  const start = process.hrtime.bigint();
  const cpuBefore = process.cpuUsage();
  try {
    const applier = new Applier(api, new Discovery(api), {
      fieldManager: 'mooring',
      concurrency,
      validateFirst: options.validate,
      // As a deploy's inventory says: what it applied before is read and dry-run, the rest dry-run first.
      known: () => options.applied,
    });
    const results = await applier.apply(targets);
    if (results.length !== targets.length)
      throw new Error(`apply phase: ${results.length} results for ${targets.length} objects`);
  } finally {
    api.close();
  }
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const cpu = process.cpuUsage(cpuBefore);
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

function targetsOf(rendered: ReturnType<typeof hydrate>): ApplyTarget[] {
  return rendered.objects.map((object, i) => ({ object, plan: rendered.plan[i] as ApplyTarget['plan'] }));
}

/**
 * The source with a label added to the Service and the Deployment of every fifth application: a redeploy that
 * changes a tenth of the objects (no pod template changes, so no rollout).
 */
function tenthChanged(files: readonly ManifestFile[]): ManifestFile[] {
  return files.map((f) => ({
    ...f,
    text: f.text.replace(/metadata: \{name: app-(\d+)\}/g, (whole, i: string) =>
      Number(i) % 5 === 0 ? `metadata: {name: app-${i}, labels: {round: "2"}}` : whole,
    ),
  }));
}

/**
 * mooring's apply phase: render output in, last write out, on the Applier and client the CLI uses; with
 * `redeploy`, then the same set with a tenth changed, into the same namespace.
 */
async function applyPhase(size: number, files: readonly ManifestFile[], validate: boolean, redeploy = false) {
  const ns = await freshNamespace(validate ? 'apply' : 'nodry', size);
  const rendered = hydrate(files, ns);
  const first = await timedApply(targetsOf(rendered), { validate, applied: false });
  await settle(c, ns, size / 4);
  const again = redeploy
    ? await timedApply(targetsOf(hydrate(tenthChanged(files), ns)), { validate, applied: true })
    : undefined;
  return { ns, ...first, again };
}

async function loopRun(size: number, files: readonly ManifestFile[], n: number, redeploy = false) {
  const ns = await freshNamespace(`loop${n}`, size);
  const objects = hydrate(files, ns).objects;
  const ms = await ssaLoop(c, objects, n);
  const settledMs = await settle(c, ns, size / 4);
  // The loop's redeploy writes the whole set again: it knows nothing of what changed.
  const againMs = redeploy ? await ssaLoop(c, hydrate(tenthChanged(files), ns).objects, n) : undefined;
  return { ns, ms, settledMs, againMs };
}

async function cleanUp(names: string[]): Promise<void> {
  for (const name of names) await deleteNamespace(c, name);
  await namespacesGone(c, names);
}

let bestLoop: number | undefined;
const parts = new Set(flags.parts.split(','));
const perSecond = (size: number, ms: number) => `${((size / ms) * 1000).toFixed(0)}/s`;
try {
  for (const size of sizes) {
    const files = manifests(size / 4);
    const source = await writeManifests(join(work, `source-${size}`), files);
    const changed = await writeManifests(join(work, `changed-${size}`), tenthChanged(files));
    const before = created.length;
    const block = [
      '',
      `${size} objects (${size / 4} each Deployments, Services, ConfigMaps, Secrets; 1 replica), fresh namespace each`,
    ];

    let deployMs: number | undefined;
    let redeployMs: number | undefined;
    if (parts.has('wait')) {
      note(`${size}: kubectl apply --server-side + kubectl wait`);
      const k = await kubectlRun(size, files);
      note(`${size}: mooring deploy (waiting)`);
      const m = await mooringRun(size, source, changed);
      redeployMs = m.again?.ms;
      const ratio = m.run.ms / k.totalMs;
      deployMs = m.run.ms;
      block.push(
        `  kubectl apply --server-side ${sec(k.apply.ms)} + kubectl wait ${sec(k.wait.ms)} = ${sec(k.totalMs)}`,
        `  mooring deploy (waits):      ${sec(m.run.ms)}  [${m.summary}]`,
        `  mooring deploy again, a tenth of the objects changed: ${sec(m.again?.ms ?? Number.NaN)}`,
        `  settled after the run:       kubectl +${sec(k.settledMs)}, mooring +${sec(m.settledMs)}`,
        goal('  waiting ratio mooring/kubectl', ratio.toFixed(2), 'at most 0.50', ratio <= 0.5),
        `  client CPU: mooring ${sec(m.run.cpuMs)}, kubectl ${sec(k.apply.cpuMs + k.wait.cpuMs)}`,
        goal(
          '  mooring deploy peak RSS (VmHWM)',
          mib(m.run.peakRssKiB),
          'at most 150 MiB',
          m.run.peakRssKiB > 0 && m.run.peakRssKiB <= 150 * 1024,
        ),
      );
    }

    if (parts.has('ceiling')) {
      // The loop's concurrency is tuned on the first size (one run each) and reused for the larger ones.
      if (bestLoop === undefined) {
        const tuning: { n: number; ms: number }[] = [];
        for (const n of loopCandidates) {
          note(`${size}: raw server-side-apply loop, concurrency ${n} (tuning)`);
          tuning.push({ n, ms: (await loopRun(size, files, n)).ms });
        }
        bestLoop = tuning.reduce((a, b) => (b.ms < a.ms ? b : a)).n;
        block.push(`  raw SSA loop, tuning: ${tuning.map((l) => `c=${l.n} ${sec(l.ms)}`).join(', ')}`);
      }
      const phases: number[] = [];
      const cpus: number[] = [];
      const noDries: number[] = [];
      const loops: number[] = [];
      const floors: number[] = [];
      const redeploys: number[] = [];
      // The whole deploy again in each run, beside the floor it is compared with: one run of either moves by a
      // third on two cores, so the goal compares medians, not one deploy with the floors' median.
      const wholes: number[] = deployMs === undefined ? [] : [deployMs];
      const loopRedeploys: number[] = [];
      for (let i = 1; i <= repeat; i++) {
        note(
          `${size}: run ${i} of ${repeat}: mooring apply phase with and without the dry run and its redeploy, the loop (c=${bestLoop})`,
        );
        const withDry = await applyPhase(size, files, true, true);
        phases.push(withDry.ms);
        cpus.push(withDry.cpuMs);
        redeploys.push(withDry.again?.ms ?? Number.NaN);
        noDries.push((await applyPhase(size, files, false)).ms);
        // Every run leaves its namespaces until the size ends, so what runs later meets a fuller cluster: the whole
        // deploy goes before the loop in even runs and after it in odd ones.
        const whole = async () => {
          if (deployMs !== undefined && i > 1) wholes.push((await mooringRun(size, source)).run.ms);
        };
        if (i % 2 === 0) await whole();
        const loop = await loopRun(size, files, bestLoop, true);
        loops.push(loop.ms);
        floors.push(loop.ms + loop.settledMs);
        loopRedeploys.push(loop.againMs ?? Number.NaN);
        if (i % 2 === 1) await whole();
      }
      const [phase, noDry, loop] = [median(phases), median(noDries), median(loops)];
      const fraction = loop / phase;
      const runs = (values: number[]) => values.map(sec).join(', ');
      block.push(
        `  raw SSA loop (c=${bestLoop}), median of ${repeat}: ${sec(loop)} (${perSecond(size, loop)}); runs ${runs(loops)}`,
        // No client that waits for the set can be faster than the controllers make it available.
        `  the cluster's floor for a waiting client (loop + controllers until all available), median: ${sec(median(floors))}`,
        `  mooring apply phase (in process, render output to last write, --concurrency ${concurrency}), median of ${repeat}:`,
        `    with the whole-set dry run ${sec(phase)} (${perSecond(size, phase)}; runs ${runs(phases)}; client CPU ${sec(median(cpus))})`,
        `    without ${sec(noDry)} (${perSecond(size, noDry)}; runs ${runs(noDries)}): the dry run costs ${sec(phase - noDry)}`,
        goal('  apply phase / loop throughput', fraction.toFixed(2), 'at least 0.60', fraction >= 0.6),
        `  redeploy, a tenth of the objects changed, median of ${repeat}: the loop writing the whole set ${sec(median(loopRedeploys))} (runs ${runs(loopRedeploys)})`,
        `    mooring's apply phase without a record (each object read and dry-run) ${sec(median(redeploys))} (runs ${runs(redeploys)}): ${(median(loopRedeploys) / median(redeploys)).toFixed(2)} of the loop`,
      );
      if (redeployMs !== undefined) {
        // The whole job against the loop alone: the process, its render and its wait included.
        const fraction = median(loopRedeploys) / redeployMs;
        block.push(
          goal(
            '  redeploy: loop / mooring deploy (whole job)',
            fraction.toFixed(2),
            'at least 0.90',
            fraction >= 0.9,
          ),
        );
      }
      if (deployMs !== undefined) {
        const whole = median(wholes) / median(floors);
        block.push(
          `  mooring deploy (waits), median of ${wholes.length}: ${sec(median(wholes))} (runs ${runs(wholes)}); the floor's runs ${runs(floors)}`,
        );
        block.push(
          goal(
            "  mooring deploy / the cluster's floor",
            `${whole.toFixed(2)}x`,
            'at most 1.20x',
            whole <= 1.2,
          ),
        );
      }
    }
    say(block.join('\n'));
    note(`${size}: deleting this size's namespaces`);
    await cleanUp(created.slice(before));
  }
  if (parts.has('memory')) {
    // The memory figures of the same run, on the same bed: start-up, and the agent idle.
    note('memory: start-up and the idle agent (bench/memory.ts)');
    const memory = spawn(
      process.execPath,
      [
        join(REPO_ROOT, 'bench/memory.ts'),
        '--parts',
        'startup,agent',
        '--idle-minutes',
        flags['idle-minutes'],
      ],
      { stdio: 'inherit' },
    );
    const [code] = (await once(memory, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`bench/memory.ts exited ${code}`);
  }
} finally {
  for (const name of created) await deleteNamespace(c, name).catch(() => undefined);
  c.agent.destroy();
  await rm(work, { recursive: true, force: true });
  if (started) await down();
}
