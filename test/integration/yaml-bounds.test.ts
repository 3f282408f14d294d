// YAML is bounded before it is composed (src/yaml/): a small file of `- []` lines costs the yaml package about
// 1 KiB per node, so byte limits alone let 4 MiB take gigabytes. Against the built CLI and an agent run as its own
// process on the test bed: the CLI refuses 4 MiB of `- []` in a heap of 256 MiB, naming the file, the line and
// the limit; an agent given a commit holding such a file fails that deployment's sync with the same message,
// syncs the other deployment of the commit, answers /healthz within 1 s throughout and stays small; and a chart
// repository whose index.yaml is 32 MiB of hostile YAML is refused naming the index and its limit, while /healthz
// keeps answering.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startChartRepo } from '../testbed/chart-repo.ts';
import { footprint, scratchRepo, startFileAgent, useAgentCache, whileAlive } from './fault-helpers.ts';
import { useCleanups } from './faults-support.ts';
import { kubectl, manifestDir, startStatusReceiver, tempDir, useNamespace, watchHealth } from './helpers.ts';

const MiB = 1024 * 1024;
const HEALTH_GAP_BOUND_MS = 1_000;
/** The agent runs as users run it (the launcher's flags): about 175 to 185 MiB at peak here. */
const PEAK_RSS_BOUND = 250 * MiB;
/** The index is received whole (32 MiB) and moved to the worker, which counts it: about 260 MiB at peak. */
const INDEX_PEAK_RSS_BOUND = 350 * MiB;
const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

/** 4 MiB of `- []` lines, just under the default maxFileBytes: 1.7 million nodes. */
const HOSTILE = '- []\n'.repeat(Math.floor((4 * MiB) / 5));
const REFUSAL = 'more than 250000 YAML nodes in one document (limit render.maxYamlNodes)';

/** Six documents of 120,000 `- []` lines: each under maxYamlNodes, 1.44 million nodes together. */
const MANY = Array.from({ length: 6 }, () => '- []\n'.repeat(120_000)).join('---\n');
const MANY_REFUSAL = 'more than 1000000 YAML nodes in one file (limit render.maxYamlFileNodes)';
/** A legitimate file past the worker threshold (256 KiB): one ConfigMap of 20,000 keys, after two small ones. */
const LARGE = `${[0, 1].map((i) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small-${i}}\n`).join('---\n')}---
apiVersion: v1
kind: ConfigMap
metadata:
  name: large
data:
${Array.from({ length: 20_000 }, (_, i) => `  key${i}: value-${i}\n`).join('')}`;

const configMap = (name: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}}
data: {greeting: hello}
`;

/** The CLI as its own process with a heap of `heapMb`: what it prints and how it ended. */
function cli(args: string[], heapMb: number): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [`--max-old-space-size=${heapMb}`, MAIN, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
}

describe('YAML bounded before it is composed', () => {
  const web = useNamespace('yaml-web');
  const evil = useNamespace('yaml-evil');
  const manyWeb = useNamespace('yaml-many-web');
  const manyEvil = useNamespace('yaml-many-evil');
  const cleanup = useCleanups();
  useAgentCache('mooring-yaml-bounds-', cleanup);

  /**
   * One commit of these files synced by an agent with deployments `web` (apps/web) and `evil` (apps/evil): the end of
   * each one's commit status, the agent's peak RSS and its longest `/healthz` gap while it got there.
   */
  async function syncBoth(name: string, files: Record<string, string>, webNs: string, evilNs: string) {
    const { repo, suffix } = await scratchRepo(name, cleanup);
    const receiver = await startStatusReceiver();
    const commit = await repo.commit(files);
    const agent = await startFileAgent(
      {
        cluster: { name, namespace: `mooring-${name}-${suffix}` },
        git: [{ name: 'app', repo, interval: '2s', timeout: '2m' }],
        deployments: [
          { name: 'web', namespace: webNs, source: 'app', paths: ['apps/web'] },
          { name: 'evil', namespace: evilNs, source: 'app', paths: ['apps/evil'] },
        ],
        statuses: receiver,
      },
      cleanup,
    );
    const health = watchHealth(agent);
    const ended = (context: string) =>
      whileAlive(agent, `the ${context} status of the commit`, () => receiver.ended(commit, context));
    const refused = await ended('/evil');
    const synced = await ended('/web');
    const { rss, longestGapMs, answers, during } = footprint(name, agent, health);
    return { agent, refused, synced, rss, longestGapMs, answers, during };
  }

  const cliCases = [
    {
      name: 'the CLI refuses 4 MiB of `- []` in a small heap, naming the file, the line and the limit',
      text: HOSTILE,
      error: `x.yaml:125001:1: ${REFUSAL}`,
    },
    {
      name: 'the CLI refuses six documents each under the node limit, together past the file limit',
      text: MANY,
      error: `x.yaml:500005:1: ${MANY_REFUSAL}`,
    },
    {
      name: 'the CLI renders a large legitimate file read in the worker, each object at its line',
      text: LARGE.replace('name: small-1}', 'name: Small_1}'),
      // The error names the line of the object, as when render reads the text itself.
      error: 'x.yaml:5:1: ConfigMap metadata.name "Small_1"',
    },
  ];
  for (const { name, text, error } of cliCases)
    it(name, async () => {
      const dir = await manifestDir({ 'x.yaml': text });
      const result = await cli(['render', '--offline', dir], 256);
      expect(result.stderr).toContain(`${dir}/${error}`);
      expect(result.code).toBe(2);
    }, 120_000);

  it('an agent refuses a file of many documents past the file limit, syncs a large file of the other deployment, answers /healthz', async () => {
    const { agent, refused, synced, rss, longestGapMs, answers, during } = await syncBoth(
      'yaml-many',
      {
        'apps/web/large.yaml': LARGE,
        'apps/evil/settings.yaml': configMap('settings'),
        'apps/evil/x.yaml': MANY,
      },
      manyWeb(),
      manyEvil(),
    );
    agent.child.kill('SIGTERM');
    expect(refused.state).toBe('failure');
    expect(agent.output()).toContain(`apps/evil/x.yaml:500005:1: ${MANY_REFUSAL}`);
    expect(synced.state, synced.description).toBe('success');
    // ConfigMaps are named with a hash of their contents (render.versioned).
    const names = (await kubectl('-n', manyWeb(), 'get', 'configmap', '-o', 'name')).stdout.split('\n');
    const large = names.find((n) => n.startsWith('configmap/large'));
    expect(large, names.join(' ')).toBeDefined();
    const value = await kubectl('-n', manyWeb(), 'get', large as string, '-o', 'jsonpath={.data.key19999}');
    expect(value.stdout).toBe('value-19999');
    expect((await kubectl('-n', manyEvil(), 'get', 'configmap', '-o', 'name')).stdout).not.toMatch(
      /settings/,
    );
    expect(answers).toBeGreaterThan(5);
    expect(longestGapMs, during).toBeLessThan(HEALTH_GAP_BOUND_MS);
    expect(rss).toBeLessThan(PEAK_RSS_BOUND);
  }, 300_000);

  it('an agent fails the sync of a commit holding the file, naming it, syncs the other deployment and answers /healthz', async () => {
    const { agent, refused, synced, rss, longestGapMs, answers, during } = await syncBoth(
      'yaml',
      {
        'apps/web/settings.yaml': configMap('settings'),
        'apps/evil/settings.yaml': configMap('settings'),
        'apps/evil/x.yaml': HOSTILE,
      },
      web(),
      evil(),
    );
    expect(refused.state).toBe('failure');
    expect(refused.description).toMatch(/apps\/evil\/x\.yaml/);
    expect(agent.output()).toContain(`apps/evil/x.yaml:125001:1: ${REFUSAL}`);
    expect(synced.state, synced.description).toBe('success');
    expect((await kubectl('-n', web(), 'get', 'configmap', '-o', 'name')).stdout).toMatch(/settings/);
    // Nothing of the refused deployment was applied.
    expect((await kubectl('-n', evil(), 'get', 'configmap', '-o', 'name')).stdout).not.toMatch(/settings/);
    // The refusal comes within seconds: /healthz was asked more than once while it did.
    expect(answers).toBeGreaterThan(1);
    expect(longestGapMs, during).toBeLessThan(HEALTH_GAP_BOUND_MS);
    expect(rss).toBeLessThan(PEAK_RSS_BOUND);
  }, 300_000);

  it("an agent refuses a chart repository's 32 MiB index of hostile YAML, naming it and the limit, answering /healthz", async () => {
    const folder = await tempDir();
    // An index as a chart repository serves it, with one chart's entries made of empty flow sequences.
    const lines = Math.floor((32 * MiB - 64) / 7);
    await writeFile(
      join(folder, 'index.yaml'),
      `apiVersion: v1\nentries:\n  web:\n${'  - []\n'.repeat(lines)}`,
    );
    const server = await startChartRepo(folder);
    cleanup(() => server.close());
    const { repo, suffix } = await scratchRepo('yaml-index', cleanup);
    await repo.commit({ 'values/prod.yaml': 'color: blue\n' });
    const agent = await startFileAgent(
      {
        cluster: { name: 'yaml-index', namespace: `mooring-yaml-index-${suffix}` },
        git: [{ name: 'app', repo, interval: '2s' }],
        deployments: [
          {
            name: 'web',
            namespace: web(),
            source: 'app',
            helm: { chartSource: 'web-chart', valuesFiles: ['values/prod.yaml'] },
          },
        ],
        extra: {
          sources: {
            charts: [{ name: 'web-chart', url: server.url, chart: 'web', caFile: server.ca, interval: '5s' }],
          },
        },
      },
      cleanup,
    );
    const health = watchHealth(agent);
    const refusal = await whileAlive(agent, 'the index refused', () =>
      agent.logged('poll failed').find((r) => /index\.yaml/.test(String(r.err))),
    );
    const { rss, longestGapMs, answers, during } = footprint('hostile index', agent, health);
    // Two nodes a line: the limit is passed halfway down the index.
    expect(String(refusal.err)).toBe(
      `chart repository ${server.url}/: index.yaml:1250000: more than 2500000 YAML nodes in one document (limit maxIndexNodes of the chart source)`,
    );
    expect(answers).toBeGreaterThan(3);
    expect(longestGapMs, during).toBeLessThan(HEALTH_GAP_BOUND_MS);
    expect(rss).toBeLessThan(INDEX_PEAK_RSS_BOUND);
  }, 300_000);
});
