// The corpus (test/fixtures/corpus/): applications shaped like public examples (plain YAML, a Kustomize base with
// two overlays, a Helm chart with an environment's values, a Kustomize tree of `.env` generators), pushed to the
// test bed's Git server and run by one agent through a whole life: the first sync, a changed ConfigMap (a new
// version) and a new image digest, a removed object (pruned), then `mooring rollback` to the first release, which
// the agent holds. Every commit gets pending then success from every deployment it concerns.
import { afterAll, describe, expect, it } from 'vitest';
import type { Release } from '../../src/contract.ts';
import { githubStatusValidator } from '../contract/github-openapi.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { agentOnFile, CORPUS_REGISTRY, corpusFiles, edit } from './build-helpers.ts';
import { ledgerOf } from './faults-support.ts';
import {
  agentConfig,
  bareRepo,
  eventually,
  kubectl,
  mooring,
  type StatusReceiver,
  startStatusReceiver,
  testbed,
  useNamespace,
} from './helpers.ts';

const IMAGE = new RegExp(`${CORPUS_REGISTRY.replaceAll('.', '\\.')}/([a-z0-9-]+)/([a-z0-9-]+)`, 'g');

interface Workload {
  images: string[];
  /** ConfigMaps and Secrets its pod template refers to, with their data. */
  refs: Record<string, Record<string, string> | undefined>;
}

/** What a deployment's namespace runs: its objects by kind and name, and each Deployment's images and references. */
interface Snapshot {
  objects: string[];
  workloads: Record<string, Workload>;
}

interface Item {
  metadata: { name: string };
  data?: Record<string, string>;
  spec?: { template?: { spec?: unknown } };
}

async function list(namespace: string, kind: string): Promise<Item[]> {
  const out = await kubectl('-n', namespace, 'get', kind, '-o', 'json');
  if (out.code !== 0) throw new Error(out.stderr);
  return (JSON.parse(out.stdout) as { items: Item[] }).items;
}

async function snapshot(namespace: string): Promise<Snapshot> {
  const [deployments, services, accounts, maps, secrets] = await Promise.all(
    ['deployments', 'services', 'serviceaccounts', 'configmaps', 'secrets'].map((k) => list(namespace, k)),
  );
  const data = new Map<string, Record<string, string> | undefined>();
  for (const m of maps ?? []) data.set(`configmap ${m.metadata.name}`, m.data);
  for (const s of secrets ?? []) data.set(`secret ${s.metadata.name}`, s.data);
  const workloads: Record<string, Workload> = {};
  for (const d of deployments ?? []) {
    const spec = d.spec?.template?.spec as {
      containers: { image: string }[];
    };
    const text = JSON.stringify(spec);
    const refs: Workload['refs'] = {};
    for (const [, name] of text.matchAll(
      /"(?:configMapRef|configMapKeyRef|configMap)":\{[^}]*"name":"([^"]+)"/g,
    ))
      refs[`configmap ${name}`] = data.get(`configmap ${name}`);
    for (const [, name] of text.matchAll(/"(?:secretKeyRef|secretRef)":\{[^}]*"name":"([^"]+)"/g))
      refs[`secret ${name}`] = data.get(`secret ${name}`);
    workloads[d.metadata.name] = { images: spec.containers.map((c) => c.image), refs };
  }
  const objects = [
    ...(deployments ?? []).map((o) => `Deployment ${o.metadata.name}`),
    ...(services ?? []).map((o) => `Service ${o.metadata.name}`),
    ...(accounts ?? [])
      .filter((o) => o.metadata.name !== 'default')
      .map((o) => `ServiceAccount ${o.metadata.name}`),
  ].sort();
  return { objects, workloads };
}

interface App {
  deployment: string;
  namespace: () => string;
  /** The deployment's spec beyond name, namespace and source. */
  spec: Record<string, unknown>;
  /** The corpus folder whose images it uses. */
  folder: string;
  /** The image (a registry source) that gets a new digest. */
  moving: string;
  /** A ConfigMap the change gives a new version, as the workload refers to it after the change. */
  changed: RegExp;
  /** The change's edits, on the corpus as committed. */
  change: (files: Record<string, string>) => Record<string, string | null>;
  /** The removal's edits, and the objects it prunes. */
  remove: (files: Record<string, string>) => Record<string, string | null>;
  removed: string[];
}

describe('the corpus of applications', () => {
  const shop = useNamespace('corpus-shop');
  const staging = useNamespace('corpus-gb-staging');
  const production = useNamespace('corpus-gb-prod');
  const podinfo = useNamespace('corpus-podinfo');
  const envs = useNamespace('corpus-envs');
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  const apps: App[] = [
    {
      deployment: 'shop',
      namespace: shop,
      spec: { paths: ['shop'] },
      folder: 'shop',
      moving: 'shop-frontend',
      changed: /^frontend-config-v001$/,
      change: (f) => ({
        'shop/frontend.yaml': edit(f, 'shop/frontend.yaml', 'Autumn sale: 10% off socks', 'Winter sale'),
      }),
      remove: () => ({ 'shop/loadgenerator.yaml': null }),
      removed: ['Deployment loadgenerator', 'ServiceAccount loadgenerator'],
    },
    ...(['staging', 'production'] as const).map(
      (overlay): App => ({
        deployment: `guestbook-${overlay}`,
        namespace: overlay === 'staging' ? staging : production,
        spec: { paths: [`guestbook/overlays/${overlay}`] },
        folder: 'guestbook',
        moving: 'guestbook-frontend',
        changed: /^guestbook-ui-v001$/,
        change: (f) => ({
          'guestbook/base/ui-config.yaml': edit(
            f,
            'guestbook/base/ui-config.yaml',
            'THEME: light',
            'THEME: dark',
          ),
        }),
        remove: (f) => ({
          'guestbook/base/redis-follower.yaml': null,
          'guestbook/base/kustomization.yaml': edit(
            f,
            'guestbook/base/kustomization.yaml',
            '  - redis-follower.yaml\n',
            '',
          ),
          'guestbook/overlays/production/kustomization.yaml': edit(
            f,
            'guestbook/overlays/production/kustomization.yaml',
            `  - target: {kind: Deployment, name: redis-follower}
    patch: |-
      - op: replace
        path: /spec/replicas
        value: 2
`,
            '',
          ),
        }),
        removed: ['Deployment redis-follower', 'Service redis-follower'],
      }),
    ),
    {
      deployment: 'podinfo',
      namespace: podinfo,
      spec: {
        paths: ['podinfo'],
        helm: { chart: 'podinfo/chart', valuesFiles: ['podinfo/values-production.yaml'] },
      },
      folder: 'podinfo',
      moving: 'podinfo-podinfo',
      changed: /-ui-v001$/,
      change: (f) => ({
        'podinfo/values-production.yaml': edit(
          f,
          'podinfo/values-production.yaml',
          'Greetings from production',
          'Greetings from production, again',
        ),
      }),
      remove: (f) => ({
        'podinfo/values-production.yaml': edit(
          f,
          'podinfo/values-production.yaml',
          'cache:\n  enabled: true',
          'cache:\n  enabled: false',
        ),
      }),
      removed: ['Deployment podinfo-redis', 'Service podinfo-redis'],
    },
    {
      deployment: 'config-envs',
      namespace: envs,
      spec: { paths: ['config-envs'] },
      folder: 'config-envs',
      moving: 'config-envs-ledger',
      changed: /^api-env-v001$/,
      change: (f) => ({
        'config-envs/config/api.env': edit(
          f,
          'config-envs/config/api.env',
          'DATABASE_POOL=10',
          'DATABASE_POOL=20',
        ),
      }),
      remove: (f) => ({
        'config-envs/worker.yaml': null,
        'config-envs/config/worker.env': null,
        'config-envs/kustomization.yaml': edit(
          f,
          'config-envs/kustomization.yaml',
          '  - worker.yaml\n',
          '',
        ).replace('  - name: worker-env\n    envs:\n      - config/worker.env\n', ''),
      }),
      removed: ['Deployment ledger-worker'],
    },
  ];

  it('syncs each application, versions a changed ConfigMap, prunes a removed object, and holds a rollback', async () => {
    const env = testbed();
    // Helm and kubectl (for Kustomize) are found as the product finds them, by the CLI's rollback too.
    process.env.MOORING_HELM = env.tools.helm;
    process.env.MOORING_KUBECTL = env.tools.kubectl;
    const suffix = Date.now().toString(36);
    const registry = `${env.registry.host}/corpus-${suffix}`;
    const files = await corpusFiles('', registry);

    // Every image the corpus names exists in the test bed's registry, each a registry source of the agent.
    const images = new Map<string, { folder: string; repository: string }>();
    for (const text of Object.values(files))
      for (const [, folder = '', name = ''] of text.replaceAll(registry, CORPUS_REGISTRY).matchAll(IMAGE))
        images.set(`${folder}-${name}`, { folder, repository: `corpus-${suffix}/${folder}/${name}` });
    await Promise.all(
      [...images.values()].map((i) =>
        pushImage({ registry: env.registry.url, repository: i.repository, tag: 'stable' }),
      ),
    );
    const moving = new Set(apps.map((a) => a.moving));

    const repo = await bareRepo(`corpus-${suffix}/apps`);
    const receiver = await startStatusReceiver();
    const agentNamespace = `mooring-corpus-${suffix}`;
    cleanups.push(() => kubectl('delete', 'namespace', agentNamespace, '--wait=false'));
    const config = await agentConfig({
      cluster: { name: 'corpus', namespace: agentNamespace },
      git: [{ name: 'corpus', repo }],
      deployments: apps.map((a) => ({
        name: a.deployment,
        namespace: a.namespace(),
        source: 'corpus',
        images: [...images].filter(([, i]) => i.folder === a.folder).map(([name]) => name),
        prune: true,
        ...a.spec,
      })),
      statuses: receiver,
      extra: {
        sources: {
          registry: [...images].map(([name, i]) => ({
            name,
            image: `${env.registry.host}/${i.repository}`,
            policy: { type: 'fixed', tag: 'stable' },
            insecure: true,
            interval: moving.has(name) ? '1s' : '1h',
          })),
        },
        render: { kubectl: env.tools.kubectl },
        concurrency: apps.length,
      },
    });
    const { agent, configFile, kube } = await agentOnFile(config, cleanups);

    // Each deployment's last status on the commit, once it is success (or failure: no need to wait longer). A
    // sync superseded by a newer poll ends its pending before the next one starts.
    const ended = (sha: string) =>
      Promise.all(
        apps.map((a) =>
          eventually(
            `${a.deployment}: success on ${sha}`,
            async () => {
              const last = receiver
                .statuses()
                .filter((s) => s.sha === sha && s.context.endsWith(`/${a.deployment}`))
                .at(-1);
              if (last?.state === 'success' || last?.state === 'failure') return last;
              throw new Error(`${receiver.states(sha, `/${a.deployment}`).join() || 'no status'}`);
            },
            120_000,
          ),
        ),
      );
    const stableAt = (a: App, sha: string, digest?: string) =>
      eventually(
        `${a.deployment}: a stable release of ${sha}`,
        async () =>
          (await ledgerOf(kube, agentNamespace, a.deployment)).releases.find(
            (r) =>
              r.commit === sha &&
              r.result === 'stable' &&
              (digest === undefined || r.images[a.moving]?.digest === digest),
          ),
        120_000,
      );

    // 1. The first commit: every application synced.
    const first = await repo.commit(files, { message: 'the corpus' });
    for (const status of await ended(first)) expect(status.state, status.description).toBe('success');
    const releaseOne = new Map<string, Release>();
    const before = new Map<string, Snapshot>();
    for (const a of apps) {
      releaseOne.set(a.deployment, await stableAt(a, first));
      before.set(a.deployment, await snapshot(a.namespace()));
    }
    expect(before.get('shop')?.objects).toHaveLength(8 + 7 + 8); // Deployments, Services, ServiceAccounts
    expect(Object.keys(before.get('shop')?.workloads.payment?.refs ?? {})).toEqual([
      'configmap shop-settings-v000',
      'secret payment-credentials-v000',
    ]);
    // Kustomize's generated names keep their hash, each overlay its own, and gain mooring's version.
    const generated = (d: string) =>
      Object.keys(before.get(d)?.workloads.frontend?.refs ?? {}).find((r) =>
        r.includes('guestbook-settings-'),
      );
    expect(generated('guestbook-staging')).toMatch(/^configmap guestbook-settings-[a-z0-9]{10}-v000$/);
    expect(generated('guestbook-production')).toMatch(/^configmap guestbook-settings-[a-z0-9]{10}-v000$/);
    expect(generated('guestbook-staging')).not.toBe(generated('guestbook-production'));
    // One ConfigMap from two .env files.
    expect(before.get('config-envs')?.workloads['ledger-api']?.refs['configmap api-env-v000']).toMatchObject({
      DATABASE_POOL: '10',
      FEATURE_EXPORT_CSV: 'true',
    });

    // 2. A changed ConfigMap in each application: a new version, referred to by its workload.
    const changes = Object.assign({}, ...apps.map((a) => a.change(files))) as Record<string, string>;
    const second = await repo.commit(changes, { message: 'change a ConfigMap of each application' });
    Object.assign(files, changes);
    for (const status of await ended(second)) expect(status.state, status.description).toBe('success');
    for (const a of apps) {
      const now = await snapshot(a.namespace());
      const refs = Object.values(now.workloads).flatMap((w) => Object.keys(w.refs));
      expect(
        refs.some((r) => a.changed.test(r.replace(/^configmap /, ''))),
        `${a.deployment}: ${refs.join(', ')}`,
      ).toBe(true);
    }
    // And a new digest of one image of each application.
    const pushed = new Map<string, string>();
    for (const name of moving) {
      const image = images.get(name);
      if (!image) throw new Error(`no image ${name}`);
      const p = await pushImage({
        registry: env.registry.url,
        repository: image.repository,
        tag: 'stable',
        content: 'v2',
      });
      pushed.set(name, p.digest);
    }
    for (const a of apps) await stableAt(a, second, pushed.get(a.moving));

    // 3. An object removed from each application: pruned.
    const removals = Object.assign({}, ...apps.map((a) => a.remove(files))) as Record<string, string | null>;
    const third = await repo.commit(removals, { message: 'remove an object of each application' });
    for (const status of await ended(third)) expect(status.state, status.description).toBe('success');
    for (const a of apps) {
      const now = await snapshot(a.namespace());
      for (const object of a.removed) expect(now.objects, a.deployment).not.toContain(object);
      const release = await stableAt(a, third);
      expect(
        release.objects.filter((o) => o.action === 'pruned').map((o) => o.object.replace(/ [^ ]+\//, ' ')),
        a.deployment,
      ).toEqual(expect.arrayContaining(a.removed));
    }

    // 4. Rollback of each deployment to its first release: the objects, versions and digests it recorded.
    for (const a of apps) {
      const release = releaseOne.get(a.deployment) as Release;
      const back = await mooring(
        'rollback',
        a.deployment,
        '--to',
        String(release.id),
        '--config',
        configFile,
      );
      expect(back.code, back.stdout + back.stderr).toBe(0);
      const now = await snapshot(a.namespace());
      expect(now, a.deployment).toEqual(before.get(a.deployment));
      for (const object of a.removed) expect(now.objects, a.deployment).toContain(object);
      const referred = Object.values(now.workloads).flatMap((w) => Object.keys(w.refs));
      const versioned = referred.filter((r) => /-v\d{3}$/.test(r));
      expect(versioned.length, a.deployment).toBeGreaterThan(0);
      for (const r of versioned)
        expect(
          release.versions.map((v) => v.toLowerCase()),
          a.deployment,
        ).toContain(r);
      // Every image is bound to the digest the release recorded for its source, the moved one included.
      for (const image of Object.values(now.workloads).flatMap((w) => w.images)) {
        const [name, digest] = image.split(':stable@');
        const source = [...images].find(([, i]) => `${env.registry.host}/${i.repository}` === name)?.[0];
        expect(source && digest, image).toBeTruthy();
        expect(digest, image).toBe(release.images[source ?? '']?.digest);
      }
      expect(release.images[a.moving]?.digest).not.toBe(pushed.get(a.moving));
    }

    // The agent holds the rollbacks: several polls of the head and of the new digests later, nothing moved.
    await eventually('every deployment held', async () =>
      apps.every((a) =>
        agent.logged(/held at a rolled-back release/).some((r) => r.deployment === a.deployment),
      )
        ? true
        : undefined,
    );
    await agent.morePolls(3);
    for (const a of apps) {
      expect(await snapshot(a.namespace()), a.deployment).toEqual(before.get(a.deployment));
      const status = await mooring('status', a.deployment, '--config', configFile);
      expect(status.stdout, a.deployment).toMatch(/held at release \d+ \(rollback\)/);
    }

    // Pending then success on every commit, from every deployment (a sync superseded by a newer poll ends its
    // pending before the next one starts).
    for (const sha of [first, second, third])
      for (const a of apps) {
        const states = receiver.states(sha, `/${a.deployment}`);
        expect(states.at(-1), `${a.deployment} at ${sha}: ${states.join()}`).toBe('success');
        expect(
          states.every((s, i) => (i % 2 === 0) === (s === 'pending')),
          `${a.deployment} at ${sha}: ${states.join()}`,
        ).toBe(true);
      }
    const validate = githubStatusValidator();
    for (const request of receiver.captured) expect(validate(request), request.path).toEqual([]);
    checkNoSecretIn(receiver);
  }, 300_000);
});

/** The corpus's Secret values never reach a commit status. */
function checkNoSecretIn(receiver: StatusReceiver): void {
  const text = JSON.stringify(receiver.captured);
  for (const secret of ['corpus-gateway-key-not-a-real-one', 'corpus-redis-password-not-a-real-one'])
    expect(text).not.toContain(secret);
}
