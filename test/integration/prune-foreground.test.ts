// Prune deletes a workload in the foreground, and the next phase (the ConfigMaps its Pods mount) waits until the
// workload is gone, as kapp waits: the API server answers the delete as soon as the workload is marked, and before,
// its configuration was deleted while its Pods still ran. Here a finalizer holds the Deployment: its ConfigMap stays
// until the finalizer is removed, then goes in the same deploy.
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.ts';
import { sleep } from './faults-support.ts';
import { eventually, kubectl, manifestDir, testbed, useNamespace } from './helpers.ts';

const settings = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {mode: strict}
`;
const web = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "web:1", envFrom: [{configMapRef: {name: settings}}]}]}
`;
const keep = `apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {k: v}
`;

describe('prune waits for a workload to be gone before its configuration', () => {
  const ns = useNamespace('prune-fg');

  it('deletes the ConfigMap only once the Deployment is gone', async () => {
    const deploy = (dir: string, out: string[] = []) =>
      runCli(
        ['deploy', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns(), '--prune', '--timeout', '2m'],
        { stdout: (t) => out.push(t), stderr: (t) => out.push(t) },
      );
    expect(await deploy(await manifestDir({ 'app.yaml': `${settings}---\n${web}---\n${keep}` }))).toBe(0);
    // Something else holds the Deployment for a while (a finalizer of its own).
    await finalizers(ns(), ['example.com/hold']);
    const out: string[] = [];
    const removing = deploy(await manifestDir({ 'app.yaml': keep }), out);
    await eventually('the Deployment marked for deletion', async () => {
      const got = await kubectl(
        '-n',
        ns(),
        'get',
        'deployment',
        'web',
        '-o',
        'jsonpath={.metadata.deletionTimestamp}',
      );
      return got.stdout.trim() || undefined;
    });
    // While it is there, its configuration stays.
    await sleep(2000);
    expect((await kubectl('-n', ns(), 'get', 'configmap', 'settings')).code).toBe(0);
    await finalizers(ns(), null);
    expect(await removing, out.join('\n')).toBe(0);
    expect((await kubectl('-n', ns(), 'get', 'configmap', 'settings')).code).not.toBe(0);
    expect((await kubectl('-n', ns(), 'get', 'deployment', 'web')).code).not.toBe(0);
    expect(out.join('\n')).toContain('deployment/web pruned');
    expect(out.join('\n')).toContain('configmap/settings pruned');
  }, 120_000);
});

/** Sets the finalizers of Deployment `web` (null: none). */
async function finalizers(namespace: string, list: string[] | null): Promise<void> {
  const patch = JSON.stringify({ metadata: { finalizers: list } });
  const patched = await kubectl('-n', namespace, 'patch', 'deployment', 'web', '--type=merge', '-p', patch);
  expect(patched.code, patched.stderr).toBe(0);
}
