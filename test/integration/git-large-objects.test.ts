// Git objects are bounded before they are inflated, against the test bed's real Git server and an agent run as its
// own process (so that its peak RSS can be read from /proc/PID/status): a commit holding a 1 GiB blob of zeros
// outside the deployment's path (a few MB compressed) syncs, with the agent's peak RSS far below the blob and its
// /healthz answering throughout; so does one holding 200 MB of random bytes (a pack as large as the blob: no
// object read loads a whole pack); a 200 MB manifest inside the path is refused by its size, naming the file and
// the limit, without being inflated, and the failure reaches the commit status.
import { describe, expect, it } from 'vitest';
import { commitGenerated } from '../testbed/git-repos.ts';
import { footprint, scratchRepo, startFileAgent, useAgentCache, whileAlive } from './fault-helpers.ts';
import { useCleanups } from './faults-support.ts';
import {
  kubectl,
  peakRss,
  startStatusReceiver,
  type TestRepo,
  useNamespace,
  watchHealth,
} from './helpers.ts';

const MiB = 1024 * 1024;
// The agent runs as users run it (the launcher's flags): 130 to 180 MiB at peak in these tests. A 200 MB pack or
// object held whole would take it past the bound.
const PEAK_RSS_BOUND = 250 * MiB;
const HEALTH_GAP_BOUND_MS = 2_000;

const configMap = (name: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}}
data: {greeting: hello}
`;

describe('Git objects bounded before they are inflated', () => {
  const zeros = useNamespace('git-zeros');
  const random = useNamespace('git-random');
  const huge = useNamespace('git-huge');
  const cleanup = useCleanups();
  useAgentCache('mooring-git-large-', cleanup);

  /** An agent syncing `paths` of `repo` as deployment web to `namespace`, and the commit statuses it posts. */
  async function agentFor(name: string, repo: TestRepo, deployment: { namespace: string; paths: string }) {
    const receiver = await startStatusReceiver();
    const agent = await startFileAgent(
      {
        cluster: { name, namespace: `mooring-${name}-${Date.now().toString(36)}` },
        git: [{ name: 'app', repo, interval: '2s', timeout: '2m' }],
        deployments: [
          { name: 'web', namespace: deployment.namespace, source: 'app', paths: [deployment.paths] },
        ],
        statuses: receiver,
      },
      cleanup,
    );
    return { agent, statuses: () => receiver.statuses() };
  }

  /** A repository whose first commit holds the ConfigMap settings in apps/web. */
  async function settingsRepo(name: string): Promise<TestRepo> {
    const { repo } = await scratchRepo(name, cleanup);
    await repo.commit({ 'apps/web/settings.yaml': configMap('settings') });
    return repo;
  }

  it.each([
    ['a 1 GiB blob of zeros', { bytes: 1024 * MiB }, zeros],
    ['200 MB of random bytes', { bytes: 200 * 1000 * 1000, random: true }, random],
  ])(
    'syncs a commit holding %s outside the paths, in bounded memory, answering /healthz',
    async (what, file, ns) => {
      const repo = await settingsRepo('git-large');
      const commit = await commitGenerated(repo.path, { 'data/large.bin': file }, { message: what });

      const { agent, statuses } = await agentFor('git-large', repo, {
        namespace: ns(),
        paths: 'apps/web',
      });
      const health = watchHealth(agent);
      const outcome = await whileAlive(agent, `the commit with ${what} synced`, () =>
        statuses().find((s) => s.sha === commit && s.state !== 'pending'),
      );
      const { rss, longestGapMs, answers, during } = footprint(what, agent, health);
      agent.child.kill('SIGTERM');
      expect(outcome.state, outcome.description).toBe('success');
      const greeting = await kubectl(
        '-n',
        ns(),
        'get',
        'configmap',
        '-o',
        'jsonpath={.items[*].data.greeting}',
      );
      expect(greeting.stdout).toBe('hello');
      expect(rss).toBeLessThan(PEAK_RSS_BOUND);
      expect(answers).toBeGreaterThan(5);
      expect(longestGapMs, during).toBeLessThan(HEALTH_GAP_BOUND_MS);
    },
    300_000,
  );

  it('refuses a 200 MB manifest inside the paths by its size, naming it and the limit, without inflating it', async () => {
    const repo = await settingsRepo('git-huge');
    const size = 200 * 1000 * 1000;
    const commit = await commitGenerated(
      repo.path,
      { 'apps/web/huge.yaml': { bytes: size, head: configMap('huge'), fill: '# padding\n' } },
      { message: '200 MB manifest' },
    );

    const { agent, statuses } = await agentFor('git-huge', repo, {
      namespace: huge(),
      paths: 'apps/web',
    });
    const outcome = await whileAlive(agent, 'the commit with the 200 MB manifest failed', () =>
      statuses().find((s) => s.sha === commit && s.state !== 'pending'),
    );
    const rss = peakRss(agent.child.pid as number);
    expect(outcome.state).toBe('failure');
    const refusal = `apps/web/huge.yaml is ${size} bytes, more than maxFileBytes (${4 * MiB})`;
    expect(agent.output()).toContain(refusal);
    expect(outcome.description).toMatch(/huge\.yaml/);
    process.stdout.write(`200 MB manifest: agent peak RSS ${(rss / MiB).toFixed(0)} MiB\n`);
    expect(rss).toBeLessThan(PEAK_RSS_BOUND);
    // Nothing of the commit was applied.
    const names = await kubectl(
      '-n',
      huge(),
      'get',
      'configmaps',
      '-o',
      'jsonpath={.items[*].metadata.name}',
    );
    expect(names.stdout).not.toMatch(/huge|settings/);
  }, 300_000);
});
