import { existsSync } from 'node:fs';
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

  it("puts helm's own error before what client-go logged on the way to it (an aggregated API down)", async () => {
    const logged = (at: string) =>
      `E1206 06:40:0${at}.744986    2408 memcache.go:287] "Unhandled Error" err="couldn't get resource list for metrics.k8s.io/v1beta1: the server is currently unable to handle the request (metrics.k8s.io/v1beta1)" logger="UnhandledError"`;
    const stderr = [
      'level=WARN msg="This chart or one of its subcharts contains CRDs."',
      logged('1'),
      '',
      logged('2'),
      logged('3'),
      logged('4'),
      logged('5'),
      'Error: unable to build kubernetes objects from release manifest: [resource mapping not found for name: "web" namespace: "shop" from "": no matches for kind "Prometheus" in version "monitoring.coreos.com/v1"',
      '',
      'ensure CRDs are installed first]',
    ].join('\n');
    const failing = runTool({
      ...base,
      binary: 'sh',
      args: ['-c', `cat >&2 <<'EOF'\n${stderr}\nEOF\nexit 1`],
    });
    await expect(failing).rejects.toThrow(
      'charts/web: helm template failed: Error: unable to build kubernetes objects from release manifest: [resource mapping not found for name: "web" namespace: "shop" from "": no matches for kind "Prometheus" in version "monitoring.coreos.com/v1"; ensure CRDs are installed first]; level=WARN msg="This chart or one of its subcharts contains CRDs."; couldn\'t get resource list for metrics.k8s.io/v1beta1: the server is currently unable to handle the request (metrics.k8s.io/v1beta1)',
    );
  });

  it("leaves out helm's advice about its own --debug flag", async () => {
    const failing = runTool({
      ...base,
      binary: 'sh',
      args: [
        '-c',
        'printf "Error: YAML parse error on web/templates/cm.yaml: bad\\nUse --debug flag to render out invalid YAML\\n" >&2; exit 1',
      ],
    });
    await expect(failing).rejects.toThrow(
      /^charts\/web: helm template failed: Error: YAML parse error on web\/templates\/cm\.yaml: bad$/,
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

describe('runTool: what a tool gets', () => {
  it('gives the tool a minimal environment: nothing of the agent own, HOME a throwaway folder', async () => {
    process.env.MOORING_CANARY_SECRET = 'canary-value';
    try {
      const out = await runTool({ ...base, binary: 'env', args: [] });
      const vars = Object.fromEntries(
        out
          .trim()
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
      // PWD is the shell's, which sets the memory limit in front of the tool.
      expect(Object.keys(vars).sort()).toEqual(['HOME', 'LANG', 'PATH', 'PWD', 'TZ']);
      expect(out).not.toContain('canary-value');
      expect(vars.HOME).toMatch(/mooring-tool-/);
      expect(existsSync(vars.HOME ?? '/nonexistent')).toBe(false);
    } finally {
      delete process.env.MOORING_CANARY_SECRET;
    }
  });

  it('adds only the variables the caller gives', async () => {
    const out = await runTool({ ...base, binary: 'env', args: [], env: { HELM_NO_PLUGINS: '1' } });
    expect(out).toContain('HELM_NO_PLUGINS=1\n');
  });

  it('stops a tool past its memory limit and says so', async () => {
    // awk doubling a string allocates until the limit (RLIMIT_DATA) refuses it.
    const program = 'BEGIN { s = "x"; for (i = 0; i < 40; i++) s = s s; print length(s) }';
    await expect(
      runTool({ ...base, binary: 'awk', args: [program], memoryBytes: 64 * 1024 * 1024 }),
    ).rejects.toThrow(
      'charts/web: helm template ran out of its memory limit (64 MiB; render.toolMemoryBytes)',
    );
  });

  it('a tool within its memory limit runs as usual', async () => {
    const program = 'BEGIN { s = "x"; for (i = 0; i < 10; i++) s = s s; print length(s) }';
    expect(await runTool({ ...base, binary: 'awk', args: [program], memoryBytes: 64 * 1024 * 1024 })).toBe(
      '1024\n',
    );
  });

  it('stops a tool that prints more than its output limit', async () => {
    await expect(
      runTool({ ...base, binary: 'sh', args: ['-c', 'yes kind: ConfigMap'], maxOutputBytes: 1024 * 1024 }),
    ).rejects.toThrow(
      'charts/web: helm template failed: its output is over toolMaxOutputBytes (1 MiB; --tool-max-output-bytes or render.toolMaxOutputBytes)',
    );
  });

  it('redacts decrypted values from the tool message, before it is cut to five lines', async () => {
    const secret = 'hunter2-very-secret';
    const failing = runTool({
      ...base,
      binary: 'sh',
      args: ['-c', `printf "bad value ${secret}\\nline two\\n" >&2; exit 1`],
      secrets: [secret],
    });
    await expect(failing).rejects.toThrow('charts/web: helm template failed: bad value <redacted>; line two');
    const message = await failing.catch((error: unknown) => String(error));
    expect(message).not.toContain('hunter2');
  });

  it('redacts decrypted values in the message of a missing tool too', async () => {
    const message = await runTool({
      ...base,
      label: 'charts/hunter2-very-secret',
      binary: '/nonexistent/helm',
      args: [],
      secrets: ['hunter2-very-secret'],
    }).catch((error: unknown) => String(error));
    expect(message).toContain('charts/<redacted>: /nonexistent/helm is not installed');
  });
});
