// Path filtering holds on every later poll: with many deployments reading one repository, a commit that touches
// only one deployment's folder syncs that one, and the next polls (many of them) sync none of the others.
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/sync/logger.ts';
import { runAgent } from '../../src/sync/run-agent.ts';
import { commitFiles, createBareRepo } from '../testbed/git-repos.ts';
import { eventually, lineSink, manifestDir, testbed, useNamespace } from './helpers.ts';

const DEPLOYMENTS = 12;

const app = (name: string, rev: number) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-config}
data: {REV: "${rev}"}
`;

describe('path filtering', () => {
  const namespaces = Array.from({ length: DEPLOYMENTS }, (_, i) => useNamespace(`paths${i}`));
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it('syncs only the deployment whose folder a commit touched, on this poll and every later one', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repo = await createBareRepo(env.git.root, `paths-${suffix}`);
    const files: Record<string, string> = {};
    for (let i = 0; i < DEPLOYMENTS; i++) files[`apps/d${i}/app.yaml`] = app(`d${i}`, 1);
    await commitFiles(repo, files);
    const secrets = await manifestDir({ user: env.git.username, password: env.git.password });
    const deployments = namespaces.map(
      (ns, i) => `  - {name: d${i}, namespace: ${ns()}, source: app, paths: [apps/d${i}]}`,
    );
    const config = parseConfig(`
cluster: {name: paths, kubeconfig: ${env.kube.kubeconfig}, namespace: mooring-paths-${suffix}}
sources:
  git:
    - {name: app, url: "${env.git.url}/paths-${suffix}.git", interval: 1s, credentials: {username: {file: ${secrets}/user}, password: {file: ${secrets}/password}}}
deployments:
${deployments.join('\n')}
server: {port: 0, address: 127.0.0.1}
`);
    const { destination, lines } = lineSink();
    const controller = new AbortController();
    const running = runAgent(
      config,
      createLogger({ destination, level: 'debug' }),
      { access: {} },
      controller.signal,
    );
    stops.push(async () => {
      controller.abort();
      await running;
    });
    const logs = () =>
      lines.map((l) => JSON.parse(l) as { msg: string; deployment?: string; source?: string });
    const starts = (deployment: string) =>
      logs().filter((l) => l.msg === 'sync started' && l.deployment === deployment).length;
    await eventually(
      'every deployment synced once',
      async () =>
        Array.from({ length: DEPLOYMENTS }, (_, i) => starts(`d${i}`)).every((n) => n === 1)
          ? true
          : undefined,
      120_000,
    );

    await commitFiles(repo, { 'apps/d0/app.yaml': app('d0', 2) });
    await eventually('d0 synced again', async () => (starts('d0') === 2 ? true : undefined), 60_000);
    const polls = () => lines.filter((l) => l.includes('"msg":"commit changes none of its paths"')).length;
    await eventually('the others found unchanged', async () =>
      polls() === DEPLOYMENTS - 1 ? true : undefined,
    );
    // Several more polls of the repository (one a second): still nothing else has synced.
    await new Promise((r) => setTimeout(r, 6000));
    expect(polls()).toBe(DEPLOYMENTS - 1);
    for (let i = 1; i < DEPLOYMENTS; i++) expect(starts(`d${i}`), `d${i}`).toBe(1);
    expect(starts('d0')).toBe(2);
    expect(logs().some((l) => l.msg === 'poll failed')).toBe(false);
  });
});
