// A ledger ConfigMap written by hand in the agent's namespace (or left broken by another program): it fails its own
// deployment, by name, and no other. Before, one ledger whose releases.json was not JSON made the agent's start fail
// again and again, so that no deployment of the agent synced at all.
import { afterAll, describe, expect, it } from 'vitest';
import { api, ledgerOf } from './faults-support.ts';
import { deleteNamespace, eventually, kubectl, manifestDir, startGitAgent, useNamespace } from './helpers.ts';

describe('a broken ledger', () => {
  const ns = useNamespace('ledger-hostile');
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('fails its own deployment by name, while the agent starts and syncs the others', async () => {
    const suffix = Date.now().toString(36);
    const agentNs = `mooring-ledger-h-${suffix}`;
    cleanups.push(async () => {
      await deleteNamespace(agentNs);
    });
    expect((await kubectl('create', 'namespace', agentNs)).code).toBe(0);
    const broken = await manifestDir({
      'ledger.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: mooring-ledger-broken
  namespace: ${agentNs}
  labels: {app.kubernetes.io/managed-by: mooring, app.kubernetes.io/component: ledger, mooring.io/deployment: broken}
data:
  releases.json: '[{'
`,
    });
    expect((await kubectl('apply', '-f', broken)).code).toBe(0);
    const config = (name: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {a: "1"}
`;
    const { first, agent, receiver } = await startGitAgent({
      repo: `ledger-hostile-${suffix}/app`,
      files: { 'fine/cm.yaml': config('fine'), 'broken/cm.yaml': config('broken') },
      cluster: { name: 'ledger-h', namespace: agentNs },
      deployments: [
        { name: 'fine', namespace: ns(), paths: ['fine'] },
        { name: 'broken', namespace: ns(), paths: ['broken'] },
      ],
    });
    cleanups.push(() => agent.stop());
    const kube = api();
    cleanups.push(() => kube.close());
    await eventually(
      'the other deployment synced',
      async () =>
        (await ledgerOf(kube, agentNs, 'fine')).releases.some(
          (r) => r.commit === first && r.result === 'stable',
        )
          ? true
          : undefined,
      90_000,
    );
    const ended = await eventually(
      'the broken deployment reported',
      async () =>
        receiver
          .statuses()
          .find((s) => s.sha === first && s.context.endsWith('/broken') && s.state !== 'pending'),
      90_000,
    );
    expect(ended?.state).not.toBe('success');
    expect(ended?.description).toContain(`mooring-ledger-broken`);
    expect(ended?.description).toContain('releases.json is not JSON');
    expect(agent.logged('cannot read the ledger').map((l) => l.deployment)).toContain('broken');
    // Nothing of the broken deployment was applied: it failed before its first write.
    const applied = await kubectl(
      '-n',
      ns(),
      'get',
      'configmap',
      'broken',
      '-o',
      'name',
      '--ignore-not-found',
    );
    expect(applied.stdout.trim()).toBe('');
    // The broken ledger is left as it was: never overwritten as if it were empty.
    const left = await kubectl(
      '-n',
      agentNs,
      'get',
      'configmap',
      'mooring-ledger-broken',
      '-o',
      'jsonpath={.data}',
    );
    expect(left.stdout).toBe('{"releases.json":"[{"}');
  }, 200_000);
});
