// The test bed's daemons: started detached (they outlive `testbed up`), logged to files, recorded by pid with
// their command line so that `down` stops exactly what `up` started and never a recycled pid.
import { spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DaemonRecord {
  name: string;
  pid: number;
  command: string;
  args: string[];
  log: string;
}

export interface StartOptions {
  name: string;
  command: string;
  args: string[];
  logDir: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export function startDaemon(options: StartOptions): DaemonRecord {
  const log = join(options.logDir, `${options.name}.log`);
  const fd = openSync(log, 'a');
  const child = spawn(options.command, options.args, {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: options.env ?? process.env,
    cwd: options.cwd,
  });
  if (child.pid === undefined) throw new Error(`${options.name}: could not start ${options.command}`);
  child.unref();
  return { name: options.name, pid: child.pid, command: options.command, args: options.args, log };
}

/** True when `pid` still runs the program that was recorded (a reused pid does not count). */
export function isRunning(record: DaemonRecord): boolean {
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${record.pid}/cmdline`, 'utf8');
  } catch {
    return false;
  }
  const argv = cmdline.split('\0').filter(Boolean);
  if (argv.length === 0) return false; // a zombie
  try {
    const stat = readFileSync(`/proc/${record.pid}/stat`, 'utf8');
    if (/\) Z /.test(stat)) return false;
  } catch {
    return false;
  }
  const last = record.args[record.args.length - 1];
  // sshd rewrites its command line into one string (`sshd: /usr/sbin/sshd -D -f CONFIG [listener] …`).
  return last === undefined || argv.includes(last) || argv.some((arg) => arg.includes(` ${last} `));
}

/** Why a daemon is not running, with the tail of its log, or undefined while it runs. */
export function deathNotice(record: DaemonRecord): string | undefined {
  if (isRunning(record)) return undefined;
  let tail = '';
  try {
    tail = readFileSync(record.log, 'utf8').split('\n').slice(-15).join('\n');
  } catch {}
  return `${record.name} (pid ${record.pid}) exited; last lines of ${record.log}:\n${tail}`;
}

/** SIGTERM to the daemon's process group, then SIGKILL after the grace period. */
export async function stopDaemon(record: DaemonRecord, graceMs = 10_000): Promise<void> {
  if (!isRunning(record)) return;
  signal(record.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isRunning(record) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (isRunning(record)) {
    signal(record.pid, 'SIGKILL');
    while (isRunning(record)) await new Promise((r) => setTimeout(r, 50));
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(-pid, name); // the group: a CGI child of the git server goes too
  } catch {
    try {
      process.kill(pid, name);
    } catch {}
  }
}
