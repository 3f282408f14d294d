// Replicas sharing the work (leaderElection.mode: shared), as processes on the real API server: three replicas and
// 60 deployments of one repository. Each revision of each deployment is synced once (one pending and one success
// status per commit and deployment, an attempt a server fault failed and its replica retried aside; one release in
// its ledger); a replica killed with SIGKILL loses its deployments
// to the others once its Lease expires; a replica that joins takes few of them; a webhook sent to any one replica
// reaches them all. A forged member Lease (renewed a year ahead, an address with a path and query of its own)
// takes no deployment, is sent no webhook, and `mooring status` names it nowhere.
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { hostname, tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { appFolder, appName, fleetFiles } from '../../bench/support/fleet-apps.ts';
import {
  type AgentProcess,
  agentConfig,
  bareRepo,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  pollHealth,
  startAgent,
  startStatusReceiver,
  testbed,
  useNamespace,
} from './helpers.ts';

const APPS = 60;
const SECRET = 'replicas-hook-secret';
const LEASE_SECONDS = 6;
/** What a commit status says of a fault of the API server or the network that the agent retries. */
const TRANSIENT =
  /\b(?:5\d\d|429|timed? ?out|timeout|ECONNRESET|ECONNREFUSED|EPIPE|socket hang up|unreachable|conflicting writes)\b/i;

const names = Array.from({ length: APPS }, (_, i) => appName(i));
/** Every application at `n`, bench:fleet's shape (a ConfigMap, a ServiceAccount, a Service and a Deployment). */
const round = (n: number) => fleetFiles(APPS, n);

interface MemberLease {
  metadata: { annotations?: Record<string, string> };
  spec: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}

const caches: string[] = [];
// After the tests, which stop their replicas themselves.
afterAll(async () => {
  for (const dir of caches) await rm(dir, { recursive: true, force: true });
});

/**
 * A replica as its own process with a Git cache of its own, as each Pod of the chart has its own emptyDir (agents in
 * other processes never share a cache folder: src/sources/git/lock.ts).
 */
async function replicaProcess(config: Parameters<typeof startAgent>[0]): Promise<AgentProcess> {
  const shared = process.env.MOORING_CACHE_DIR;
  const own = await mkdtemp(joinPath(tmpdir(), 'mooring-replica-cache-'));
  caches.push(own);
  process.env.MOORING_CACHE_DIR = own;
  try {
    // The process takes its environment as it starts.
    return startAgent(config, { process: true });
  } finally {
    if (shared === undefined) delete process.env.MOORING_CACHE_DIR;
    else process.env.MOORING_CACHE_DIR = shared;
  }
}

/** A replica's identity: its host name and process id, when no POD_NAME names it. */
const identity = (replica: AgentProcess) => `${hostname()}-${replica.child.pid}`;

describe('replicas sharing the work', () => {
  const ns = useNamespace('replicas');
  const agentNs = useNamespace('replicas-mooring');

  it('syncs each revision once over three replicas, survives a SIGKILL, and moves few deployments to a fourth', async () => {
    const repo = await bareRepo(`replicas-${Date.now().toString(36)}/fleet`);
    const first = await repo.commit(round(1));
    const statuses = await startStatusReceiver();
    const files = await manifestDir({ hook: SECRET });
    const config = await agentConfig({
      cluster: { namespace: agentNs() },
      // Polled only at start and when a replica takes deployments: later commits arrive by webhook.
      git: [{ name: 'fleet', repo, interval: '1h' }],
      deployments: names.map((name, i) => ({
        name,
        namespace: ns(),
        source: 'fleet',
        paths: [appFolder(i)],
        stability: { timeout: '3m' },
      })),
      statuses,
      extra: {
        concurrency: 10,
        server: { webhooks: { generic: { secret: { file: `${files}/hook` } } } },
        leaderElection: {
          mode: 'shared',
          leaseName: 'mooring',
          leaseDuration: `${LEASE_SECONDS}s`,
          renewInterval: '1s',
        },
      },
    });
    // A member Lease written by hand: renewed a year ahead, claiming deployments, asking for webhooks at its own
    // path and query on a listener that counts what reaches it.
    let stolen = 0;
    const trap = createServer((req, res) => {
      stolen++;
      res.writeHead(202).end();
      req.resume();
    });
    await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
    const trapPort = (trap.address() as { port: number }).port;
    const ghostFile = joinPath(files, 'ghost.yaml');
    await writeFile(
      ghostFile,
      JSON.stringify({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {
          name: 'mooring-member-ghost',
          namespace: agentNs(),
          labels: { 'mooring.io/member': 'mooring' },
          annotations: {
            'mooring.io/address': `http://127.0.0.1:${trapPort}/stolen?x=`,
            'mooring.io/deployments': names.slice(0, 5).join(','),
          },
        },
        spec: {
          holderIdentity: 'ghost',
          leaseDurationSeconds: LEASE_SECONDS,
          renewTime: new Date(Date.now() + 365 * 24 * 3600 * 1000).toISOString().replace(/Z$/, '000Z'),
        },
      }),
    );
    const forged = await kubectl('apply', '-f', ghostFile);
    expect(forged.code, forged.stderr).toBe(0);
    const replicas: AgentProcess[] = [];
    const join = async () => {
      const replica = await replicaProcess(config);
      replicas.push(replica);
      await replica.listening().catch((error: unknown) => {
        throw new Error(`${String(error)}\n${replica.output().slice(-4000)}`);
      });
      return replica;
    };
    /**
     * Which replica syncs each deployment, as the live member Leases say (identity by deployment), and how many
     * deployments they announced in all: while replicas take their new shares, two may both name one deployment.
     */
    const owners = async () => {
      const out = await kubectl(
        'get',
        'leases',
        '-n',
        agentNs(),
        '-l',
        'mooring.io/member=mooring',
        '-o',
        'json',
      );
      const owner = new Map<string, string>();
      let announced = 0;
      for (const lease of (JSON.parse(out.stdout) as { items: MemberLease[] }).items) {
        // A killed replica's Lease stays until it expires; what it announced is no longer true.
        const renewed = Date.parse(lease.spec.renewTime ?? '');
        if (!(renewed + (lease.spec.leaseDurationSeconds ?? 0) * 1000 > Date.now())) continue;
        // Nor is a renewal in the future (beyond a few seconds of clock skew): a forged Lease.
        if (renewed > Date.now() + 5_000) continue;
        const list = (lease.metadata.annotations?.['mooring.io/deployments'] ?? '')
          .split(',')
          .filter(Boolean);
        announced += list.length;
        for (const name of list) owner.set(name, lease.spec.holderIdentity ?? '');
      }
      return { owner, announced };
    };
    /** Every deployment announced by exactly one of `count` replicas, the same in two reads in a row. */
    const balanced = (count: number) => {
      let previous = '';
      return eventually(
        `${APPS} deployments over ${count} replicas`,
        async () => {
          const { owner, announced } = await owners();
          const settled = owner.size === APPS && announced === APPS && new Set(owner.values()).size === count;
          const key = JSON.stringify([...owner.entries()].sort());
          const same = settled && key === previous;
          previous = settled ? key : '';
          return same ? owner : undefined;
        },
        60_000,
      );
    };
    /**
     * Every deployment's statuses on `sha`: one pending, then one success. Between them, only the end of an attempt
     * that a passing server fault failed and the same replica retried (an `error` naming the fault; the retry posts
     * no second pending): the machine under test is loaded, and a retried fault is what users are shown then.
     * Anything else between them (a cancelled or second sync, an error of the agent's own) fails the test.
     */
    const syncedOnce = async (sha: string) => {
      const final = (name: string) => {
        const last = statuses.states(sha, name).at(-1);
        return last === 'success' || last === 'failure' ? last : undefined;
      };
      try {
        for (const name of names)
          await eventually(`${name} at ${sha.slice(0, 7)}`, async () => final(name), 240_000);
      } catch (error) {
        // What the replicas said of the deployments that never got there, and who announced them.
        const missing = names.filter((n) => !final(n));
        const { owner } = await owners();
        const told = replicas.map(
          (r) =>
            `--- ${identity(r)} (alive ${r.alive()}):\n${r.lines
              .filter(
                (l) =>
                  missing.slice(0, 3).some((n) => l.includes(`"${n}"`)) || /shar|replica|webhook/.test(l),
              )
              .slice(-60)
              .join('\n')}`,
        );
        throw new Error(
          `${String(error)}\nmissing at ${sha.slice(0, 7)}: ${missing.map((n) => `${n} (${owner.get(n) ?? 'no owner'})`).join(', ')}\n${told.join('\n')}`,
        );
      }
      for (const name of names) {
        const posted = statuses.statuses().filter((s) => s.sha === sha && s.context.endsWith(name));
        const states = posted.map((s) => s.state);
        const between = posted.slice(1, -1);
        const retried =
          between.length > 0 && between.every((s) => s.state === 'error' && TRANSIENT.test(s.description));
        if (retried)
          console.log(
            `replicas: ${name} retried after a server fault: ${between.map((s) => s.description).join(' | ')}`,
          );
        const expected = retried
          ? ['pending', ...between.map(() => 'error'), 'success']
          : ['pending', 'success'];
        if (states.join() === expected.join()) continue;
        // What was posted, and what each replica said of this deployment.
        const told = replicas.map(
          (r) =>
            `--- ${identity(r)}:\n${r.lines
              .filter((l) => l.includes(`"${name}"`))
              .slice(-30)
              .join('\n')}`,
        );
        expect(
          states,
          `${name}: ${posted.map((s) => `${s.state}: ${s.description}`).join(' | ')}\n${told.join('\n')}`,
        ).toEqual(expected);
      }
    };
    const hook = async (replica: AgentProcess) => {
      const body = JSON.stringify({ sources: ['fleet'] });
      const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
      const res = await fetch(`http://127.0.0.1:${replica.port()}/hooks/generic`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Mooring-Signature': signature },
        body,
      });
      expect(res.status).toBe(202);
    };
    /** Stable releases recorded per deployment at `sha` (a retried attempt's error release aside). */
    const releasesAt = async (sha: string) => {
      const out = await kubectl(
        'get',
        'configmaps',
        '-n',
        agentNs(),
        '-l',
        'app.kubernetes.io/component=ledger',
        '-o',
        'json',
      );
      const count = new Map<string, number>();
      for (const cm of (
        JSON.parse(out.stdout) as {
          items: { metadata: { labels: Record<string, string> }; data?: Record<string, string> }[];
        }
      ).items) {
        const releases = JSON.parse(cm.data?.['releases.json'] ?? '[]') as {
          commit?: string;
          result?: string;
        }[];
        count.set(
          cm.metadata.labels['mooring.io/deployment'] ?? '',
          releases.filter((r) => r.commit === sha && r.result === 'stable').length,
        );
      }
      return count;
    };
    const syncedBy = (replica: AgentProcess, sha: string) =>
      replica.logs().filter((r) => r.outcome === 'stable' && String(r.revision ?? '') === sha.slice(0, 12))
        .length;
    // A sync's outcome line is written after its commit status is posted (each replica is a process of its own):
    // the lines are waited for until every deployment's is in, then counted.
    const allLogged = (rs: readonly AgentProcess[], sha: string) =>
      eventually(`every sync of ${sha.slice(0, 12)} logged`, async () =>
        rs.reduce((n, r) => n + syncedBy(r, sha), 0) >= APPS ? true : undefined,
      );

    try {
      // Three replicas: the first one alone takes all, the next ones take their shares as they join.
      for (let i = 0; i < 3; i++) await join();
      const three = await balanced(3);
      await syncedOnce(first);
      await allLogged(replicas, first);
      for (const [name, count] of await releasesAt(first)) expect(count, name).toBe(1);
      expect(replicas.reduce((n, r) => n + syncedBy(r, first), 0)).toBe(APPS);

      // One replica killed; a commit announced to a survivor: the survivors sync their own at once (the webhook
      // is passed on) and the killed one's once its Lease has expired.
      const [victim, a, b] = replicas as [AgentProcess, AgentProcess, AgentProcess];
      // A survivor's /healthz is asked all along the rest: each answer within 1 s, forged Lease and all.
      const poller = pollHealth(a.port);
      const orphaned = names.filter((n) => three.get(n) === identity(victim));
      expect(orphaned.length).toBeGreaterThan(0);
      victim.child.kill('SIGKILL');
      await victim.exited;
      const second = await repo.commit(round(2));
      await hook(a);
      await syncedOnce(second);
      await allLogged([a, b], second);
      const two = await balanced(2);
      for (const [name, count] of await releasesAt(second)) expect(count, name).toBe(1);
      expect(syncedBy(a, second) + syncedBy(b, second)).toBe(APPS);
      expect(syncedBy(a, second)).toBeGreaterThan(0);
      expect(syncedBy(b, second)).toBeGreaterThan(0);

      // A fourth process joins the two: it takes about a third, the others keep the rest.
      const fourth = await join();
      const after = await balanced(3);
      let moved = 0;
      for (const [name, id] of after) if (two.get(name) !== id) moved++;
      const taken = names.filter((n) => after.get(n) === identity(fourth)).length;
      console.log(
        `replicas: a third replica joining moved ${moved} of ${APPS} deployments (it took ${taken})`,
      );
      expect(taken).toBeGreaterThan(0);
      // Consistent hashing with bounded loads: about a third moves (20 of 60; over 3,000 draws of replica names at
      // most 30, and above 25 in 1.4 %); a modulo split would move two thirds.
      expect(moved).toBeLessThanOrEqual(APPS / 2);
      const third = await repo.commit(round(3));
      await hook(fourth);
      await syncedOnce(third);
      await allLogged([a, b, fourth], third);
      for (const [name, count] of await releasesAt(third)) expect(count, name).toBe(1);
      expect(syncedBy(fourth, third)).toBe(taken);
      expect(syncedBy(a, third) + syncedBy(b, third) + syncedBy(fourth, third)).toBe(APPS);
      for (const r of [a, b, fourth]) expect(r.alive()).toBe(true);
      // The forged member: no webhook reached it, each replica said why it is no member, and status shows each
      // deployment with the replica that syncs it.
      expect(stolen).toBe(0);
      for (const r of [a, b, fourth])
        expect(r.output()).toContain(
          'member Lease mooring-member-ghost is not counted: renewTime in the future',
        );
      await poller.answeredThroughout();
      const status = await mooring(
        'status',
        '--kubeconfig',
        testbed().kube.kubeconfig,
        '--agent-namespace',
        agentNs(),
        '-o',
        'json',
      );
      expect(status.code, status.stderr).toBe(0);
      const rows = (JSON.parse(status.stdout) as { items: { deployment: string; replica?: string | null }[] })
        .items;
      const live = new Set([a, b, fourth].map(identity));
      expect(
        rows.filter((r) => !live.has(r.replica ?? '')).map((r) => `${r.deployment}: ${r.replica}`),
      ).toEqual([]);
    } finally {
      for (const r of replicas) await r.stop();
      trap.close();
    }
  }, 600_000);

  it('shares the deployments of a set among replicas as they come and go: each announced by one, none left behind', async () => {
    const repo = await bareRepo(`replicas-set-${Date.now().toString(36)}/fleet`);
    const ten = fleetFiles(10, 1);
    await repo.commit(ten);
    const setNs = `${agentNs()}-set`;
    const config = await agentConfig({
      cluster: { namespace: setNs },
      git: [{ name: 'fleet', repo, interval: '1s' }],
      extra: {
        leaderElection: {
          mode: 'shared',
          leaseName: 'sets',
          leaseDuration: `${LEASE_SECONDS}s`,
          renewInterval: '1s',
        },
        deploymentSets: [
          {
            name: 'apps',
            generator: { gitDirectories: { source: 'fleet', directories: ['apps/*'] } },
            template: { name: '{{path.basename}}', namespace: ns(), source: 'fleet', paths: ['{{path}}'] },
          },
        ],
      },
    });
    const replicas = [await replicaProcess(config), await replicaProcess(config)];
    try {
      for (const r of replicas) await r.listening();
      /** Each live replica's announced deployments, from the member Leases. */
      const announced = async () => {
        const out = await kubectl('get', 'leases', '-n', setNs, '-l', 'mooring.io/member=sets', '-o', 'json');
        const all: string[] = [];
        for (const lease of (JSON.parse(out.stdout) as { items: MemberLease[] }).items) {
          const renewed = Date.parse(lease.spec.renewTime ?? '');
          if (!(renewed + LEASE_SECONDS * 1000 > Date.now())) continue;
          all.push(
            ...(lease.metadata.annotations?.['mooring.io/deployments'] ?? '').split(',').filter(Boolean),
          );
        }
        return all.sort();
      };
      /** Every one of `wanted` announced by exactly one replica, and nothing else. */
      const exactly = (wanted: string[]) =>
        eventually(
          `${wanted.length} deployments each announced once`,
          async () =>
            JSON.stringify(await announced()) === JSON.stringify([...wanted].sort()) ? true : undefined,
          120_000,
        );
      const stable = async (name: string, sha: string) => {
        const out = await kubectl('get', 'configmap', `mooring-ledger-${name}`, '-n', setNs, '-o', 'json');
        if (out.code !== 0) return undefined;
        const data = (JSON.parse(out.stdout) as { data: Record<string, string> }).data;
        const releases = JSON.parse(data['releases.json'] ?? '[]') as { commit?: string; result: string }[];
        return releases.filter((r) => r.commit === sha && r.result === 'stable').length === 1
          ? data
          : undefined;
      };
      const first = Array.from({ length: 10 }, (_, i) => appName(i));
      await exactly(first);
      // Four folders added: each new deployment is taken by one replica and synced once at that commit.
      const more = await repo.commit(
        Object.fromEntries(Object.entries(fleetFiles(14, 1)).filter(([path]) => !Object.hasOwn(ten, path))),
      );
      const fourteen = Array.from({ length: 14 }, (_, i) => appName(i));
      await exactly(fourteen);
      for (const name of fourteen.slice(10))
        await eventually(`${name} synced once at ${more.slice(0, 7)}`, () => stable(name, more), 120_000);
      // Three removed: no replica announces them, and none holds their claim.
      const removing: Record<string, null> = {};
      for (const i of [0, 1, 2])
        for (const path of Object.keys(fleetFiles(i + 1, 1)))
          if (path.startsWith(`${appFolder(i)}/`)) removing[path] = null;
      await repo.commit(removing);
      await exactly(fourteen.slice(3));
      for (const name of fourteen.slice(0, 3)) {
        const out = await kubectl('get', 'configmap', `mooring-ledger-${name}`, '-n', setNs, '-o', 'json');
        const data = (JSON.parse(out.stdout) as { data: Record<string, string> }).data;
        expect(data['holder.json'], name).toBeUndefined();
      }
    } finally {
      for (const r of replicas) await r.stop();
      await kubectl('delete', 'namespace', setNs, '--wait=false');
    }
  }, 420_000);
});
