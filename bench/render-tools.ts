// bench:render's real-sized inputs: `mooring render --offline` of a generated chart of 1 MB and of 5 MB of output and
// of a 60-object Kustomize install, each side by side with the tool alone (`helm template`, `kubectl kustomize`) in
// the same run, alternating, as a user runs them (the built CLI with its launcher's flags). Prints the medians and
// the ratios of wall time and peak RSS; the goals: at most 1.5x the tool's time and 2x its memory. A third command in
// each alternation, the floor (support/tool-floor.mjs: Node started with the same flags, the tool spawned, its output
// copied to standard output), says how much of the ratio is Node's start and the copy rather than mooring's work; a
// fourth, the reading floor (support/tool-read-floor.ts: the floor, and the output read into values by mooring's YAML
// reader before it is copied), how much is left once what no render can skip is done.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { locateTools } from '../test/testbed/tools.ts';
import { writeChart, writeKustomization } from './support/chart-inputs.ts';
import { goal, launcherEnv, launcherFlags, median, type Run, timed } from './support/process.ts';

const TIME_GOAL = 1.5;
const MEMORY_GOAL = 2;
const FLOOR = fileURLToPath(new URL('./support/tool-floor.mjs', import.meta.url));
const READ_FLOOR = fileURLToPath(new URL('./support/tool-read-floor.ts', import.meta.url));

/** The reading floor as one plain module in `dir`, as the CLI's own bundle is made (no TypeScript to strip). */
async function bundleReadFloor(dir: string): Promise<string> {
  const { build } = await import('rolldown');
  const out = join(dir, 'read-floor');
  await build({
    input: READ_FLOOR,
    platform: 'node',
    logLevel: 'silent',
    output: { dir: out, format: 'esm', entryFileNames: 'tool-read-floor.mjs' },
  });
  return join(out, 'tool-read-floor.mjs');
}

interface Input {
  name: string;
  dir: string;
  reference: { label: string; command: string; args: string[] };
}

function mustSucceed(what: string, run: Run): Run {
  if (run.code !== 0) throw new Error(`${what} exited ${run.code}:\n${run.output.slice(-3000)}`);
  return run;
}

/** Runs the tool part: `runs` alternations per input, the CLI at `cli` (dist/cli/main.js). */
export async function benchTools(cli: string, runs: number, say: (line?: string) => void): Promise<void> {
  const tools = await locateTools();
  const work = await mkdtemp(join(tmpdir(), 'mooring-bench-render-'));
  // mooring finds the tools as its users' do.
  const env = { ...launcherEnv(cli), MOORING_HELM: tools.helm, MOORING_KUBECTL: tools.kubectl };
  Object.assign(process.env, env);
  try {
    const readFloor = await bundleReadFloor(work);
    const helm = (dir: string) => ({
      label: 'helm template',
      command: tools.helm,
      args: ['template', 'bench', dir, '-n', 'bench'],
    });
    const inputs: Input[] = [];
    for (const [name, bytes] of [
      ['chart, 1 MB of output', 1_000_000],
      ['chart, 5 MB of output', 5_000_000],
    ] as const) {
      const dir = await writeChart(join(work, `chart-${bytes}`), bytes);
      inputs.push({ name, dir, reference: helm(dir) });
    }
    const kustomization = await writeKustomization(join(work, 'kustomize-60'), 60);
    inputs.push({
      name: 'Kustomize install, 60 objects',
      dir: kustomization,
      reference: { label: 'kubectl kustomize', command: tools.kubectl, args: ['kustomize', kustomization] },
    });
    for (const input of inputs) {
      const mooring = [...launcherFlags(cli), cli, 'render', '--offline', input.dir, '-n', 'bench'];
      const ref: Run[] = [];
      const ours: Run[] = [];
      const floor: Run[] = [];
      const reading: Run[] = [];
      const floorArgs = [...launcherFlags(cli), FLOOR, input.reference.command, ...input.reference.args];
      const readingArgs = [
        ...launcherFlags(cli),
        readFloor,
        input.reference.command,
        ...input.reference.args,
      ];
      let bytes = 0;
      // One warm-up each (the page cache, the tools' own caches), then alternating.
      mustSucceed(input.reference.label, await timed(input.reference.command, input.reference.args, 2000));
      const first = await timed(process.execPath, mooring, 2000);
      if (first.code !== 0) {
        // Said and passed over: another build of mooring (--cli) may refuse what this one renders.
        say(`${input.name}: mooring render exited ${first.code}: ${first.output.trim().split('\n')[0]}`);
        continue;
      }
      for (let i = 0; i < runs; i++) {
        const r = mustSucceed(
          input.reference.label,
          await timed(input.reference.command, input.reference.args, 2000),
        );
        ref.push(r);
        bytes = r.outputBytes;
        ours.push(mustSucceed('mooring render', await timed(process.execPath, mooring, 2000)));
        floor.push(mustSucceed('the floor', await timed(process.execPath, floorArgs, 2000)));
        reading.push(mustSucceed('the reading floor', await timed(process.execPath, readingArgs, 2000)));
      }
      const ms = (list: Run[]) => median(list.map((r) => r.ms));
      const rss = (list: Run[]) => median(list.map((r) => r.peakRssKiB));
      const cpu = (list: Run[]) => median(list.map((r) => r.cpuWithChildrenMs));
      const timeRatio = ms(ours) / ms(ref);
      const memoryRatio = rss(ours) / rss(ref);
      say(`${input.name} (${(bytes / 1e6).toFixed(2)} MB; medians of ${runs})`);
      say(
        `  ${input.reference.label.padEnd(20)} ${(ms(ref) / 1000).toFixed(2)} s  ${(rss(ref) / 1024).toFixed(0)} MiB  CPU ${(cpu(ref) / 1000).toFixed(2)} s`,
      );
      say(
        `  ${'mooring render'.padEnd(20)} ${(ms(ours) / 1000).toFixed(2)} s  ${(rss(ours) / 1024).toFixed(0)} MiB  CPU ${(cpu(ours) / 1000).toFixed(2)} s (with the tool's)`,
      );
      say(
        `  ${'floor'.padEnd(20)} ${(ms(floor) / 1000).toFixed(2)} s  ${(rss(floor) / 1024).toFixed(0)} MiB  (Node started, the tool spawned, its output copied)`,
      );
      say(
        `  ${'reading floor'.padEnd(20)} ${(ms(reading) / 1000).toFixed(2)} s  ${(rss(reading) / 1024).toFixed(0)} MiB  (the floor, and the output read into values by mooring's YAML reader)`,
      );
      say(`  ${goal('time ratio', timeRatio.toFixed(2), `<= ${TIME_GOAL}`, timeRatio <= TIME_GOAL)}`);
      say(
        `  the floors' ratios to the tool ${(ms(floor) / ms(ref)).toFixed(2)} and ${(ms(reading) / ms(ref)).toFixed(2)}; mooring's work beyond the floor ${((ms(ours) - ms(floor)) / 1000).toFixed(2)} s (${TIME_GOAL}x leaves ${Math.max(0, (TIME_GOAL * ms(ref) - ms(floor)) / 1000).toFixed(2)} s)`,
      );
      // On a loaded machine wall time measures the load: CPU time (the tool's own within mooring's) says more.
      say(`  CPU ratio ${(cpu(ours) / cpu(ref)).toFixed(2)}`);
      say(
        `  ${goal('peak RSS ratio', memoryRatio.toFixed(2), `<= ${MEMORY_GOAL}`, memoryRatio <= MEMORY_GOAL)}`,
      );
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
