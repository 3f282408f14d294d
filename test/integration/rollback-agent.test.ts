// `mooring rollback` while the RUNNING agent (`mooring run --config`, its own process) is in the middle of a sync of a
// bad commit: the rollback tells the agent through the control ConfigMap, the agent stops that sync (its status ends,
// superseded by the rollback) and starts none until the rollback has ended; the bad commit's later wave is never
// applied, nothing of the rolled-back release is pruned, and the rollback's release stays the newest, held by its
// fence across later polls. Without it, the agent's sync saw the rolled-back Deployment stable, went on with its next
// wave and pruned, and recorded the bad commit as the newest stable release.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  startGitAgent,
  type TestRepo,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const POLL_SECONDS = 2;

/** A release: the Deployment (ready or never), a ConfigMap only this release has, and one in a later wave. */
const release = (tag: string, ready: boolean, late = false) =>
  yamlDocuments(
    deploymentManifest({
      image: `example/web:${tag}`,
      behavior: ready ? 'ready' : 'never-ready',
      progressDeadlineSeconds: 600,
    }),
    configMapManifest(`only-${tag}`, { TAG: tag }, { 'strategy.spinnaker.io/versioned': 'false' }),
    ...(late
      ? [
          configMapManifest(
            'late',
            { TAG: tag },
            { 'strategy.spinnaker.io/versioned': 'false', 'argocd.argoproj.io/sync-wave': '1' },
          ),
        ]
      : []),
  );

describe('mooring rollback while the agent syncs a bad commit', () => {
  const ns = useNamespace('rollback-agent');
  const env = testbed();
  const suffix = Date.now().toString(36);
  const agentNs = `mooring-rollback-${suffix}`;
  const kube = api();
  let repo: TestRepo;
  let configFile = '';
  let agent: AgentProcess;
  let receiver: StatusReceiver;
  const kubectl = (...args: string[]) =>
    runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, '-n', ns(), ...args]);
  const image = async () =>
    (await kubectl('get', 'deployment', 'web', '-o', 'jsonpath={.spec.template.spec.containers[0].image}'))
      .stdout;
  const exists = async (name: string) =>
    (await kubectl('get', 'configmap', name, '-o', 'name', '--ignore-not-found')).stdout.trim() !== '';

  beforeAll(async () => {
    ({ repo, receiver, configFile, agent } = await startGitAgent({
      repo: `rollback-agent-${suffix}/app`,
      files: { 'app.yaml': release('one', true) },
      source: { interval: `${POLL_SECONDS}s` },
      cluster: { name: 'rollback', namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns(), stability: { timeout: '10m' } }],
      start: { process: true },
    }));
    await eventually(
      'the first release stable',
      async () =>
        (await ledgerOf(kube, agentNs, 'web')).releases[0]?.result === 'stable' ? true : undefined,
      120_000,
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

  it('stops the sync, ends its status, and keeps the rolled-back release whole and newest', async () => {
    const good = await repo.commit({ 'app.yaml': release('two', true) });
    await eventually(
      'the good commit stable',
      async () => {
        const newest = (await ledgerOf(kube, agentNs, 'web')).releases[0];
        return newest?.commit === good && newest.result === 'stable' ? newest : undefined;
      },
      120_000,
    );
    const goodRelease = (await ledgerOf(kube, agentNs, 'web')).releases[0]?.id as number;

    // A bad commit: its Deployment never becomes ready, so the agent's sync waits in wave 0.
    const bad = await repo.commit({ 'app.yaml': release('three', false, true) });
    await eventually(
      'the bad commit applied and waited on',
      async () =>
        (await image()) === 'example/web:three' && (await exists('only-three')) ? true : undefined,
      60_000,
    );

    /** The bad commit's newest status. */
    const badStatus = () =>
      receiver
        .statuses()
        .filter((s) => s.sha === bad)
        .at(-1);

    // A rollback refused (no such release) stops nothing: the agent's sync goes on waiting.
    const refused = await mooring('rollback', 'web', '--to', '999', '--config', configFile);
    // Not found: 1, as every command's.
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    expect(refused.stderr).toContain('deployment web has no release 999');
    expect(refused.stderr).not.toContain('waiting for the agent');
    expect(badStatus()?.state).toBe('pending');

    // A rollback interrupted while it waits for the agent's answer (the agent frozen: it cannot answer) has written
    // nothing but its hold, and removes it: the agent is not kept off the deployment by a rollback given up.
    const controlAnnotations = async () =>
      (
        await runTool(env.tools.kubectl, [
          ...['--kubeconfig', env.kube.kubeconfig, '-n', agentNs],
          ...[
            'get',
            'configmap',
            'mooring-control',
            '-o',
            'jsonpath={.metadata.annotations}',
            '--ignore-not-found',
          ],
        ])
      ).stdout;
    agent.child.kill('SIGSTOP');
    try {
      const cli = spawn(
        process.execPath,
        [
          join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts'),
          'rollback',
          'web',
          '--to',
          String(goodRelease),
          '--config',
          configFile,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let err = '';
      cli.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((resolve) => cli.on('close', (code) => resolve(code)));
      await eventually('the rollback waiting for the agent', async () =>
        err.includes('waiting for the agent to stop its sync of web') ? true : undefined,
      );
      expect(await controlAnnotations()).toContain('rollback.mooring.io/web');
      cli.kill('SIGINT');
      expect(await exited, err).toBe(130);
      expect(await controlAnnotations()).not.toContain('rollback.mooring.io/web');
    } finally {
      agent.child.kill('SIGCONT');
    }
    expect(await image()).toBe('example/web:three');
    // Woken, the agent reads the hold and its removal from its watch: a hold gone before the agent saw it stops no
    // sync (it stopped this one, recorded it cancelled and started it again from the first wave).
    await agent.morePolls(1);
    expect(agent.logged('rollback from the CLI: the sync of the deployment stops')).toEqual([]);
    expect(badStatus()?.state).toBe('pending');

    // A rollback that cannot tell the agent (an admission policy refuses its hold in the control ConfigMap) while
    // the agent's sync runs is refused before it writes anything: it would run beside that sync.
    const policy = `deny-rollback-hold-${suffix}`;
    const policyFile = await manifestDir({
      'policy.yaml': `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ${policy}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  validations:
    - expression: >-
        object.metadata.name != 'mooring-control' || !has(object.metadata.annotations) ||
        !('rollback.mooring.io/web' in object.metadata.annotations)
      message: no rollback hold here
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ${policy}}
spec:
  policyName: ${policy}
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: ${agentNs}}
`,
    });
    const admin = (...args: string[]) =>
      runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, ...args]);
    // Asked by a dry run of the server, which runs admission: the control ConfigMap need not exist yet.
    const probe = await manifestDir({
      'hold.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: mooring-control
  namespace: ${agentNs}
  annotations: {rollback.mooring.io/web: "{}"}
`,
    });
    const holdRefused = async () =>
      (await admin('apply', '--dry-run=server', '-f', probe)).stderr.includes('no rollback hold here');
    expect((await admin('apply', '-f', policyFile)).code).toBe(0);
    try {
      await eventually('the policy enforced', async () => ((await holdRefused()) ? true : undefined));
      const blocked = await mooring('rollback', 'web', '--to', String(goodRelease), '--config', configFile);
      expect(blocked.code, blocked.stdout + blocked.stderr).toBe(2);
      expect(blocked.stderr).toMatch(
        /cannot tell the agent in namespace \S+ of the rollback \(.*no rollback hold here.*\) while it syncs web \(commit [0-9a-f]{12}, since .*nothing was rolled back/,
      );
      expect(await image()).toBe('example/web:three');
      expect(badStatus()?.state).toBe('pending');
    } finally {
      await admin('delete', '-f', policyFile);
    }
    await eventually('the policy gone', async () => ((await holdRefused()) ? undefined : true));

    // The agent frozen until the rollback waits for it: a quick agent stops its sync before the CLI looks, and the
    // CLI has nothing to wait for.
    agent.child.kill('SIGSTOP');
    let back: { code: number | null; stdout: string; stderr: string };
    try {
      const cli = spawn(
        process.execPath,
        [
          join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts'),
          ...['rollback', 'web', '--to', String(goodRelease), '--config', configFile],
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      back = { code: null, stdout: '', stderr: '' };
      const output = back;
      cli.stdout.on('data', (d: Buffer) => (output.stdout += d.toString()));
      cli.stderr.on('data', (d: Buffer) => (output.stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => cli.on('close', (code) => resolve(code)));
      await eventually('the rollback waiting for the agent again', async () =>
        output.stderr.includes('waiting for the agent to stop its sync of web') ? true : undefined,
      );
      agent.child.kill('SIGCONT');
      back.code = await exited;
    } finally {
      agent.child.kill('SIGCONT');
    }
    expect(back.code, back.stdout + back.stderr).toBe(0);
    expect(back.stderr).not.toContain('no agent answered');
    expect(back.stdout).toContain(`deployment web rolled back to release ${goodRelease}`);

    // The bad commit's status ends, superseded by the rollback; its sync went no further.
    await eventually('the bad commit ended', async () =>
      badStatus()?.state !== 'pending' ? true : undefined,
    );
    expect(badStatus()?.description).toMatch(/^Superseded by a rollback by \S+ before it was stable/);

    // Several polls later: the cluster runs the rolled-back release, whole; the bad commit's later wave never came.
    await agent.morePolls(3);
    expect(await image()).toBe('example/web:two');
    expect(await exists('only-two')).toBe(true);
    expect(await exists('late')).toBe(false);
    const ledger = await ledgerOf(kube, agentNs, 'web');
    expect(ledger.releases[0]).toMatchObject({ trigger: 'rollback', result: 'stable', commit: good });
    expect(ledger.fence).toBeDefined();
    expect(ledger.releases.some((r) => r.commit === bad && r.result === 'stable')).toBe(false);
    // The rollback's hold is gone from the control ConfigMap (its fence holds the deployment now).
    const control = await runTool(env.tools.kubectl, [
      ...['--kubeconfig', env.kube.kubeconfig, '-n', agentNs],
      ...['get', 'configmap', 'mooring-control', '-o', 'jsonpath={.metadata.annotations}'],
    ]);
    expect(control.stdout).not.toContain('rollback.mooring.io/web');
    expect(control.stdout).not.toContain('rollback-answered.mooring.io/web');
    expect(agent.logs().some((l) => l.msg.startsWith('rollback from the CLI'))).toBe(true);

    // A new commit lifts the fence and is deployed as usual.
    const fixed = await repo.commit({ 'app.yaml': release('four', true) });
    await eventually(
      'the next commit deployed',
      async () => {
        const newest = (await ledgerOf(kube, agentNs, 'web')).releases[0];
        return newest?.commit === fixed && newest.result === 'stable' ? true : undefined;
      },
      120_000,
    );
    expect(await image()).toBe('example/web:four');

    // A rollback whose CLI died leaves its hold (until its time passes): `mooring status` shows it, `mooring resume`
    // ends it.
    const hold = {
      token: '2026-12-04T10:00:00.000Z.0a1b2c3d',
      by: 'carol',
      since: new Date().toISOString(),
      until: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const annotated = await runTool(env.tools.kubectl, [
      ...['--kubeconfig', env.kube.kubeconfig, '-n', agentNs, 'annotate', 'configmap', 'mooring-control'],
      `rollback.mooring.io/web=${JSON.stringify(hold)}`,
    ]);
    expect(annotated.code, annotated.stderr).toBe(0);
    const status = await mooring('status', 'web', '--config', configFile);
    expect(status.stdout).toMatch(/being rolled back by carol since \d{4}-/);
    const resumed = await mooring('resume', 'web', '--config', configFile);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('hold of the rollback by carol since');
    expect((await mooring('status', 'web', '--config', configFile)).stdout).not.toContain(
      'being rolled back',
    );
    assertAlive(agent);
  }, 400_000);
});
