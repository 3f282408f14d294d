// A sync stopped while helm renders its chart gives the render up at once: an agent sent SIGTERM exits within the
// grace period rather than after the render's own timeout (render.toolTimeout, a minute by default), and a leader
// that loses its lease leaves no helm of the old term running. Nothing fails the commit: a render given up so is no
// error of the chart's. A pull request's preview under way at the stop is given up the same way, its status ended.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startForgeReceiver } from '../testbed/forge-receiver.ts';
import { commitFiles, setRef } from '../testbed/git-repos.ts';
import { type AgentProcess, stopsWithin } from './fault-helpers.ts';
import { faultSetting, useCleanups } from './faults-support.ts';
import type { StatusReceiver } from './harness.ts';
import { eventually, forgeLease, kubectl, startGitAgent, testbed, unended, useNamespace } from './helpers.ts';

/** A chart whose template spins for about two minutes of helm's time before it prints one ConfigMap. */
const SLOW_CHART = {
  'charts/slow/Chart.yaml': 'apiVersion: v2\nname: slow\nversion: 0.1.0\n',
  'charts/slow/values.yaml': 'spin: 3000\n',
  'charts/slow/templates/cm.yaml': [
    '{{- range until (int .Values.spin) }}{{- range until 1000 }}{{- range until 1000 }}{{- end }}{{- end }}{{- end }}',
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata: {name: {{ .Release.Name }}}',
    'data: {a: b}',
    '',
  ].join('\n'),
};

/** Running (a zombie, killed and not yet reaped, is not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The helms the agent runs now (its direct children: the memory limit's shell execs each). */
async function helmsOf(agent: AgentProcess): Promise<number[]> {
  const ps = await new Promise<string>((resolve) =>
    execFile('ps', ['-o', 'pid=,args=', '--ppid', String(agent.child.pid)], (_e, stdout) => resolve(stdout)),
  );
  return ps
    .split('\n')
    .filter((l) => /^\s*\d+ \S*helm template /.test(l))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

/** The helm the agent runs now. */
async function helmOf(agent: AgentProcess): Promise<number | undefined> {
  return (await helmsOf(agent))[0];
}

/** No status of `commit` but pending, and none left without its end. */
function failsNothing(agent: AgentProcess, receiver: StatusReceiver, commit: string) {
  const msgs = agent.logs().map((r) => r.msg);
  expect(msgs).not.toContain('cannot read the manifests');
  expect(receiver.statuses().filter((s) => s.sha === commit && s.state !== 'pending')).toEqual([]);
  expect(unended(receiver.statuses())).toEqual([]);
}

describe('a sync stopped while helm renders', () => {
  const ns = useNamespace('stop-render');
  const cleanup = useCleanups();

  /**
   * An agent (its own process) of `count` deployments of the slow chart (`slow`, or `slow-0`…), with leader
   * election when `election`; once helm renders.
   */
  async function slowAgent(name: string, election: boolean, count = 1) {
    const { repo, agentNs } = await faultSetting(name, cleanup);
    // A leader's Lease lives in the agent's namespace, made beforehand as the chart's release namespace is.
    if (election) await kubectl('create', 'namespace', agentNs);
    process.env.MOORING_HELM = testbed().tools.helm;
    const started = await startGitAgent({
      repo,
      files: SLOW_CHART,
      cluster: { name: 'stop', namespace: agentNs },
      deployments: Array.from({ length: count }, (_, i) => ({
        name: count === 1 ? 'slow' : `slow-${i}`,
        namespace: ns(),
        helm: { chart: 'charts/slow' },
      })),
      ...(election
        ? { extra: { leaderElection: { enabled: true, leaseDuration: '6s', renewInterval: '1s' } } }
        : {}),
      start: { process: true },
    });
    cleanup(started.receiver.close);
    const helm = await eventually('helm renders the chart', () => helmOf(started.agent), 60_000);
    return { ...started, agentNs, helm };
  }

  it('gives the render up at SIGTERM: the agent exits within 10 s and no helm is left', async () => {
    const { agent, receiver, first, helm } = await slowAgent('stop-render', false);
    await new Promise((r) => setTimeout(r, 1000));
    expect(alive(helm)).toBe(true);
    await stopsWithin(agent, 10_000, 45_000);
    expect(alive(helm)).toBe(false);
    failsNothing(agent, receiver, first);
  });

  it('gives up every render under way at SIGTERM with two dozen deployments', async () => {
    const { agent, receiver, first } = await slowAgent('stop-renders', false, 24);
    // As many renders as the agent runs at once (concurrency, 4 by default, and what it grows to).
    const helms = await eventually(
      'several renders',
      async () => {
        const now = await helmsOf(agent);
        return now.length >= 4 ? now : undefined;
      },
      60_000,
    );
    await stopsWithin(agent, 10_000, 45_000);
    for (const helm of helms) expect(alive(helm), String(helm)).toBe(false);
    failsNothing(agent, receiver, first);
  });

  it('gives the render up when the leader loses its lease, and stands by at once', async () => {
    const { agent, receiver, first, helm, agentNs } = await slowAgent('stop-render-lease', true);
    // Another holder: the leader gives way at its next renewal.
    await forgeLease(agentNs, 3600);
    const forgedAt = Date.now();
    await eventually(
      'the leader gives way',
      async () => (agent.logged('lost the leader lease: standing by').length > 0 ? true : undefined),
      30_000,
    );
    // Its helm went with the term, within a renewal or two of the lease's change.
    await eventually('the render is given up', async () => (alive(helm) ? undefined : true), 10_000);
    expect(Date.now() - forgedAt).toBeLessThan(10_000);
    expect(agent.alive()).toBe(true);
    failsNothing(agent, receiver, first);
    await stopsWithin(agent, 10_000, 45_000);
  });

  /**
   * An agent (its own process) of the quick chart as `names`' deployments, previews on, statuses to a forge; once
   * main is deployed, pull request `number` makes the chart spin, and helm renders its preview.
   */
  async function previewing(name: string, names: string[], number: number) {
    const forge = await startForgeReceiver('github');
    cleanup(() => forge.close());
    const { repo, agentNs } = await faultSetting(name, cleanup);
    process.env.MOORING_HELM = testbed().tools.helm;
    const quick = { ...SLOW_CHART, 'charts/slow/values.yaml': 'spin: 0\n' };
    const {
      agent,
      first,
      repo: made,
    } = await startGitAgent({
      repo,
      files: quick,
      source: { preview: { enabled: true } },
      cluster: { name, namespace: agentNs },
      deployments: names.map((deployment) => ({
        name: deployment,
        namespace: ns(),
        helm: { chart: 'charts/slow' },
      })),
      statuses: forge,
      start: { process: true },
    });
    await eventually(
      'main deployed',
      async () =>
        forge.statuses().filter((s) => s.commit === first && s.state === 'success').length === names.length
          ? true
          : undefined,
      120_000,
    );
    const head = await commitFiles(made.path, SLOW_CHART, { branch: `pr-${number}`, from: first });
    forge.setPullRequest(number, { headSha: head, author: 'carol' });
    await setRef(made.path, `refs/pull/${number}/head`, head);
    const helm = await eventually('helm renders the preview', () => helmOf(agent), 60_000);
    return { forge, agent, head, helm };
  }

  it('gives a preview under way up at SIGTERM: the agent exits within 10 s, no helm is left, its status ends', async () => {
    const { forge, agent, head, helm } = await previewing('stop-preview', ['slow'], 3);
    await new Promise((r) => setTimeout(r, 1000));
    await stopsWithin(agent, 10_000, 45_000);
    expect(alive(helm)).toBe(false);
    expect(agent.logged('preview given up: the agent is stopping')).toHaveLength(1);
    // Its pending status has its end, saying it is tried again (the next agent previews the head anew).
    const statuses = forge.statuses().filter((s) => s.commit === head);
    expect(statuses.map((s) => s.state)).toEqual(['pending', 'failure']);
    expect(statuses[1]?.description).toBe(
      'preview not rendered (tried again): the agent stopped before it ended',
    );
    expect(forge.problems()).toEqual([]);
  });

  it('holds the stop a few seconds at most for the preview statuses of a forge that does not answer', async () => {
    const names = ['slow-a', 'slow-b', 'slow-c', 'slow-d'];
    const { forge, agent, head, helm } = await previewing('stop-preview-hung', names, 4);
    // Every deployment's pending status is posted before the first render starts.
    expect(forge.statuses().filter((s) => s.commit === head && s.state === 'pending')).toHaveLength(
      names.length,
    );
    // The forge stops answering: each of the four ending statuses would wait out the forge's timeout (15 s) in turn.
    forge.fail('hang');
    await stopsWithin(agent, 12_000, 90_000);
    expect(alive(helm)).toBe(false);
    expect(agent.logged('the preview statuses did not end in time: stopping without them')).toHaveLength(1);
  });
});
