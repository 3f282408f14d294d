// A second control plane on the test bed (`npm run testbed -- up --clusters 2`): the same binaries started again on
// other ports, with its own etcd, API server, controller manager and kubelet, so that two real clusters serve
// independent state (what many-cluster tests need).
import { describe, expect, it } from 'vitest';
import { readEnv, status, up } from '../testbed/testbed.ts';
import { runTool, testbed } from './helpers.ts';

describe('the test bed with two clusters', () => {
  it('starts a second control plane beside the first: its node is ready and its state is its own', async () => {
    const { env } = await up((line) => process.stderr.write(`testbed: ${line}\n`), { clusters: 2 });
    const second = env.clusters?.[0];
    expect(second?.name).toBe('cluster-2');
    expect(second?.server).not.toBe(testbed().kube.server);
    // Other test files may have asked for more planes of the same bed; the second is there either way.
    expect((await readEnv())?.clusters?.map((c) => c.name)).toContain('cluster-2');
    const kubectl = testbed().tools.kubectl;
    const on = (kubeconfig: string, ...args: string[]) =>
      runTool(kubectl, ['--kubeconfig', kubeconfig, ...args]);
    const nodes = await on(
      second?.kubeconfig as string,
      'get',
      'nodes',
      '-o',
      'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}',
    );
    expect(nodes.stdout.trim()).toBe('True');
    const name = `only-on-two-${Date.now().toString(36)}`;
    expect((await on(second?.kubeconfig as string, 'create', 'namespace', name)).code).toBe(0);
    expect((await on(testbed().kube.kubeconfig, 'get', 'namespace', name)).code).not.toBe(0);
    expect((await on(second?.kubeconfig as string, 'get', 'namespace', name)).code).toBe(0);
    // Asked again, the running bed is reused; its daemons are all recorded, so `down` stops both planes.
    const again = await up(() => undefined, { clusters: 2 });
    expect(again.started).toBe(false);
    const names = (await status()).daemons.map((d) => d.name);
    expect(names).toEqual(
      expect.arrayContaining(['cluster-2-etcd', 'cluster-2-kube-apiserver', 'cluster-2-kubelet']),
    );
    expect((await status()).running).toBe(true);
  }, 180_000);
});
