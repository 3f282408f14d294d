// Manifests piped into the CLI: `kubectl kustomize DIR | mooring deploy -` deploys what the pipe carries (with
// mooring's versioning applied), `mooring diff -` compares the pipe with the cluster, and `mooring render -o json | kubectl apply --dry-run=server -f -` is accepted by
// the API server, both run as processes connected by a pipe as a shell would.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { webDeployment } from './build-helpers.ts';
import { kubeConfig, manifestDir, type RunResult, runTool, testbed, useNamespace } from './helpers.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

/** Runs a program with `input` on its standard input. */
function run(command: string, args: string[], input: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, MOORING_DEBUG: '' }, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input);
  });
}

const files = {
  'kustomization.yaml': 'resources: [settings.yaml, web.yaml]\ncommonLabels: {team: piped}\n',
  'settings.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n',
  'web.yaml': webDeployment('app:1', ['envFrom: [{configMapRef: {name: settings}}]'], 'app'),
};

describe('manifests on standard input', () => {
  const ns = useNamespace('stdin');

  it('kubectl kustomize | mooring deploy - applies the objects of the pipe, versioned', async () => {
    const dir = await manifestDir(files);
    const built = await runTool(testbed().tools.kubectl, ['kustomize', dir]);
    expect(built.code, built.stderr).toBe(0);
    const kubeconfig = testbed().kube.kubeconfig;
    const deployed = await run(
      process.execPath,
      [MAIN, 'deploy', '-', '--kubeconfig', kubeconfig, '-n', ns(), '--timeout', '2m'],
      built.stdout,
    );
    expect(deployed.code, deployed.stderr + deployed.stdout).toBe(0);
    expect(deployed.stdout).toContain('configmap/settings-v000');

    const core = kubeConfig().makeApiClient(CoreV1Api);
    const settings = await core.readNamespacedConfigMap({ name: 'settings-v000', namespace: ns() });
    expect(settings.data).toEqual({ greeting: 'hello' });
    expect(settings.metadata?.labels?.team).toBe('piped');
    const web = await kubeConfig()
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: 'web', namespace: ns() });
    expect(web.spec?.template.spec?.containers[0]?.envFrom?.[0]?.configMapRef?.name).toBe('settings-v000');
    expect(web.metadata?.labels?.team).toBe('piped');

    // `mooring diff -`: the same pipe shows no change (exit 0); a changed greeting shows the change (exit 1).
    const diff = (input: string) =>
      run(process.execPath, [MAIN, 'diff', '-', '--kubeconfig', kubeconfig, '-n', ns()], input);
    const same = await diff(built.stdout);
    expect(same.code, same.stderr + same.stdout).toBe(0);
    const changed = await diff(built.stdout.replace('greeting: hello', 'greeting: piped-change'));
    expect(changed.code, changed.stderr).toBe(1);
    // Versioned configuration: a new version is added and the Deployment's reference moves to it.
    expect(changed.stdout).toContain('+                name: settings-v001');
    expect(changed.stdout).toContain('1 object changed, 1 added');
  });

  it('names <stdin> and the line of a bad manifest piped in, and applies nothing', async () => {
    const deployed = await run(
      process.execPath,
      [MAIN, 'deploy', '-', '--kubeconfig', testbed().kube.kubeconfig, '-n', ns(), '--timeout', '1m'],
      `${files['settings.yaml'].replace('settings', 'other')}---\napiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n`,
    );
    expect(deployed.code).toBe(2);
    expect(deployed.stderr).toContain('<stdin>:6:1: ConfigMap object is missing metadata.name');
    const core = kubeConfig().makeApiClient(CoreV1Api);
    await expect(core.readNamespacedConfigMap({ name: 'other', namespace: ns() })).rejects.toThrow();
  });

  it('mooring render -o json | kubectl apply --dry-run=server -f - is accepted by the API server', async () => {
    const dir = await manifestDir({ 'settings.yaml': files['settings.yaml'], 'web.yaml': files['web.yaml'] });
    const kubeconfig = testbed().kube.kubeconfig;
    const rendered = await run(
      process.execPath,
      [MAIN, 'render', dir, '--kubeconfig', kubeconfig, '-n', ns(), '-o', 'json'],
      '',
    );
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(JSON.parse(rendered.stdout).kind).toBe('List');
    const applied = await run(
      testbed().tools.kubectl,
      ['apply', '--dry-run=server', '--kubeconfig', kubeconfig, '-n', ns(), '-f', '-'],
      rendered.stdout,
    );
    expect(applied.code, applied.stderr).toBe(0);
    const lines = applied.stdout.trim().split('\n').sort();
    expect(lines).toEqual([
      expect.stringMatching(/^configmap\/settings-v\d{3} (created|configured|unchanged) \(server dry run\)$/),
      expect.stringMatching(/^deployment.apps\/web (created|configured|unchanged) \(server dry run\)$/),
    ]);
  });
});
