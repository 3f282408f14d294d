// `mooring deploy` of 400 objects (100 applications: a versioned ConfigMap and Secret, a Service, a Deployment) through
// the test bed's fault proxy in front of the real kube-apiserver, as a deploy from a laptop or CI meets a cluster
// that fails: answers of 500, 429 with Retry-After and connections reset during the writes; a write left without an
// answer; the server gone for longer than the client retries. What users care about: the exit code tells the truth,
// a deploy that could finish finishes, a failed one says the server was unreachable, the next deploy converges, and no version is
// duplicated or left dangling, nor any object written by a failed deploy left out of the inventory (a later, smaller
// set prunes it).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { manifests, writeManifests } from '../../bench/support/objects.ts';
import type { RequestInfo } from '../testbed/fault-proxy.ts';
import { proxiedServer } from './fault-helpers.ts';
import { useCleanups, versionProblems } from './faults-support.ts';
import { mooring, useNamespace } from './helpers.ts';

const APPS = 100;

type Kube = Awaited<ReturnType<typeof proxiedServer>>['direct'];

/** Every 4-object application present, each Deployment pointing at versions that exist; the versions' problems. */
async function converged(kube: Kube, namespace: string, apps: number) {
  const list = async (path: string) =>
    (await kube.request<{ items: { metadata: { name: string }; spec?: unknown }[] }>('GET', path)).items;
  const ns = encodeURIComponent(namespace);
  const maps = (await list(`/api/v1/namespaces/${ns}/configmaps`)).map((m) => m.metadata.name);
  const secrets = (await list(`/api/v1/namespaces/${ns}/secrets`)).map((m) => m.metadata.name);
  const services = (await list(`/api/v1/namespaces/${ns}/services`)).map((m) => m.metadata.name);
  const deployments = await list(`/apis/apps/v1/namespaces/${ns}/deployments`);
  const missingRefs: string[] = [];
  for (const d of deployments) {
    const text = JSON.stringify(d.spec);
    const config = /"name":"(app-\d+-config-v\d{3})"/.exec(text)?.[1];
    const secret = /"name":"(app-\d+-secret-v\d{3})"/.exec(text)?.[1];
    if (!config || !maps.includes(config)) missingRefs.push(`${d.metadata.name} -> ${config}`);
    if (!secret || !secrets.includes(secret)) missingRefs.push(`${d.metadata.name} -> ${secret}`);
  }
  const names = (prefix: RegExp, list: string[]) => list.filter((n) => prefix.test(n)).length;
  return {
    counts: {
      configMaps: names(/^app-\d+-config-v\d{3}$/, maps),
      secrets: names(/^app-\d+-secret-v\d{3}$/, secrets),
      services: names(/^app-\d+$/, services),
      deployments: deployments.length,
    },
    expected: { configMaps: apps, secrets: apps, services: apps, deployments: apps },
    missingRefs,
    versions: await versionProblems(kube, namespace, []),
  };
}

describe('mooring deploy through a failing API server', () => {
  const ns = useNamespace('cli-faults');
  const lost = useNamespace('cli-faults-gone');
  const agentNs = useNamespace('cli-faults-agent');
  const cleanup = useCleanups();

  async function setup(name: string, apps = APPS) {
    const bed = await proxiedServer(cleanup);
    const root = await mkdtemp(join(tmpdir(), `mooring-${name}-`));
    cleanup(() => rm(root, { recursive: true, force: true }));
    const dir = await writeManifests(join(root, 'all'), manifests(apps));
    const deploy = (namespace: string, from = dir, ...extra: string[]) =>
      mooring(
        'deploy',
        from,
        '--kubeconfig',
        bed.kubeconfig,
        '-n',
        namespace,
        '--agent-namespace',
        agentNs(),
        '--timeout',
        '4m',
        ...extra,
      );
    return { bed, root, dir, deploy };
  }

  /** Writes (not dry runs, not Events) to objects of `namespace`. */
  const writeTo = (namespace: string) => (r: RequestInfo) =>
    r.method !== 'GET' &&
    !r.path.includes('dryRun=All') &&
    !r.path.includes('/events') &&
    r.path.includes(`/namespaces/${namespace}/`);

  it('finishes through 500s, 429s and reset connections, and a redeploy then writes nothing', async () => {
    const { bed, deploy } = await setup('flaky');
    const writes = writeTo(ns());
    // Spread over the whole write phase: every 9th write of an object fails with a 500 (20 of them; a storage moment
    // passes, so each object meets it once, and one object twice in a row, as many as a write is tried again), every
    // 7th write meets a reset connection before it reaches the server (10), and every 5th request of the namespace a
    // 429 (15).
    const object = (r: RequestInfo) => r.path.split('?')[0] ?? r.path;
    const failed = new Map<string, number>();
    const twice = `/api/v1/namespaces/${ns()}/configmaps/app-5-config-v000`;
    let writesSeen = 0;
    bed.proxy.set(
      { kind: 'status', status: 500, body: 'etcdserver: leader changed' },
      {
        match: (r) => {
          if (!writes(r)) return false;
          const met = failed.get(object(r)) ?? 0;
          if (object(r) === twice ? met >= 2 : met > 0 || ++writesSeen % 9 !== 0) return false;
          failed.set(object(r), met + 1);
          return true;
        },
        times: 22,
      },
    );
    let resetsSeen = 0;
    bed.proxy.add(
      { kind: 'reset', when: 'request' },
      { match: (r) => writes(r) && ++resetsSeen % 7 === 0, times: 10 },
    );
    let requestsSeen = 0;
    bed.proxy.add(
      { kind: 'rate-limit', retryAfterSeconds: 1 },
      { match: (r) => r.path.includes(`/namespaces/${ns()}/`) && ++requestsSeen % 5 === 0, times: 15 },
    );
    const run = await deploy(ns());
    expect(run.code, run.stderr + run.stdout.slice(-2000)).toBe(0);
    expect(bed.proxy.count('status')).toBeGreaterThan(5);
    expect(failed.get(twice)).toBe(2);
    expect(bed.proxy.count('reset')).toBeGreaterThan(3);
    expect(bed.proxy.count('rate-limit')).toBeGreaterThan(5);
    bed.proxy.pass();

    const state = await converged(bed.direct, ns(), APPS);
    expect(state.counts).toEqual(state.expected);
    expect(state.missingRefs).toEqual([]);
    expect(state.versions.duplicated).toEqual([]);
    expect(state.versions.dangling).toEqual([]);

    // What the faulted deploy recorded is true: the same set again writes nothing and makes no new version.
    const from = bed.proxy.requests.length;
    const again = await deploy(ns());
    expect(again.code, again.stderr).toBe(0);
    expect(bed.proxy.requests.slice(from).filter(writes)).toEqual([]);
    expect((await converged(bed.direct, ns(), APPS)).versions.versions.length).toBe(APPS);
  }, 400_000);

  it('retries a write that gets no answer, within the deploy', async () => {
    const { bed, deploy } = await setup('hung', 20);
    const writes = writeTo(ns());
    let seen = 0;
    // The 30th write of the set is accepted and never answered: the client's request timeout ends it.
    bed.proxy.set({ kind: 'hang' }, { match: (r) => writes(r) && ++seen === 30, times: 1 });
    const started = Date.now();
    const run = await deploy(ns(), undefined, '--application', 'hung');
    expect(run.code, run.stderr + run.stdout.slice(-2000)).toBe(0);
    expect(bed.proxy.count('hang')).toBe(1);
    expect(Date.now() - started).toBeLessThan(180_000);
  }, 300_000);

  it('rides out a server gone for 45 s within its timeout', async () => {
    const { bed, deploy } = await setup('away', 30);
    const writes = writeTo(ns());
    let written = 0;
    let goneAt = 0;
    // After 40 writes every request is refused at the connection, as a server restarting, for 45 s.
    bed.proxy.set(
      { kind: 'reset', when: 'request' },
      {
        match: (r) => {
          if (goneAt === 0 && writes(r) && ++written > 40) goneAt = Date.now();
          return goneAt !== 0 && Date.now() - goneAt < 45_000;
        },
      },
    );
    const run = await deploy(ns(), undefined, '--application', 'away');
    bed.proxy.pass();
    expect(goneAt).toBeGreaterThan(0);
    expect(run.code, run.stderr + run.stdout.slice(-2000)).toBe(0);
    expect(bed.proxy.count('reset')).toBeGreaterThan(5);
  }, 300_000);

  it('says the API server is unreachable when it is gone past the timeout; the next deploy converges and prunes what the failed one wrote', async () => {
    const { bed, root, deploy } = await setup('gone');
    const writes = writeTo(lost());
    let written = 0;
    // After 150 writes every request is refused at the connection, as a server that went away, until the deploy ends.
    bed.proxy.set(
      { kind: 'reset', when: 'request' },
      { match: (r) => (writes(r) && ++written > 150) || written > 150 },
    );
    const failed = await deploy(lost(), undefined, '--timeout', '40s');
    bed.proxy.pass();
    expect(written).toBeGreaterThan(150);
    expect(failed.code, failed.stderr + failed.stdout.slice(-2000)).toBe(1);
    // The error (stderr, as kubectl's) names the object it stopped at, why, and the server it could not reach.
    expect(failed.stderr).toMatch(
      /error: deploy failed \(transient\): .*: API server unreachable since \d\d:\d\d:\d\d UTC.*\(API server http:\/\/127\.0\.0\.1:\d+\)$/m,
    );

    // The next deploy, of a smaller set, converges: what the failed deploy wrote beyond it is pruned.
    const half = await writeManifests(join(root, 'half'), manifests(APPS / 2));
    const next = await deploy(lost(), half, '--prune');
    expect(next.code, next.stderr + next.stdout.slice(-2000)).toBe(0);
    const state = await converged(bed.direct, lost(), APPS / 2);
    expect(state.counts).toEqual(state.expected);
    expect(state.missingRefs).toEqual([]);
    expect(state.versions.duplicated).toEqual([]);
    expect(state.versions.dangling).toEqual([]);
  }, 400_000);
});
