// The namespace boundary on the real control plane, with admin credentials (so that only mooring's own rule can
// stop the write): a manifest naming kube-system fails its deployment's render before any request, in the CLI
// with -n and in the agent, where the other deployments go on syncing.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { StalledError } from '../../src/errors.ts';
import { KubeApi } from '../../src/kube/api.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { deploy } from '../../src/sync/deploy.ts';
import { appDeployment } from './build-helpers.ts';
import {
  agentConfig,
  clusterConfig,
  crdManifest,
  eventually,
  kubeConfig,
  kubectl,
  manifestDir,
  mooring,
  startAgent,
  testbed,
  useNamespace,
  writeKubeconfig,
} from './helpers.ts';

const suffix = Date.now().toString(36);
const evilName = `evil-${suffix}`;

const evil = appDeployment(`{name: ${evilName}, namespace: kube-system}`, 'evil');
const settings = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n';

async function inKubeSystem(): Promise<string[]> {
  const list = await kubeConfig()
    .makeApiClient(AppsV1Api)
    .listNamespacedDeployment({ namespace: 'kube-system' });
  return list.items.map((d) => d.metadata?.name ?? '');
}

describe('namespace boundary: mooring render / deploy -n', () => {
  const ns = useNamespace('boundary-cli');
  const other = useNamespace('boundary-other');

  it('refuses a manifest naming another namespace than -n, before any request, and writes nothing', async () => {
    const dir = await manifestDir({ 'settings.yaml': settings, 'x.yaml': evil });
    const kubeconfig = testbed().kube.kubeconfig;
    const expected =
      `x.yaml:3:${`metadata: {name: ${evilName}, namespace: `.length + 1}: Deployment kube-system/${evilName}: ` +
      `namespace kube-system is outside this deployment's namespaces (${ns()}); add --allow-namespace kube-system to allow it`;
    for (const command of ['render', 'deploy']) {
      const result = await mooring(command, dir, '--kubeconfig', kubeconfig, '-n', ns());
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain(expected);
      expect(result.stdout).toBe('');
    }
    expect(await inKubeSystem()).not.toContain(evilName);
    const cms = await kubeConfig().makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: ns() });
    expect(cms.items.map((c) => c.metadata?.name)).not.toContain('settings');

    // Before any request: against a server that is not there, the answer is the same.
    const dead = await writeKubeconfig(
      { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true },
      {},
    );
    for (const command of ['render', 'deploy']) {
      const result = await mooring(command, dir, '--kubeconfig', dead, '-n', ns());
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(expected);
      expect(result.stderr).not.toContain('ECONNREFUSED');
    }
  });

  it('deploys into a namespace listed with --allow-namespace, and objects without one into -n', async () => {
    const dir = await manifestDir({
      'settings.yaml': settings,
      'elsewhere.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: elsewhere, namespace: ${other()}}\ndata: {k: v}\n`,
    });
    const kubeconfig = testbed().kube.kubeconfig;
    const refused = await mooring('deploy', dir, '--kubeconfig', kubeconfig, '-n', ns());
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`add --allow-namespace ${other()} to allow it`);
    const result = await mooring(
      'deploy',
      dir,
      '--kubeconfig',
      kubeconfig,
      '-n',
      ns(),
      '--allow-namespace',
      other(),
      '--timeout',
      '1m',
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const core = kubeConfig().makeApiClient(CoreV1Api);
    expect((await core.readNamespacedConfigMap({ name: 'settings', namespace: ns() })).data).toEqual({
      k: 'v',
    });
    expect((await core.readNamespacedConfigMap({ name: 'elsewhere', namespace: other() })).data).toEqual({
      k: 'v',
    });
  });
});

describe('namespace boundary: mooring run --watch -n', () => {
  const ns = useNamespace('boundary-watch');

  it('fails each deploy of a folder naming another namespace, and writes nothing', async () => {
    const dir = await manifestDir({ 'settings.yaml': settings, 'x.yaml': evil });
    const main = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
    const child = spawn(
      process.execPath,
      [main, 'run', '--watch', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns()],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let logs = '';
    child.stdout.on('data', (c: Buffer) => (logs += c.toString()));
    child.stderr.on('data', (c: Buffer) => (logs += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const line = await eventually(
        'the deploy refused',
        async () => logs.split('\n').find((l) => l.includes('"outcome":"error"')),
        60_000,
      );
      expect(line).toContain(
        `Deployment kube-system/${evilName}: namespace kube-system is outside this deployment's namespaces (${ns()})`,
      );
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    expect(await inKubeSystem()).not.toContain(evilName);
    const cms = await kubeConfig().makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: ns() });
    expect(cms.items.map((c) => c.metadata?.name)).not.toContain('settings');
  });
});

describe('namespace boundary: the agent', () => {
  const good = useNamespace('boundary-good');
  const bad = useNamespace('boundary-bad');
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
    await kubectl('delete', 'namespace', `mooring-boundary-${suffix}`, '--wait=false');
  });

  it('fails only the deployment whose manifest leaves its namespaces, naming the object; the other becomes stable', async () => {
    const goodDir = await manifestDir({
      'settings.yaml': settings,
      'web.yaml': appDeployment(),
    });
    const badDir = await manifestDir({ 'settings.yaml': settings, 'x.yaml': evil });
    const agent = startAgent(
      await agentConfig({
        cluster: { namespace: `mooring-boundary-${suffix}` },
        deployments: [
          { name: 'good', namespace: good(), source: 'good' },
          { name: 'bad', namespace: bad(), source: 'bad' },
        ],
        extra: {
          sources: {
            local: [
              { name: 'good', path: goodDir },
              { name: 'bad', path: badDir },
            ],
          },
        },
      }),
    );
    stops.push(() => agent.stop());
    const logs = () => agent.logs() as { msg: string; deployment?: string; outcome?: string }[];
    const outcome = (deployment: string) =>
      eventually(
        `an outcome of ${deployment}`,
        async () => logs().find((l) => l.deployment === deployment && l.outcome !== undefined),
        120_000,
      );

    const failed = await outcome('bad');
    expect(failed.outcome).toBe('error');
    expect(failed.msg).toContain(
      `x.yaml:3:${`metadata: {name: ${evilName}, namespace: `.length + 1}: Deployment kube-system/${evilName}: ` +
        `namespace kube-system is outside this deployment's namespaces (${bad()}); list it in allowedNamespaces of deployment bad`,
    );
    const stable = await outcome('good');
    expect(stable.outcome, stable.msg).toBe('stable');
    expect(stable.msg).toMatch(/^2\/2 stable/); // the ConfigMap and the Deployment

    // Nothing of the bad deployment was written: not the object outside, not its own ConfigMap.
    expect(await inKubeSystem()).not.toContain(evilName);
    const cms = await kubeConfig().makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: bad() });
    expect(cms.items.map((c) => c.metadata?.name)).not.toContain('settings');
    // The agent itself goes on: its process did not end, and it still answers.
    expect(logs().some((l) => /internal error/.test(l.msg))).toBe(false);
  });
});

describe('namespace boundary: custom resources the cluster serves cluster-scoped', () => {
  const ns = useNamespace('boundary-crd');
  const group = `b${suffix}.mooring.test`;
  afterAll(async () => {
    await kubectl('delete', 'crd', `clusterwidgets.${group}`, '--wait=false');
  });

  it('refuses one without a namespace, which render alone would take for namespaced, before writing anything', async () => {
    const crd = await manifestDir({
      'crd.yaml': crdManifest(group, 'clusterwidgets', 'ClusterWidget', {}, 'Cluster'),
    });
    const installed = await kubectl('apply', '-f', `${crd}/crd.yaml`);
    expect(installed.code, installed.stderr).toBe(0);
    await kubectl('wait', '--for=condition=Established', `crd/clusterwidgets.${group}`);
    const api = new KubeApi(clusterConfig());
    const widget = {
      path: 'widget.yaml',
      text: `apiVersion: ${group}/v1\nkind: ClusterWidget\nmetadata: {name: everywhere}\n`,
    };
    const deployCrd = (files: { path: string; text: string }[], clusterScoped: false | string[]) =>
      deploy(
        { api, discovery: new Discovery(api) },
        {
          files,
          namespace: ns(),
          application: 'crd',
          images: [],
          timeoutMs: 60_000,
          dryRun: false,
          renderOptions: { boundary: { namespaces: [ns()], clusterScoped } },
        },
      );
    try {
      const report = await deployCrd([{ path: 'settings.yaml', text: settings }, widget], false);
      expect(report.outcome).toBe('error');
      expect(report.error).toBeInstanceOf(StalledError);
      expect(report.summary).toContain(
        `widget.yaml:1:1: ClusterWidget everywhere: cluster-scoped, outside this deployment's namespaces (${ns()})`,
      );
      expect(report.applied).toEqual([]);
      // Allowed by kind, it is written (cluster-wide).
      const allowed = await deployCrd([widget], ['ClusterWidget']);
      expect(allowed.outcome, allowed.summary).toBe('stable');
    } finally {
      api.close();
    }
  });
});
