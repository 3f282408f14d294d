// What the CLI prints when the cluster says no or is not there: one line naming what mooring was doing and the
// API server's own message, never a stack trace or HTTP headers, and an exit code scripts can rely on (2 for a
// request refused to this identity, non-zero for an unreachable server). The restricted identity is a real
// ServiceAccount of the test bed's API server, with a token from the TokenRequest API and RBAC in one namespace.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { appDeployment } from './build-helpers.ts';
import {
  kubeConfig,
  manifestDir,
  mooring,
  type RunResult,
  testbed,
  useNamespace,
  writeKubeconfig,
} from './helpers.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

const deployment = appDeployment();
const settings = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n';

/** The CLI as a process, as a user runs it: whatever Node itself would print (a stack) is in the output. */
function cliProcess(args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: { ...process.env, MOORING_DEBUG: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

function nonEmptyLines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}

const STACK_FRAME = /^\s+at /m;

describe('CLI errors against a server that is not there', () => {
  let dead = '';
  let dir = '';
  beforeAll(async () => {
    // A closed port: nothing listens on port 1 of loopback.
    dead = await writeKubeconfig({ server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true }, {});
    dir = await manifestDir({ 'settings.yaml': settings, 'web.yaml': deployment });
  });

  it.each([
    ['render', () => ['render', dir]],
    ['deploy', () => ['deploy', dir, '--timeout', '20s']],
    ['scale', () => ['scale', 'deployment/web', '--replicas', '2']],
    ['rollout undo', () => ['rollout', 'undo', 'deployment/web']],
    ['delete', () => ['delete', 'configmap/settings']],
    ['status', () => ['status']],
  ])('%s prints one friendly line and exits non-zero, without a stack', async (_name, args) => {
    for (const result of [
      await cliProcess([...args(), '--kubeconfig', dead]),
      await mooring(...args(), '--kubeconfig', dead),
    ]) {
      const output = result.stdout + result.stderr;
      expect(result.code, output).not.toBe(0);
      expect(nonEmptyLines(output), output).toHaveLength(1);
      expect(output).toMatch(/^(error|failed \(transient\)): .*ECONNREFUSED 127\.0\.0\.1:1$/m);
      expect(output).not.toMatch(STACK_FRAME);
    }
  });

  it('prints the stack and causes only with MOORING_DEBUG=1', async () => {
    const result = await cliProcess(['render', dir, '--kubeconfig', dead], { MOORING_DEBUG: '1' });
    expect(result.code).toBe(1);
    expect(nonEmptyLines(result.stderr)[0]).toMatch(/^error: (list|discover) .*ECONNREFUSED/);
    expect(result.stderr).toMatch(STACK_FRAME);
    expect(result.stderr).toContain('caused by:');
  });
});

describe('CLI errors for a request the API server forbids', () => {
  const ns = useNamespace('cli-forbidden');
  let restricted = '';
  let identity = '';
  let dir = '';
  beforeAll(async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const rbac = kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespacedServiceAccount({ namespace: ns(), body: { metadata: { name: 'mooring' } } });
    // Everything in its own namespace, nothing elsewhere.
    await rbac.createNamespacedRole({
      namespace: ns(),
      body: {
        metadata: { name: 'everything' },
        rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns(),
      body: {
        metadata: { name: 'mooring' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'everything' },
        subjects: [{ kind: 'ServiceAccount', name: 'mooring', namespace: ns() }],
      },
    });
    const token = await core.createNamespacedServiceAccountToken({
      name: 'mooring',
      namespace: ns(),
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const admin = parse(await readFile(testbed().kube.kubeconfig, 'utf8')) as {
      clusters: { cluster: Record<string, unknown> }[];
    };
    const cluster = admin.clusters[0]?.cluster;
    if (!cluster || !token.status?.token) throw new Error('no cluster or no token');
    restricted = await writeKubeconfig(cluster, { token: token.status.token });
    identity = `system:serviceaccount:${ns()}:mooring`;
    dir = await manifestDir({ 'settings.yaml': settings, 'web.yaml': deployment });
  });

  it('deploys in its own namespace (the identity works; RBAC is what refuses the rest)', async () => {
    const result = await mooring('deploy', dir, '--kubeconfig', restricted, '-n', ns(), '--timeout', '1m');
    expect(result.code, result.stdout + result.stderr).toBe(0);
    // The application's inventory lives in the agent's namespace, which this identity may not read: without
    // --prune the deploy says so and goes on; with --prune it cannot prune and refuses, naming the rule.
    expect(result.stdout).toMatch(/^warning: read the inventory of .*403 .*forbidden.*not recorded$/m);
    const prune = await mooring('deploy', dir, '--kubeconfig', restricted, '-n', ns(), '--prune');
    expect(prune.code).toBe(2);
    expect(prune.stderr).toMatch(/read the inventory of .*403 .*cannot get resource "configmaps"/);
  });

  it.each([
    ['render', () => ['render', dir]],
    ['deploy', () => ['deploy', dir]],
    ['scale', () => ['scale', 'deployment/web', '--replicas', '2']],
    ['rollout pause', () => ['rollout', 'pause', 'deployment/web']],
    ['delete', () => ['delete', 'deployment/web']],
  ])('%s elsewhere: one line naming verb, resource, identity and namespace; exit 2', async (_name, args) => {
    for (const result of [
      await cliProcess([...args(), '--kubeconfig', restricted, '-n', 'kube-system']),
      await mooring(...args(), '--kubeconfig', restricted, '-n', 'kube-system'),
    ]) {
      const output = result.stdout + result.stderr;
      expect(result.code, output).toBe(2);
      expect(result.stdout).toBe('');
      const lines = nonEmptyLines(result.stderr);
      expect(lines, output).toHaveLength(1);
      // What mooring was doing, then the API server's Status message with verb, resource and user.
      expect(lines[0]).toMatch(
        new RegExp(
          `^error: .+: 403 [a-z.]+( "web")? is forbidden: User "${identity}" cannot (list|get) resource "[a-z/]+" in API group "[a-z.]*" in the namespace "kube-system"$`,
        ),
      );
      expect(output).not.toMatch(STACK_FRAME);
      expect(output.toLowerCase()).not.toMatch(/authorization|bearer|content-type|x-kubernetes/);
    }
  });
});
