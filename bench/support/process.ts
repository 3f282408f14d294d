// Running a program and measuring it: wall time, peak RSS (VmHWM from /proc, read just before the process is
// reaped) and CPU time.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { launcher } from '../../test/testbed/launcher.ts';

export interface Run {
  ms: number;
  code: number;
  /** VmHWM of the process, KiB: the kernel's own high-water mark, so a short peak between samples counts. */
  peakRssKiB: number;
  /** User + system CPU time of the process, from /proc/PID/stat (clock ticks of 10 ms). */
  cpuMs: number;
  /** cpuMs with that of the children it waited for (a tool it ran), as far as the last sample saw. */
  cpuWithChildrenMs: number;
  output: string;
  /** Bytes the process wrote to its standard output. */
  outputBytes: number;
}

function sample(pid: number | undefined, into: { peak: number; ticks: number; childTicks: number }): void {
  if (!pid) return;
  try {
    const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    if (hwm) into.peak = Math.max(into.peak, Number(hwm));
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    into.ticks = Number(fields[11]) + Number(fields[12]);
    into.childTicks = Number(fields[13]) + Number(fields[14]);
  } catch {}
}

/** Runs `command`, keeping the last `keep` characters of its output. */
export function timed(command: string, args: readonly string[], keep = 20_000): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let outputBytes = 0;
    const seen = { peak: 0, ticks: 0, childTicks: 0 };
    const append = (c: Buffer) => {
      output += c.toString();
      if (output.length > 2 * keep) output = output.slice(-keep);
    };
    child.stdout.on('data', (c: Buffer) => {
      outputBytes += c.length;
      append(c);
    });
    child.stderr.on('data', append);
    const timer = setInterval(() => sample(child.pid, seen), 50);
    // VmHWM only grows, so a sample every 50 ms misses at most the growth of the last 50 ms before exit.
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(timer);
      resolveRun({
        ms: Number(process.hrtime.bigint() - start) / 1e6,
        code: code ?? 1,
        peakRssKiB: seen.peak,
        cpuMs: seen.ticks * 10,
        cpuWithChildrenMs: (seen.ticks + seen.childTicks) * 10,
        output: output.slice(-keep),
        outputBytes,
      });
    });
  });
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export const mib = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;
export const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** `figure (goal: …) met` / `not met`: every goal line reads the same. */
export function goal(label: string, value: string, goalText: string, met: boolean): string {
  return `${label.padEnd(44)} ${value.padEnd(14)} goal ${goalText.padEnd(18)} ${met ? 'met' : 'NOT MET'}`;
}

/**
 * The node flags the CLI's launcher gives it (`#!/usr/bin/env -S node FLAGS` in dist/cli/main.js), so that a
 * benchmark runs mooring as its users' shell does, with the same V8 settings.
 */
export function launcherFlags(cli: string): string[] {
  return launcher(cli).flags;
}

/** The environment the launcher sets (`env -S NAME=value ... node`): applied to the benchmark's own children. */
export function launcherEnv(cli: string): Record<string, string> {
  return launcher(cli).env;
}
