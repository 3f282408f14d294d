// A kubeconfig in a Secret (clusters[].kubeconfigSecret) is data, on the real API server with the agent as its own
// process: an exec plugin, a tokenFile naming the Git password file, insecure-skip-tls-verify and a gcp
// auth-provider are each refused with the Secret, key, entry and field, before anything runs or connects (the
// plugins' marker files stay absent, a listener named as their server gets no connection); the agent lives and
// syncs its own cluster. With `allowExec: true` the plugin runs, with a minimal environment, and the cluster works.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  eventually,
  kubectl,
  manifestDir,
  pollHealth,
  secretFiles,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const cm = (value: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {value: "${value}"}
`;

/** A kubeconfig of one cluster and user, as the text of a Secret. */
const kubeconfigText = (cluster: object, user: object) =>
  stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'target', cluster }],
    users: [{ name: 'deployer', user }],
    contexts: [{ name: 'x', context: { cluster: 'target', user: 'deployer' } }],
    'current-context': 'x',
  });

async function secret(namespace: string, name: string, text: string): Promise<void> {
  const dir = await manifestDir({ config: text });
  const made = await kubectl(
    '-n',
    namespace,
    'create',
    'secret',
    'generic',
    name,
    `--from-file=config=${join(dir, 'config')}`,
  );
  expect(made.code, made.stderr).toBe(0);
}

/** A TCP listener that counts connections: a server a refused kubeconfig names, which must never be reached. */
async function listener(): Promise<{ server: Server; port: number; connections: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    server,
    port: typeof address === 'object' && address ? address.port : 0,
    connections: () => count,
  };
}

const EXEC_API = 'client.authentication.k8s.io/v1';

describe('kubeconfig Secrets are data', () => {
  const ns = useNamespace('kcsecret');
  const agentNs = useNamespace('kcsecret-mooring');

  it('refuses exec, tokenFile, insecure-skip-tls-verify and auth-provider, runs nothing, reaches nothing', async () => {
    const dir = await tempDir('mooring-kcsecret-');
    const execMarker = join(dir, 'exec-ran');
    const gcpMarker = join(dir, 'gcp-ran');
    const trap = await listener();
    const passwordFile = join(await secretFiles(), 'password');
    const server = `https://127.0.0.1:${trap.port}`;
    await secret(
      agentNs(),
      'exec',
      kubeconfigText(
        { server },
        { exec: { apiVersion: EXEC_API, command: '/bin/sh', args: ['-c', `touch ${execMarker}; exit 1`] } },
      ),
    );
    await secret(agentNs(), 'token-file', kubeconfigText({ server }, { tokenFile: passwordFile }));
    await secret(
      agentNs(),
      'insecure',
      kubeconfigText({ server, 'insecure-skip-tls-verify': true }, { token: 'abc' }),
    );
    await secret(
      agentNs(),
      'auth-provider',
      kubeconfigText(
        { server },
        { 'auth-provider': { name: 'gcp', config: { 'cmd-path': `touch ${gcpMarker}` } } },
      ),
    );
    const refused = ['exec', 'token-file', 'insecure', 'auth-provider'];
    const { receiver, first, agent } = await startGitAgent({
      repo: `kcsecret-${Date.now().toString(36)}/app`,
      files: { 'app/settings.yaml': cm('1') },
      cluster: { name: 'home', namespace: agentNs() },
      deployments: [{ name: 'app', namespace: ns(), paths: ['app'] }],
      extra: {
        clusters: refused.map((name) => ({
          name,
          kubeconfigSecret: { name, key: 'config' },
          namespace: agentNs(),
        })),
      },
      start: { process: true },
    });
    // /healthz asked all along, each answer given 1 s, while every refused cluster is tried again.
    const poller = pollHealth(agent.port);
    try {
      // Its own cluster syncs.
      expect((await eventually('app synced', async () => receiver.ended(first, 'app'), 90_000)).state).toBe(
        'success',
      );
      // Each other cluster has said why it cannot be used.
      const said = (cluster: string) =>
        agent
          .logs()
          .filter((r) => r.cluster === cluster && typeof r.err === 'string')
          .map((r) => String(r.err));
      await eventually('every cluster tried', async () =>
        refused.every((c) => said(c).length > 0) ? true : undefined,
      );
      // Nothing ran, nothing was reached, the Git password went nowhere.
      expect(existsSync(execMarker), 'the exec plugin ran').toBe(false);
      expect(existsSync(gcpMarker), 'the gcp cmd-path ran').toBe(false);
      expect(trap.connections(), 'connections to the server the Secrets name').toBe(0);
      const where = (name: string) => `Secret ${agentNs()}/${name} key config:`;
      expect(said('exec')[0]).toContain(`${where('exec')}`);
      expect(said('exec')[0]).toMatch(
        /user "deployer": exec: runs a command inside the agent: refused in a kubeconfig from a Secret; set clusters\[exec\]\.kubeconfigSecret\.allowExec: true/,
      );
      expect(said('token-file')[0]).toContain(where('token-file'));
      expect(said('token-file')[0]).toContain('user "deployer": tokenFile: a file path');
      expect(said('insecure')[0]).toContain(where('insecure'));
      expect(said('insecure')[0]).toContain(
        'cluster "target": insecure-skip-tls-verify: TLS without verification: refused',
      );
      expect(said('auth-provider')[0]).toContain(where('auth-provider'));
      expect(said('auth-provider')[0]).toContain('user "deployer": auth-provider:');
      expect(agent.logged(/^cluster exec: cannot use its kubeconfig; trying again$/).length).toBeGreaterThan(
        0,
      );
      for (const c of refused) expect(said(c).join('\n')).not.toContain(testbed().git.password);
      // The agent lives and answers.
      expect(agent.alive()).toBe(true);
      await poller.answeredThroughout();
    } finally {
      await poller.stop();
      await agent.stop();
      trap.server.close();
    }
  }, 180_000);

  it('runs an exec plugin with allowExec: true, with a minimal environment, and deploys through it', async () => {
    const dir = await tempDir('mooring-kcsecret-exec-');
    const envFile = join(dir, 'env');
    // The test bed's own API server, reached as another cluster through a plugin that prints its token.
    const own = parse(await readFile(testbed().kube.kubeconfig, 'utf8')) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
      users: { user: { token: string } }[];
    };
    const credential = JSON.stringify({
      apiVersion: EXEC_API,
      kind: 'ExecCredential',
      status: { token: own.users[0]?.user.token },
    });
    const space = `${ns()}-loop`;
    expect((await kubectl('create', 'namespace', space)).code).toBe(0);
    expect((await kubectl('create', 'namespace', `${agentNs()}-loop`)).code).toBe(0);
    await secret(
      agentNs(),
      'loop',
      kubeconfigText(own.clusters[0]?.cluster ?? {}, {
        exec: {
          apiVersion: EXEC_API,
          command: '/bin/sh',
          args: ['-c', `env > ${envFile}; printf '%s' '${credential}'`],
        },
      }),
    );
    const { receiver, first, agent } = await startGitAgent({
      repo: `kcsecret-exec-${Date.now().toString(36)}/app`,
      files: { 'app/settings.yaml': cm('1') },
      cluster: { name: 'home', namespace: agentNs() },
      deployments: [{ name: 'looped', namespace: space, paths: ['app'], clusters: 'loop' }],
      extra: {
        clusters: [
          {
            name: 'loop',
            kubeconfigSecret: { name: 'loop', key: 'config', allowExec: true },
            namespace: `${agentNs()}-loop`,
          },
        ],
      },
      start: { process: true },
    });
    try {
      expect(
        (await eventually('looped synced', async () => receiver.ended(first, 'loop/looped'), 90_000)).state,
      ).toBe('success');
      // Nothing refers to the ConfigMap: it keeps its name.
      const made = await kubectl('-n', space, 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.value}');
      expect(made.stdout, made.stderr).toBe('1');
      // The plugin saw PATH, its own HOME, LANG, TZ and KUBERNETES_EXEC_INFO: none of the agent's variables.
      const names = (await readFile(envFile, 'utf8'))
        .split('\n')
        .map((l) => l.split('=')[0] ?? '')
        .filter((n) => /^[A-Z_][A-Z0-9_]*$/.test(n) && !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n));
      expect(names.sort()).toEqual(['HOME', 'KUBERNETES_EXEC_INFO', 'LANG', 'PATH', 'TZ']);
    } finally {
      await agent.stop();
    }
  }, 180_000);
});
