// dependsOn between deployments, in the agent on the test bed: a deployment waits while the deployment it needs
// syncs, is held (and says so, in its commit status and `mooring status`) while that one's last sync failed, and
// syncs after it once a commit fixes it; the status of the commit it never deployed gets its end.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KubeApi } from '../../src/kube/api.ts';
import { Ledger } from '../../src/report/ledger.ts';
import {
  clusterConfig,
  configMapManifest,
  deploymentManifest,
  eventually,
  kubeConfig,
  mooring,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const infra = (behavior: 'ready' | 'never-ready') =>
  stringify(deploymentManifest({ name: 'ingress', container: 'c', image: 'ingress:1', behavior }));
const app = (value: string) =>
  stringify(configMapManifest('app', { v: value }, { 'strategy.spinnaker.io/versioned': 'false' }));

describe('dependsOn', () => {
  const ns = useNamespace('depends');
  const agentNs = useNamespace('depends-mooring');

  it('holds a deployment while its dependency fails, then syncs it after the dependency', async () => {
    const {
      repo,
      receiver,
      configFile,
      first: broken,
      agent,
    } = await startGitAgent({
      repo: `depends-${Date.now().toString(36)}/fleet`,
      files: {
        'infra/ingress.yaml': infra('never-ready'),
        'app/app.yaml': app('1'),
      },
      source: { name: 'fleet' },
      cluster: { namespace: agentNs() },
      deployments: [
        { name: 'infra', namespace: ns(), paths: ['infra'], stability: { timeout: '8s' } },
        { name: 'app', namespace: ns(), paths: ['app'], dependsOn: ['infra'] },
      ],
      start: { level: 'info' },
    });
    const api = new KubeApi(clusterConfig());
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const appExists = async () =>
      (await core.listNamespacedConfigMap({ namespace: ns() })).items.some((c) => c.metadata?.name === 'app');
    try {
      // The dependency fails: the app says it waits, then that it is held, and is not deployed.
      expect(
        (await eventually('infra fails', async () => receiver.ended(broken, 'infra'), 60_000)).state,
      ).toBe('failure');
      const held = await eventually('app held', async () =>
        receiver
          .statuses()
          .find(
            (s) =>
              s.sha === broken &&
              s.context.endsWith('app') &&
              s.description.startsWith('Held: dependency infra'),
          ),
      );
      expect(held.state).toBe('pending');
      expect(held.description).toMatch(/^Held: dependency infra timed-out \(release 1\)/);
      expect(
        receiver
          .statuses()
          .some(
            (s) => s.sha === broken && s.context.endsWith('app') && s.description === 'Waiting for infra',
          ),
      ).toBe(true);
      expect(await appExists()).toBe(false);
      const status = await mooring('status', 'app', '--config', configFile);
      expect(status.stdout).toContain('held: dependency infra timed-out');

      // A commit fixes the dependency and changes the app: the dependency syncs first, then the app.
      const fixed = await repo.commit({ 'infra/ingress.yaml': infra('ready'), 'app/app.yaml': app('2') });
      expect(
        (await eventually('infra stable', async () => receiver.ended(fixed, 'infra'), 60_000)).state,
      ).toBe('success');
      expect((await eventually('app stable', async () => receiver.ended(fixed, 'app'), 60_000)).state).toBe(
        'success',
      );
      const ledger = new Ledger(api, agentNs());
      const infraRelease = (await ledger.read('infra')).releases[0];
      const appRelease = (await ledger.read('app')).releases[0];
      const ended = (r: { time: string; durationMs: number } | undefined) =>
        Date.parse(r?.time ?? '') + (r?.durationMs ?? 0);
      expect(Date.parse(appRelease?.time ?? '')).toBeGreaterThanOrEqual(ended(infraRelease) - 1000);
      expect(appRelease).toMatchObject({ commit: fixed, result: 'stable' });
      expect((await ledger.read('app')).waiting).toBeUndefined();
      // The commit the app never deployed gets its end.
      const end = await eventually('broken commit ended', async () => receiver.ended(broken, 'app'));
      expect(end.description).toMatch(/^Superseded by commit [0-9a-f]{7}/);
      expect(
        receiver
          .statuses()
          .filter((s) => s.sha === broken && s.context.endsWith('app') && s.state === 'success'),
      ).toEqual([]);
    } finally {
      api.close();
      await agent.stop();
    }
  });

  it('a commit waiting for its dependency when the deployment is suspended is held, and its status gets its end', async () => {
    const { repo, receiver, configFile, first, agent } = await startGitAgent({
      repo: `depends-suspend-${Date.now().toString(36)}/fleet`,
      files: { 'infra/ingress.yaml': infra('never-ready'), 'app/app.yaml': app('1') },
      source: { name: 'fleet' },
      cluster: { namespace: agentNs() },
      deployments: [
        // Names of their own: the agent's namespace holds the ledgers of the tests above.
        { name: 'gate', namespace: ns(), paths: ['infra'], stability: { timeout: '30s' } },
        { name: 'shop', namespace: ns(), paths: ['app'], dependsOn: ['gate'] },
      ],
      start: { level: 'info' },
    });
    const shop = (sha: string) =>
      receiver.statuses().filter((s) => s.sha === sha && s.context.endsWith('shop'));
    try {
      // The shop waits while the gate's sync runs (looked at again every few seconds).
      await eventually('shop waits', async () =>
        shop(first).some((s) => s.description === 'Waiting for gate') ? true : undefined,
      );
      const suspended = await mooring('suspend', 'shop', '--config', configFile);
      expect(suspended.code, suspended.stdout + suspended.stderr).toBe(0);
      // The waiting commit is now held by the suspension, and its status says so (before, it kept saying
      // "Waiting for gate" after the wait had been given up).
      const said = await eventually('the waiting commit held', async () =>
        shop(first).find((s) => s.description === 'suspended: not deployed until mooring resume shop'),
      );
      expect(said.state).toBe('pending');
      // A commit fixes the gate while the shop is suspended: the held commit is passed over, and its status ends.
      const fixed = await repo.commit({ 'infra/ingress.yaml': infra('ready'), 'app/app.yaml': app('2') });
      expect((await eventually('gate stable', async () => receiver.ended(fixed, 'gate'), 90_000)).state).toBe(
        'success',
      );
      const passed = await eventually('the first commit ended', async () => receiver.ended(first, 'shop'));
      expect(passed.description).toMatch(/^Superseded by commit [0-9a-f]{7}/);
      const resumed = await mooring('resume', 'shop', '--config', configFile);
      expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
      expect((await eventually('shop stable', async () => receiver.ended(fixed, 'shop'), 60_000)).state).toBe(
        'success',
      );
      for (const sha of [first, fixed]) expect(shop(sha).at(-1)?.state).not.toBe('pending');
    } finally {
      await agent.stop();
    }
  });

  it('renders a held chart only once its dependency lets it sync', async () => {
    // helm as the agent finds it (MOORING_HELM), counting its runs.
    const dir = await tempDir('depends-helm-');
    const log = join(dir, 'runs.log');
    const shim = join(dir, 'helm');
    await writeFile(shim, `#!/bin/sh\necho run >> '${log}'\nexec '${testbed().tools.helm}' "$@"\n`, {
      mode: 0o755,
    });
    const runs = async () => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
    const before = process.env.MOORING_HELM;
    process.env.MOORING_HELM = shim;
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `depends-chart-${Date.now().toString(36)}/fleet`,
      files: {
        'infra/ingress.yaml': infra('never-ready'),
        'app/Chart.yaml': 'apiVersion: v2\nname: app\nversion: 0.1.0\n',
        'app/templates/settings.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-settings}\ndata: {v: {{ .Values.v | quote }}}\n',
        'app/values.yaml': 'v: one\n',
      },
      source: { name: 'fleet' },
      cluster: { namespace: agentNs() },
      deployments: [
        // Names of their own: the agent's namespace holds the ledgers of the test above.
        { name: 'edge', namespace: ns(), paths: ['infra'], stability: { timeout: '8s' } },
        { name: 'site', namespace: ns(), helm: { chart: 'app' }, dependsOn: ['edge'] },
      ],
      start: { level: 'info' },
    });
    try {
      // Waiting while edge syncs and fails (looked at again every few seconds): never rendered.
      await eventually('edge fails', async () => receiver.ended(first, 'edge'), 60_000);
      expect(
        receiver
          .statuses()
          .some((s) => s.sha === first && s.context.endsWith('site') && s.description === 'Waiting for edge'),
      ).toBe(true);
      expect(await runs()).toBe(0);
      // Once edge is fixed, the site is rendered and synced.
      const fixed = await repo.commit({ 'infra/ingress.yaml': infra('ready') });
      expect((await eventually('site stable', async () => receiver.ended(fixed, 'site'), 60_000)).state).toBe(
        'success',
      );
      expect(await runs()).toBeGreaterThan(0);
    } finally {
      if (before === undefined) delete process.env.MOORING_HELM;
      else process.env.MOORING_HELM = before;
      await agent.stop();
    }
  });
});
