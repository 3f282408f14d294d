// The agent end to end on the real Git server, registry and control plane: pushes and new image digests are
// deployed, webhooks trigger polls at once (and bad signatures are refused), a push outside a deployment's paths
// deploys nothing, and a restarted agent with nothing new deploys nothing.
import { createHmac } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { pushImage } from '../testbed/oci-push.ts';
import { admissionPolicy } from './admission-policy.ts';
import {
  type Agent,
  agentConfig,
  bareRepo,
  configMapManifest,
  deleteNamespace,
  deploymentManifest,
  eventually,
  kubeConfig,
  kubectl,
  ledgerReleases,
  manifestDir,
  stableImageSource,
  startAgent,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const SECRET = 'webhook-secret-for-tests';

function githubPush(port: number, url: string, secret = SECRET) {
  const body = JSON.stringify({ ref: 'refs/heads/main', repository: { clone_url: url, html_url: url } });
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  return fetch(`http://127.0.0.1:${port}/hooks/github`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-hub-signature-256': signature,
    },
    body,
  });
}

/** A Deployment `name` of one container `app` (image app:1) whose replicas the tests change by hand. */
const handChanged = (name: string) =>
  stringify(deploymentManifest({ name, container: 'app', image: 'app:1' }));

describe('mooring run --config (the agent)', () => {
  const ns = useNamespace('agent');
  const agents: Agent[] = [];
  afterAll(async () => {
    for (const a of agents) await a.stop();
  });
  const apps = kubeConfig().makeApiClient(AppsV1Api);
  /** Deployment `name` of the test's namespace as it runs now; undefined while there is none. */
  const running = (name: string) =>
    apps.readNamespacedDeployment({ name, namespace: ns() }).catch(() => undefined);

  /**
   * An agent deploying the manifests `files` (from a local folder) as deployment `name`, its state in
   * `agentNamespace`, with these drift settings; ready when returned.
   */
  async function driftAgent(
    name: string,
    agentNamespace: string,
    files: Record<string, string>,
    drift: Record<string, unknown>,
  ): Promise<Agent> {
    const dir = await manifestDir(files);
    const agent = startAgent(
      await agentConfig({
        cluster: { namespace: agentNamespace },
        deployments: [{ name, namespace: ns(), source: 'folder', stability: { timeout: '30m' } }],
        extra: { sources: { local: [{ name: 'folder', path: dir }] }, drift },
      }),
    );
    await agent.ready();
    agents.push(agent);
    return agent;
  }

  it('deploys pushes and new digests, reacts to webhooks, and redeploys nothing after a restart', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repoName = `agent-${suffix}`;
    const repo = await bareRepo(repoName);
    const image = `${env.registry.host}/agent-${suffix}/web`;
    const app = (greeting: string) =>
      yamlDocuments(
        configMapManifest('web-config', { GREETING: greeting }),
        deploymentManifest({ image: `${image}:stable`, configMap: 'web-config' }),
      );
    await repo.commit({ 'apps/web/app.yaml': app('hello'), 'docs/notes.yaml': 'a: 1\n' });
    const first = await pushImage({
      registry: env.registry.url,
      repository: `agent-${suffix}/web`,
      tag: 'stable',
    });
    const secrets = await manifestDir({ hook: SECRET });
    const url = repo.url;
    const config = await agentConfig({
      cluster: { name: 'testbed', namespace: `mooring-${suffix}` },
      git: [{ name: 'manifests', repo, interval: '1h' }],
      deployments: [
        { name: 'web', namespace: ns(), source: 'manifests', paths: ['apps/web'], images: ['web-image'] },
      ],
      extra: {
        sources: {
          registry: [stableImageSource(image, '1h')],
        },
        server: {
          webhooks: {
            github: { secret: { file: `${secrets}/hook` } },
            registry: { token: { file: `${secrets}/hook` } },
          },
        },
      },
    });
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const imageOf = async () => (await running('web'))?.spec?.template.spec?.containers[0]?.image;
    const configRef = async () =>
      (await apps.readNamespacedDeployment({ name: 'web', namespace: ns() })).spec?.template.spec
        ?.containers[0]?.envFrom?.[0]?.configMapRef?.name;

    let agent = startAgent(config);
    await agent.ready();
    agents.push(agent);
    // The first poll deploys the commit with the image bound to its digest.
    await eventually('first deploy', async () =>
      (await imageOf()) === `${image}:stable@${first.digest}` ? true : undefined,
    );
    await eventually('stable', async () =>
      agent.logs().some((l) => l.outcome === 'stable') ? true : undefined,
    );
    const syncs = () => agent.logs().filter((l) => l.msg === 'sync started').length;
    expect(syncs()).toBe(1);

    // A badly signed webhook is refused and triggers nothing.
    await repo.commit({ 'apps/web/app.yaml': app('hello again') });
    expect((await githubPush(agent.port(), url, 'wrong-secret')).status).toBe(401);
    // A signed one makes the agent poll at once (the interval is an hour).
    expect((await githubPush(agent.port(), url)).status).toBe(202);
    await eventually('config change deployed', async () =>
      (await configRef()) === 'web-config-v001' ? true : undefined,
    );
    const cm = await core.readNamespacedConfigMap({ name: 'web-config-v001', namespace: ns() });
    expect(cm.data?.GREETING).toBe('hello again');
    await eventually('second sync ended', async () =>
      agent.logs().filter((l) => l.outcome === 'stable').length === 2 ? true : undefined,
    );

    // A push outside the deployment's paths deploys nothing.
    await repo.commit({ 'docs/notes.yaml': 'a: 2\n' });
    expect((await githubPush(agent.port(), url)).status).toBe(202);
    await eventually('poll saw the commit', async () =>
      agent.logs().some((l) => l.msg === 'commit changes none of its paths') ? true : undefined,
    );
    expect(syncs()).toBe(2);

    // Adding a manifest under the paths syncs; deleting it syncs again (a deleted file is a change too).
    await repo.commit({
      'apps/web/extra.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {k: v}\n',
    });
    expect((await githubPush(agent.port(), url)).status).toBe(202);
    await eventually('added file synced', async () =>
      agent.logs().filter((l) => l.outcome === 'stable').length === 3 ? true : undefined,
    );
    await repo.commit({ 'apps/web/extra.yaml': null });
    expect((await githubPush(agent.port(), url)).status).toBe(202);
    await eventually('deleted file synced', async () =>
      agent.logs().filter((l) => l.outcome === 'stable').length === 4 ? true : undefined,
    );
    expect(syncs()).toBe(4);

    // A new image under the watched tag rolls the Deployment to its digest; the registry's notification says so.
    const second = await pushImage({
      registry: env.registry.url,
      repository: `agent-${suffix}/web`,
      tag: 'stable',
      content: 'a new build',
    });
    const envelope = {
      events: [
        {
          action: 'push',
          target: {
            mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
            repository: `agent-${suffix}/web`,
            digest: second.digest,
            tag: 'stable',
          },
          request: { host: env.registry.host },
        },
      ],
    };
    const notified = await fetch(`http://127.0.0.1:${agent.port()}/hooks/registry`, {
      method: 'POST',
      headers: {
        'content-type': 'application/vnd.docker.distribution.events.v1+json',
        authorization: `Bearer ${SECRET}`,
      },
      body: JSON.stringify(envelope),
    });
    expect(notified.status).toBe(202);
    await eventually('new digest deployed', async () =>
      (await imageOf()) === `${image}:stable@${second.digest}` ? true : undefined,
    );
    await eventually('image sync ended', async () =>
      agent.logs().filter((l) => l.outcome === 'stable').length === 5 ? true : undefined,
    );

    // The metrics tell what happened.
    const metrics = await (await fetch(`http://127.0.0.1:${agent.port()}/metrics`)).text();
    expect(metrics).toMatch(/mooring_syncs_total\{deployment="web",result="stable",trigger="image"\} 1/);
    expect(metrics).toMatch(
      /mooring_source_polls_total\{source="manifests",kind="git",result="unchanged"\} \d+/,
    );
    expect(metrics).toMatch(
      /mooring_registry_requests\{registry="web-image",method="HEAD",status="200"\} \d+/,
    );
    expect(metrics).toContain('mooring_deployed_revision_info{deployment="web",release="5"');
    expect(metrics).toContain('mooring_leader 1');
    expect(metrics).toContain('mooring_stability_wait_seconds_bucket');
    // The process's memory and the API requests it sent, as the fleet goals are measured.
    const rss = Number(/\nmooring_process_memory_bytes\{kind="rss"\} (\d+)/.exec(metrics)?.[1]);
    expect(rss).toBeGreaterThan(20 * 1024 * 1024);
    expect(metrics).toMatch(
      /\nmooring_kube_requests_total\{verb="patch",code="200",resource="deployments\.apps"\} [1-9]\d*\n/,
    );
    // The streams of the last syncs linger for the next one: one per kind and namespace, however many objects.
    expect(metrics).toMatch(/\nmooring_cluster_watch_streams [1-4]\n/);

    // Restarted with nothing new: the first polls find everything current and nothing is deployed.
    await agent.stop();
    agents.splice(agents.indexOf(agent), 1);
    agent = startAgent(config);
    await agent.ready();
    agents.push(agent);
    expect(agent.logs().some((l) => l.msg === 'agent started')).toBe(true);
    await eventually('the restarted agent found its deployment current', async () =>
      agent.logs().some((l) => l.msg === 'deployment is current') ? true : undefined,
    );
    expect(syncs()).toBe(0);
    const releases = await ledgerReleases<{
      id: number;
      result: string;
      trigger: string;
      images: Record<string, { digest: string }>;
    }>(`mooring-${suffix}`, 'web');
    expect(releases.map((r) => [r.id, r.trigger, r.result])).toEqual([
      [5, 'image', 'stable'],
      [4, 'commit', 'stable'],
      [3, 'commit', 'stable'],
      [2, 'commit', 'stable'],
      [1, 'start', 'stable'],
    ]);
    expect(releases[0]?.images['web-image']?.digest).toBe(second.digest);
    await deleteNamespace(`mooring-${suffix}`);
  });

  it('puts back what was changed by hand when drift correction is on', async () => {
    const suffix = Date.now().toString(36);
    const agent = await driftAgent(
      'drifter',
      `mooring-${suffix}`,
      { 'app.yaml': handChanged('drifter') },
      { interval: '2s' },
    );
    const replicas = async () => (await running('drifter'))?.spec?.replicas;
    await eventually('deployed from the local source', async () =>
      (await replicas()) === 1 ? true : undefined,
    );
    const releases = () =>
      ledgerReleases<{
        trigger: string;
        objects: { object: string; action: string }[];
        drift?: { object: string; fields: string[] }[];
      }>(`mooring-${suffix}`, 'drifter');
    await eventually('the first release recorded', async () =>
      (await releases()).length === 1 ? true : undefined,
    );
    // Several drift passes (one every 2 s) that find nothing to put back record nothing.
    await agent.more('drift pass ended', 3);
    expect((await releases()).map((r) => r.trigger)).toEqual(['start']);
    const scaled = await kubectl('-n', ns(), 'scale', 'deployment/drifter', '--replicas=3');
    expect(scaled.code, scaled.stderr).toBe(0);
    // An env var the manifest does not set, added by hand: a server-side apply alone would leave it.
    const setEnv = await kubectl('-n', ns(), 'set', 'env', 'deployment/drifter', 'DEBUG=1');
    expect(setEnv.code, setEnv.stderr).toBe(0);
    const envNames = async () =>
      (
        await apps.readNamespacedDeployment({ name: 'drifter', namespace: ns() })
      ).spec?.template.spec?.containers[0]?.env?.map((e) => e.name) ?? [];
    await eventually(
      'drift put back',
      async () => ((await replicas()) === 1 && (await envNames()).length === 0 ? true : undefined),
      30_000,
    );
    // Releases of trigger drift name the objects and the fields they put back (one per pass that found some).
    const recorded = await eventually('the correction recorded', async () => {
      const now = await releases();
      const fields = now.flatMap((r) => r.drift ?? []).flatMap((d) => d.fields);
      return fields.includes('spec.replicas') &&
        fields.includes('spec.template.spec.containers[name=app].env[name=DEBUG]')
        ? now
        : undefined;
    });
    expect(
      recorded
        .map((r) => r.trigger)
        .slice(0, -1)
        .every((t) => t === 'drift'),
    ).toBe(true);
    expect(recorded.length).toBeLessThanOrEqual(3);
    expect(recorded[0]?.objects.map((o) => o.object)).toContain(`Deployment ${ns()}/drifter`);
    expect(recorded.flatMap((r) => r.drift ?? []).map((d) => d.object)).toContain(
      `Deployment ${ns()}/drifter`,
    );
    // Passes after the correction find nothing more.
    await agent.more('drift pass ended', 2);
    expect((await releases()).length).toBe(recorded.length);
    await deleteNamespace(`mooring-${suffix}`);
  });
  it('a drift pass the cluster keeps refusing records no release, and the history it would push out stays', async () => {
    const suffix = Date.now().toString(36);
    const policy = `refuse-scale-back-${suffix}`;
    const agent = await driftAgent(
      'held',
      `mooring-${suffix}`,
      { 'app.yaml': handChanged('held') },
      { interval: '1s' },
    );
    const releases = async () =>
      (await ledgerReleases<{ trigger: string; result: string }>(`mooring-${suffix}`, 'held')).map(
        (r) => `${r.trigger} ${r.result}`,
      );
    await eventually('the first release recorded', async () =>
      (await releases()).length === 1 ? true : undefined,
    );
    // A platform's admission policy refuses to scale the Deployment back down: every correction fails.
    const file = join(await manifestDir({}), 'policy.yaml');
    await writeFile(
      file,
      admissionPolicy({
        name: policy,
        resource: { group: 'apps', version: 'v1', resource: 'deployments', operations: ['UPDATE'] },
        expression: '!(oldObject.spec.replicas != 1 && object.spec.replicas == 1)',
        message: 'scaling back to one replica is refused here',
        namespaces: [ns()],
      }),
    );
    try {
      const applied = await kubectl('apply', '-f', file);
      expect(applied.code, applied.stderr).toBe(0);
      // The policy is in force once the API server refuses what it refuses (its informer hears of it in moments):
      // tried by a server-side dry run on a Deployment of the test's own, so that the agent's sees no change.
      const probe = await kubectl(
        '-n',
        ns(),
        'create',
        'deployment',
        'probe',
        '--image=app:1',
        '--replicas=2',
      );
      expect(probe.code, probe.stderr).toBe(0);
      await eventually('the policy in force', async () => {
        const back = await kubectl(
          '-n',
          ns(),
          'patch',
          'deployment/probe',
          '--dry-run=server',
          '-p',
          '{"spec":{"replicas":1}}',
        );
        return back.code !== 0 && back.stderr.includes('scaling back to one replica') ? true : undefined;
      });
      const scaled = await kubectl('-n', ns(), 'scale', 'deployment/held', '--replicas=3');
      expect(scaled.code, scaled.stderr).toBe(0);
      const failures = () => agent.logged('drift pass failed').length;
      const before = failures();
      await eventually(
        'several refused drift passes',
        async () => (failures() >= before + 3 ? true : undefined),
        60_000,
      );
      const failed = agent.logged('drift pass failed').at(-1);
      expect(String(failed?.err)).toContain('scaling back to one replica is refused here');
      // None of them is a release: the start release is all the ledger holds.
      expect((await releases()).map((r) => r.split(' ')[0])).toEqual(['start']);
    } finally {
      await kubectl(
        'delete',
        'validatingadmissionpolicybinding,validatingadmissionpolicy',
        policy,
        '--ignore-not-found',
      );
    }
    // Once the cluster lets it, the next pass puts the replicas back and records that one release.
    await eventually(
      'drift put back',
      async () =>
        (await apps.readNamespacedDeployment({ name: 'held', namespace: ns() })).spec?.replicas === 1
          ? true
          : undefined,
      30_000,
    );
    await eventually('the correction recorded', async () => {
      const now = await releases();
      return now.length === 2 ? now : undefined;
    });
    expect((await releases())[0]).toMatch(/^drift /);
    await deleteNamespace(`mooring-${suffix}`);
  });

  it('reports drift without correcting it in drift mode report', async () => {
    const suffix = Date.now().toString(36);
    const agent = await driftAgent(
      'watched',
      `mooring-r-${suffix}`,
      {
        // Kinds whose live objects hold fields the server or a controller fills in (a Service's cluster IP, a
        // ServiceAccount's token Secret): a quiet pass must not take those for drift.
        'others.yaml': `apiVersion: v1
kind: Service
metadata: {name: watched}
spec: {selector: {app: watched}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: watched}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: watched-config}
data: {a: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: watched-secret}
stringData: {token: not-a-real-one}
`,
        'app.yaml': handChanged('watched'),
      },
      { interval: '2s', mode: 'report' },
    );
    const replicas = async () => (await running('watched'))?.spec?.replicas;
    await eventually('deployed', async () => ((await replicas()) === 1 ? true : undefined));
    const metric = async () => {
      const text = await (await fetch(`http://127.0.0.1:${agent.port()}/metrics`)).text();
      return /mooring_drift_objects\{deployment="watched"\} (\d+)/.exec(text)?.[1];
    };
    await eventually('a quiet drift pass counted', async () => ((await metric()) === '0' ? true : undefined));
    const scaled = await kubectl('-n', ns(), 'scale', 'deployment/watched', '--replicas=2');
    expect(scaled.code, scaled.stderr).toBe(0);
    const found = await eventually('the drift reported', async () => {
      const lines = agent.logs().filter((l) => l.msg === 'drift found') as unknown as {
        object: string;
        fields: string[];
      }[];
      return lines.length > 0 ? lines : undefined;
    });
    expect(found[0]).toMatchObject({ object: `Deployment ${ns()}/watched`, fields: ['spec.replicas'] });
    await agent.more('drift pass ended', 2);
    const all = agent.logs().filter((l) => l.msg === 'drift found') as unknown as { object: string }[];
    expect(new Set(all.map((f) => f.object))).toEqual(new Set([`Deployment ${ns()}/watched`]));
    expect(await metric()).toBe('1');
    // Left as it is: several passes later the hand change is still there, and no release was recorded for it.
    await agent.more('drift pass ended', 2);
    expect(await replicas()).toBe(2);
    const ledger = await ledgerReleases<{ trigger: string }>(`mooring-r-${suffix}`, 'watched');
    expect(ledger.map((r) => r.trigger)).toEqual(['start']);
    await deleteNamespace(`mooring-r-${suffix}`);
  });
});
