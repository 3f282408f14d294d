// The agent as a child process under measurement: `mooring run` with its launcher's V8 flags plus the memory
// probe (memory-probe.mjs), its JSON log read line by line for finished syncs, and its RSS read from /proc.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/testbed/paths.ts';
import { launcherFlags } from './process.ts';

export interface Usage {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

export interface ProbeAnswer {
  usage: Usage;
  /** Highest heap, external and array-buffer figures since the last reset (sampled every 100 ms). */
  peak: Omit<Usage, 'rss'>;
  /** V8's heap statistics and, per space, [name, size, physical size] in bytes. */
  v8: { heap: Record<string, number>; spaces: [string, number, number][] };
  /** The file written (a heap snapshot, an allocation profile), if any. */
  snapshot?: string;
  /** Why the probe could not do what it was asked. */
  error?: string;
}

export interface Sync {
  /** The cluster of the target, for the agent's other clusters (its own cluster's lines name none). */
  cluster?: string | undefined;
  deployment: string;
  revision: string;
  outcome: string;
  at: number;
}

export class AgentProcess {
  readonly child: ChildProcess;
  /** Every sync that ended, in order. */
  readonly syncs: Sync[] = [];
  #tail = '';
  #partial = '';
  #next = 0;
  #waiting = new Map<number, (answer: ProbeAnswer) => void>();

  constructor(
    cli: string,
    configFile: string,
    cacheDir: string,
    nodeArgs: readonly string[] = [],
    /** A file that receives everything the agent logs (appended), to read its timeline afterwards. */
    logFile?: string,
  ) {
    const probe = join(REPO_ROOT, 'bench/support/memory-probe.mjs');
    const args = [
      ...launcherFlags(cli),
      ...nodeArgs,
      '--expose-gc',
      '--import',
      probe,
      cli,
      'run',
      '--config',
      configFile,
    ];
    this.child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: { ...process.env, MOORING_CACHE_DIR: cacheDir },
    });
    this.child.stdout?.on('data', (chunk: Buffer) => this.#read(chunk.toString()));
    if (logFile) this.child.stdout?.pipe(createWriteStream(logFile, { flags: 'a' }));
    this.child.stderr?.on('data', (chunk: Buffer) => this.#keep(chunk.toString()));
    this.child.on('message', (m: { id: number } & ProbeAnswer) => {
      this.#waiting.get(m.id)?.(m);
      this.#waiting.delete(m.id);
    });
  }

  /** The last lines the agent wrote, for an error message. */
  get tail(): string {
    return this.#tail;
  }

  /** Resolves once `done()` holds, checking every 250 ms; throws when the agent exits or `ms` pass. */
  async until(what: string, done: () => boolean, ms: number): Promise<void> {
    const start = Date.now();
    while (!done()) {
      const { exitCode, signalCode } = this.child;
      if (exitCode !== null || signalCode !== null) {
        throw new Error(`the agent exited (${exitCode ?? signalCode}):\n${this.#tail}`);
      }
      if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms / 1000} s:\n${this.#tail}`);
      await sleep(250);
    }
  }

  /** Whether `deployment` ended a sync of the commit `sha` stable. */
  stableAt(deployment: string, sha: string): boolean {
    const revision = sha.slice(0, 12);
    return this.syncs.some(
      (s) => s.deployment === deployment && s.revision === revision && s.outcome === 'stable',
    );
  }

  /** The agent's RSS now and its high-water mark (VmHWM), KiB, from /proc. */
  rss(): { now: number; peak: number } {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return { now: kib('VmRSS'), peak: kib('VmHWM') };
  }

  /** The CPU seconds the agent has used (user and system, from /proc: every thread, the collector's included). */
  cpuSeconds(): number {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in clock ticks.
    const stat = readFileSync(`/proc/${this.child.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }

  /** Clears the high-water mark (VmHWM) and the probe's peaks, so that the next peak is the next phase's. */
  async resetPeaks(): Promise<void> {
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0).
    writeFileSync(`/proc/${this.child.pid}/clear_refs`, '5');
    await this.probe('reset');
  }

  probe(
    probe: 'usage' | 'gc' | 'reset' | 'snapshot' | 'alloc-start' | 'alloc-stop',
    file?: string,
  ): Promise<ProbeAnswer> {
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the memory probe did not answer')), 60_000);
      this.#waiting.set(id, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      this.child.send({ probe, id, file });
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    // Long enough for a CPU profile (--cpu-prof) to be written on the way out.
    await Promise.race([exited, sleep(30_000)]);
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  #read(text: string): void {
    this.#keep(text);
    const lines = (this.#partial + text).split('\n');
    this.#partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes('"outcome"')) continue;
      try {
        const entry = JSON.parse(line) as {
          cluster?: string;
          deployment?: string;
          revision?: string;
          outcome?: string;
        };
        if (entry.deployment && entry.revision && entry.outcome) {
          this.syncs.push({
            cluster: entry.cluster,
            deployment: entry.deployment,
            revision: entry.revision,
            outcome: entry.outcome,
            at: Date.now(),
          });
        }
      } catch {}
    }
  }

  #keep(text: string): void {
    this.#tail = (this.#tail + text).slice(-20_000);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
