// The CLI's cluster flags reach a real API server the way kubectl's do.
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.ts';
import { testbed } from './helpers.ts';

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
    expect(JSON.parse(stdout).server.gitVersion).toMatch(/^v1\.20\./);
  });
});
