// The Git server failing under a running agent: the real git http-backend behind the fault proxy answers 500 for
// a few polls, then resets connections (before the request, and in the middle of the answer), then hangs for
// longer than the source's timeout, while new commits are pushed. After the fault is lifted the deployment
// converges to the newest commit; the agent stayed alive (its /healthz answered during the hang, it kept
// polling); every pending status ended; no versioned ConfigMap is duplicated or dangling; the ledger's newest
// stable release is the newest commit.
import { describe, expect, it } from 'vitest';
import { githubStatusValidator } from '../contract/github-openapi.ts';
import { FaultProxy } from '../testbed/fault-proxy.ts';
import {
  deployedRound,
  faultSetting,
  ledgerOf,
  newestStable,
  settingsAndWeb,
  useCleanups,
  versionProblems,
} from './faults-support.ts';
import { eventually, startGitAgent, testbed, unended, useNamespace } from './helpers.ts';

const manifests = (round: number) => ({ 'app.yaml': settingsAndWeb(round) });

describe('faults of the Git server', () => {
  const ns = useNamespace('faults-git');
  const cleanup = useCleanups();

  it('converges to the newest commit after 500s, resets and a hang, and stays alive', async () => {
    const { repoPath, repo, kube, agentNs } = await faultSetting('faults-git', cleanup);
    const proxy = await FaultProxy.start(testbed().git.url);
    const { receiver, first, agent } = await startGitAgent({
      repo,
      files: manifests(1),
      source: { url: `${proxy.url}/${repoPath}.git`, timeout: '5s' },
      cluster: { name: 'faults', namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns() }],
    });
    cleanup(
      receiver.close,
      () => proxy.close(),
      () => agent.stop(),
    );
    const statuses = () => receiver.statuses();
    const pollFailures = () => agent.logged('poll failed');
    await eventually(
      'the first commit deployed',
      async () => (statuses().some((s) => s.sha === first && s.state === 'success') ? true : undefined),
      90_000,
    );

    // 500 for a few polls, while a commit is pushed.
    proxy.set({ kind: 'status', status: 500 });
    const second = await repo.commit(manifests(2));
    await eventually('three polls met a 500', async () => (proxy.count('status') >= 3 ? true : undefined));
    expect(pollFailures().length).toBeGreaterThanOrEqual(1);

    // Resets: before the request reaches the server, then in the middle of the answer.
    proxy.set({ kind: 'reset', when: 'request' });
    const third = await repo.commit(manifests(3));
    await eventually('two polls reset', async () => (proxy.count('reset') >= 2 ? true : undefined));
    proxy.set({ kind: 'reset', when: 'response' });
    const resetsBefore = proxy.count('reset');
    await eventually('two answers cut short', async () =>
      proxy.count('reset') >= resetsBefore + 2 ? true : undefined,
    );

    // A hang longer than the source's timeout (5 s): the poll gives up, the agent answers its health check.
    proxy.set({ kind: 'hang' });
    const fourth = await repo.commit(manifests(4));
    const failuresBefore = pollFailures().length;
    await eventually(
      'a poll timed out, and another met the hang',
      async () => (pollFailures().length > failuresBefore && proxy.count('hang') >= 2 ? true : undefined),
      60_000,
    );
    const timedOut = pollFailures().slice(failuresBefore);
    expect(JSON.stringify(timedOut)).toMatch(/5000 ms|timed out|timeout/i);
    const health = await fetch(`http://127.0.0.1:${agent.port()}/healthz`);
    expect(health.status).toBe(200);
    // Nothing of the later commits was deployed while the server failed.
    expect(statuses().filter((s) => [second, third, fourth].includes(s.sha))).toEqual([]);

    proxy.pass();
    await eventually(
      'the newest commit deployed',
      async () => (statuses().some((s) => s.sha === fourth && s.state === 'success') ? true : undefined),
      120_000,
    );
    const stable = await newestStable(kube, agentNs, 'web');
    expect(stable?.commit).toBe(fourth);
    expect(await deployedRound(ns())).toBe('4');

    // Still alive: it keeps polling (through the proxy) and answers.
    const polled = proxy.count('pass');
    await eventually('polls go on', async () => (proxy.count('pass') > polled + 2 ? true : undefined));
    expect((await fetch(`http://127.0.0.1:${agent.port()}/healthz`)).status).toBe(200);

    expect(unended(statuses())).toEqual([]);
    const problems = await versionProblems(kube, ns(), [await ledgerOf(kube, agentNs, 'web')]);
    expect(problems.versions.length).toBeGreaterThanOrEqual(2);
    expect(problems.duplicated).toEqual([]);
    expect(problems.dangling).toEqual([]);
    const validate = githubStatusValidator();
    for (const request of receiver.captured) expect(validate(request), request.path).toEqual([]);
  }, 300_000);
});
