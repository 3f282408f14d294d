// A leader whose renewals stop getting through (its requests to the Lease hang, as behind a proxy or a link that
// drops them, while its other requests still pass) steps down by its own clock before the standby may take the
// lease over, so that two agents never sync at once; its requests end at the deadline, and once they pass again it
// stands by. A replica whose renewals pass while only its list of the members hangs stays in. On the real API
// server, the requests through the test bed's fault proxy.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { Membership, memberLeaseName } from '../../src/kube/membership.ts';
import { proxiedServer, startAgent } from './fault-helpers.ts';
import { useCleanups } from './faults-support.ts';
import {
  clusterConfig,
  deleteNamespace,
  eventually,
  kubectl,
  leaderConfig,
  TEST_LEASE_MS,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const LEASE_MS = TEST_LEASE_MS;
const RENEW_MS = 1000;

/** When the first record with this msg at or after `after` was logged (epoch ms; undefined: none yet). */
function timeOf(
  records: readonly { msg: string; time?: unknown }[],
  msg: string,
  after = 0,
): number | undefined {
  for (const r of records) {
    const at = typeof r.time === 'string' ? Date.parse(r.time) : Number.NaN;
    if (r.msg === msg && at >= after) return at;
  }
  return undefined;
}

describe('a leader that cannot renew', () => {
  const ns = useNamespace('leader-deadline');
  const cleanup = useCleanups();

  it('steps down before the standby takes over, and stands by once its requests pass again', async () => {
    const { proxy, kubeconfig } = await proxiedServer(cleanup);
    const agentNs = `mooring-deadline-${Date.now().toString(36)}`;
    await kubectl('create', 'namespace', agentNs);
    cleanup(async () => {
      await deleteNamespace(agentNs);
    });
    const direct = await leaderConfig(await tempDir(), agentNs, ns());
    // The same agent, its API server reached through the proxy.
    const proxied = join(await tempDir(), 'mooring.yaml');
    const text = await readFile(direct, 'utf8');
    expect(text).toContain(testbed().kube.kubeconfig);
    await writeFile(proxied, text.replace(testbed().kube.kubeconfig, kubeconfig));

    const a = startAgent(proxied);
    cleanup(() => a.stop());
    await eventually('a leads', async () => (timeOf(a.logs(), 'leading: syncing') ? true : undefined));
    const b = startAgent(direct);
    cleanup(() => b.stop());
    await eventually('b stands by', async () =>
      timeOf(b.logs(), 'standing by for the leader lease') ? true : undefined,
    );
    await eventually('a synced', async () =>
      a.logs().some((r) => r.outcome === 'stable') ? true : undefined,
    );

    // a's requests to its Lease hang from now on; everything else it sends still passes.
    const leases = (r: { path: string }) => r.path.startsWith('/apis/coordination.k8s.io/');
    const hungAt = Date.now();
    proxy.add({ kind: 'hang' }, { match: leases });
    await eventually(
      'b leads',
      async () => (timeOf(b.logs(), 'leading: syncing') ? true : undefined),
      30_000,
    );
    const bLeads = timeOf(b.logs(), 'leading: syncing') as number;
    const aStepsDown = timeOf(a.logs(), 'lost the leader lease: standing by', hungAt);
    const aLines = a.logs().map((r) => r.msg);
    expect(aStepsDown, `a's last lines: ${aLines.slice(-6).join(' | ')}`).toBeDefined();
    // a stepped down before b took over: the deadline after its last renewal (at most an interval before the hang).
    expect(aStepsDown as number).toBeLessThan(bLeads);
    expect((aStepsDown as number) - hungAt).toBeLessThan(LEASE_MS);
    // Its last sync had ended: no sync of a's is under way once b leads.
    const started = a.logs().filter((r) => r.msg === 'sync started').length;
    expect(a.logs().filter((r) => typeof r.outcome === 'string').length).toBe(started);

    // a gives each round's requests up at the deadline, so its rounds go on (a request of the old code waited out
    // its timeout and retries); the hang lifted, its rounds find b holding the lease: b keeps it and a stands by.
    await eventually('a second round of a meets the hang', async () =>
      proxy.count('hang') >= 2 ? true : undefined,
    );
    const liftedAt = Date.now();
    proxy.pass();
    await new Promise((r) => setTimeout(r, 3 * RENEW_MS));
    const holder = await kubectl(
      '-n',
      agentNs,
      'get',
      'lease',
      'mooring',
      '-o',
      'jsonpath={.spec.holderIdentity}',
    );
    const bIdentity = b.logs().find((r) => r.msg === 'standing by for the leader lease')?.identity;
    expect(holder.stdout).toBe(bIdentity);
    expect(timeOf(a.logs(), 'leading: syncing', liftedAt)).toBeUndefined();
    expect(timeOf(b.logs(), 'lost the leader lease: standing by')).toBeUndefined();
    expect(a.alive() && b.alive()).toBe(true);
  });

  it('in shared mode, counts itself out before the others count it out', async () => {
    const { proxy, api: proxiedApi } = await proxiedServer(cleanup);
    const direct = new KubeApi(clusterConfig());
    cleanup(() => direct.close());
    const seen: Record<string, { at: number; members: string[] }[]> = { a: [], b: [] };
    const member = (api: KubeApi, identity: 'a' | 'b') => {
      const m = new Membership(api, {
        namespace: ns(),
        prefix: 'deadline',
        identity,
        durationMs: LEASE_MS,
        renewMs: RENEW_MS,
      });
      m.run({ onChange: (members) => seen[identity]?.push({ at: Date.now(), members }) });
      cleanup(() => m.stop());
      return m;
    };
    member(proxiedApi, 'a');
    member(direct, 'b');
    const last = (who: 'a' | 'b') => seen[who]?.at(-1)?.members.join(',');
    await eventually('both see both', async () =>
      last('a') === 'a,b' && last('b') === 'a,b' ? true : undefined,
    );

    const hungAt = Date.now();
    proxy.add({ kind: 'hang' }, { match: (r) => r.path.startsWith('/apis/coordination.k8s.io/') });
    await eventually('b counts a out', async () => (last('b') === 'b' ? true : undefined), 30_000);
    const bCountsOut = seen.b?.find((c) => c.at >= hungAt && c.members.join(',') === 'b')?.at as number;
    const aCountsOut = seen.a?.find((c) => c.at >= hungAt && c.members.length === 0)?.at;
    expect(aCountsOut, JSON.stringify(seen.a)).toBeDefined();
    expect(aCountsOut as number).toBeLessThan(bCountsOut);
    expect((aCountsOut as number) - hungAt).toBeLessThan(LEASE_MS);

    // Its requests pass again: it renews and both count it in.
    proxy.pass();
    await eventually('a is back', async () =>
      last('a') === 'a,b' && last('b') === 'a,b' ? true : undefined,
    );
  });

  it('in shared mode, stays in while only its list of the members does not answer', async () => {
    const { proxy, api: proxiedApi } = await proxiedServer(cleanup);
    const direct = new KubeApi(clusterConfig());
    cleanup(() => direct.close());
    const seen: Record<string, { at: number; members: string[] }[]> = { a: [], b: [] };
    const errors: string[] = [];
    const member = (api: KubeApi, identity: 'a' | 'b') => {
      const m = new Membership(api, {
        namespace: ns(),
        prefix: 'listhang',
        identity,
        durationMs: LEASE_MS,
        renewMs: RENEW_MS,
      });
      m.run({
        onChange: (members) => seen[identity]?.push({ at: Date.now(), members }),
        onError: (error) => errors.push(String(error)),
      });
      cleanup(() => m.stop());
      return m;
    };
    const mine = member(proxiedApi, 'a');
    const other = member(direct, 'b');
    const last = (who: 'a' | 'b') => seen[who]?.at(-1)?.members.join(',');
    await eventually('both see both', async () =>
      last('a') === 'a,b' && last('b') === 'a,b' ? true : undefined,
    );

    // Its renewals pass; only its list of the member Leases hangs, for more than two lease durations.
    const hungAt = Date.now();
    const listing = (r: { method: string; path: string }) => r.method === 'GET' && /\/leases\?/.test(r.path);
    proxy.add({ kind: 'hang' }, { match: listing });
    await new Promise((r) => setTimeout(r, 2.5 * LEASE_MS));
    const since = (who: 'a' | 'b') => seen[who]?.filter((c) => c.at >= hungAt) ?? [];
    expect(since('a'), JSON.stringify(seen.a)).toEqual([]);
    expect(since('b'), JSON.stringify(seen.b)).toEqual([]);
    expect(last('a')).toBe('a,b');
    // Each round's list met the hang and ended: the renewals went on meanwhile.
    expect(proxy.count('hang', listing)).toBeGreaterThan(2);
    expect(errors.some((e) => /member Leases/.test(e))).toBe(true);

    // Asked whether b is gone while the read of b's own Lease hangs too: no answer is no, within a renewal interval
    // (a sync's gate and a webhook passed on wait on it).
    const reading = (r: { method: string; path: string }) =>
      r.method === 'GET' && r.path.endsWith(`/leases/${memberLeaseName('listhang', 'b')}`);
    proxy.add({ kind: 'hang' }, { match: reading });
    const askedAt = Date.now();
    expect(await mine.gone('b')).toBe(false);
    expect(Date.now() - askedAt).toBeLessThan(RENEW_MS + 1500);
    expect(proxy.count('hang', reading)).toBe(1);

    // Once its list answers, it reads the members again: the other stops and is gone from its view.
    proxy.pass();
    await other.stop();
    await eventually('a reads b gone', async () => (last('a') === 'a' ? true : undefined));
  });
});
