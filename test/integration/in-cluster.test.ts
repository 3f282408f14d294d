// The agent as the Helm chart runs it: installed with helm into the test-bed cluster, then run as the chart's
// ServiceAccount (a token from the TokenRequest API, the in-cluster environment and files as a pod has them).
// With the chart's default RBAC it completes a full sync; with namespaced RBAC it is refused outside its
// namespaces, with an error that says so.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { eventually, kubeConfig, manifestDir, runTool, testbed } from './helpers.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
const CHART = join(import.meta.dirname, '..', '..', 'charts', 'mooring');

async function kubectl(...args: string[]) {
  const env = testbed();
  const out = await runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, ...args]);
  if (out.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${out.stderr}`);
  return out.stdout;
}

describe('the agent in the cluster, with the chart RBAC', () => {
  const suffix = Date.now().toString(36);
  const cleanup: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
  });

  async function installAndRun(scope: 'cluster' | 'namespaces', target: string, allowed: string) {
    const env = testbed();
    const release = `mooring-${scope === 'cluster' ? 'c' : 'n'}-${suffix}`;
    for (const ns of [release, target, allowed]) {
      await kubectl('create', 'namespace', ns).catch(() => undefined);
      cleanup.push(() => kubectl('delete', 'namespace', ns, '--wait=false'));
    }
    const dir = await manifestDir({
      'settings.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n',
      'values.yaml': `rbac: {scope: ${scope}, namespaces: [${allowed}]}
config:
  cluster: {name: test}
  sources: {local: [{name: folder, path: /manifests}]}
  deployments: [{name: app, namespace: ${allowed}, source: folder}]
`,
    });
    const install = await runTool(env.tools.helm, [
      '--kubeconfig',
      env.kube.kubeconfig,
      'install',
      release,
      CHART,
      '-n',
      release,
      '-f',
      join(dir, 'values.yaml'),
    ]);
    expect(install.code, install.stderr).toBe(0);
    cleanup.push(() =>
      runTool(env.tools.helm, ['--kubeconfig', env.kube.kubeconfig, 'uninstall', release, '-n', release]),
    );

    // The pod's view: the chart's ServiceAccount token, the cluster CA, the in-cluster environment.
    const serviceAccount = (
      await kubectl(
        '-n',
        release,
        'get',
        'deployment',
        '-o',
        'jsonpath={.items[0].spec.template.spec.serviceAccountName}',
      )
    ).trim();
    const request = await kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccountToken({
        name: serviceAccount,
        namespace: release,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
    const root = join(dir, 'pod');
    const secrets = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    await mkdir(secrets, { recursive: true });
    const kubeconfig = parse(await readFile(env.kube.kubeconfig, 'utf8')) as {
      clusters: { cluster: { 'certificate-authority-data': string } }[];
    };
    const ca = Buffer.from(kubeconfig.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64');
    await writeFile(join(secrets, 'token'), request.status?.token ?? '');
    await writeFile(join(secrets, 'ca.crt'), ca);
    await writeFile(join(secrets, 'namespace'), release);
    // The chart's own config, as the pod would read it, pointed at the manifests and the deployment's namespace.
    // (Found by its key: the namespace also holds the cluster's kube-root-ca.crt.)
    const listed = JSON.parse(await kubectl('-n', release, 'get', 'configmap', '-o', 'json')) as {
      items: { data?: Record<string, string> }[];
    };
    const rendered =
      listed.items.find((c) => c.data?.['mooring.yaml'] !== undefined)?.data?.['mooring.yaml'] ?? '';
    expect(rendered).not.toBe('');
    const config = parse(rendered) as {
      sources: { local: { path: string }[] };
      deployments: { namespace: string }[];
      server: { port: number };
    };
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(join(manifests, 'settings.yaml'), await readFile(join(dir, 'settings.yaml')));
    config.sources.local = [{ ...config.sources.local[0], path: manifests } as { path: string }];
    config.deployments = [{ ...config.deployments[0], namespace: target } as { namespace: string }];
    config.server = { ...config.server, port: 0 };
    const configFile = join(dir, 'mooring.yaml');
    await writeFile(configFile, JSON.stringify(config));

    const server = new URL(env.kube.server);
    const child: ChildProcess = spawn(process.execPath, [MAIN, 'run', '--config', configFile], {
      env: {
        ...process.env,
        KUBERNETES_SERVICE_HOST: server.hostname,
        KUBERNETES_SERVICE_PORT: server.port,
        MOORING_IN_CLUSTER_ROOT: root,
        POD_NAME: `${release}-pod`,
        KUBECONFIG: '/nonexistent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let logs = '';
    child.stdout?.on('data', (c: Buffer) => (logs += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (logs += c.toString()));
    cleanup.push(async () => child.kill('SIGKILL'));
    return { logs: () => logs, stop: () => child.kill('SIGTERM') };
  }

  it('completes a full sync as the chart ServiceAccount with the default (cluster) RBAC', async () => {
    const target = `apps-c-${suffix}`;
    const agent = await installAndRun('cluster', target, target);
    await eventually(
      'stable',
      async () => (agent.logs().includes('"outcome":"stable"') ? true : undefined),
      90_000,
    );
    const cm = await kubeConfig()
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name: 'settings', namespace: target });
    expect(cm.data).toEqual({ k: 'v' });
    expect(agent.logs()).toContain('leading: syncing');
    agent.stop();
  });

  it('is refused outside its namespaces with namespaced RBAC, saying so', async () => {
    const allowed = `apps-n-${suffix}`;
    const outside = `outside-${suffix}`;
    const agent = await installAndRun('namespaces', outside, allowed);
    await eventually('refused', async () => (/forbidden/i.test(agent.logs()) ? true : undefined), 90_000);
    const line = agent
      .logs()
      .split('\n')
      .find((l) => /forbidden/i.test(l));
    expect(line).toContain(outside);
    expect(line).toMatch(/system:serviceaccount:mooring-n-/);
    const list = await kubeConfig().makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: outside });
    expect(list.items.map((c) => c.metadata?.name)).not.toContain('settings');
    agent.stop();
  });
});
