// A kubeconfig from a Secret is data: what it may hold (inline certificates, keys, tokens, basic auth), what it is
// refused (exec, auth-provider, file paths, TLS without verification) with the Secret, key, entry and field, the
// per-cluster opt-ins, and the minimal environment an allowed exec plugin runs with (run for real).
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { StalledError } from '../../../src/errors.ts';
import { type KubeconfigSecret, kubeconfigFromSecretText } from '../../../src/kube/kubeconfig-secret.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');

const ref: KubeconfigSecret = {
  cluster: 'eu-1',
  namespace: 'mooring',
  name: 'eu-1-kubeconfig',
  key: 'value',
  allowExec: false,
  allowInsecureTLS: false,
};

function kubeconfig(cluster: object, user: object): Buffer {
  return Buffer.from(
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'prod', cluster: { server: 'https://10.1.2.3:6443', ...cluster } }],
      users: [{ name: 'admin', user }],
      contexts: [{ name: 'x', context: { cluster: 'prod', user: 'admin' } }],
      'current-context': 'x',
    }),
  );
}

const load = (text: Buffer, opt: Partial<KubeconfigSecret> = {}, execHome = tmpdir()) =>
  kubeconfigFromSecretText(text, { ...ref, ...opt }, { execHome });

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(StalledError);
    return (error as Error).message;
  }
  throw new Error('not refused');
}

const exec = { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/sh', args: ['-c', 'exit 1'] };

describe('a kubeconfig from a Secret', () => {
  it.each([
    ['a token', {}, { token: 'abc' }],
    ['basic auth', {}, { username: 'u', password: 'p' }],
    [
      'an inline CA and client certificate',
      { 'certificate-authority-data': b64('ca'), 'tls-server-name': 'api' },
      { 'client-certificate-data': b64('cert'), 'client-key-data': b64('key') },
    ],
  ])('takes %s', (_, cluster, user) => {
    expect(load(kubeconfig(cluster, user)).server).toBe('https://10.1.2.3:6443');
  });

  const S = 'Secret mooring/eu-1-kubeconfig key value';
  it.each([
    ['exec', {}, { exec }, `user "admin": exec: runs a command inside the agent`, 'allowExec: true'],
    [
      'tokenFile',
      {},
      { tokenFile: '/etc/mooring/git/password' },
      'user "admin": tokenFile: a file path',
      'inline certificates and tokens only',
    ],
    [
      'client-certificate',
      {},
      { 'client-certificate': '/tmp/c', 'client-key': '/tmp/k' },
      'user "admin": client-certificate: a file path',
      'inline certificates and tokens only',
    ],
    [
      'auth-provider',
      {},
      { 'auth-provider': { name: 'gcp', config: { 'cmd-path': '/bin/sh' } } },
      'user "admin": auth-provider: a legacy provider that may run a command',
      'inline certificates and tokens only',
    ],
    [
      'certificate-authority',
      { 'certificate-authority': '/var/run/secrets/ca.crt' },
      { token: 'a' },
      'cluster "prod": certificate-authority: a file path',
      'inline certificates and tokens only',
    ],
    [
      'insecure-skip-tls-verify',
      { 'insecure-skip-tls-verify': true },
      { token: 'a' },
      'cluster "prod": insecure-skip-tls-verify: TLS without verification',
      'allowInsecureTLS: true',
    ],
    [
      'an http server',
      { server: 'http://10.1.2.3:8080' },
      { token: 'a' },
      'cluster "prod": server: http: sends the credentials unencrypted',
      'allowInsecureTLS: true',
    ],
  ])('refuses %s, naming the Secret, key, entry and field', (_, cluster, user, what, remedy) => {
    const message = refusal(() => load(kubeconfig(cluster, user)));
    expect(message).toMatch(new RegExp(`^${S}:\\d+: `));
    expect(message).toContain(what);
    expect(message).toContain('refused in a kubeconfig from a Secret');
    expect(message).toContain(remedy);
  });

  it('refuses an unused user too: any context may be chosen', () => {
    const text = Buffer.from(
      stringify({
        clusters: [{ name: 'prod', cluster: { server: 'https://10.1.2.3:6443' } }],
        users: [
          { name: 'admin', user: { token: 'a' } },
          { name: 'other', user: { exec } },
        ],
        contexts: [{ name: 'x', context: { cluster: 'prod', user: 'admin' } }],
        'current-context': 'x',
      }),
    );
    expect(refusal(() => load(text))).toContain('user "other": exec');
  });

  it('takes insecure TLS and an http server only with allowInsecureTLS; never paths, whatever is allowed', () => {
    const insecure = load(kubeconfig({ 'insecure-skip-tls-verify': true }, { token: 'a' }), {
      allowInsecureTLS: true,
    });
    const opts: RequestOptions = {};
    return insecure.applyTo(opts).then(() => {
      expect(opts.rejectUnauthorized).toBe(false);
      expect(load(kubeconfig({ server: 'http://h:80' }, {}), { allowInsecureTLS: true }).server).toBe(
        'http://h:80',
      );
      const all = { allowExec: true, allowInsecureTLS: true };
      expect(refusal(() => load(kubeconfig({}, { tokenFile: '/x' }), all))).toContain('tokenFile');
      expect(refusal(() => load(kubeconfig({}, { 'auth-provider': { name: 'oidc' } }), all))).toContain(
        'auth-provider',
      );
      expect(refusal(() => load(kubeconfig({}, { exec: { ...exec, command: './plugin' } }), all))).toContain(
        'must be on PATH or an absolute path',
      );
    });
  });

  it('runs an allowed exec plugin through the runner with a minimal environment', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-kubeconfig-secret-'));
    const plugin = join(dir, 'plugin.sh');
    await writeFile(
      plugin,
      `#!/bin/sh
env > "${dir}/env"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t0k"}}'
`,
    );
    await chmod(plugin, 0o755);
    process.env.MOORING_TEST_AGENT_SECRET = 'never-in-a-plugin';
    try {
      const config = load(
        kubeconfig({}, { exec: { ...exec, command: plugin, args: [] } }),
        { allowExec: true },
        dir,
      );
      const opts: RequestOptions = {};
      await config.applyTo(opts);
      expect((opts.headers as Record<string, string>).authorization).toBe('Bearer t0k');
    } finally {
      delete process.env.MOORING_TEST_AGENT_SECRET;
    }
    const names = (await readFile(join(dir, 'env'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('=')[0]);
    // What the shell adds itself (PWD, SHLVL, _) aside, only what mooring gives.
    expect(names.filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n ?? '')).sort()).toEqual([
      'HOME',
      'KUBERNETES_EXEC_INFO',
      'LANG',
      'PATH',
      'TZ',
    ]);
  });
});
