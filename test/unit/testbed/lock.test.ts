// The lock on a test bed's folder, taken by real processes: takers in one process and in two processes run their
// critical sections one after the other, the lock of a process that died (or of a recycled pid) is taken over,
// and a caller that waits too long is told which pid holds it.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireLock, LOCK_FILE, withLock } from '../../testbed/lock.ts';

const LOCK_MODULE = pathToFileURL(join(import.meta.dirname, '..', '..', 'testbed', 'lock.ts')).href;

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mooring-lock-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs an ES module in a new Node process and answers its exit code, output and pid. */
function node(source: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', source],
      { timeout: 30_000 },
      (error, stdout, stderr) => resolveRun({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Pauses for a few turns of the event loop and a few milliseconds, so that a second taker could come in. */
const pause = () => new Promise((r) => setTimeout(r, 30));

/** A list of sections, each entered and left: `[a+, a-, b+, b-]` when they ran one after the other. */
function isSerial(events: string[]): boolean {
  for (let i = 0; i < events.length; i += 2) {
    const name = events[i]?.slice(0, -1);
    if (!events[i]?.endsWith('+') || events[i + 1] !== `${name}-`) return false;
  }
  return true;
}

describe('test bed lock', () => {
  it('runs the sections of takers in one process one after the other', async () => {
    const events: string[] = [];
    const section = (name: string) => async () => {
      events.push(`${name}+`);
      for (let i = 0; i < 3; i++) await pause();
      events.push(`${name}-`);
      return name;
    };
    const results = await Promise.all(
      ['a', 'b', 'c'].map((name) => withLock(dir, section(name), { intervalMs: 5 })),
    );
    expect(results).toEqual(['a', 'b', 'c']);
    expect(events).toHaveLength(6);
    expect(isSerial(events), events.join(' ')).toBe(true);
  });

  it('runs the sections of takers in two processes one after the other', async () => {
    const journal = join(dir, 'journal');
    await writeFile(journal, '');
    // Each process starts its taker once both are loaded, so that the two ask for the lock at about one time.
    const taker = (name: string) => `
      import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
      import { withLock } from ${JSON.stringify(LOCK_MODULE)};
      writeFileSync(${JSON.stringify(join(dir, 'loaded-'))} + '${name}', '');
      while (!['a', 'b'].every((n) => existsSync(${JSON.stringify(join(dir, 'loaded-'))} + n))) {
        await new Promise((r) => setTimeout(r, 5));
      }
      await withLock(${JSON.stringify(dir)}, async () => {
        appendFileSync(${JSON.stringify(journal)}, '${name}+\\n');
        await new Promise((r) => setTimeout(r, 400));
        appendFileSync(${JSON.stringify(journal)}, '${name}-\\n');
      }, { intervalMs: 10 });
    `;
    const runs = await Promise.all([node(taker('a')), node(taker('b'))]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const events = (await readFile(journal, 'utf8')).trim().split('\n');
    expect(events).toHaveLength(4);
    expect(isSerial(events), events.join(' ')).toBe(true);
  });

  it('takes over the lock of a process that died holding it', async () => {
    const died = await node(`
      import { acquireLock } from ${JSON.stringify(LOCK_MODULE)};
      await acquireLock(${JSON.stringify(dir)});
      process.stdout.write(String(process.pid));
      process.exit(0);
    `);
    expect(died.code, died.stderr).toBe(0);
    const left = JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8')) as { pid: number };
    expect(left.pid).toBe(Number(died.stdout));

    // Without the take-over this gives up at once, naming the dead pid.
    const ran = await withLock(dir, async () => 'ran', { timeoutMs: 0 });
    expect(ran).toBe('ran');
  });

  it('takes over a lock whose pid now runs another process', async () => {
    await writeFile(join(dir, LOCK_FILE), JSON.stringify({ pid: process.pid, start: '1', nonce: 'old' }));
    expect(await withLock(dir, async () => 'ran', { timeoutMs: 0 })).toBe('ran');
  });

  it('gives up after its time, naming the pid that holds the lock, and leaves that lock alone', async () => {
    const release = await acquireLock(dir);
    const held = await readFile(join(dir, LOCK_FILE), 'utf8');
    const lines: string[] = [];
    await expect(
      withLock(dir, async () => 'ran', { timeoutMs: 50, intervalMs: 10, log: (l) => lines.push(l) }),
    ).rejects.toThrow(new RegExp(`locked by pid ${process.pid} \\(.*node.*\\); gave up after 0s`));
    expect(lines).toEqual([expect.stringContaining(`waiting for pid ${process.pid}`)]);
    expect(await readFile(join(dir, LOCK_FILE), 'utf8')).toBe(held);
    await release();
    expect(await withLock(dir, async () => 'ran', { timeoutMs: 0 })).toBe('ran');
  });
});
