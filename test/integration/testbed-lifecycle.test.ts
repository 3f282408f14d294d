// `npm run testbed -- up | status | down` as a user runs it: a second, separate test bed in its own folder comes
// up, kubectl sees its node, and `down` leaves none of its processes behind.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DaemonRecord } from '../testbed/processes.ts';
import type { TestbedEnv } from '../testbed/testbed.ts';
import { eventually, runTool } from './helpers.ts';

const CLI = join(import.meta.dirname, '..', 'testbed', 'cli.ts');

function testbedCli(dir: string, command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    execFile(
      process.execPath,
      [CLI, command],
      { env: { ...process.env, MOORING_TESTBED_DIR: dir }, timeout: 180_000 },
      (error, stdout, stderr) => resolveRun({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

describe('testbed up/status/down', () => {
  let dir = '';
  afterAll(async () => {
    if (dir) {
      await testbedCli(dir, 'down');
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('starts a test bed kubectl can use and stops every process it started', async () => {
    dir = await mkdtemp(join(tmpdir(), 'mooring-testbed-'));
    const started = await testbedCli(dir, 'up');
    expect(started.code, started.stderr).toBe(0);
    const env = JSON.parse(await readFile(join(dir, 'env.json'), 'utf8')) as TestbedEnv;
    const daemons = JSON.parse(await readFile(join(dir, 'daemons.json'), 'utf8')) as DaemonRecord[];
    expect(daemons.map((d) => d.name).sort()).toEqual([
      'etcd',
      'git-server',
      'kube-apiserver',
      'kube-controller-manager',
      'kubelet',
      'registry',
      'registry-auth',
      'ssh-server',
    ]);

    const nodes = await runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, 'get', 'nodes']);
    expect(nodes.code, nodes.stderr).toBe(0);
    expect(nodes.stdout).toMatch(/testbed-node\s+Ready/);
    expect((await testbedCli(dir, 'status')).code).toBe(0);
    // A second `up` finds the running bed and starts nothing.
    expect((await testbedCli(dir, 'up')).stderr).toContain('already running');

    const stopped = await testbedCli(dir, 'down');
    expect(stopped.code, stopped.stderr).toBe(0);
    // Stopped processes are reaped by init right after they exit, so /proc may show them for a moment.
    for (const d of daemons) {
      await eventually(
        `${d.name} (pid ${d.pid}) gone`,
        async () => (existsSync(`/proc/${d.pid}`) ? undefined : true),
        5000,
      );
    }
    expect(existsSync(join(dir, 'env.json'))).toBe(false);
    const after = await testbedCli(dir, 'status');
    expect(after.code).toBe(3);
    expect(after.stdout).toContain('not running');
  });
});
