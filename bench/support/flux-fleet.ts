// One size of the fleet benchmark run by Flux (`npm run bench:fleet -- --vs flux`): the same N applications, in a
// repository of the same content on the test bed's Git server, one GitRepository and one Kustomization per
// application (support/flux.ts starts the controllers). Each figure is taken as the agent's is:
//  - first sync: from the controllers' start until every Kustomization is Ready at the first commit;
//  - fleet rollout: from the commit changing every application until every Kustomization has applied it and is Ready;
//  - one app: from a commit changing one application until its Kustomization has applied it and is Ready; once left
//    to the GitRepository's poll, and once with the annotation notification-controller's Receiver writes on a webhook
//    (reconcile.fluxcd.io/requestedAt on the GitRepository) written right after the commit: no notification-controller
//    runs here, so the Receiver's own HTTP hop is not in that figure;
//  - RSS: the sum of both controllers' VmRSS once settled (30 s after the last sync) and of their VmHWM;
//  - requests: both controllers' rest_client_requests_total, per Kustomization.
// Everything it creates (objects, namespaces, CRDs) is gone when it returns, so the next run starts on an empty
// cluster.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { commitFiles, createBareRepo } from '../../test/testbed/git-repos.ts';
import type { TestbedEnv } from '../../test/testbed/testbed.ts';
import { sleep } from './agent-process.ts';
import {
  type BenchCluster,
  call,
  createNamespace,
  deleteNamespace,
  namespacesGone,
  settle,
} from './cluster.ts';
import { appFiles, appName, fleetFiles, since } from './fleet-apps.ts';
import { FluxControllers } from './flux.ts';
import { mib, sec } from './process.ts';

const run = promisify(execFile);
const KS = '/apis/kustomize.toolkit.fluxcd.io/v1';
const GIT = '/apis/source.toolkit.fluxcd.io/v1';

/** The Kustomizations' and the GitRepository's settings (fluxcd/flux-benchmark's flux-ks-bench module), printed. */
export const KUSTOMIZATION_SPEC = {
  interval: '60m',
  retryInterval: '2m',
  timeout: '1m',
  prune: true,
  wait: true,
};

export interface FluxContext {
  env: TestbedEnv;
  c: BenchCluster;
  /** The folder of scripts/flux.sh's binaries and CRDs. */
  dir: string;
  work: string;
  suffix: string;
  samples: number;
  namespaces: number;
  /** The GitRepository's interval: the agent's Git poll. */
  poll: string;
  settleMs: number;
  note: (line: string) => void;
  patiently: <T>(read: () => Promise<T>) => Promise<T>;
}

export interface FluxFigures {
  size: number;
  firstSyncMs: number;
  rolloutMs: number;
  pollMs: number[];
  webhookMs: number[];
  idleKiB: number;
  peakKiB: number;
  requestsPerSync: { first: number; rollout: number };
  methods: { first: Map<string, number> | undefined; rollout: Map<string, number> | undefined };
  /**
   * Kustomizations seen not Ready for a reason other than progressing, by reason: e.g. ArtifactFailed while the first
   * artifact is not there yet, HealthCheckFailed when the wait's timeout passed.
   */
  notReady: string[];
}

interface KsList {
  items: {
    metadata: { name: string; generation?: number };
    status?: {
      observedGeneration?: number;
      lastAppliedRevision?: string;
      conditions?: { type: string; status: string; reason?: string; message?: string }[];
    };
  }[];
}

export async function fluxFleet(size: number, x: FluxContext): Promise<FluxFigures> {
  const namespaces = Array.from({ length: x.namespaces }, (_, k) => `fluxfleet-${x.suffix}-${size}-${k}`);
  const home = `fluxfleet-${x.suffix}-${size}-flux`;
  const all = [...namespaces, home];
  const names = Array.from({ length: size }, (_, i) => appName(i));
  const kubectl = (...args: string[]) =>
    run(x.env.tools.kubectl, args, {
      env: { ...process.env, KUBECONFIG: x.env.kube.kubeconfig },
      maxBuffer: 64 * 1024 * 1024,
    });
  const crds = join(x.dir, 'crds');
  let flux: FluxControllers | undefined;
  const notReady = new Map<string, { names: Set<string>; message: string }>();
  // The revision each Kustomization has applied and is Ready at, read from one list of them.
  const readyAt = async (): Promise<Map<string, string>> => {
    flux?.check();
    const reply = await x.patiently(() => call(x.c, 'GET', `${KS}/namespaces/${home}/kustomizations`));
    if (reply.status !== 200) throw new Error(`list Kustomizations: HTTP ${reply.status}`);
    const ready = new Map<string, string>();
    for (const k of (JSON.parse(reply.body) as KsList).items) {
      const cond = k.status?.conditions?.find((c) => c.type === 'Ready');
      if (cond?.status === 'False' && cond.reason !== 'Progressing') {
        const reason = cond.reason ?? '?';
        const seen = notReady.get(reason) ?? {
          names: new Set(),
          message: (cond.message ?? '').slice(0, 160),
        };
        seen.names.add(k.metadata.name);
        notReady.set(reason, seen);
      }
      if (cond?.status === 'True' && k.status?.observedGeneration === k.metadata.generation)
        ready.set(k.metadata.name, k.status?.lastAppliedRevision ?? '');
    }
    return ready;
  };
  const at = (revision: string | undefined, sha: string) => revision?.endsWith(`:${sha}`) === true;
  // A look every quarter second at 100 Kustomizations, less often at more: a list of 1,000 is some megabytes.
  const every = Math.max(250, size / 2);
  const until = async (what: string, done: (ready: Map<string, string>) => boolean, ms: number) => {
    const start = Date.now();
    while (!done(await readyAt())) {
      if (Date.now() - start > ms)
        throw new Error(`${what}: not within ${ms / 1000} s:\n${flux?.tail ?? ''}`);
      await sleep(every);
    }
  };
  try {
    await kubectl('apply', '--server-side', '-f', crds);
    await kubectl('wait', '--for=condition=established', '--timeout=120s', '-f', crds);
    for (const ns of all) await x.patiently(() => createNamespace(x.c, ns));
    const repoName = `fluxfleet-${x.suffix}-${size}`;
    const repo = await createBareRepo(x.env.git.root, repoName);
    const first = await commitFiles(repo, fleetFiles(size, 0), { message: 'the fleet' });
    const objects = join(x.work, `flux-${size}.yaml`);
    await writeFile(
      objects,
      fluxObjects(size, `${x.env.git.url}/${repoName}.git`, home, namespaces, x)
        .map((o) => stringify(o))
        .join('---\n'),
      { mode: 0o600 },
    );
    await kubectl('create', '-f', objects);

    x.note(`${size}: Flux starting`);
    const start = Date.now();
    flux = await FluxControllers.start(x.dir, x.env.kube.kubeconfig, home, x.work);
    await until(`${size}: Flux first syncs`, (r) => names.every((n) => at(r.get(n), first)), 60 * 60_000);
    const firstSyncMs = Date.now() - start;
    const firstMethods = await flux.requestsByMethod();
    x.note(`${size}: Flux: every Kustomization Ready after ${sec(firstSyncMs)}`);
    await settled(x, namespaces, size);
    await sleep(x.settleMs);
    const idleKiB = flux.rss().now;

    const before = await flux.requestsByMethod();
    const pushed = Date.now();
    const head = await commitFiles(repo, fleetFiles(size, 1), { message: 'every app' });
    await until(`${size}: Flux fleet rollout`, (r) => names.every((n) => at(r.get(n), head)), 60 * 60_000);
    const rolloutMs = Date.now() - pushed;
    const rolloutMethods = since(await flux.requestsByMethod(), before);
    x.note(`${size}: Flux: fleet rollout Ready after ${sec(rolloutMs)}`);
    await settled(x, namespaces, size);

    const one = async (i: number, round: number, hook: boolean): Promise<number> => {
      const t = Date.now();
      const sha = await commitFiles(repo, appFiles(i, round), { message: `${appName(i)} alone` });
      if (hook) await requestReconcile(x.c, home);
      await until(`${size}: Flux ${appName(i)}`, (r) => at(r.get(appName(i)), sha), 10 * 60_000);
      return Date.now() - t;
    };
    const pollMs: number[] = [];
    const webhookMs: number[] = [];
    for (let s = 0; s < x.samples; s++) {
      // As the agent's samples: apart from the last poll by a varying amount.
      await sleep(3000 + s * 3300);
      pollMs.push(await one((s * 7) % size, 2 + s, false));
      await sleep(2000);
      webhookMs.push(await one((s * 7 + 3) % size, 2 + s, true));
    }
    const peakKiB = flux.rss().peak;
    x.note(
      `${size}: Flux: one app: poll ${pollMs.map(sec).join(', ')}; requestedAt ${webhookMs.map(sec).join(', ')}; ` +
        `RSS idle ${mib(idleKiB)}, peak ${mib(peakKiB)}`,
    );
    const total = (m: Map<string, number> | undefined) =>
      m ? [...m.values()].reduce((a, b) => a + b, 0) : Number.NaN;
    return {
      size,
      firstSyncMs,
      rolloutMs,
      pollMs,
      webhookMs,
      idleKiB,
      peakKiB,
      requestsPerSync: { first: total(firstMethods) / size, rollout: total(rolloutMethods) / size },
      methods: { first: firstMethods, rollout: rolloutMethods },
      notReady: [...notReady].map(([r, s]) => `${r} (${s.names.size}; e.g. "${s.message}")`),
    };
  } finally {
    await flux?.stop();
    // With the controllers stopped nothing removes the finalizers: they are taken off here, so that deleting the
    // namespaces deletes the objects.
    for (const kind of [
      `${KS}/namespaces/${home}/kustomizations`,
      `${GIT}/namespaces/${home}/gitrepositories`,
    ]) {
      const list = await call(x.c, 'GET', kind).catch(() => undefined);
      if (list?.status !== 200) continue;
      for (const item of (JSON.parse(list.body) as KsList).items)
        await call(
          x.c,
          'PATCH',
          `${kind}/${item.metadata.name}`,
          JSON.stringify({ metadata: { finalizers: null } }),
          'application/merge-patch+json',
        ).catch(() => undefined);
    }
    for (const ns of all) await x.patiently(() => deleteNamespace(x.c, ns)).catch(() => undefined);
    x.note(`${size}: Flux: waiting for the namespaces to go`);
    await x.patiently(() => namespacesGone(x.c, all)).catch((error: unknown) => x.note(String(error)));
    await kubectl('delete', '--ignore-not-found', '--wait', '-f', crds).catch((error: unknown) =>
      x.note(`Flux's CRDs not deleted: ${String(error).slice(0, 300)}`),
    );
  }
}

/** What notification-controller's Receiver does on a webhook: ask for the GitRepository's reconcile now. */
async function requestReconcile(c: BenchCluster, home: string): Promise<void> {
  const body = JSON.stringify({
    metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': new Date().toISOString() } },
  });
  const reply = await call(
    c,
    'PATCH',
    `${GIT}/namespaces/${home}/gitrepositories/fleet`,
    body,
    'application/merge-patch+json',
  );
  if (reply.status !== 200) throw new Error(`annotate the GitRepository: HTTP ${reply.status}`);
}

/** The Secret with the Git server's credentials, the GitRepository and one Kustomization per application. */
function fluxObjects(size: number, url: string, home: string, namespaces: readonly string[], x: FluxContext) {
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'fleet-git', namespace: home },
      stringData: { username: x.env.git.username, password: x.env.git.password },
    },
    {
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'GitRepository',
      metadata: { name: 'fleet', namespace: home },
      spec: { interval: x.poll, url, ref: { branch: 'main' }, secretRef: { name: 'fleet-git' } },
    },
    ...Array.from({ length: size }, (_, i) => ({
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name: appName(i), namespace: home },
      spec: {
        ...KUSTOMIZATION_SPEC,
        sourceRef: { kind: 'GitRepository', name: 'fleet' },
        path: `./apps/${appName(i)}`,
        targetNamespace: namespaces[i % namespaces.length],
      },
    })),
  ];
}

/** As the agent's run: every Deployment rolled out and its pod Ready before the next step. */
async function settled(x: FluxContext, namespaces: readonly string[], size: number): Promise<void> {
  for (const [k, ns] of namespaces.entries()) {
    const expected = Math.floor(size / namespaces.length) + (k < size % namespaces.length ? 1 : 0);
    await x.patiently(() => settle(x.c, ns, expected));
  }
}
