// mooring's kubeconfig reader against kubeconfig files written to temp folders, with client-node's KubeConfig
// as an independent oracle for what a request carries, and exec plugins run as real programs.
import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { beforeEach, describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { contextNamespace, loadKubeConfig } from '../../../src/kube/client.ts';
import { EXPIRY_MARGIN_MS } from '../../../src/kube/exec-credential.ts';
import { type KubeconfigDeps, TOKEN_FILE_PERIOD_MS } from '../../../src/kube/kubeconfig.ts';
import { stringifyYaml as stringify } from '../../../src/yaml/write.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');
let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mooring-kubeconfig-'));
});

interface Doc {
  clusters?: unknown[];
  users?: unknown[];
  contexts?: unknown[];
  'current-context'?: string;
}

/** One cluster, user and context; `extra` adds or replaces top-level fields. */
function single(cluster: object, user: object, extra: Doc = {}): Doc {
  return {
    clusters: [{ name: 'c', cluster: { server: 'https://10.1.2.3:6443', ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'apps' } }],
    'current-context': 'x',
    ...extra,
  };
}

async function write(name: string, doc: Doc | string, folder = dir): Promise<string> {
  await mkdir(folder, { recursive: true });
  const file = join(folder, name);
  await writeFile(
    file,
    typeof doc === 'string' ? doc : stringify({ apiVersion: 'v1', kind: 'Config', ...doc }),
  );
  return file;
}

const isolated = (extra: NodeJS.ProcessEnv = {}): KubeconfigDeps => ({
  env: { PATH: process.env.PATH, ...extra },
  home: join(dir, 'home'),
});

/** What a request carries, normalized for comparison: buffers as text, the Authorization header by one name. */
function carried(opts: RequestOptions & { auth?: string | null }) {
  const headers = (opts.headers ?? {}) as Record<string, string>;
  const text = (v: unknown) => (v === undefined ? undefined : String(v));
  return {
    ca: text(opts.ca),
    cert: text(opts.cert),
    key: text(opts.key),
    servername: opts.servername,
    rejectUnauthorized: opts.rejectUnauthorized,
    authorization:
      headers.authorization ??
      headers.Authorization ??
      (opts.auth ? `Basic ${Buffer.from(opts.auth).toString('base64')}` : undefined),
  };
}

async function ours(file: string, deps: KubeconfigDeps = isolated()) {
  const config = loadKubeConfig({ kubeconfig: file }, deps);
  const opts: RequestOptions = { headers: {} };
  await config.applyTo(opts);
  return { server: config.server, ...carried(opts) };
}

async function oracle(file: string) {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  const opts: RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  return { server: kc.getCurrentCluster()?.server, ...carried(opts) };
}

function stalled(run: () => unknown): StalledError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(StalledError);
    return error as StalledError;
  }
  throw new Error('expected a StalledError');
}

describe('what a request carries, against client-node', () => {
  const fixtures: Record<string, () => Promise<Doc>> = {
    'token and CA data': async () => single({ 'certificate-authority-data': b64('CA') }, { token: 't0k' }),
    'client certificate and key data': async () =>
      single(
        { 'certificate-authority-data': b64('CA') },
        { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
      ),
    'files relative to the kubeconfig': async () => {
      await mkdir(join(dir, 'pki'));
      await writeFile(join(dir, 'pki', 'ca.crt'), 'CA FILE');
      await writeFile(join(dir, 'pki', 'me.crt'), 'CERT FILE');
      await writeFile(join(dir, 'pki', 'me.key'), 'KEY FILE');
      return single(
        { 'certificate-authority': 'pki/ca.crt' },
        { 'client-certificate': 'pki/me.crt', 'client-key': './pki/me.key' },
      );
    },
    'basic auth': async () => single({}, { username: 'ann', password: 's3cret:x' }),
    'insecure, with a TLS server name': async () =>
      single({ 'insecure-skip-tls-verify': true, 'tls-server-name': 'api.internal' }, { token: 'abc' }),
    'an exec plugin': async () => {
      const script = join(dir, 'static-plugin.mjs');
      await writeFile(
        script,
        `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', status: { token: 'from-exec' } }));\n`,
      );
      return single(
        {},
        {
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1beta1',
            command: process.execPath,
            args: [script],
          },
        },
      );
    },
  };
  for (const [name, fixture] of Object.entries(fixtures)) {
    it(`agrees on ${name}`, async () => {
      const file = await write('config', await fixture());
      const mine = await ours(file);
      expect(mine).toEqual(await oracle(file));
      expect(mine.authorization ?? mine.cert).toBeDefined();
    });
  }
});

describe('reading kubeconfigs', () => {
  it('resolves the context: cluster, user, namespace, and --context over current-context', async () => {
    const file = await write('config', {
      clusters: [
        { name: 'a', cluster: { server: 'https://a.example:6443' } },
        { name: 'b', cluster: { server: 'b.example:443' } },
      ],
      users: [
        { name: 'ua', user: { token: 'ta' } },
        { name: 'ub', user: { token: 'tb' } },
      ],
      contexts: [
        { name: 'first', context: { cluster: 'a', user: 'ua', namespace: 'one' } },
        { name: 'second', context: { cluster: 'b', user: 'ub' } },
      ],
      'current-context': 'first',
    });
    const first = loadKubeConfig({ kubeconfig: file }, isolated());
    expect([first.server, first.contextName, contextNamespace(first)]).toEqual([
      'https://a.example:6443',
      'first',
      'one',
    ]);
    const second = loadKubeConfig({ kubeconfig: file, context: 'second' }, isolated());
    expect([second.server, contextNamespace(second), contextNamespace(second, 'flag')]).toEqual([
      'https://b.example:443',
      'default',
      'flag',
    ]);
    const opts: RequestOptions = {};
    await second.applyTo(opts);
    expect((opts.headers as Record<string, string>).authorization).toBe('Bearer tb');
    const unknown = stalled(() => loadKubeConfig({ kubeconfig: file, context: 'third' }, isolated()));
    expect(unknown.message).toContain('context "third" is not in the kubeconfig (known: first, second)');
  });

  it('merges $KUBECONFIG as client-go does: first definition and first current-context win, missing files skipped', async () => {
    const one = await write('one', {
      clusters: [{ name: 'c', cluster: { server: 'https://one:1' } }],
      users: [{ name: 'u', user: { token: 'from-one' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    });
    const two = await write('two', {
      clusters: [
        { name: 'c', cluster: { server: 'https://two:2' } },
        { name: 'd', cluster: { server: 'https://two:3' } },
      ],
      users: [{ name: 'u', user: { token: 'from-two' } }],
      contexts: [{ name: 'y', context: { cluster: 'd', user: 'u', namespace: 'from-two' } }],
      'current-context': 'y',
    });
    const three = await write('three', { 'current-context': 'x' });
    const KUBECONFIG = [one, join(dir, 'missing'), two, three].join(delimiter);
    const config = loadKubeConfig({}, isolated({ KUBECONFIG }));
    expect([config.contextName, config.server, config.namespace]).toEqual(['y', 'https://two:3', 'from-two']);
    const opts: RequestOptions = {};
    await config.applyTo(opts);
    expect((opts.headers as Record<string, string>).authorization).toBe('Bearer from-one');
    const x = loadKubeConfig({ context: 'x' }, isolated({ KUBECONFIG }));
    expect(x.server).toBe('https://one:1');
  });

  it('falls back to ~/.kube/config, then in-cluster, then says what it looked for', async () => {
    const deps = isolated();
    await write('config', single({}, { token: 't' }), join(deps.home ?? '', '.kube'));
    expect(loadKubeConfig({}, deps).server).toBe('https://10.1.2.3:6443');
    const nowhere = stalled(() => loadKubeConfig({}, isolated({ KUBECONFIG: join(dir, 'none') })));
    expect(nowhere.message).toContain(join(dir, 'none'));
  });

  it('re-reads a token file at most once a period, relative to the kubeconfig', async () => {
    await writeFile(join(dir, 'token'), 'first\n');
    const file = await write('config', single({}, { tokenFile: 'token' }));
    let now = 1_000_000;
    const config = loadKubeConfig({ kubeconfig: file }, { ...isolated(), now: () => now });
    const token = async () => {
      const opts: RequestOptions = {};
      await config.applyTo(opts);
      return (opts.headers as Record<string, string>).authorization;
    };
    expect(await token()).toBe('Bearer first');
    await writeFile(join(dir, 'token'), 'second');
    expect(await token()).toBe('Bearer first');
    now += TOKEN_FILE_PERIOD_MS;
    expect(await token()).toBe('Bearer second');
  });

  it('reads the in-cluster service account under $MOORING_IN_CLUSTER_ROOT, IPv6 in brackets, token rotating', async () => {
    const sa = join(dir, 'pod', 'var/run/secrets/kubernetes.io/serviceaccount');
    await mkdir(sa, { recursive: true });
    await writeFile(join(sa, 'token'), 'sa-1');
    await writeFile(join(sa, 'ca.crt'), 'CLUSTER CA');
    await writeFile(join(sa, 'namespace'), 'agents\n');
    let now = 0;
    const env = {
      KUBERNETES_SERVICE_HOST: 'fd00::1',
      KUBERNETES_SERVICE_PORT: '443',
      MOORING_IN_CLUSTER_ROOT: join(dir, 'pod'),
    };
    const config = loadKubeConfig({ inCluster: true }, { ...isolated(env), now: () => now });
    expect([config.server, config.namespace]).toEqual(['https://[fd00::1]:443', 'agents']);
    const opts: RequestOptions = {};
    await config.applyTo(opts);
    expect(carried(opts)).toMatchObject({ ca: 'CLUSTER CA', authorization: 'Bearer sa-1' });
    await writeFile(join(sa, 'token'), 'sa-2');
    now += TOKEN_FILE_PERIOD_MS;
    await config.applyTo(opts);
    expect(carried(opts).authorization).toBe('Bearer sa-2');
    // With no kubeconfig anywhere, the service environment means in-cluster.
    expect(loadKubeConfig({}, isolated(env)).server).toBe('https://[fd00::1]:443');
  });

  it('names the file and line of bad YAML, and the file that is missing', async () => {
    const bad = await write('bad', 'apiVersion: v1\nclusters:\n  - name: c\n    cluster: {server: [\n');
    expect(stalled(() => loadKubeConfig({ kubeconfig: bad }, isolated())).message).toMatch(
      new RegExp(`^${bad}:\\d+: `),
    );
    const missing = join(dir, 'nope');
    expect(stalled(() => loadKubeConfig({ kubeconfig: missing }, isolated())).message).toBe(
      `${missing}: cannot read the kubeconfig: no such file`,
    );
    const wrongType = await write('wrong', single({ 'insecure-skip-tls-verify': 'yes' }, {}));
    expect(stalled(() => loadKubeConfig({ kubeconfig: wrongType }, isolated())).message).toMatch(
      new RegExp(`^${wrongType}:\\d+: clusters\\[0\\]\\.cluster\\.insecure-skip-tls-verify: `),
    );
  });

  it('refuses what it does not support, naming file, line and field', async () => {
    const proxy = await write(
      'proxy',
      [
        'clusters:',
        '- name: c',
        '  cluster:',
        '    server: https://10.1.2.3:6443',
        '    proxy-url: http://proxy:3128',
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
      ].join('\n'),
    );
    expect(stalled(() => loadKubeConfig({ kubeconfig: proxy }, isolated())).message).toBe(
      `${proxy}:5: cluster "c": proxy-url: proxies are not supported; reach the API server directly`,
    );
    const as = await write('as', single({}, { token: 't', as: 'admin' }));
    expect(stalled(() => loadKubeConfig({ kubeconfig: as }, isolated())).message).toMatch(
      new RegExp(`^${as}:\\d+: user "u": as: impersonation is not supported$`),
    );
    const two = await write('two', single({}, { token: 't', username: 'a', password: 'b' }));
    expect(stalled(() => loadKubeConfig({ kubeconfig: two }, isolated())).message).toContain(
      'user "u": more than one authentication method (token, basic auth)',
    );
    const half = await write('half', single({}, { 'client-certificate-data': b64('CERT') }));
    expect(stalled(() => loadKubeConfig({ kubeconfig: half }, isolated())).message).toContain(
      'needs both client-certificate and client-key',
    );
    const gone = await write('gone', single({ 'certificate-authority': 'ca.crt' }, {}));
    expect(stalled(() => loadKubeConfig({ kubeconfig: gone }, isolated())).message).toMatch(
      new RegExp(`^${gone}:\\d+: certificate-authority: cannot read ${join(dir, 'ca.crt')}: no such file$`),
    );
  });

  it('hands legacy auth-provider users to client-node', async () => {
    const payload = Buffer.from(JSON.stringify({ exp: 4102444800 })).toString('base64url');
    const idToken = `e30.${payload}.sig`;
    const file = await write(
      'oidc',
      single({}, { 'auth-provider': { name: 'oidc', config: { 'id-token': idToken } } }),
    );
    const mine = await ours(file);
    expect(mine.authorization).toBe(`Bearer ${idToken}`);
    expect(mine).toEqual(await oracle(file));
  });
});

describe('exec plugins, run for real', () => {
  /** A plugin that counts its runs in a file and prints the token `token-<run>` expiring at `expiry`. */
  async function plugin(options: { expiry?: string; fail?: boolean; cert?: boolean } = {}) {
    await mkdir(join(dir, 'bin'));
    const count = join(dir, 'runs');
    await writeFile(
      join(dir, 'bin', 'plugin.mjs'),
      `import { readFileSync, writeFileSync } from 'node:fs';
let runs = 0;
try { runs = Number(readFileSync(${JSON.stringify(count)}, 'utf8')); } catch {}
runs += 1;
writeFileSync(${JSON.stringify(count)}, String(runs));
writeFileSync(${JSON.stringify(join(dir, 'exec-info'))}, JSON.stringify({ info: process.env.KUBERNETES_EXEC_INFO, greeting: process.env.GREETING, args: process.argv.slice(2) }));
const status = ${options.cert ? `{ clientCertificateData: 'PEM CERT ' + runs, clientKeyData: 'PEM KEY ' + runs }` : `{ token: 'token-' + runs }`};
${options.expiry ? `status.expirationTimestamp = ${JSON.stringify(options.expiry)};` : ''}
${options.fail ? `process.stdout.write(JSON.stringify({ status })); process.stderr.write('login required: run sso-login\\n'); process.exit(3);` : `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status }));`}
`,
    );
    await writeFile(
      join(dir, 'bin', 'plugin.sh'),
      '#!/bin/sh\nexec "$NODE" "$(dirname "$0")/plugin.mjs" "$@"\n',
    );
    await chmod(join(dir, 'bin', 'plugin.sh'), 0o755);
    const file = await write(
      'config',
      single(
        {
          'certificate-authority-data': b64('CA'),
          extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { audience: 'mooring' } }],
        },
        {
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: './bin/plugin.sh',
            args: ['--flag', 'value'],
            env: [
              { name: 'NODE', value: process.execPath },
              { name: 'GREETING', value: 'hello' },
            ],
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
        },
      ),
    );
    const runs = async () => Number(await readFile(count, 'utf8').catch(() => '0'));
    return { file, runs };
  }

  async function request(config: ReturnType<typeof loadKubeConfig>) {
    const opts: RequestOptions = {};
    await config.applyTo(opts);
    return carried(opts);
  }

  it('uses the token, caches it until it expires, runs again after', async () => {
    const expiry = '2030-01-01T00:00:00Z';
    const { file, runs } = await plugin({ expiry });
    let now = Date.parse('2029-06-01T00:00:00Z');
    const config = loadKubeConfig({ kubeconfig: file }, { ...isolated(), now: () => now });
    expect(await runs()).toBe(0);
    const [a, b] = await Promise.all([request(config), request(config)]);
    expect([a.authorization, b.authorization, await runs()]).toEqual(['Bearer token-1', 'Bearer token-1', 1]);
    now = Date.parse(expiry) - EXPIRY_MARGIN_MS - 1;
    expect((await request(config)).authorization).toBe('Bearer token-1');
    expect(await runs()).toBe(1);
    now = Date.parse(expiry);
    expect((await request(config)).authorization).toBe('Bearer token-2');
    expect(await runs()).toBe(2);

    const seen = JSON.parse(await readFile(join(dir, 'exec-info'), 'utf8')) as {
      info: string;
      greeting: string;
      args: string[];
    };
    expect(seen.greeting).toBe('hello');
    expect(seen.args).toEqual(['--flag', 'value']);
    expect(JSON.parse(seen.info)).toEqual({
      kind: 'ExecCredential',
      apiVersion: 'client.authentication.k8s.io/v1',
      spec: {
        interactive: false,
        cluster: {
          server: 'https://10.1.2.3:6443',
          'certificate-authority-data': b64('CA'),
          config: { audience: 'mooring' },
        },
      },
    });
  });

  it('uses a client certificate it prints', async () => {
    const { file } = await plugin({ cert: true });
    const carriedOpts = await request(loadKubeConfig({ kubeconfig: file }, isolated()));
    expect([carriedOpts.cert, carriedOpts.key, carriedOpts.authorization]).toEqual([
      'PEM CERT 1',
      'PEM KEY 1',
      undefined,
    ]);
  });

  it('puts a failing plugin stderr in the error, never its token', async () => {
    const { file, runs } = await plugin({ fail: true });
    const config = loadKubeConfig({ kubeconfig: file }, isolated());
    const error = await request(config).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StalledError);
    const message = (error as Error).message;
    expect(message).toContain('exited with code 3: login required: run sso-login');
    expect(message).toMatch(new RegExp(`^${file}:\\d+: user "u": exec plugin "./bin/plugin.sh"`));
    expect(await runs()).toBe(1);
    expect(message).not.toContain('token-1');
  });

  it('says how to install a plugin that is not there', async () => {
    const file = await write(
      'config',
      single(
        {},
        {
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1beta1',
            command: 'mooring-no-such-plugin',
            installHint: 'install it with: get-plugin mooring',
          },
        },
      ),
    );
    const error = await request(loadKubeConfig({ kubeconfig: file }, isolated())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect((error as Error).message).toContain('command not found\ninstall it with: get-plugin mooring');
  });

  it('does not quote output that is not an ExecCredential', async () => {
    const script = join(dir, 'noisy.mjs');
    await writeFile(script, "process.stdout.write('secret-token-value not json');\n");
    const file = await write(
      'config',
      single(
        {},
        {
          exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [script] },
        },
      ),
    );
    const error = await request(loadKubeConfig({ kubeconfig: file }, isolated())).catch((e: unknown) => e);
    expect((error as Error).message).toContain('printed no ExecCredential JSON');
    expect((error as Error).message).not.toContain('secret-token-value');
  });
});
