// The lock on a test bed's state folder: one process at a time starts, grows or stops the test bed that lives
// there, so two `up`s never start two control planes and an `up` never stops what another is starting.
// The lock is a file created with link(2), which fails when the name exists (as O_EXCL does) and publishes the
// holder's record whole. The record names the holder by pid and the start time of that pid (/proc/PID/stat), so
// the lock of a process that died, or whose pid now runs something else, is taken over.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const LOCK_FILE = 'lock';

export interface LockOptions {
  /** How long to wait for another holder; 30 minutes by default (its `up` may be building a control plane). */
  timeoutMs?: number;
  /** How often to look again while another process holds the lock. */
  intervalMs?: number;
  /** Told once whom the caller waits for. */
  log?: (line: string) => void;
}

interface Holder {
  pid: number;
  /** The pid's start time in clock ticks since boot, which tells a recycled pid from the holder. */
  start: string | undefined;
  /** Tells this holder from another lock taken by the same process. */
  nonce: string;
}

/** Runs `fn` holding the lock of `dir`, waiting for another holder first. */
export async function withLock<T>(dir: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const release = await acquireLock(dir, options);
  try {
    return await fn();
  } finally {
    await release();
  }
}

/** Takes the lock of `dir` and returns the function that gives it back. */
export async function acquireLock(dir: string, options: LockOptions = {}): Promise<() => Promise<void>> {
  const timeoutMs = options.timeoutMs ?? 30 * 60_000;
  const intervalMs = options.intervalMs ?? 250;
  await mkdir(dir, { recursive: true });
  const path = join(dir, LOCK_FILE);
  const mine = JSON.stringify({
    pid: process.pid,
    start: startTime(process.pid),
    nonce: randomBytes(8).toString('hex'),
  });
  const deadline = Date.now() + timeoutMs;
  let told = false;
  for (;;) {
    if (await create(path, mine)) {
      return async () => {
        // Only our own record is removed: a lock taken over from us is the new holder's.
        if ((await readText(path)) === mine) await unlink(path).catch(() => undefined);
      };
    }
    const text = await readText(path);
    if (text === undefined) continue; // given back just now
    const holder = parseHolder(text);
    if (!holder || !isAlive(holder)) {
      await takeOver(path, text);
      continue;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `the test bed in ${dir} is locked by pid ${holder.pid} (${commandLine(holder.pid)}); gave up after ` +
          `${Math.round(timeoutMs / 1000)}s. Wait for it to finish, or stop it; the lock is ${path}`,
      );
    }
    if (!told) {
      options.log?.(`waiting for pid ${holder.pid} (${commandLine(holder.pid)}), which holds ${path}`);
      told = true;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Creates `path` holding `text`, or answers false when it exists. */
async function create(path: string, text: string): Promise<boolean> {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
  await writeFile(tmp, text, { mode: 0o600 });
  try {
    await link(tmp, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}

/**
 * Removes a dead holder's lock. Waiters that all saw it dead take turns under a second lock, and each removes
 * the lock only if it still holds the record it saw: a waiter that comes second never removes the lock the
 * first one has taken since.
 */
async function takeOver(path: string, stale: string): Promise<void> {
  const guard = `${path}.takeover`;
  const me = JSON.stringify({ pid: process.pid, start: startTime(process.pid), nonce: 'takeover' });
  if (!(await create(guard, me))) {
    // Held for a few system calls only; one whose holder died there is removed, and the caller tries again.
    const text = await readText(guard);
    const holder = text === undefined ? undefined : parseHolder(text);
    if (text !== undefined && (!holder || !isAlive(holder))) await unlink(guard).catch(() => undefined);
    else await new Promise((r) => setTimeout(r, 10));
    return;
  }
  try {
    if ((await readText(path)) === stale) await unlink(path).catch(() => undefined);
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function parseHolder(text: string): Holder | undefined {
  try {
    const value = JSON.parse(text) as Partial<Holder>;
    if (typeof value.pid !== 'number' || !Number.isInteger(value.pid) || value.pid <= 0) return undefined;
    return {
      pid: value.pid,
      start: typeof value.start === 'string' ? value.start : undefined,
      nonce: String(value.nonce),
    };
  } catch {
    return undefined; // not a record this module wrote: nobody holds it
  }
}

/** True while the holder's pid runs and is the same process (same start time), not a zombie. */
function isAlive(holder: Holder): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${holder.pid}/stat`, 'utf8');
  } catch {
    try {
      process.kill(holder.pid, 0); // no /proc: the pid alone
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return false;
  return holder.start === undefined || fields[19] === holder.start;
}

/** Field 22 of /proc/PID/stat (fields after the command name start at field 3). */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function commandLine(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return argv.join(' ').slice(0, 200) || 'unknown command';
  } catch {
    return 'unknown command';
  }
}
