// Benchmark of a deploy, side by side in one run on the test bed's control plane, each contender into a fresh
// namespace and each starting only once the previous one's pods are settled:
//  1. the whole job a user waits for: `mooring deploy` (the built CLI, waiting for stability) against
//     `kubectl apply --server-side -f DIR` + `kubectl wait --for=condition=available deployment --all`, of the same
//     hydrated objects. Goal: mooring at most 0.5x kubectl's time.
//  2. the ceiling: a raw loop of parallel server-side-apply PATCHes (concurrency tuned), against mooring's apply
//     phase (render output to last write, measured in this process on the same Applier the CLI runs), with and
//     without the whole-set dry run. Goal: mooring's throughput at least 0.8 of the loop's. A single run of
//     either moves by a third on two cores (the API server, etcd and the controllers share them with the client),
//     so both run --repeat times, alternating, and the medians are compared.
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
import { KubeApi } from '../src/kube/api.ts';
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

async function mooringRun(size: number, source: string) {
  const ns = await freshNamespace('mooring', size);
  const run = mustSucceed(
    'mooring deploy',
    await timed(process.execPath, [
      ...launcherFlags(CLI),
      CLI,
      'deploy',
      source,
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
  const summary = run.output.trim().split('\n').at(-1) ?? '';
  const settledMs = await settle(c, ns, size / 4);
  return { ns, run, summary, settledMs };
}

/** mooring's apply phase: render output in, last write out, on the Applier and client the CLI uses. */
async function applyPhase(size: number, files: readonly ManifestFile[], validate: boolean) {
  const ns = await freshNamespace(validate ? 'apply' : 'nodry', size);
  const rendered = hydrate(files, ns);
  const targets: ApplyTarget[] = rendered.objects.map((object, i) => ({
    object,
    plan: rendered.plan[i] as ApplyTarget['plan'],
  }));
  const api = new KubeApi(loadKubeConfig({ kubeconfig: env.kube.kubeconfig }), {
    maxSockets: concurrency * 2,
  });
  const start = process.hrtime.bigint();
  const cpuBefore = process.cpuUsage();
  try {
    const applier = new Applier(api, new Discovery(api), {
      fieldManager: 'mooring',
      concurrency,
      validateFirst: validate,
    });
    const results = await applier.apply(targets);
    if (results.length !== size)
      throw new Error(`apply phase: ${results.length} results for ${size} objects`);
  } finally {
    api.close();
  }
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const cpu = process.cpuUsage(cpuBefore);
  await settle(c, ns, size / 4);
  return { ns, ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function loopRun(size: number, files: readonly ManifestFile[], n: number) {
  const ns = await freshNamespace(`loop${n}`, size);
  const ms = await ssaLoop(c, hydrate(files, ns).objects, n);
  const settledMs = await settle(c, ns, size / 4);
  return { ns, ms, settledMs };
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
    const before = created.length;
    const block = [
      '',
      `${size} objects (${size / 4} each Deployments, Services, ConfigMaps, Secrets; 1 replica), fresh namespace each`,
    ];

    if (parts.has('wait')) {
      note(`${size}: kubectl apply --server-side + kubectl wait`);
      const k = await kubectlRun(size, files);
      note(`${size}: mooring deploy (waiting)`);
      const m = await mooringRun(size, source);
      const ratio = m.run.ms / k.totalMs;
      block.push(
        `  kubectl apply --server-side ${sec(k.apply.ms)} + kubectl wait ${sec(k.wait.ms)} = ${sec(k.totalMs)}`,
        `  mooring deploy (waits):      ${sec(m.run.ms)}  [${m.summary}]`,
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
      for (let i = 1; i <= repeat; i++) {
        note(
          `${size}: run ${i} of ${repeat}: mooring apply phase with and without the dry run, the loop (c=${bestLoop})`,
        );
        const withDry = await applyPhase(size, files, true);
        phases.push(withDry.ms);
        cpus.push(withDry.cpuMs);
        noDries.push((await applyPhase(size, files, false)).ms);
        const loop = await loopRun(size, files, bestLoop);
        loops.push(loop.ms);
        floors.push(loop.ms + loop.settledMs);
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
        goal('  apply phase / loop throughput', fraction.toFixed(2), 'at least 0.80', fraction >= 0.8),
      );
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
