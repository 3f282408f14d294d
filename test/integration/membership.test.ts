// Member Leases are verified (docs/replicas.md), on the real API server with Pods run by the test bed's kubelet:
// a Lease renewed in the future, one past the configured duration, one whose address carries a path and query are
// no members; in a Pod, only running Pods of the agent's workload are, reached at their IPs from the API whatever
// their Lease says; and `mooring status` names no forged member and says which deployment no replica syncs.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KubeApi } from '../../src/kube/api.ts';
import { MemberPods } from '../../src/kube/member-pods.ts';
import { listMembers, Membership } from '../../src/kube/membership.ts';
import { BEHAVIOR } from '../testbed/kubelet.ts';
import {
  clusterConfig,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  testbed,
  useNamespace,
} from './helpers.ts';

const YEAR_MS = 365 * 24 * 3600 * 1000;
const micro = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '000Z');

/** A member Lease of `prefix` as anyone who may write Leases there can write it. */
async function lease(
  namespace: string,
  prefix: string,
  holder: string,
  options: { renewedIn?: number; seconds?: number; address?: string; deployments?: string[] } = {},
): Promise<void> {
  // JSON: kubectl reads YAML 1.1, where a holder named `y` is a boolean.
  const dir = await manifestDir({
    'lease.yaml': JSON.stringify({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: `${prefix}-member-${holder}`,
        namespace,
        labels: { 'mooring.io/member': prefix },
        annotations: {
          ...(options.address ? { 'mooring.io/address': options.address } : {}),
          'mooring.io/deployments': (options.deployments ?? []).join(','),
        },
      },
      spec: {
        holderIdentity: holder,
        leaseDurationSeconds: options.seconds ?? 3600,
        acquireTime: micro(Date.now() - 60_000),
        renewTime: micro(Date.now() + (options.renewedIn ?? 0)),
      },
    }),
  });
  const made = await kubectl('apply', '-f', join(dir, 'lease.yaml'));
  expect(made.code, made.stderr).toBe(0);
}

async function pod(namespace: string, name: string, labels: Record<string, string>, behavior = 'ready') {
  const dir = await manifestDir({
    'pod.yaml': JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace, labels, annotations: { [BEHAVIOR]: behavior } },
      spec: { containers: [{ name: 'agent', image: 'mooring:test' }] },
    }),
  });
  const made = await kubectl('apply', '-f', join(dir, 'pod.yaml'));
  expect(made.code, made.stderr).toBe(0);
}

describe('member Leases are verified', () => {
  const ns = useNamespace('members');

  it('counts no Lease renewed in the future, past the configured duration, or with an address beyond an origin', async () => {
    const api = new KubeApi(clusterConfig());
    try {
      await lease(ns(), 'time', 'live', { address: 'http://127.0.0.1:8081' });
      await lease(ns(), 'time', 'ghost', { renewedIn: YEAR_MS, address: 'http://127.0.0.1:8082' });
      await lease(ns(), 'time', 'stale', { renewedIn: -60_000, seconds: 86_400 });
      await lease(ns(), 'time', 'hostile', { address: 'http://127.0.0.1:8083/stolen?x=' });
      const refused: string[] = [];
      const members = await listMembers(api, ns(), 'time', {
        durationMs: 15_000,
        refused: (name, why) => refused.push(`${name}: ${why}`),
      });
      expect(members.map((m) => [m.identity, m.address])).toEqual([['live', 'http://127.0.0.1:8081']]);
      // Each forged Lease is told with its reason (the agent logs it); an expired one is a replica that stopped.
      expect(refused.sort()).toEqual([
        'time-member-ghost: renewTime in the future',
        'time-member-hostile: its address is not a plain http(s) origin',
      ]);
    } finally {
      api.close();
    }
  });

  it('asks a holder missing from the last list of its own Lease: one that joined since lives, an expired one is gone', async () => {
    const api = new KubeApi(clusterConfig());
    const member = (identity: string, now?: () => number) =>
      new Membership(api, {
        namespace: ns(),
        prefix: 'late',
        identity,
        durationMs: 15_000,
        renewMs: 5_000,
        now,
      });
    try {
      const early = member('replica-a');
      expect((await early.round()).map((m) => m.identity)).toEqual(['replica-a']);
      // replica-b joins after replica-a's list: replica-a's view lacks it, its Lease says it lives.
      await member('replica-b').round();
      expect(early.isLive('replica-b')).toBe(false);
      expect(await early.gone('replica-b')).toBe(false);
      expect(await early.gone('never-joined')).toBe(true);
      // A minute later, without a renewal, replica-b's Lease has expired.
      expect(await member('replica-c', () => Date.now() + 60_000).gone('replica-b')).toBe(true);
      // A hand-written member Lease under another name makes nobody live: the holder's own Lease is what is read.
      await lease(ns(), 'late', 'forged', {});
      expect(await early.gone('forged')).toBe(true);
    } finally {
      api.close();
    }
  });

  it("in a Pod: only running Pods of the agent's workload count, at their IPs from the API", async () => {
    const api = new KubeApi(clusterConfig());
    const workload = { 'app.kubernetes.io/name': 'mooring', 'app.kubernetes.io/instance': 'members' };
    try {
      await pod(ns(), 'agent-0', { ...workload, 'pod-template-hash': 'a' });
      await pod(ns(), 'agent-1', { ...workload, 'pod-template-hash': 'b' });
      await pod(ns(), 'stranger', { 'app.kubernetes.io/name': 'other', 'app.kubernetes.io/instance': 'x' });
      await pod(ns(), 'failed', workload, 'fail');
      const ips = await eventually('the Pods run', async () => {
        const out = await kubectl('-n', ns(), 'get', 'pods', '-o', 'json');
        const items = (
          JSON.parse(out.stdout) as {
            items: { metadata: { name: string }; status?: { phase?: string; podIP?: string } }[];
          }
        ).items;
        const settled = items.filter((p) => p.status?.podIP && p.status.phase !== 'Pending');
        return settled.length === 4
          ? new Map(items.map((p) => [p.metadata.name, p.status?.podIP]))
          : undefined;
      });
      for (const holder of ['agent-0', 'agent-1', 'stranger', 'failed', 'ghost'])
        await lease(ns(), 'pods', holder, { address: 'http://attacker.example/stolen?x=' });
      const pods = await new MemberPods(api, { namespace: ns(), pod: 'agent-0', port: 8080 }).addresses();
      const members = await listMembers(api, ns(), 'pods', { durationMs: 15_000, pods });
      expect(members.map((m) => [m.identity, m.address])).toEqual([
        ['agent-0', `http://${ips.get('agent-0')}:8080`],
        ['agent-1', `http://${ips.get('agent-1')}:8080`],
      ]);
    } finally {
      api.close();
    }
  });

  it('mooring status names no forged member, and says which deployment no replica reports', async () => {
    const deployments = ['d1', 'd2', 'd3', 'd4'];
    await lease(ns(), 'st', 'x', { deployments: ['d1', 'd2'], address: 'http://127.0.0.1:8081' });
    await lease(ns(), 'st', 'y', { address: 'http://127.0.0.1:8082' });
    await lease(ns(), 'st', 'ghost', { renewedIn: YEAR_MS, deployments: ['d3', 'd4'] });
    const dir = await manifestDir({});
    const configFile = join(dir, 'mooring.yaml');
    await writeFile(
      configFile,
      stringify({
        cluster: { kubeconfig: testbed().kube.kubeconfig, namespace: ns() },
        sources: { local: [{ name: 'here', path: dir }] },
        deployments: deployments.map((name) => ({ name, namespace: ns(), source: 'here' })),
        leaderElection: { mode: 'shared', leaseName: 'st', leaseDuration: '1h' },
      }),
    );
    const status = await mooring('status', '--config', configFile, '-o', 'json');
    expect(status.code, status.stderr).toBe(0);
    const rows = (
      JSON.parse(status.stdout) as {
        items: { deployment: string; replica?: string | null; unsynced?: string }[];
      }
    ).items;
    expect(rows.map((r) => [r.deployment, r.replica])).toEqual([
      ['d1', 'x'],
      ['d2', 'x'],
      ['d3', null],
      ['d4', null],
    ]);
    for (const r of rows.slice(2))
      expect(r.unsynced).toMatch(/^owner [xy] has not reported it since \d{4}-\d\d-\d\dT[\d:.]+Z$/);
    expect(rows.slice(0, 2).every((r) => r.unsynced === undefined)).toBe(true);
    const table = await mooring('status', '--config', configFile);
    expect(table.stdout).not.toContain('ghost');
    expect(table.stdout).toMatch(/d3 .* owner [xy] has not reported it since/);
  });
});
