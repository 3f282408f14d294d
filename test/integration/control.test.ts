// `mooring reconcile`, `suspend` and `resume` against a RUNNING agent (`mooring run --config` as its own process),
// through the control ConfigMap in the agent's namespace: a reconcile puts back a hand-scaled Deployment and names
// the release it caused; a suspended deployment keeps its old configuration while new commits arrive (for longer
// than several polls), shows the hold in `mooring status`, the metrics and the commit status, refuses a reconcile,
// and deploys the newest commit at `mooring resume`, also when the agent restarted in between; a reconcile of a
// deployment no agent has exits 2; the operator Role of docs/control.md is all a user needs, and one without it
// is refused.
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { githubStatusValidator } from '../contract/github-openapi.ts';
import { assertAlive } from './fault-helpers.ts';
import { api, ledgerOf } from './faults-support.ts';
import {
  type AgentProcess,
  configMapManifest,
  deleteNamespace,
  deploymentManifest,
  eventually,
  manifestDir,
  mooring,
  runTool,
  type StatusReceiver,
  startAgent,
  startGitAgent,
  type TestRepo,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const POLL_SECONDS = 2;

const app = (greeting: string) =>
  yamlDocuments(
    configMapManifest('settings', { GREETING: greeting }),
    deploymentManifest({ configMap: 'settings' }),
  );

describe('mooring reconcile, suspend and resume with a running agent', () => {
  const ns = useNamespace('control');
  const env = testbed();
  const suffix = Date.now().toString(36);
  const agentNs = `mooring-control-${suffix}`;
  const kube = api();
  let repo: TestRepo;
  let configFile = '';
  let agent: AgentProcess;
  let receiver: StatusReceiver;
  const kubectl = (...args: string[]) =>
    runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, '-n', ns(), ...args]);
  /** The greeting the running Deployment's configuration says, and its replicas. */
  const live = async () => {
    const out = await kubectl('get', 'deployment', 'web', '-o', 'json');
    if (out.code !== 0) return undefined;
    const d = JSON.parse(out.stdout) as {
      spec: {
        replicas: number;
        template: { spec: { containers: { envFrom: { configMapRef: { name: string } }[] }[] } };
      };
      status?: { availableReplicas?: number };
    };
    const name = d.spec.template.spec.containers[0]?.envFrom[0]?.configMapRef.name ?? '';
    const cm = await kubectl('get', 'configmap', name, '-o', 'jsonpath={.data.GREETING}');
    return { greeting: cm.stdout, replicas: d.spec.replicas, available: d.status?.availableReplicas ?? 0 };
  };
  const port = () => agent.logs().find((l) => l.msg === 'http server listening')?.port as number;
  const suspendedGauge = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port()}/metrics`)).text();
    return /^mooring_deployment_suspended\{deployment="web"\} (\d+)$/m.exec(text)?.[1];
  };
  const flags = () => ['--config', configFile];

  beforeAll(async () => {
    ({ repo, receiver, configFile, agent } = await startGitAgent({
      repo: `control-${suffix}/app`,
      files: { 'app.yaml': app('one') },
      source: { interval: `${POLL_SECONDS}s` },
      cluster: { name: 'control', namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns() }],
      start: { process: true },
    }));
    await eventually(
      'the first release',
      async () => ((await live())?.available === 1 ? true : undefined),
      120_000,
    );
    await eventually('the agent idle after its first sync', async () =>
      (await ledgerOf(kube, agentNs, 'web')).releases[0]?.result === 'stable' ? true : undefined,
    );
  });

  afterAll(async () => {
    if (agent?.alive()) {
      agent.child.kill('SIGTERM');
      await agent.exited;
    }
    receiver?.close();
    await deleteNamespace(agentNs);
    kube.close();
  });

  it('reconcile puts back a hand-scaled Deployment, prints the outcome and names the release', async () => {
    const scaled = await kubectl('scale', 'deployment', 'web', '--replicas=3');
    expect(scaled.code, scaled.stderr).toBe(0);
    expect((await live())?.replicas).toBe(3);
    const before = (await ledgerOf(kube, agentNs, 'web')).releases[0]?.id ?? 0;

    const result = await mooring('reconcile', 'web', ...flags(), '--timeout', '2m');
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const release = Number(/deployment web stable \(release (\d+)\)/.exec(result.stdout)?.[1]);
    expect(release).toBeGreaterThan(before);
    expect((await live())?.replicas).toBe(1);
    const ledger = await ledgerOf(kube, agentNs, 'web');
    expect(ledger.releases.find((r) => r.id === release)).toMatchObject({
      trigger: 'manual',
      result: 'stable',
    });
    assertAlive(agent);
  });

  it('reconcile, status and resume of a deployment that does not exist exit 1 naming it, as not found', async () => {
    // Without --config the CLI cannot know: the agent answers.
    const result = await mooring(
      'reconcile',
      'no-such-app',
      '--kubeconfig',
      env.kube.kubeconfig,
      '--agent-namespace',
      agentNs,
      '--timeout',
      '1m',
    );
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain("no deployment no-such-app in the agent's configuration");
    const known = await mooring('reconcile', 'no-such-app', ...flags());
    expect(known.code, known.stdout + known.stderr).toBe(1);
    expect(known.stderr).toContain('no deployment no-such-app in the configuration (deployments: web');
    // suspend without --config: known by its ledger; a typo would otherwise suspend nothing while web deploys on.
    const blindSuspend = await mooring(
      'suspend',
      'wbe',
      '--kubeconfig',
      env.kube.kubeconfig,
      '--agent-namespace',
      agentNs,
    );
    expect(blindSuspend.code, blindSuspend.stdout + blindSuspend.stderr).toBe(1);
    expect(blindSuspend.stderr).toContain(
      `deployment wbe not found (no ledger mooring-ledger-wbe in namespace ${agentNs}; deployments with a ledger: web)`,
    );
    const control = await runTool(env.tools.kubectl, [
      ...['--kubeconfig', env.kube.kubeconfig, '-n', agentNs],
      ...['get', 'configmap', 'mooring-control', '-o', 'jsonpath={.metadata.annotations}'],
    ]);
    expect(control.stdout).not.toContain('wbe');
    for (const command of ['status', 'resume']) {
      const typo = await mooring(command, 'no-such-app', ...flags());
      expect(typo.code, typo.stdout + typo.stderr).toBe(1);
      expect(typo.stderr).toContain(
        'deployment no-such-app not found (no ledger mooring-ledger-no-such-app)',
      );
    }
  });

  it('answers a few of many reconcile requests written by hand for deployments it does not have, and lives', async () => {
    // Three hundred request keys in one write of the control ConfigMap (whoever may write there): each answer is a
    // write of the map, so only a few are answered; the agent goes on answering its own deployment's.
    const annotations: Record<string, string> = {};
    for (let i = 0; i < 300; i++) annotations[`reconcile.mooring.io/ghost-${i}`] = `t-${i}`;
    // (The map exists once anything asked; when this test runs alone, nothing has.)
    await runTool(env.tools.kubectl, [
      ...['--kubeconfig', env.kube.kubeconfig, '-n', agentNs, 'create', 'configmap', 'mooring-control'],
    ]);
    const flooded = await runTool(env.tools.kubectl, [
      ...['--kubeconfig', env.kube.kubeconfig, '-n', agentNs, 'patch', 'configmap', 'mooring-control'],
      ...['--type=merge', '-p', JSON.stringify({ metadata: { annotations } })],
    ]);
    expect(flooded.code, flooded.stderr).toBe(0);
    await eventually('the flood seen', async () =>
      agent.logs().some((l) => l.msg.startsWith('reconcile requested of more deployments'))
        ? true
        : undefined,
    );
    const said = agent.logs().find((l) => l.msg.startsWith('reconcile requested of more deployments'));
    expect(said?.unanswered).toBe(290);
    const control = await runTool(env.tools.kubectl, [
      ...['--kubeconfig', env.kube.kubeconfig, '-n', agentNs],
      ...['get', 'configmap', 'mooring-control', '-o', 'json'],
    ]);
    const keys = Object.keys(
      (JSON.parse(control.stdout) as { metadata: { annotations: Record<string, string> } }).metadata
        .annotations,
    );
    expect(keys.filter((k) => k.startsWith('reconciled.mooring.io/ghost-')).length).toBeLessThanOrEqual(10);
    // Cleared again; the agent still answers web's.
    const cleared: Record<string, null> = {};
    for (const key of keys) if (key.includes('/ghost-')) cleared[key] = null;
    await runTool(env.tools.kubectl, [
      ...['--kubeconfig', env.kube.kubeconfig, '-n', agentNs, 'patch', 'configmap', 'mooring-control'],
      ...['--type=merge', '-p', JSON.stringify({ metadata: { annotations: cleared } })],
    ]);
    const reconciled = await mooring('reconcile', 'web', ...flags());
    expect(reconciled.code, reconciled.stdout + reconciled.stderr).toBe(0);
    expect(agent.alive()).toBe(true);
  });

  it('reconcile with no agent watching exits 1 saying so', async () => {
    const idle = `${agentNs}-none`;
    await runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, 'create', 'namespace', idle]);
    const result = await mooring(
      'reconcile',
      'web',
      '--kubeconfig',
      env.kube.kubeconfig,
      '--agent-namespace',
      `${agentNs}-none`,
      '--timeout',
      '3s',
    );
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain(
      `no agent answered within 3s: is it running and does it watch namespace ${agentNs}-none?`,
    );
    await deleteNamespace(`${agentNs}-none`);
  });

  it('suspend holds new commits, shows the hold, refuses a reconcile; resume deploys the newest', async () => {
    const suspended = await mooring('suspend', 'web', ...flags(), '--reason', 'maintenance');
    expect(suspended.code, suspended.stdout + suspended.stderr).toBe(0);
    await eventually('the agent sees the suspension', async () =>
      agent.logs().some((l) => l.msg.startsWith('deployment suspended')) ? true : undefined,
    );
    // A commit held, then passed over by a newer one before the resume: its pending status ends, superseded.
    const passed = await repo.commit({ 'app.yaml': app('between') });
    await eventually('the first commit noted as held', async () =>
      agent.logs().some((l) => l.msg.startsWith('commit held') && l.commit === passed) ? true : undefined,
    );
    const held = await repo.commit({ 'app.yaml': app('two') });

    // Several polls later the cluster still runs the old configuration; the commit is reported as held.
    await eventually('the commit noted as held', async () =>
      agent.logs().some((l) => l.msg.startsWith('commit held') && l.commit === held) ? true : undefined,
    );
    await eventually('the passed-over commit ended', async () =>
      receiver
        .statuses()
        .filter((s) => s.sha === passed)
        .at(-1)?.state !== 'pending'
        ? true
        : undefined,
    );
    expect(
      receiver
        .statuses()
        .filter((s) => s.sha === passed)
        .map((s) => s.description),
    ).toEqual([
      'suspended: not deployed until mooring resume web',
      `Superseded by commit ${held.slice(0, 7)} before it was stable`,
    ]);
    await agent.morePolls(3);
    expect((await live())?.greeting).toBe('one');
    const statuses = () => receiver.statuses().filter((s) => s.sha === held);
    expect(statuses().map((s) => [s.state, s.description])).toEqual([
      ['pending', 'suspended: not deployed until mooring resume web'],
    ]);
    const validate = githubStatusValidator();
    for (const r of receiver.captured) expect(validate(r, '')).toEqual([]);

    const status = await mooring('status', 'web', ...flags());
    expect(status.stdout).toMatch(/suspended since \d{4}-\d\d-\d\dT\d\d:\d\dZ by admin: maintenance/);
    expect(await suspendedGauge()).toBe('1');

    const refused = await mooring('reconcile', 'web', ...flags(), '--timeout', '30s');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/deployment web is suspended since .* by admin: maintenance/);

    const resumed = await mooring('resume', 'web', ...flags());
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('suspension ended');
    expect(resumed.stdout).not.toContain('rollback fence');
    await eventually('the held commit deployed', async () =>
      (await live())?.greeting === 'two' ? true : undefined,
    );
    await eventually('the held commit reported stable', async () =>
      statuses().at(-1)?.state === 'success' ? true : undefined,
    );
    expect(statuses()[0]?.description).toBe('suspended: not deployed until mooring resume web');
    expect(await suspendedGauge()).toBe('0');
    const after = await mooring('status', 'web', ...flags());
    expect(after.stdout).not.toContain('suspended');
    // Nothing holds it any more: a second resume has nothing to do.
    const again = await mooring('resume', 'web', ...flags());
    // Nothing to resume is a failure, as `kubectl rollout resume` of a Deployment that is not paused.
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('deployment web is neither suspended nor held by a rollback');
    assertAlive(agent);
  });
  it('holds a suspended deployment across an agent restart', async () => {
    expect((await mooring('suspend', 'web', ...flags())).code).toBe(0);
    agent.child.kill('SIGTERM');
    await agent.exited;
    const held = await repo.commit({ 'app.yaml': app('three') });
    agent = startAgent({ file: configFile }, { process: true });
    await eventually('the restarted agent holds the new commit', async () =>
      agent.logs().some((l) => l.msg.startsWith('commit held') && l.commit === held) ? true : undefined,
    );
    await agent.morePolls(3);
    expect((await live())?.greeting).toBe('two');
    expect(await suspendedGauge()).toBe('1');
    expect((await mooring('resume', 'web', ...flags())).code).toBe(0);
    await eventually('the held commit deployed', async () =>
      (await live())?.greeting === 'three' ? true : undefined,
    );
    assertAlive(agent);
  });

  it('is authorised by RBAC on the control ConfigMap: the documented operator Role suffices', async () => {
    const pki = await manifestDir({});
    const kubeconfigOf = async (user: string, group: string) => {
      const key = join(pki, `${user}.key`);
      const csr = join(pki, `${user}.csr`);
      const crt = join(pki, `${user}.crt`);
      const ca = dirname(env.kube.clientCertificate?.cert ?? '');
      const openssl = (...args: string[]) => runTool('openssl', args);
      await openssl(
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        csr,
        '-subj',
        `/O=${group}/CN=${user}`,
      );
      const signed = await openssl(
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        join(ca, 'client-ca.crt'),
        '-CAkey',
        join(ca, 'client-ca.key'),
        '-set_serial',
        String(Date.now()),
        '-days',
        '1',
        '-out',
        crt,
      );
      expect(signed.code, signed.stderr).toBe(0);
      const testbedConfig = parse(await readFile(env.kube.kubeconfig, 'utf8')) as { clusters: unknown[] };
      const file = join(pki, `${user}.kubeconfig`);
      await writeFile(
        file,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: testbedConfig.clusters.slice(0, 1),
          users: [
            {
              name: user,
              user: {
                'client-certificate-data': (await readFile(crt)).toString('base64'),
                'client-key-data': (await readFile(key)).toString('base64'),
              },
            },
          ],
          contexts: [
            { name: 'x', context: { cluster: (testbedConfig.clusters[0] as { name: string }).name, user } },
          ],
          'current-context': 'x',
        }),
      );
      return ['--kubeconfig', file, '--agent-namespace', agentNs];
    };
    // The Role and RoleBinding exactly as docs/control.md shows them, in the agent's namespace.
    const doc = await readFile(join(import.meta.dirname, '..', '..', 'docs', 'control.md'), 'utf8');
    const yaml = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
    const objects = parseAllDocuments(yaml).map((d) => d.toJS() as { metadata: { namespace: string } });
    expect(objects.length).toBe(2);
    for (const o of objects) o.metadata.namespace = agentNs;
    const rbac = join(pki, 'rbac.yaml');
    await writeFile(rbac, yamlDocuments(...objects));
    const applied = await runTool(env.tools.kubectl, [
      '--kubeconfig',
      env.kube.kubeconfig,
      'apply',
      '-f',
      rbac,
    ]);
    expect(applied.code, applied.stderr).toBe(0);

    const alice = await kubeconfigOf('alice', 'oncall');
    const bob = await kubeconfigOf('bob', 'visitors');
    // RBAC reaches the API server's authorizer through its own watch: a moment after the apply.
    const suspended = await eventually('alice may suspend', async () => {
      const r = await mooring('suspend', 'web', ...alice, '--reason', 'drill');
      return r.code === 0 ? r : undefined;
    });
    expect(suspended.stdout).toContain('by alice: drill');
    const status = await mooring('status', 'web', ...alice);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/suspended since \S+ by alice: drill/);
    await eventually('the agent sees the suspension', async () =>
      (await suspendedGauge()) === '1' ? true : undefined,
    );

    const refused = await mooring('resume', 'web', ...bob);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/forbidden/i);
    expect((await mooring('reconcile', 'web', ...bob, '--timeout', '10s')).code).toBe(2);

    const resumed = await mooring('resume', 'web', ...alice);
    expect(resumed.code, resumed.stderr).toBe(0);
    const reconciled = await mooring('reconcile', 'web', ...alice, '--timeout', '2m');
    expect(reconciled.code, reconciled.stdout + reconciled.stderr).toBe(0);
    expect(reconciled.stdout).toMatch(/deployment web stable \(release \d+\)/);
  });

  it('ends the pending status of a commit held by a deployment removed from the configuration', async () => {
    expect((await mooring('suspend', 'web', ...flags())).code).toBe(0);
    await eventually('the agent sees the suspension', async () =>
      (await suspendedGauge()) === '1' ? true : undefined,
    );
    const held = await repo.commit({ 'app.yaml': app('four') });
    await eventually('the commit noted as held', async () =>
      agent.logs().some((l) => l.msg.startsWith('commit held') && l.commit === held) ? true : undefined,
    );
    // The configuration without the deployment: nothing will deploy the held commit.
    const config = parse(await readFile(configFile, 'utf8')) as { deployments: unknown[] };
    config.deployments = [];
    await writeFile(configFile, stringify(config));
    await eventually('the held commit ended', async () =>
      receiver
        .statuses()
        .filter((s) => s.sha === held)
        .at(-1)?.state !== 'pending'
        ? true
        : undefined,
    );
    expect(
      receiver
        .statuses()
        .filter((s) => s.sha === held)
        .map((s) => s.description),
    ).toEqual([
      'suspended: not deployed until mooring resume web',
      'Cancelled: the deployment was removed from the configuration (nothing was deleted)',
    ]);
    assertAlive(agent);
  });
});
