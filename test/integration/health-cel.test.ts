// Health you can program, on the test bed: `mooring deploy` waits on a custom resource of a made-up kind as a CEL
// health rule judges it (from --health-file, or from the mooring.io/health-* annotations of the CRD it applies),
// until kubectl writes the status the rule calls current, or one it calls failed.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.ts';
import {
  crdManifest,
  eventually,
  kubectl,
  manifestDir,
  type RunResult,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const suffix = Date.now().toString(36);
const group = `h${suffix}.mooring.test`;

function crd(plural: string, kind: string, annotations: Record<string, string> = {}): string {
  return crdManifest(group, plural, kind, annotations);
}

/** `mooring deploy`, in-process, with its output readable while it runs. */
function startDeploy(namespace: string, dir: string, ...extra: string[]) {
  const out: string[] = [];
  const done = runCli(
    ['deploy', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', namespace, '--timeout', '4m', ...extra],
    { stdout: (t) => out.push(t), stderr: (t) => out.push(t) },
  ).then((code): RunResult => ({ code, stdout: out.join('\n'), stderr: '' }));
  return { out, done };
}

/** Waits until the running deploy has printed a line with `text`. */
function printed(out: readonly string[], text: string): Promise<string> {
  return eventually(`a line with "${text}"`, async () => out.find((l) => l.includes(text)));
}

/**
 * Writes the status subresource as a controller would. Retried: while CRDs come and go on the shared API server
 * (other tests), it may answer 404 for a new kind's status endpoint for a while.
 */
async function patchStatus(namespace: string, resource: string, status: object): Promise<void> {
  await eventually(
    `status of ${resource} written`,
    async () => {
      const result = await kubectl(
        '-n',
        namespace,
        'patch',
        resource,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status }),
      );
      if (result.code !== 0) throw new Error(result.stderr);
      return true;
    },
    100_000,
  );
}

describe('health rules in CEL', () => {
  const namespace = useNamespace('health-cel');

  beforeAll(async () => {
    // A kind whose CRD mooring does not deploy: its rule comes from --health-file.
    const dir = await manifestDir({ 'crd.yaml': crd('gadgets', 'Gadget') });
    const installed = await kubectl('apply', '-f', join(dir, 'crd.yaml'));
    expect(installed.code, installed.stderr).toBe(0);
    const established = await kubectl(
      'wait',
      '--for=condition=Established',
      `crd/gadgets.${group}`,
      '--timeout=60s',
    );
    expect(established.code, established.stderr).toBe(0);
  });

  afterAll(async () => {
    for (const name of [`gadgets.${group}`, `gizmos.${group}`])
      await kubectl('delete', 'crd', name, '--wait=false', '--ignore-not-found');
  });

  it('waits while the rule says in progress, and completes once the status says Ready=True (--health-file)', async () => {
    const rules = join(await tempDir('mooring-health-'), 'health.yaml');
    await writeFile(
      rules,
      `- apiVersion: ${group}/v1
  kind: Gadget
  inProgress: "has(status.phase) && status.phase == 'Provisioning'"
  failed: "has(status.phase) && status.phase == 'Broken'"
  current: "has(status.conditions) && status.conditions.exists(e, e.type == 'Ready' && e.status == 'True')"
`,
    );
    const dir = await manifestDir({
      'gadget.yaml': `apiVersion: ${group}/v1\nkind: Gadget\nmetadata: {name: first}\nspec: {size: 1}\n`,
    });
    const run = startDeploy(namespace(), dir, '--health-file', rules);
    // No status yet: none of the expressions holds, and the deploy says which rule it waits on.
    await printed(run.out, `health rule ${group}/Gadget (${rules}[0]): none of its expressions holds yet`);
    await patchStatus(namespace(), `gadgets.${group}/first`, { phase: 'Provisioning' });
    await printed(run.out, `in progress by health rule ${group}/Gadget (${rules}[0])`);
    await patchStatus(namespace(), `gadgets.${group}/first`, {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', reason: 'Provisioned' }],
    });
    const result = await run.done;
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toContain(`Gadget ${namespace()}/first stable`);
  }, 300_000);

  it('fails the deploy, naming the rule, when the failed expression holds (rule from the CRD annotations)', async () => {
    const dir = await manifestDir({
      'crd.yaml': crd('gizmos', 'Gizmo', {
        'mooring.io/health-current': "has(status.phase) && status.phase == 'Ready'",
        'mooring.io/health-failed': "has(status.phase) && status.phase == 'Broken'",
      }),
      'gizmo.yaml': `apiVersion: ${group}/v1\nkind: Gizmo\nmetadata: {name: second}\nspec: {size: 2}\n`,
    });
    const run = startDeploy(namespace(), dir);
    const rule = `${group}/Gizmo (CustomResourceDefinition gizmos.${group})`;
    await printed(run.out, `health rule ${rule}: none of its expressions holds yet`);
    await patchStatus(namespace(), `gizmos.${group}/second`, { phase: 'Broken' });
    const result = await run.done;
    expect(result.code, result.stdout).toBe(1);
    expect(result.stdout).toContain(
      `Gizmo ${namespace()}/second: failed by health rule ${rule}: "has(status.phase) && status.phase == 'Broken'"; phase Broken`,
    );
  }, 300_000);

  it('refuses a rule that does not compile before writing anything', async () => {
    const dir = await manifestDir({
      'crd.yaml': crd('gizmos', 'Gizmo', { 'mooring.io/health-current': "status.phase == 'Ready" }),
      'gizmo.yaml': `apiVersion: ${group}/v1\nkind: Gizmo\nmetadata: {name: third}\nspec: {size: 3}\n`,
    });
    const result = await startDeploy(namespace(), dir).done;
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      `CustomResourceDefinition gizmos.${group}: annotation mooring.io/health-current: expression "status.phase == 'Ready" does not compile: <input>:1:`,
    );
    const absent = await kubectl(
      '-n',
      namespace(),
      'get',
      `gizmos.${group}`,
      'third',
      '--ignore-not-found',
      '-o',
      'name',
    );
    expect(absent.stdout.trim()).toBe('');
  });
});
