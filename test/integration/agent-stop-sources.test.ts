// An agent stopped while it waits on a source that does not answer (a Git server or a registry that accepted the
// connection and says nothing) ends at once: its first poll, or its fetch of a new commit, is given up rather
// than waited out to the source's timeout (30 s and more), and the process exits 0 with `stopped` last, well within
// the chart's grace period. A commit given up so fails nothing: no status but pending, and the next agent deploys it.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { indexRepo, packageChart, pushChart, startChartRepo, writeChart } from '../testbed/chart-repo.ts';
import { FaultProxy } from '../testbed/fault-proxy.ts';
import { type AgentProcess, startAgent, stopsWithin } from './fault-helpers.ts';
import { type Cleanup, faultSetting, useCleanups } from './faults-support.ts';
import type { StatusReceiver } from './harness.ts';
import {
  deploymentYaml,
  eventually,
  kubectl,
  stableImageSource,
  startGitAgent,
  tempDir,
  testbed,
  unended,
  useNamespace,
} from './helpers.ts';

/** Once a request to the source hangs: SIGTERM, and the agent exits 0 within 10 s with `stopped` last. */
async function stoppedWhileHung(agent: AgentProcess, proxy: FaultProxy) {
  await eventually('a request hangs', async () => (proxy.hanging > 0 ? true : undefined), 30_000);
  await new Promise((r) => setTimeout(r, 1000));
  await stopsWithin(agent, 10_000, 30_000);
}

/** The source answers again: a new agent on the same configuration deploys `commit`, and every status ended. */
async function nextAgentDeploys(
  proxy: FaultProxy,
  configFile: string,
  receiver: StatusReceiver,
  commit: string,
  cleanup: (...steps: Cleanup[]) => void,
) {
  proxy.pass();
  const next = startAgent(configFile);
  cleanup(() => next.stop());
  await eventually('the next agent deploys the commit', async () => receiver.ended(commit), 90_000);
  expect(receiver.ended(commit)?.state).toBe('success');
  expect(unended(receiver.statuses())).toEqual([]);
}

describe('an agent stopped while a source does not answer', () => {
  const ns = useNamespace('stop-sources');
  const cleanup = useCleanups();

  it.each([{ election: false }, { election: true }])(
    'ends at once while its first poll of a Git repository hangs (leader election: $election)',
    async ({ election }) => {
      const { repoPath, repo, agentNs } = await faultSetting('stop-git', cleanup);
      // A leader's Lease lives in the agent's namespace, made beforehand as the chart's release namespace is.
      if (election) await kubectl('create', 'namespace', agentNs);
      const proxy = await FaultProxy.start(testbed().git.url);
      cleanup(() => proxy.close());
      proxy.set({ kind: 'hang' });
      const { agent, receiver } = await startGitAgent({
        repo,
        files: { 'app.yaml': deploymentYaml({}) },
        source: { url: `${proxy.url}/${repoPath}.git` },
        cluster: { name: 'stop', namespace: agentNs },
        deployments: [{ name: 'web', namespace: ns() }],
        ...(election
          ? { extra: { leaderElection: { enabled: true, leaseDuration: '6s', renewInterval: '1s' } } }
          : {}),
        start: { process: true },
      });
      cleanup(receiver.close);
      await stoppedWhileHung(agent, proxy);
      if (election) expect(agent.logged('leading: syncing')).toHaveLength(1);
    },
  );

  it('ends at once while its fetch of a new commit hangs, fails nothing, and the next agent deploys it', async () => {
    const { repoPath, repo, agentNs } = await faultSetting('stop-fetch', cleanup);
    const proxy = await FaultProxy.start(testbed().git.url);
    cleanup(() => proxy.close());
    // The refs are read; the objects (upload-pack's POST) never come.
    proxy.set({ kind: 'hang' }, { match: (r) => r.method === 'POST' });
    const { agent, receiver, first, configFile } = await startGitAgent({
      repo,
      files: { 'app.yaml': deploymentYaml({}) },
      source: { url: `${proxy.url}/${repoPath}.git` },
      cluster: { name: 'stop', namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns() }],
      start: { process: true },
    });
    cleanup(receiver.close);
    await stoppedWhileHung(agent, proxy);
    const msgs = agent.logs().map((r) => r.msg);
    expect(msgs).not.toContain('cannot read the manifests');
    expect(msgs).not.toContain('poll failed');
    expect(receiver.statuses().filter((s) => s.sha === first && s.state !== 'pending')).toEqual([]);
    expect(unended(receiver.statuses())).toEqual([]);

    await nextAgentDeploys(proxy, configFile, receiver, first, cleanup);
  });

  it('ends at once while its first poll of a registry hangs', async () => {
    const env = testbed();
    const { suffix, repo, agentNs } = await faultSetting('stop-registry', cleanup);
    const proxy = await FaultProxy.start(env.registry.url);
    cleanup(() => proxy.close());
    proxy.set({ kind: 'hang' });
    const image = `${proxy.host}/stop-registry-${suffix}/web`;
    const { agent, receiver } = await startGitAgent({
      repo,
      files: { 'app.yaml': deploymentYaml({ image: `${image}:stable` }) },
      cluster: { name: 'stop', namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns(), images: ['web-image'] }],
      extra: { sources: { registry: [stableImageSource(image, '1s')] } },
      start: { process: true },
    });
    cleanup(receiver.close);
    await stoppedWhileHung(agent, proxy);
  });

  it("ends at once while its first poll's download of a chart hangs, and fails nothing", async () => {
    const env = testbed();
    const { suffix, repo, agentNs } = await faultSetting('stop-chart', cleanup);
    const out = await tempDir();
    const path = `stop-chart-${suffix}`;
    const chartDir = await writeChart(out, {
      name: 'web',
      version: '1.0.0',
      templates: { 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n' },
    });
    const tgz = await packageChart(env.tools.helm, chartDir, join(out, 'pkg'));
    await pushChart(env.tools.helm, tgz, { url: env.registry.url, host: env.registry.host }, path);
    // The chart's package: its manifest's one layer (the poll reads the manifest, then downloads the package).
    const manifest = (await (
      await fetch(`${env.registry.url}/v2/${path}/web/manifests/1.0.0`, {
        headers: { Accept: 'application/vnd.oci.image.manifest.v1+json' },
      })
    ).json()) as { layers: { digest: string }[] };
    const layer = manifest.layers[0]?.digest as string;
    const proxy = await FaultProxy.start(env.registry.url);
    cleanup(() => proxy.close());
    // The versions and the manifest are read; the package never comes.
    proxy.set({ kind: 'hang' }, { match: (r) => r.path.endsWith(`/blobs/${layer}`) });
    process.env.MOORING_HELM = env.tools.helm;
    const { agent, receiver, first } = await startGitAgent({
      repo,
      files: { 'values/prod.yaml': 'a: b\n' },
      cluster: { name: 'stop', namespace: agentNs },
      deployments: [
        {
          name: 'web',
          namespace: ns(),
          helm: { chartSource: 'web-chart', valuesFiles: ['values/prod.yaml'] },
        },
      ],
      extra: {
        sources: {
          charts: [
            {
              name: 'web-chart',
              chart: 'web',
              url: `oci://${proxy.host}/${path}`,
              policy: { type: 'semver', range: '^1.0' },
              insecure: true,
              interval: '1s',
            },
          ],
        },
      },
      start: { process: true },
    });
    cleanup(receiver.close);
    await stoppedWhileHung(agent, proxy);
    const msgs = agent.logs().map((r) => r.msg);
    expect(msgs).not.toContain('poll failed');
    expect(receiver.statuses().filter((s) => s.sha === first && s.state !== 'pending')).toEqual([]);
    expect(unended(receiver.statuses())).toEqual([]);
  });

  it("ends at once while a sync's download of a chart dependency hangs, fails nothing, and the next agent deploys it", async () => {
    const env = testbed();
    const { repo, agentNs } = await faultSetting('stop-deps', cleanup);
    // A chart repository (TLS) behind the proxy: its index is read, the package never comes.
    const folder = await tempDir();
    const common = await writeChart(await tempDir(), {
      name: 'common',
      version: '1.0.0',
      templates: { 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: common}\ndata: {a: b}\n' },
    });
    await packageChart(env.tools.helm, common, folder);
    const server = await startChartRepo(folder);
    cleanup(() => server.close());
    const proxy = await FaultProxy.start(server.url, { ca: await readFile(server.ca) });
    cleanup(() => proxy.close());
    await indexRepo(env.tools.helm, folder, proxy.url);
    proxy.set({ kind: 'hang' }, { match: (r) => r.path.endsWith('.tgz') });
    process.env.MOORING_HELM = env.tools.helm;
    const dependency = { name: 'common', version: '1.0.0', repository: proxy.url };
    const { agent, receiver, first, configFile } = await startGitAgent({
      repo,
      files: {
        'charts/web/Chart.yaml': `apiVersion: v2\nname: web\nversion: 0.1.0\ndependencies:\n- ${JSON.stringify(dependency)}\n`,
        'charts/web/templates/cm.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n',
      },
      cluster: { name: 'stop', namespace: agentNs },
      deployments: [
        { name: 'web', namespace: ns(), helm: { chart: 'charts/web', allowedRepositories: [proxy.url] } },
      ],
      extra: {
        sources: {
          charts: [{ name: 'library', url: proxy.url, chart: 'common', insecure: true, interval: '1h' }],
        },
      },
      start: { process: true },
    });
    cleanup(receiver.close);
    await stoppedWhileHung(agent, proxy);
    const msgs = agent.logs().map((r) => r.msg);
    // The sync was reading its manifests (the package is fetched for the render, not by a poll).
    expect(proxy.count('hang', (r) => r.path.endsWith('.tgz'))).toBeGreaterThan(0);
    expect(msgs).not.toContain('cannot read the manifests');
    expect(receiver.statuses().filter((s) => s.sha === first)).toEqual([]);

    await nextAgentDeploys(proxy, configFile, receiver, first, cleanup);
  });
});
