// Hooks own only what they created (docs/security.md, "Hook ownership"), on the test bed: a Secret made directly
// through the API is neither overwritten nor deleted by a hook of its name, whatever the delete policy; the sync
// fails before anything of the commit is written and names the Secret. Another deployment's hook is refused the
// same way; an earlier run of the same hook of the same deployment is still replaced.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { BEHAVIOR } from '../testbed/kubelet.ts';
import { deployTo, eventually, kubeConfig, pollHealth, startGitAgent, useNamespace } from './helpers.ts';

async function app(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-hook-owner-'));
  await writeFile(join(dir, 'app.yaml'), text);
  return dir;
}

/** A Secret hook named db-creds, a release ConfigMap and a post-install Job hook. */
const commit = (policy: string) => `apiVersion: v1
kind: Secret
metadata:
  name: db-creds
  annotations: {"helm.sh/hook": pre-install${policy ? `, "helm.sh/hook-delete-policy": ${policy}` : ''}}
stringData: {password: from-the-hook}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {a: b}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: after
  annotations: {"helm.sh/hook": post-install}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {${BEHAVIOR}: succeed}}
    spec: {restartPolicy: Never, containers: [{name: a, image: "after:1"}]}
`;

describe('a hook named like a Secret made with the API', () => {
  const ns = useNamespace('hook-owner');
  const core = () => kubeConfig().makeApiClient(CoreV1Api);

  it.each([
    'hook-succeeded',
    'hook-failed',
    'before-hook-creation',
    '"hook-succeeded,hook-failed"',
    '', // no policy: Helm's default, before-hook-creation
  ])('fails before anything is written, the Secret intact (policy %s)', async (policy) => {
    const namespace = ns();
    const made = await core().createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'db-creds' }, stringData: { password: 'made-by-hand' } },
    });
    try {
      const result = await deployTo(namespace, await app(commit(policy)), '--application', 'shop');
      expect(result.code, result.stdout + result.stderr).not.toBe(0);
      expect(result.stdout + result.stderr).toContain(
        `hook Secret ${namespace}/db-creds: a Secret of that name exists and was not created by this hook of deployment cli.${namespace}.shop (it is no hook); refusing to overwrite or delete it`,
      );
      const kept = await core().readNamespacedSecret({ name: 'db-creds', namespace });
      expect(kept.metadata?.uid).toBe(made.metadata?.uid);
      expect(kept.metadata?.resourceVersion).toBe(made.metadata?.resourceVersion);
      expect(Buffer.from(kept.data?.password ?? '', 'base64').toString()).toBe('made-by-hand');
      // Nothing else of the commit was written, and no hook ran.
      await expect(core().readNamespacedConfigMap({ name: 'app', namespace })).rejects.toMatchObject({
        code: 404,
      });
      await expect(
        kubeConfig().makeApiClient(BatchV1Api).readNamespacedJob({ name: 'after', namespace }),
      ).rejects.toMatchObject({ code: 404 });
    } finally {
      await core().deleteNamespacedSecret({ name: 'db-creds', namespace });
    }
  });
});

describe('a hook of another deployment', () => {
  const ns = useNamespace('hook-owner-other');

  it('is refused; the same hook of the same deployment is replaced', async () => {
    const namespace = ns();
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const hook = (from: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  annotations: {argocd.argoproj.io/hook: PreSync}
data: {from: ${from}}
`;
    const first = await deployTo(namespace, await app(hook('shop')), '--application', 'shop');
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const made = await core.readNamespacedConfigMap({ name: 'shared', namespace });
    expect(made.metadata?.annotations?.['mooring.io/hook-owner']).toBe(`cli.${namespace}.shop`);

    // The same hook of the same deployment: its earlier run is deleted and the hook created again.
    const again = await deployTo(namespace, await app(hook('shop-again')), '--application', 'shop');
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const replaced = await core.readNamespacedConfigMap({ name: 'shared', namespace });
    expect(replaced.data).toEqual({ from: 'shop-again' });
    expect(replaced.metadata?.uid).not.toBe(made.metadata?.uid);

    // Another deployment (another application) with a hook of that name, even one that claims the mark.
    const claimed = hook('blog').replace(
      'annotations: {',
      `annotations: {mooring.io/hook-owner: cli.${namespace}.shop, `,
    );
    const other = await deployTo(namespace, await app(claimed), '--application', 'blog');
    expect(other.code).not.toBe(0);
    expect(other.stdout + other.stderr).toContain(
      `hook ConfigMap ${namespace}/shared: a ConfigMap of that name exists and was not created by this hook of deployment cli.${namespace}.blog (it is a hook of another deployment); refusing to overwrite or delete it`,
    );
    const kept = await core.readNamespacedConfigMap({ name: 'shared', namespace });
    expect(kept.metadata?.uid).toBe(replaced.metadata?.uid);
    expect(kept.data).toEqual({ from: 'shop-again' });
  });
});

describe('a hook named like a Secret made with the API, in the agent', () => {
  const ns = useNamespace('hook-owner-agent');
  const agentNs = useNamespace('hook-owner-agent-mooring');

  it('fails the sync with a commit status naming the Secret; nothing is written', async () => {
    const namespace = ns();
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const made = await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'db-creds' }, stringData: { password: 'made-by-hand' } },
    });
    const {
      receiver,
      first: sha,
      agent,
    } = await startGitAgent({
      repo: `hook-owner-${Date.now().toString(36)}/shop`,
      files: { 'app/app.yaml': commit('hook-succeeded') },
      cluster: { namespace: agentNs() },
      deployments: [{ name: 'shop', namespace, paths: ['app'] }],
    });
    const poller = pollHealth(agent.port);
    try {
      const ended = await eventually('the failed sync', async () => receiver.ended(sha), 90_000);
      expect(ended.state).toBe('failure');
      expect(ended.description).toContain(
        `hook Secret ${namespace}/db-creds: a Secret of that name exists and was not created by this hook of deployment shop`,
      );
      const kept = await core.readNamespacedSecret({ name: 'db-creds', namespace });
      expect(kept.metadata?.uid).toBe(made.metadata?.uid);
      expect(kept.metadata?.resourceVersion).toBe(made.metadata?.resourceVersion);
      await expect(core.readNamespacedConfigMap({ name: 'app', namespace })).rejects.toMatchObject({
        code: 404,
      });
      await poller.answeredThroughout();
    } finally {
      await poller.stop();
      await agent.stop();
    }
  });
});
