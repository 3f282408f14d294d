// The agent at scale on the real Git server and control plane: one commit holding 240 objects across eleven
// deployments, all of which start syncing at once; every commit status goes from pending to success, the largest
// deployment (210 objects) included, and every Deployment is available. Statuses go to a GitHub-shaped endpoint
// whose every request is checked against GitHub's OpenAPI description.
import { describe, expect, it } from 'vitest';
import { githubStatusValidator } from '../contract/github-openapi.ts';
import { eventually, kubectl, startGitAgent, stopsAfterAll, useNamespace } from './helpers.ts';
import { apps } from './scale-fixtures.ts';

const SMALL = 10;

describe('the agent at scale', () => {
  const big = useNamespace('scale-big');
  const small = Array.from({ length: SMALL }, (_, i) => useNamespace(`scale-d${i}`));
  const stops = stopsAfterAll();

  it('syncs eleven deployments at once, one of 210 objects, each to a successful commit status', async () => {
    const suffix = Date.now().toString(36);
    const files: Record<string, string> = { 'apps/big/apps.yaml': apps(70, 'big') };
    for (let i = 0; i < SMALL; i++) files[`apps/d${i}/apps.yaml`] = apps(1, `d${i}`);

    const validate = githubStatusValidator();
    const deployment = (name: string, namespace: string, path: string) => ({
      name,
      namespace,
      paths: [path],
      stability: { timeout: '5m' },
    });
    const {
      receiver,
      first: commit,
      agent,
    } = await startGitAgent({
      repo: `scale-${suffix}/apps`,
      files,
      cluster: { name: 'scale', namespace: `mooring-scale-${suffix}` },
      deployments: [
        deployment('big', big(), 'apps/big'),
        ...small.map((ns, i) => deployment(`d${i}`, ns(), `apps/d${i}`)),
      ],
      extra: { concurrency: SMALL + 1 },
      start: { level: 'info' },
    });
    stops.push(() => agent.stop());

    const states = (context: string) =>
      receiver.statuses().filter((s) => s.sha === commit && s.context === context);
    const contexts = ['big', ...small.map((_, i) => `d${i}`)].map((d) => `mooring/scale/${d}`);
    await eventually(
      'every deployment: pending then success',
      async () =>
        contexts.every(
          (c) =>
            states(c)
              .map((s) => s.state)
              .join() === 'pending,success',
        )
          ? true
          : undefined,
      240_000,
    );
    expect(states('mooring/scale/big').at(-1)?.description).toMatch(/^210\/210 stable in \d+s$/);
    for (const c of contexts.slice(1)) expect(states(c).at(-1)?.description).toMatch(/^3\/3 stable in/);
    // The syncs ran at once: none of the small ones queued behind the big one, each started before it finished.
    // The finalizer posts the statuses, then logs the outcome: wait for the big one's line.
    const parsed = () => agent.logs() as { msg: string; deployment?: string; outcome?: string }[];
    const ended = (m: { deployment?: string; outcome?: string }) =>
      m.deployment === 'big' && m.outcome !== undefined;
    await eventually('the big sync logged its outcome', async () =>
      parsed().some(ended) ? true : undefined,
    );
    const messages = parsed();
    const bigEnd = messages.findIndex(ended);
    expect(bigEnd).toBeGreaterThan(0);
    const started = messages.slice(0, bigEnd).filter((m) => m.msg === 'sync started');
    expect(new Set(started.map((m) => m.deployment)).size).toBe(SMALL + 1);
    for (const request of receiver.captured) expect(validate(request), request.path).toEqual([]);

    // kubectl agrees: all 70 Deployments of the big one are available.
    const listed = await kubectl(
      '-n',
      big(),
      'get',
      'deployments',
      '-o',
      'jsonpath={range .items[*]}{.status.availableReplicas}{"\\n"}{end}',
    );
    expect(listed.stdout.trim().split('\n')).toEqual(Array(70).fill('1'));
  });
});
