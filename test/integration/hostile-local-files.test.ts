// Files on disk that never end: a pull request can commit a symlink, and CI renders the checkout with the CLI. A
// chart's Chart.yaml, a kustomization or a manifest that leads to /dev/zero is refused at once, with its name, by
// the command in-process and as a shell starts it (src/cli/main.ts, whose early start of helm reads Chart.yaml too);
// nothing is read past a bound (src/sources/local/bounded-read.ts). A pipe (a shell's process substitution) is
// still read to its end.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { mooring, mooringShell, testbed } from './helpers.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
const exec = promisify(execFile);

async function shell(...args: string[]) {
  const started = Date.now();
  const run = await mooringShell({ MOORING_HELM: testbed().tools.helm }, ...args);
  return { ...run, ms: Date.now() - started };
}

describe('local files that never end', () => {
  let root = '';
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'mooring-endless-'));
  });

  async function folder(name: string, files: Record<string, string>, links: Record<string, string>) {
    const dir = join(root, name);
    await mkdir(join(dir, 'templates'), { recursive: true });
    for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
    for (const [file, target] of Object.entries(links)) await symlink(target, join(dir, file));
    return dir;
  }

  it('refuses a chart whose Chart.yaml leads to /dev/zero, naming it, at once', async () => {
    const dir = await folder(
      'chart',
      { 'templates/cm.yaml': 'kind: ConfigMap\n' },
      { 'Chart.yaml': '/dev/zero' },
    );
    const inProcess = await mooring('render', '--offline', dir, '-n', 'shop');
    expect(inProcess.code).toBe(2);
    expect(inProcess.stderr).toContain(`${dir}/Chart.yaml: not a regular file`);
    const ours = await shell('render', '--offline', dir, '-n', 'shop');
    expect(ours.code).toBe(2);
    expect(ours.stderr).toContain(`${dir}/Chart.yaml: not a regular file`);
    expect(ours.ms).toBeLessThan(30_000);
  });

  it('refuses a kustomization and a manifest that lead to /dev/zero', async () => {
    const kustomization = await folder('kustomize', {}, { 'kustomization.yaml': '/dev/zero' });
    const k = await mooring('render', '--offline', kustomization);
    expect(k.code).toBe(2);
    expect(k.stderr).toContain('kustomization.yaml');

    const direct = await mooring('render', '--offline', '/dev/zero');
    expect(direct.code).toBe(2);
    expect(direct.stderr).toContain('/dev/zero');
    expect(direct.stderr).toContain('maxFileBytes');
  });

  it("refuses a chart's own values file that leads to /dev/zero; bounds a --values file by helm's own limits", async () => {
    const dir = await folder(
      'values',
      {
        'Chart.yaml': 'apiVersion: v2\nname: values\nversion: 1.0.0\n',
        'templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n',
      },
      { 'values.yaml': '/dev/zero' },
    );
    // A symlink of the chart folder that leads outside it (no repository holds it): refused before helm runs.
    const refused = await shell('render', '--offline', dir, '-n', 'shop');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${dir}/values.yaml: a symlink that leads outside`);
    expect(refused.ms).toBeLessThan(30_000);
    // A values file the user names on the command line is theirs to choose: helm reads it, within its bounds.
    await rm(join(dir, 'values.yaml'));
    await symlink('/dev/zero', join(root, 'zero.yaml'));
    const ours = await shell('render', '--offline', dir, '-n', 'shop', '--values', join(root, 'zero.yaml'));
    expect(ours.code).not.toBe(0);
    expect(ours.stderr).toMatch(/helm template (failed|ran out)/);
    expect(ours.ms).toBeLessThan(60_000);
  });

  it('refuses a named pipe in a folder at once, naming it, without waiting for a writer', async () => {
    const fifo = (path: string) => exec('mkfifo', [path]);
    const chart = await folder('fifo-chart', { 'templates/cm.yaml': 'kind: ConfigMap\n' }, {});
    await fifo(join(chart, 'Chart.yaml'));
    const inProcess = await mooring('render', '--offline', chart, '-n', 'shop');
    expect(inProcess.code).toBe(2);
    expect(inProcess.stderr).toContain(`${chart}/Chart.yaml: not a regular file`);
    // As a shell starts it, the early start of helm reads Chart.yaml first (src/cli/early-render.ts).
    const ours = await shell('render', '--offline', chart, '-n', 'shop');
    expect(ours.code).toBe(2);
    expect(ours.stderr).toContain(`${chart}/Chart.yaml: not a regular file`);
    expect(ours.ms).toBeLessThan(30_000);

    const manifests = await folder(
      'fifo-manifests',
      { 'a.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n' },
      {},
    );
    await fifo(join(manifests, 'b.yaml'));
    for (const flags of [[], ['-R']]) {
      const m = await mooring('render', '--offline', manifests, ...flags);
      expect(m.code).toBe(2);
      expect(m.stderr).toContain(`${join(manifests, 'b.yaml')}: not a regular file`);
    }

    const kustomize = await folder('fifo-kustomize', {}, {});
    await fifo(join(kustomize, 'kustomization.yaml'));
    const k = await mooring('render', '--offline', kustomize);
    expect(k.code).toBe(2);
    expect(k.stderr).toContain('kustomization.yaml: not a regular file');
  });

  it("still reads a pipe, as a shell's process substitution gives one", async () => {
    const run = await exec(
      'bash',
      [
        '-c',
        `'${process.execPath}' '${MAIN}' render --offline <(printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: piped}\\ndata: {a: b}\\n') -n shop`,
      ],
      { timeout: 60_000 },
    );
    expect(run.stdout).toContain('name: piped');
  });
});
