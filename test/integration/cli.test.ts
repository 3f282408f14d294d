// The CLI's cluster flags reach a real API server the way kubectl's do.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.ts';
import { manifestDir, runTool, testbed, useNamespace } from './helpers.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

describe('mooring version --server', () => {
  it('reads the server version through --kubeconfig and --context', async () => {
    const env = testbed();
    let stdout = '';
    let stderr = '';
    const code = await runCli(
      ['version', '--server', '--kubeconfig', env.kube.kubeconfig, '--context', 'testbed', '-o', 'json'],
      { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) },
    );
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout).server.gitVersion).toBe(`v${testbed().kube.version}`);
  });
});

describe('mooring deploy as a process', () => {
  const ns = useNamespace('cli-exit');

  it('exits as soon as the deploy is done: no stream or socket outlives it', async () => {
    const dir = await manifestDir({
      'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {a: b}\n',
    });
    const args = [
      MAIN,
      'deploy',
      dir,
      '--kubeconfig',
      testbed().kube.kubeconfig,
      '-n',
      ns(),
      '--timeout',
      '1m',
    ];
    // Twice: a first deploy (created) and a second (unchanged), each waited on through the cluster cache.
    for (const action of ['created', 'unchanged']) {
      // A process that hangs is killed at 30 s and fails here.
      const run = await runTool(process.execPath, args, { timeoutMs: 30_000 });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain(`configmap/one ${action}`);
      expect(run.stdout).toContain('1/1 stable');
    }
  });
});
