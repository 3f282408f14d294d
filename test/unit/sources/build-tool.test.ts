import { describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { runTool } from '../../../src/sources/build/tool.ts';

const base = { configuredBy: 'MOORING_TOOL', label: 'charts/web', step: 'helm template' };

describe('runTool', () => {
  it('returns what the tool prints', async () => {
    expect(await runTool({ ...base, binary: 'sh', args: ['-c', 'echo kind: ConfigMap'] })).toBe(
      'kind: ConfigMap\n',
    );
  });

  it('names what was built and the step, with the first lines of the tool own message, cleaned', async () => {
    const failing = runTool({
      ...base,
      binary: 'sh',
      args: ['-c', 'printf "one /tmp/x/a.yaml\\ntwo\\nthree\\nfour\\nfive\\nsix\\n" >&2; exit 1'],
      clean: (text) => text.split('/tmp/x/').join(''),
    });
    await expect(failing).rejects.toThrow(StalledError);
    await expect(failing).rejects.toThrow(
      'charts/web: helm template failed: one a.yaml; two; three; four; five',
    );
  });

  it('says a missing tool is not installed and where it is configured', async () => {
    await expect(runTool({ ...base, binary: '/nonexistent/helm', args: [] })).rejects.toThrow(
      'charts/web: /nonexistent/helm is not installed; set MOORING_TOOL to its path',
    );
  });

  it('stops a tool that runs too long', async () => {
    await expect(runTool({ ...base, binary: 'sh', args: ['-c', 'sleep 5'], timeoutMs: 100 })).rejects.toThrow(
      'charts/web: helm template failed: helm template took too long',
    );
  });
});
