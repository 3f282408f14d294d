// `mooring run --watch DIR` as a developer runs it: the folder is deployed at start and after every change, and
// SIGTERM ends the agent cleanly.
import { spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { eventually, kubeConfig, manifestDir, testbed, useNamespace } from './helpers.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

describe('mooring run --watch', () => {
  const ns = useNamespace('watch');

  it('deploys the folder, redeploys it on change, and stops on SIGTERM', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const cm = (value: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {value: "${value}"}\n`;
    const dir = await manifestDir({ 'settings.yaml': cm('one') });
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
        ns(),
        '--debounce',
        '200ms',
        // Every ConfigMap versioned, so that a redeploy shows as a new version.
        '--versioning',
        'all',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let logs = '';
    child.stdout.on('data', (c: Buffer) => (logs += c.toString()));
    child.stderr.on('data', (c: Buffer) => (logs += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const names = async () =>
        (await core.listNamespacedConfigMap({ namespace: ns() })).items.map((c) => c.metadata?.name);
      await eventually(
        'first deploy',
        async () => ((await names()).includes('settings-v000') ? true : undefined),
        60_000,
      );
      await eventually(
        'watching',
        async () => (logs.includes('watching for changes') ? true : undefined),
        30_000,
      );
      await writeFile(join(dir, 'settings.yaml'), cm('two'));
      await eventually(
        'redeploy',
        async () => ((await names()).includes('settings-v001') ? true : undefined),
        60_000,
      );
      const lines = logs
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; outcome?: string });
      expect(lines.filter((l) => l.outcome === 'stable').length).toBeGreaterThanOrEqual(2);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(logs).toContain('stopping');
  });

  // A file deleted while watching takes its objects with it, as the agent prunes (--no-prune keeps them).
  it.each([
    { flags: [] as string[], kept: false },
    { flags: ['--no-prune'], kept: true },
  ])('prunes what a deleted file held unless --no-prune ($flags)', async ({ flags, kept }) => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const cm = (name: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  annotations: {strategy.spinnaker.io/versioned: "false"}\ndata: {k: v}\n`;
    const dir = await manifestDir({ 'a.yaml': cm('alpha'), 'b.yaml': cm('beta') });
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
        ns(),
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
    const names = async () =>
      (await core.listNamespacedConfigMap({ namespace: ns() })).items.map((c) => c.metadata?.name);
    try {
      await eventually(
        'first deploy',
        async () => ((await names()).includes('beta') ? true : undefined),
        60_000,
      );
      await eventually(
        'watching',
        async () => (logs.includes('watching for changes') ? true : undefined),
        30_000,
      );
      await rm(join(dir, 'b.yaml'));
      const synced = () => logs.split('\n').filter((l) => l.includes('"outcome":"stable"')).length;
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
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
