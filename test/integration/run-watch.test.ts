// `mooring run --watch DIR` as a developer runs it: the folder is deployed at start and after every change, and
// SIGTERM ends the agent cleanly, a render under way included.
import { execFile, spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { eventually, kubeConfig, manifestDir, testbed, useNamespace } from './helpers.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

/**
 * `mooring run --watch DIR -n NS --debounce 200ms FLAGS` as its own process: what it has printed, the ConfigMaps
 * of the namespace by name, a wait until it says it watches, and its stop by SIGTERM (resolving to its exit code).
 */
function watching(dir: string, namespace: string, flags: readonly string[]) {
  const core = kubeConfig().makeApiClient(CoreV1Api);
  const child = spawn(
    process.execPath,
    [
      MAIN,
      'run',
      '--watch',
      dir,
      '--kubeconfig',
      testbed().kube.kubeconfig,
      '-n',
      namespace,
      '--debounce',
      '200ms',
      ...flags,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let logs = '';
  child.stdout.on('data', (c: Buffer) => (logs += c.toString()));
  child.stderr.on('data', (c: Buffer) => (logs += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    pid: child.pid as number,
    logs: () => logs,
    names: async () => (await core.listNamespacedConfigMap({ namespace })).items.map((c) => c.metadata?.name),
    watchingNow: () =>
      eventually('watching', async () => (logs.includes('watching for changes') ? true : undefined), 30_000),
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

describe('mooring run --watch', () => {
  const ns = useNamespace('watch');

  it('deploys the folder, redeploys it on change, and stops on SIGTERM', async () => {
    const cm = (value: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {value: "${value}"}\n`;
    const dir = await manifestDir({ 'settings.yaml': cm('one') });
    // Every ConfigMap versioned, so that a redeploy shows as a new version.
    const run = watching(dir, ns(), ['--versioning', 'all']);
    let code: Promise<number | null> | undefined;
    try {
      await eventually(
        'first deploy',
        async () => ((await run.names()).includes('settings-v000') ? true : undefined),
        60_000,
      );
      await run.watchingNow();
      await writeFile(join(dir, 'settings.yaml'), cm('two'));
      await eventually(
        'redeploy',
        async () => ((await run.names()).includes('settings-v001') ? true : undefined),
        60_000,
      );
      // The new version is written before the sync ends: its outcome is logged after.
      const stable = () =>
        run
          .logs()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { msg: string; outcome?: string })
          .filter((l) => l.outcome === 'stable').length;
      await eventually('two stable syncs', async () => (stable() >= 2 ? true : undefined), 60_000);
      expect(stable()).toBeGreaterThanOrEqual(2);
    } finally {
      code = run.stop();
    }
    expect(await code).toBe(0);
    expect(run.logs()).toContain('stopping');
  });

  // A file deleted while watching takes its objects with it, as the agent prunes (--no-prune keeps them).
  it.each([
    { flags: [] as string[], kept: false },
    { flags: ['--no-prune'], kept: true },
  ])('prunes what a deleted file held unless --no-prune ($flags)', async ({ flags, kept }) => {
    const cm = (name: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  annotations: {strategy.spinnaker.io/versioned: "false"}\ndata: {k: v}\n`;
    const dir = await manifestDir({ 'a.yaml': cm('alpha'), 'b.yaml': cm('beta') });
    const run = watching(dir, ns(), flags);
    const names = run.names;
    let code: Promise<number | null> | undefined;
    try {
      await eventually(
        'first deploy',
        async () => ((await names()).includes('beta') ? true : undefined),
        60_000,
      );
      await run.watchingNow();
      await rm(join(dir, 'b.yaml'));
      const synced = () =>
        run
          .logs()
          .split('\n')
          .filter((l) => l.includes('"outcome":"stable"')).length;
      await eventually('second deploy', async () => (synced() >= 2 ? true : undefined), 60_000);
      if (kept) expect(await names()).toContain('beta');
      else
        await eventually(
          'pruned',
          async () => (!(await names()).includes('beta') ? true : undefined),
          30_000,
        );
      expect(await names()).toContain('alpha');
    } finally {
      code = run.stop();
    }
    expect(await code).toBe(0);
  });

  it('gives up a render under way at SIGTERM and exits within seconds', async () => {
    // A chart whose template spins for minutes of helm's time.
    const dir = await manifestDir({
      'Chart.yaml': 'apiVersion: v2\nname: slow\nversion: 0.1.0\n',
      'templates/cm.yaml':
        '{{- range until 3000 }}{{- range until 1000 }}{{- range until 1000 }}{{- end }}{{- end }}{{- end }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: slow}\n',
    });
    process.env.MOORING_HELM = testbed().tools.helm;
    const run = watching(dir, ns(), []);
    const helm = await eventually(
      'helm renders the chart',
      async () => {
        const ps = await promisify(execFile)('ps', ['-o', 'pid=,args=', '--ppid', String(run.pid)]).catch(
          () => ({ stdout: '' }),
        );
        const line = ps.stdout.split('\n').find((l) => /^\s*\d+ \S*helm template /.test(l));
        return line ? Number(line.trim().split(/\s+/)[0]) : undefined;
      },
      30_000,
    );
    await new Promise((r) => setTimeout(r, 500));
    const stopped = Date.now();
    expect(await run.stop()).toBe(0);
    expect(Date.now() - stopped).toBeLessThan(10_000);
    expect(() => process.kill(helm, 0)).toThrow();
    expect(run.logs()).not.toContain('cannot read the folder');
  });
});
