// Reloading the configuration without a restart: `mooring run --config` as its own process, its file laid out as
// Kubernetes mounts a ConfigMap (`config.yaml` -> `..data/config.yaml`, `..data` -> a timestamped folder) and
// updated as the kubelet's AtomicWriter does it (a new timestamped folder, a new link renamed over `..data`).
// A second deployment added to the file is deployed by the same process; an invalid file is refused with its
// problems logged and counted, the agent keeping the old configuration; a reload leaves the stability wait of a
// deployment it does not change running to its end.
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { BEHAVIOR } from '../testbed/kubelet.ts';
import { assertAlive } from './fault-helpers.ts';
import { api, attemptOf, ledgerOf, sleep } from './faults-support.ts';
import {
  type AgentProcess,
  bareRepo,
  configMapManifest,
  deleteNamespace,
  deploymentManifest,
  eventually,
  kubectl,
  manifestDir,
  runTool,
  startAgent,
  type TestRepo,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const appA = (round: number, behavior: 'ready' | 'never-ready') =>
  yamlDocuments(
    configMapManifest('settings', { round: String(round) }),
    deploymentManifest({ behavior, configMap: 'settings' }),
  );

const configMap = (name: string, round: number) =>
  stringify(
    configMapManifest(name, { round: String(round) }, { 'strategy.spinnaker.io/versioned': 'false' }),
  );

/** A folder laid out as a ConfigMap volume, updated as the kubelet does it. */
async function configMount() {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-reload-'));
  let n = 0;
  const publish = async (text: string) => {
    const stamp = `..2026_11_23_10_00_${String(n++).padStart(2, '0')}.123456789`;
    await mkdir(join(dir, stamp));
    await writeFile(join(dir, stamp, 'config.yaml'), text);
    await symlink(stamp, join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  return { dir, file: join(dir, 'config.yaml'), publish };
}

describe('configuration reload', () => {
  const nsA = useNamespace('reload-a');
  const nsB = useNamespace('reload-b');
  const env = testbed();
  const suffix = Date.now().toString(36);
  const agentNs = `mooring-reload-${suffix}`;
  const kube = api();
  let repo: TestRepo;
  let mount: Awaited<ReturnType<typeof configMount>>;
  let agent: AgentProcess;
  let config: (deployments: string[], extra?: string) => string;
  const dataOf = async (ns: string, name: string) => {
    const out = await kubectl('-n', ns, 'get', 'configmap', name, '-o', 'jsonpath={.data.round}');
    return out.code === 0 ? out.stdout : undefined;
  };
  const logged = (msg: string | RegExp) =>
    agent.logs().filter((l) => (typeof msg === 'string' ? l.msg === msg : msg.test(l.msg)));
  const port = () => agent.logs().find((l) => l.msg === 'http server listening')?.port as number;
  const reloads = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port()}/metrics`)).text();
    const count = (result: string) =>
      Number(
        new RegExp(`^mooring_config_reloads_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0,
      );
    return { applied: count('applied'), invalid: count('invalid') };
  };
  const deploymentA = () =>
    `  - {name: a, namespace: ${nsA()}, source: app, paths: [a], stability: {timeout: 3m}}`;
  const deploymentB = (paths = '[b]') => `  - {name: b, namespace: ${nsB()}, source: app, paths: ${paths}}`;

  beforeAll(async () => {
    const repoPath = `config-reload-${suffix}/apps`;
    repo = await bareRepo(repoPath);
    await repo.commit({
      'a/app.yaml': appA(1, 'ready'),
      'b/app.yaml': configMap('b-settings', 1),
      'b2/app.yaml': configMap('b-extra', 1),
    });
    const secrets = await manifestDir({ user: env.git.username, password: env.git.password });
    config = (deployments, extra = '') => `
cluster: {name: reload, kubeconfig: ${env.kube.kubeconfig}, namespace: ${agentNs}}
sources:
  git:
    - {name: app, url: "${env.git.url}/${repoPath}.git", interval: 1s, credentials: {username: {file: ${secrets}/user}, password: {file: ${secrets}/password}}}
deployments:
${deployments.join('\n')}
server: {port: 0, address: 127.0.0.1}
${extra}
`;
    mount = await configMount();
    await mount.publish(config([deploymentA()]));
    await symlink('..data/config.yaml', mount.file);
    agent = startAgent({ file: mount.file }, { process: true });
    await eventually(
      'deployment a deployed',
      async () =>
        (await ledgerOf(kube, agentNs, 'a')).releases.some((r) => r.result === 'stable') ? true : undefined,
      120_000,
    );
    await eventually('the configuration file watched', async () =>
      logged('watching the configuration file').length > 0 ? true : undefined,
    );
  });

  afterAll(async () => {
    if (agent?.alive()) {
      agent.child.kill('SIGTERM');
      await agent.exited;
    }
    await deleteNamespace(agentNs);
    kube.close();
    if (mount) await rm(mount.dir, { recursive: true, force: true });
  });

  it('deploys a deployment added to the file, in the same process, leaving the first one alone', async () => {
    const pid = agent.child.pid;
    const before = (await ledgerOf(kube, agentNs, 'a')).releases.length;
    const syncsOfA = () =>
      agent.logs().filter((l) => l.msg === 'sync started' && l.deployment === 'a').length;
    const syncsBefore = syncsOfA();
    expect(await dataOf(nsB(), 'b-settings')).toBeUndefined();

    await mount.publish(config([deploymentA(), deploymentB()]));
    await eventually('b deployed', async () =>
      (await dataOf(nsB(), 'b-settings')) === '1' ? true : undefined,
    );

    assertAlive(agent);
    expect(agent.child.pid).toBe(pid);
    // The reload's log line follows its last step (the first poll of the added deployment's source), which may end
    // after b's objects are written.
    await eventually('the reload logged', async () =>
      logged('configuration reloaded').length > 0 ? true : undefined,
    );
    const reloaded = logged('configuration reloaded');
    expect(reloaded).toHaveLength(1);
    expect(reloaded[0]).toMatchObject({ deploymentsAdded: ['b'] });
    expect(reloaded[0]?.deploymentsChanged).toBeUndefined();
    // The first deployment was not synced again, and its ledger holds the one release it had: checked after two
    // more polls of the source the two share (a sync the reload's poll wrongly queued would have started by then).
    await agent.morePolls(2);
    expect(syncsOfA()).toBe(syncsBefore);
    expect((await ledgerOf(kube, agentNs, 'a')).releases).toHaveLength(before);
    expect(await reloads()).toEqual({ applied: 1, invalid: 0 });
  });

  it('lets a sync of an unchanged deployment that waits for stability end stable across a reload', async () => {
    const commit = await repo.commit({ 'a/app.yaml': appA(2, 'never-ready') });
    // The sync of a has applied and waits: its pods never become ready.
    await eventually(
      'a waiting for stability at the new commit',
      async () => {
        const attempt = await attemptOf(kube, agentNs, 'a');
        const pods = JSON.parse((await kubectl('-n', nsA(), 'get', 'pods', '-o', 'json')).stdout) as {
          items: { metadata: { annotations?: Record<string, string> } }[];
        };
        const waiting = pods.items.some((p) => p.metadata.annotations?.[BEHAVIOR] === 'never-ready');
        return attempt?.commit === commit && waiting ? true : undefined;
      },
      60_000,
    );
    await sleep(1000);
    // A reload that changes b (a second path) while a waits.
    await mount.publish(config([deploymentA(), deploymentB('[b, b2]')]));
    await eventually('b synced again with its new spec', async () =>
      (await dataOf(nsB(), 'b-extra')) === '1' ? true : undefined,
    );
    // The reload's log line follows its last step (the poll of the changed deployment's source), which may end
    // after b's objects are written.
    await eventually('the reload logged', async () =>
      logged('configuration reloaded').length >= 2 ? true : undefined,
    );
    expect(logged('configuration reloaded').at(-1)).toMatchObject({ deploymentsChanged: ['b'] });
    const ledger = await ledgerOf(kube, agentNs, 'a');
    expect((await attemptOf(kube, agentNs, 'a'))?.commit, 'a still syncing').toBe(commit);
    expect(ledger.releases.some((r) => r.commit === commit)).toBe(false);

    // Now its pods become ready: the same sync ends stable.
    await kubectl('-n', nsA(), 'annotate', 'pods', '--all', '--overwrite', `${BEHAVIOR}=ready`);
    const release = await eventually(
      'a stable at the new commit',
      async () => (await ledgerOf(kube, agentNs, 'a')).releases.find((r) => r.commit === commit),
      120_000,
    );
    expect(release.result).toBe('stable');
    expect((await ledgerOf(kube, agentNs, 'a')).releases.filter((r) => r.commit === commit)).toHaveLength(1);
    expect(agent.logs().filter((l) => l.deployment === 'a' && l.outcome === 'cancelled')).toEqual([]);
    assertAlive(agent);
  });

  it('refuses an invalid file, keeps running with the old configuration, and applies the next valid one', async () => {
    const counts = await reloads();
    // A duration without its unit, and a deployment naming a source that does not exist.
    await mount.publish(
      config(
        [deploymentA(), deploymentB('[b, b2]'), `  - {name: c, namespace: ${nsB()}, source: nowhere}`],
        'drift: {interval: 30}',
      ),
    );
    const refused = await eventually(
      'the invalid file refused',
      async () => logged(/^configuration not reloaded/)[0],
    );
    expect(refused.level).toBe(50);
    expect(refused.file).toBe(mount.file);
    const problems = refused.problems as string[];
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toContain(`${mount.file}:`);
    expect(problems.join('\n')).toMatch(/drift\.interval: 30 has no unit/);
    expect(problems.join('\n')).toMatch(
      /deployments\[2\]\.source: no git, local or oci source is named "nowhere"/,
    );
    expect(await reloads()).toEqual({ applied: counts.applied, invalid: counts.invalid + 1 });
    assertAlive(agent);

    // The old configuration still runs: a new commit to a is deployed.
    const third = await repo.commit({
      'a/app.yaml': appA(3, 'ready'),
      'b/app.yaml': configMap('b-settings', 3),
    });
    const stableAt = async (commit: string) =>
      (await ledgerOf(kube, agentNs, 'a')).releases.some((r) => r.commit === commit && r.result === 'stable');
    await eventually(
      'a and b deployed at round 3',
      async () => ((await stableAt(third)) && (await dataOf(nsB(), 'b-settings')) === '3' ? true : undefined),
      120_000,
    );

    // A valid file after it is applied: b removed (nothing deleted), a restart-only setting reported.
    await mount.publish(
      config([deploymentA()], 'concurrency: 2').replace(
        'cluster: {name: reload,',
        'cluster: {name: renamed,',
      ),
    );
    const applied = await eventually('the valid file applied', async () =>
      logged('configuration reloaded').find((l) => Array.isArray(l.deploymentsRemoved)),
    );
    expect(applied).toMatchObject({
      deploymentsRemoved: ['b'],
      settings: ['concurrency'],
      needsRestart: ['cluster.name'],
    });
    expect(logged('needs a restart: cluster.name')).toHaveLength(1);
    expect(await reloads()).toEqual({ applied: counts.applied + 1, invalid: counts.invalid + 1 });
    expect(await dataOf(nsB(), 'b-settings')).toBe('3');
    // b's source is no longer polled for it: a commit to b is not deployed.
    const fourth = await repo.commit({
      'b/app.yaml': configMap('b-settings', 4),
      'a/app.yaml': appA(4, 'ready'),
    });
    await eventually(
      'a deployed at round 4',
      async () => ((await stableAt(fourth)) ? true : undefined),
      120_000,
    );
    await agent.morePolls(2);
    expect(await dataOf(nsB(), 'b-settings')).toBe('3');
    assertAlive(agent);
  });
});

describe('the chart', () => {
  it('mounts the configuration folder without subPath, so that updates of the ConfigMap reach the agent', async () => {
    const chart = fileURLToPath(new URL('../../charts/mooring', import.meta.url));
    const out = await runTool(testbed().tools.helm, ['template', 'rel', chart, '-n', 'mooring']);
    expect(out.code, out.stderr).toBe(0);
    interface Pod {
      containers: {
        name: string;
        args?: string[];
        volumeMounts?: { name: string; mountPath: string; subPath?: string }[];
      }[];
      volumes: { name: string; configMap?: { name: string } }[];
    }
    const deployment = parseAllDocuments(out.stdout)
      .map((d) => d.toJS() as { kind?: string; spec: { template: { spec: Pod } } } | null)
      .find((o) => o?.kind === 'Deployment');
    const pod = deployment?.spec.template.spec as Pod;
    const volume = pod.volumes.find((v) => v.configMap !== undefined);
    const container = pod.containers.find((c) => c.name === 'mooring');
    const mount = container?.volumeMounts?.find((m) => m.name === volume?.name);
    expect(mount).toBeDefined();
    expect(mount?.subPath).toBeUndefined();
    const args = container?.args ?? [];
    const file = args[args.indexOf('--config') + 1] ?? '';
    expect(file.startsWith(`${mount?.mountPath}/`)).toBe(true);
  });
});
