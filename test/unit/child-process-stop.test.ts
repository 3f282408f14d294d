// A tool run is given up when the sync that asked for it is stopped (src/child-process.ts `signal`): the child and
// what it started are killed at once, the run ends `stopped`, and a run whose sync was stopped before it began is not
// started at all. runToolWithWarnings says so without failing the commit (a TransientError naming what was built).
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prestartProcess, runProcess } from '../../src/child-process.ts';
import { TransientError } from '../../src/errors.ts';
import { runToolWithWarnings } from '../../src/sources/build/tool.ts';

let root = '';
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mooring-stop-run-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A tool that starts a child of its own (as kustomize starts git), writes both pids, and runs for `seconds`. */
async function slowTool(name: string, seconds: number): Promise<{ script: string; pids: string }> {
  const pids = join(root, `${name}.pids`);
  const script = join(root, name);
  await writeFile(script, `#!/bin/sh\nsleep ${seconds} &\necho "$$ $!" > '${pids}'\nwait\necho done\n`, {
    mode: 0o755,
  });
  return { script, pids };
}

/** Running (not a zombie: a killed grandchild waits for whoever reaps orphans here). */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

async function pidsOf(file: string): Promise<number[]> {
  for (let i = 0; i < 100; i++) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (text.trim().split(' ').length === 2) return text.trim().split(' ').map(Number);
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${file} was never written`);
}

const env = () => ({ PATH: '/usr/bin:/bin', HOME: root });

describe('a run given up by its signal', () => {
  it('ends `stopped` at once, its child and what the child started killed', async () => {
    const { script, pids } = await slowTool('tool-a', 30);
    const stop = new AbortController();
    const started = Date.now();
    const result = runProcess(script, [], { env: env(), signal: stop.signal });
    const [shell, sleeper] = (await pidsOf(pids)) as [number, number];
    expect(alive(shell) && alive(sleeper)).toBe(true);
    stop.abort();
    expect(await result).toMatchObject({ ended: 'stopped', stdout: '' });
    expect(Date.now() - started).toBeLessThan(5000);
    // SIGKILL to the group: the grandchild went with it (it would hold the pipes open).
    for (let i = 0; i < 50 && alive(sleeper); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(shell)).toBe(false);
    expect(alive(sleeper)).toBe(false);
  });

  it('is not started when its signal has already aborted', async () => {
    const { script, pids } = await slowTool('tool-b', 30);
    const result = await runProcess(script, [], { env: env(), signal: AbortSignal.abort() });
    expect(result.ended).toBe('stopped');
    await new Promise((r) => setTimeout(r, 300));
    await expect(readFile(pids, 'utf8')).rejects.toThrow();
  });

  it('runs to its end when its signal never aborts, and leaves no listener behind', async () => {
    const { script } = await slowTool('tool-c', 0);
    const stop = new AbortController();
    const result = await runProcess(script, [], { env: env(), signal: stop.signal });
    expect(result).toMatchObject({ ended: 'exited', code: 0, stdout: 'done\n' });
    stop.abort();
  });

  it('stops a run started ahead that its caller adopted', async () => {
    const { script, pids } = await slowTool('tool-d', 30);
    // A run started ahead removes its HOME when it ends.
    prestartProcess(script, ['x'], { env: { ...env(), HOME: await mkdtemp(join(root, 'home-')) } });
    const stop = new AbortController();
    const result = runProcess(script, ['x'], { env: env(), signal: stop.signal });
    const [, sleeper] = (await pidsOf(pids)) as [number, number];
    stop.abort();
    expect((await result).ended).toBe('stopped');
    for (let i = 0; i < 50 && alive(sleeper); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(sleeper)).toBe(false);
  });
});

describe('a tool given up by its sync', () => {
  it('throws a TransientError naming what was built, and no timeout', async () => {
    const { script, pids } = await slowTool('helm-like', 30);
    const stop = new AbortController();
    const run = runToolWithWarnings({
      binary: script,
      configuredBy: 'render.helm',
      args: [],
      label: 'charts/web',
      step: 'helm template',
      signal: stop.signal,
    });
    await pidsOf(pids);
    stop.abort();
    const error = await run.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransientError);
    expect((error as Error).message).toBe('charts/web: helm template given up: the sync was stopped');
  });
});
