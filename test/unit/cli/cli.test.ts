import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { VERSION } from '../../../src/version.ts';
import { cli } from './run-cli.ts';

// These tests run real work (processes, Git repositories, whole pages): a busy 2-core machine needs more than 5 s.
vi.setConfig({ testTimeout: 30_000 });

const ROOT = join(import.meta.dirname, '..', '..', '..');
const EXAMPLE = join(ROOT, 'config', 'mooring.example.yaml');

async function tempFile(name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-cli-'));
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

describe('mooring CLI', () => {
  it('prints help listing its commands', async () => {
    const { code, stdout } = await cli('--help');
    expect(code).toBe(0);
    expect(stdout).toMatch(/Usage: mooring/);
    expect(stdout).toMatch(/config/);
    expect(stdout).toMatch(/version/);
  });

  it('prints its version, as text and as JSON', async () => {
    expect((await cli('version')).stdout).toContain(`Client Version: ${VERSION}`);
    const json = await cli('version', '-o', 'json');
    expect(JSON.parse(json.stdout)).toMatchObject({ client: { version: VERSION } });
  });

  it('offers kubectl-style cluster flags', async () => {
    const { stdout } = await cli('version', '--help');
    for (const flag of [
      '--kubeconfig <file>',
      '--context <name>',
      '-n, --namespace <namespace>',
      '-o, --output <format>',
    ]) {
      expect(stdout).toContain(flag);
    }
  });

  it('validates a good config with exit 0 and prints it with defaults on request', async () => {
    const ok = await cli('config', 'validate', EXAMPLE, '--skip-secrets');
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    expect(ok.stdout).toContain('valid (2 sources, 1 deployment)');
    const yaml = await cli('config', 'validate', EXAMPLE, '--skip-secrets', '-o', 'yaml');
    expect(parse(yaml.stdout).deployments[0].stability.timeout).toBe(1_800_000);
  });

  it('exits 2 on an invalid config and prints all its problems', async () => {
    const file = await tempFile(
      'bad.yaml',
      'cluster:\n  name: Prod\nsources:\n  git:\n    - name: app\n      url: ftp://x\ndeployments:\n  - name: web\n    source: app\n',
    );
    const bad = await cli('config', 'validate', file);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toContain(`${file}: 3 problems`);
    expect(bad.stderr).toContain(`${file}:2:9: cluster.name:`);
    expect(bad.stderr).toContain(`${file}:6:12: sources.git[0].url: must be an http(s) URL`);
    expect(bad.stderr).toContain(`${file}:8:5: deployments[0].namespace: required field is missing`);
  });

  it('exits 2 on usage mistakes', async () => {
    expect((await cli('bogus')).code).toBe(2);
    expect((await cli('config', 'validate')).code).toBe(2);
    expect((await cli('version', '-o', 'xml')).code).toBe(2);
  });

  it('exits 2 when a kubeconfig cannot be used', async () => {
    const kubeconfig = await tempFile(
      'kubeconfig',
      'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n',
    );
    const result = await cli('version', '--server', '--kubeconfig', kubeconfig, '--context', 'nope');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('context "nope" is not in the kubeconfig');
  });

  it('runs as a program with the same exit codes', async () => {
    const run = (args: string[]) =>
      new Promise<number>((resolveRun) => {
        execFile(process.execPath, [join(ROOT, 'src', 'cli', 'main.ts'), ...args], (error) =>
          resolveRun(error ? Number(error.code) : 0),
        );
      });
    expect(await run(['config', 'validate', EXAMPLE, '--skip-secrets'])).toBe(0);
    expect(await run(['config', 'validate', '/nonexistent.yaml'])).toBe(2);
  });
});
