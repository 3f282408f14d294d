// The agent under API server faults, on the real control plane: kube-apiserver killed (SIGKILL) and restarted, or
// stopped (SIGSTOP) for longer than the client's request timeout, during apply and during the stability wait; and
// the agent itself killed with SIGKILL mid-sync and started again. The agent runs as its own process, as in a pod.
// After each fault: the process lives (its last-resort handler never fired), the deployment converges to the newest
// commit, every commit status that went pending has ended, no ConfigMap version is duplicated or dangling, and the
// ledger's newest release is the newest commit, stable.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFailed } from 'vitest';
import {
  appsAt,
  assertAlive,
  convergedTo,
  freezeApiServer,
  killApiServer,
  restartApiServer,
} from './fault-helpers.ts';
import {
  api,
  type FaultSetting,
  faultSetting,
  ledgerOf,
  useCleanups,
  versionProblems,
} from './faults-support.ts';
import {
  type AgentProcess,
  eventually,
  kubectl,
  manifestDir,
  postedStatuses,
  type StatusReceiver,
  startAgent,
  startGitAgent,
  startMooring,
  statusesByCommit,
  testbed,
  unended,
  useNamespace,
} from './helpers.ts';
import { appName } from './scale-fixtures.ts';

const APPS = 60;
const CONTEXT = 'mooring/faults/web';
const LB = 'lb';

/** A LoadBalancer Service the test bed's kubelet never binds: the stability wait lasts until the test binds it. */
const unboundLoadBalancer = `apiVersion: v1
kind: Service
metadata: {name: ${LB}, annotations: {testbed.mooring.io/load-balancer: never}}
spec: {type: LoadBalancer, selector: {app: app-000}, ports: [{port: 80, protocol: TCP}]}
`;

interface Setup extends FaultSetting {
  ns: string;
  configFile: string;
  captured: StatusReceiver['captured'];
  agent: AgentProcess;
}

describe('the agent under API server faults', () => {
  // One namespace per fault: nothing one leaves behind can satisfy the next.
  const namespaces = Array.from({ length: 6 }, (_, i) => useNamespace(`faults${i}`));
  const cleanup = useCleanups();

  /** A repository at revision 1 of the apps, an agent syncing it, and its first release stable. */
  async function setup(which: number, timeout: string): Promise<Setup> {
    const ns = namespaces[which] as () => string;
    const setting = await faultSetting('faults', cleanup, 'web');
    const { receiver, configFile, first, agent } = await startGitAgent({
      repo: setting.repo,
      files: { 'apps.yaml': appsAt(APPS, 1) },
      cluster: { name: 'faults', namespace: setting.agentNs, requestTimeout: '5s' },
      deployments: [{ name: 'web', namespace: ns(), stability: { timeout } }],
      start: { process: true },
    });
    cleanup(() => {
      if (setupState.agent.alive()) setupState.agent.child.kill('SIGKILL');
    });
    const setupState: Setup = {
      ...setting,
      ns: ns(),
      configFile,
      captured: receiver.captured,
      agent,
    };
    onTestFailed(() => {
      const lines = setupState.agent.output().split('\n');
      process.stderr.write(`agent output (last lines):\n${lines.slice(-60).join('\n')}\n`);
      process.stderr.write(
        `statuses: ${JSON.stringify([...statusesByCommit(receiver.captured, CONTEXT)])}\n`,
      );
    });
    await eventually(
      'release 1 stable',
      async () => {
        // A process that died is reported as such, not waited on.
        if (!agent.alive())
          return Promise.reject(new Error(`the agent exited: ${agent.output().slice(-500)}`));
        return statusesByCommit(receiver.captured, CONTEXT).get(first)?.at(-1)?.state === 'success'
          ? true
          : undefined;
      },
      120_000,
    );
    return setupState;
  }

  /** Resolves once the agent has written at least one object of the sync of `commit`. */
  async function applying(agent: AgentProcess, commit: string): Promise<void> {
    const revision = commit.slice(0, 12);
    await eventually(
      `the sync of ${revision} writing`,
      async () =>
        agent.logs().some((l) => l.msg === 'applied' && l.revision === revision) ? true : undefined,
      60_000,
    );
  }

  /**
   * Resolves once the sync of `commit` has written all it changes (a new version of every ConfigMap, every
   * Deployment, the load balancer) and so waits on the unbound load balancer.
   */
  async function waiting(s: Setup, commit: string): Promise<void> {
    const revision = commit.slice(0, 12);
    await eventually(
      'the apply phase over',
      async () =>
        s.agent.logs().filter((l) => l.msg === 'applied' && l.revision === revision).length === APPS * 2 + 1
          ? true
          : undefined,
      60_000,
    );
  }

  async function bindLoadBalancer(s: Setup): Promise<void> {
    await kubectl(
      '-n',
      s.ns,
      'patch',
      'service',
      LB,
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.10"}]}}}',
    );
  }

  /** Commits revision 2 of the apps and resolves once the agent writes its first object. */
  async function secondApplying(s: Setup): Promise<string> {
    const second = await s.repo.commit({ 'apps.yaml': appsAt(APPS, 2) });
    await applying(s.agent, second);
    return second;
  }

  /** Commits revision 2 of the apps with the unbound load balancer, and resolves once the sync waits on it. */
  async function secondWaiting(s: Setup): Promise<string> {
    const second = await s.repo.commit({
      'apps.yaml': appsAt(APPS, 2),
      'lb.yaml': unboundLoadBalancer,
    });
    await waiting(s, second);
    return second;
  }

  /** The checks every fault ends with. */
  async function converges(s: Setup, commit: string, rev: number): Promise<void> {
    await eventually(
      `converged to ${commit.slice(0, 12)}`,
      async () => {
        const last = statusesByCommit(s.captured, CONTEXT).get(commit)?.at(-1);
        return last?.state === 'success' && (await convergedTo(s.ns, rev, APPS)) ? true : undefined;
      },
      180_000,
    );
    assertAlive(s.agent);
    expect(unended(postedStatuses(s.captured))).toEqual([]);
    // A client of its own: the setting's may hold connections of an API server since killed.
    const kube = api();
    try {
      const ledger = await ledgerOf(kube, s.agentNs, 'web');
      const problems = await versionProblems(kube, s.ns, [ledger]);
      expect(problems.duplicated).toEqual([]);
      expect(problems.dangling).toEqual([]);
      expect(ledger.releases[0]).toMatchObject({ commit, result: 'stable' });
    } finally {
      kube.close();
    }
  }

  // Faults the agent lives through: each reaches a point of the sync of revision 2, does its harm, and the sync
  // converges.
  const apiServerFaults = [
    {
      name: 'lives through kube-apiserver killed mid-apply and restarted, and converges',
      reach: secondApplying,
      harm: async (s: Setup) => {
        await killApiServer();
        await new Promise((r) => setTimeout(r, 3000));
        assertAlive(s.agent);
        await restartApiServer();
      },
    },
    {
      name: 'lives through kube-apiserver stopped mid-apply for longer than its request timeout',
      reach: secondApplying,
      harm: async (s: Setup) => {
        await freezeApiServer(12_000);
        assertAlive(s.agent);
      },
    },
    {
      name: 'lives through kube-apiserver stopped during the stability wait',
      reach: secondWaiting,
      harm: async (s: Setup) => {
        await freezeApiServer(12_000);
        assertAlive(s.agent);
        await bindLoadBalancer(s);
      },
    },
  ];
  apiServerFaults.forEach(({ name, reach, harm }, which) => {
    it(name, async () => {
      const s = await setup(which, '2m');
      const second = await reach(s);
      await harm(s);
      await converges(s, second, 2);
    }, 300_000);
  });

  it('reports an unreachable API server, not a failed commit, when it stops answering past the wait, then converges', async () => {
    const s = await setup(3, '25s');
    const second = await secondWaiting(s);
    // Stopped, not killed: its connections stay open and silent, the hardest case to tell from a slow rollout.
    const frozen = freezeApiServer(40_000);
    try {
      // The wait runs out while the server is stopped: the commit gets `error` naming the server, not `failure`.
      const ended = await eventually(
        'the sync ended with the server unreachable',
        async () =>
          statusesByCommit(s.captured, CONTEXT)
            .get(second)
            ?.find((b) => b.state === 'error'),
        60_000,
      );
      expect(ended.description).toMatch(/API server unreachable since \d\d:\d\d:\d\d/);
      expect(
        statusesByCommit(s.captured, CONTEXT)
          .get(second)
          ?.map((b) => b.state),
      ).not.toContain('failure');
      assertAlive(s.agent);
    } finally {
      await frozen;
    }
    await bindLoadBalancer(s);
    await converges(s, second, 2);
  }, 300_000);

  it('picks up after the agent is killed mid-sync and started again', async () => {
    const s = await setup(4, '2m');
    const second = await secondApplying(s);
    s.agent.child.kill('SIGKILL');
    await s.agent.exited;
    // A newer commit arrives while no agent runs: the interrupted sync of the second is never run again, and its
    // pending status still gets its end.
    const third = await s.repo.commit({ 'apps.yaml': appsAt(APPS, 3) });
    s.agent = startAgent({ file: s.configFile }, { process: true });
    await converges(s, third, 3);
    const ended = statusesByCommit(s.captured, CONTEXT).get(second)?.at(-1);
    expect(ended?.state).toBe('error');
    expect(ended?.description).toMatch(/^Interrupted: the agent stopped/);
    // Its release names the versions it was writing: the inventory, written before them, names them.
    const kube = api();
    try {
      const ledger = await ledgerOf(kube, s.agentNs, 'web');
      const interrupted = ledger.releases.find((r) => r.commit === second && r.result === 'error');
      expect(interrupted?.versions.toSorted()).toEqual(
        Array.from({ length: APPS }, (_, i) => `ConfigMap ${appName('app', i)}-config-v001`),
      );
    } finally {
      kube.close();
    }
  }, 300_000);

  it('keeps mooring run --watch alive through kube-apiserver killed mid-deploy', async () => {
    const env = testbed();
    const ns = (namespaces[5] as () => string)();
    const dir = await manifestDir({});
    const folder = join(dir, 'app');
    await mkdir(folder);
    await writeFile(join(folder, 'apps.yaml'), appsAt(APPS, 1));
    const watch = startMooring([
      'run',
      '--watch',
      folder,
      '--kubeconfig',
      env.kube.kubeconfig,
      '-n',
      ns,
      '--timeout',
      '2m',
      '--debounce',
      '200ms',
    ]);
    cleanup(() => {
      if (watch.alive()) watch.child.kill('SIGKILL');
    });
    onTestFailed(() => {
      process.stderr.write(`run --watch output:\n${watch.output().slice(-6000)}\n`);
    });
    const stable = () => watch.logs().filter((l) => /^\d+\/\d+ stable in/.test(l.msg)).length;
    await eventually('the first deploy stable', async () => (stable() === 1 ? true : undefined), 120_000);
    await writeFile(join(folder, 'apps.yaml'), appsAt(APPS, 2));
    await eventually(
      'the second deploy writing',
      async () => (watch.logs().filter((l) => l.msg === 'applied').length > APPS * 2 ? true : undefined),
      60_000,
    );
    await killApiServer();
    await new Promise((r) => setTimeout(r, 3000));
    assertAlive(watch);
    await restartApiServer();
    await eventually(
      'converged after the restart',
      async () => (stable() >= 2 && (await convergedTo(ns, 2, APPS)) ? true : undefined),
      180_000,
    );
    assertAlive(watch);
  }, 300_000);
});
