// The registry source against real distribution registries: the test bed's open and htpasswd registries, and
// a token-auth registry started here with a real RS256 token issuer. Requests are counted at the server side
// (a counting proxy, the token server), not by trusting the client's own stats.
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes, randomUUID, sign, X509Certificate } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registrySource } from '../../src/config/schema.ts';
import { classify, StalledError } from '../../src/errors.ts';
import type { RegistryClient } from '../../src/sources/registry/client.ts';
import { createRegistryClient } from '../../src/sources/registry/create.ts';
import { pollRegistry } from '../../src/sources/registry/poll.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { freePorts } from '../testbed/ports.ts';
import { registryCommand, registryConfigYaml, waitForRegistry } from '../testbed/registry.ts';
import { runTool, testbed } from './helpers.ts';

const run = randomBytes(3).toString('hex');
const repo = (name: string) => `mooring-test/registry-${run}/${name}`;
const clients: RegistryClient[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A parsed source, as the config loader would give it; fast rate limit so tests do not wait on it. */
function source(image: string, extra: Record<string, unknown> = {}) {
  return registrySource.parse({ name: 'app', image, insecure: true, requestsPerSecond: 1000, ...extra });
}

async function clientFor(src: ReturnType<typeof source>, overrides = {}): Promise<RegistryClient> {
  const client = await createRegistryClient(src, overrides);
  clients.push(client);
  return client;
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof Error)) throw new Error('expected a failure, the call succeeded');
  return error;
}

interface Counter {
  host: string;
  requests: string[];
}

/** An HTTP proxy in front of `target` that records `METHOD /path` of every request it forwards. */
async function countingProxy(target: string): Promise<Counter> {
  const to = new URL(target);
  const counter: Counter = { host: '', requests: [] };
  const server = http.createServer((req, res) => {
    counter.requests.push(`${req.method} ${new URL(req.url ?? '/', 'http://x').pathname}`);
    const upstream = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  counter.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanups.push(() => new Promise<void>((ok) => server.close(() => ok())));
  return counter;
}

describe('registry source against the open test-bed registry', () => {
  const env = () => testbed().registry;

  it.each(['docker', 'oci'] as const)(
    'fixed tag (%s manifest): the pushed digest, as skopeo sees it',
    async (type) => {
      const name = repo(`fixed-${type}`);
      const labels = {
        'org.opencontainers.image.source': 'https://git.example.com/team/app',
        'org.opencontainers.image.revision': '3f2a1c9',
        'com.example.private': 'not for reports',
      };
      const pushed = await pushImage({
        registry: env().url,
        repository: name,
        tag: '1.0.0',
        labels,
        mediaType: type,
      });
      const src = source(`${env().host}/${name}`, { policy: { type: 'fixed', tag: '1.0.0' } });

      const result = await pollRegistry(await clientFor(src), src, {});

      expect(result).toMatchObject({ source: 'app', changed: true, tag: '1.0.0', digest: pushed.digest });
      expect(result.revision).toBe(pushed.digest);
      expect(result.artifacts).toEqual([
        {
          type: 'docker/image',
          source: 'app',
          reference: `${env().host}/${name}`,
          name: '1.0.0',
          version: pushed.digest,
          provenance: {
            'org.opencontainers.image.source': 'https://git.example.com/team/app',
            'org.opencontainers.image.revision': '3f2a1c9',
          },
        },
      ]);
      const skopeo = await runTool('skopeo', [
        'inspect',
        '--tls-verify=false',
        `docker://${env().host}/${name}:1.0.0`,
      ]);
      expect(skopeo.stderr).toBe('');
      expect((JSON.parse(skopeo.stdout) as { Digest: string }).Digest).toBe(result.digest);
    },
  );

  it('sees a re-push under the same tag as a change, and an unchanged tag as none', async () => {
    const name = repo('repush');
    const first = await pushImage({ registry: env().url, repository: name, tag: 'stable', content: 'one\n' });
    const src = source(`${env().host}/${name}`, { policy: { type: 'fixed', tag: 'stable' } });
    const client = await clientFor(src);

    const steady = await pollRegistry(client, src, { lastDigest: first.digest, lastTag: 'stable' });
    expect(steady).toMatchObject({ changed: false, digest: first.digest });
    expect(steady.artifacts[0]?.provenance).toBeUndefined();

    const second = await pushImage({
      registry: env().url,
      repository: name,
      tag: 'stable',
      content: 'two\n',
    });
    expect(second.digest).not.toBe(first.digest);
    const moved = await pollRegistry(client, src, { lastDigest: first.digest, lastTag: 'stable' });
    expect(moved).toMatchObject({ changed: true, digest: second.digest, revision: second.digest });
  });

  it('semver: picks the newest matching tag from the tag list', async () => {
    const name = repo('semver');
    const digests: Record<string, string> = {};
    for (const tag of ['1.0.0', 'v1.2.0', '1.10.0', '1.11.0-rc.1', '2.0.0', 'latest', 'sha256-abc.sig']) {
      digests[tag] = (await pushImage({ registry: env().url, repository: name, tag })).digest;
    }
    const proxy = await countingProxy(env().url);
    const src = source(`${proxy.host}/${name}`, { policy: { type: 'semver', range: '^1.0.0' } });
    const client = await clientFor(src);

    const result = await pollRegistry(client, src, {});

    expect(result).toMatchObject({ changed: true, tag: '1.10.0', digest: digests['1.10.0'] });
    expect((await client.tags(name)).sort()).toEqual(Object.keys(digests).sort());
    // Only tag policies list: one tag list per listing, then the chosen tag's HEAD.
    expect(proxy.requests.slice(0, 2)).toEqual([
      `GET /v2/${name}/tags/list`,
      `HEAD /v2/${name}/manifests/1.10.0`,
    ]);

    const prereleases = source(`${env().host}/${name}`, {
      policy: { type: 'semver', range: '^1.0.0', prereleases: true },
    });
    expect((await pollRegistry(await clientFor(prereleases), prereleases, {})).tag).toBe('1.11.0-rc.1');
  });

  it('bounds the tag list and says so', async () => {
    const name = repo('semver');
    const src = source(`${env().host}/${name}`, { policy: { type: 'semver', range: '*' } });
    const error = await failure(pollRegistry(await clientFor(src, { maxTags: 3 }), src, {}));
    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toContain(`${env().host}/${name} has more than 3 tags`);
  });

  it('a steady-state poll of a fixed tag makes only a HEAD request, counted at the server', async () => {
    const name = repo('steady');
    const pushed = await pushImage({ registry: env().url, repository: name, tag: 'prod' });
    const proxy = await countingProxy(env().url);
    const src = source(`${proxy.host}/${name}`, { policy: { type: 'fixed', tag: 'prod' } });
    const client = await clientFor(src);

    const first = await pollRegistry(client, src, {});
    expect(first.changed).toBe(true);
    // The first sight of a digest reads its labels: manifest and config blob, by digest.
    expect(proxy.requests).toEqual([
      `HEAD /v2/${name}/manifests/prod`,
      `GET /v2/${name}/manifests/${pushed.digest}`,
      expect.stringMatching(new RegExp(`^GET /v2/${name}/blobs/sha256:`)),
    ]);

    proxy.requests.length = 0;
    for (let i = 0; i < 3; i++) {
      const again = await pollRegistry(client, src, { lastDigest: first.digest, lastTag: first.tag });
      expect(again.changed).toBe(false);
    }
    expect(proxy.requests).toEqual(Array(3).fill(`HEAD /v2/${name}/manifests/prod`));
  });

  it('tells a missing tag from a missing repository', async () => {
    const name = repo('steady');
    const missingTag = source(`${env().host}/${name}`, { policy: { type: 'fixed', tag: 'nope' } });
    const tagError = await failure(pollRegistry(await clientFor(missingTag), missingTag, {}));
    expect(tagError).toBeInstanceOf(StalledError);
    expect(tagError.message).toBe(`registry source app: tag nope not found in ${env().host}/${name}`);

    const missingRepo = source(`${env().host}/${repo('never-pushed')}`);
    const repoError = await failure(pollRegistry(await clientFor(missingRepo), missingRepo, {}));
    expect(repoError.message).toBe(
      `registry source app: repository ${env().host}/${repo('never-pushed')} not found`,
    );
    expect(classify(repoError)).toEqual({ action: 'stop' });
  });

  it('a registry that is down is a transient error', async () => {
    const [port] = await freePorts(1);
    const src = source(`127.0.0.1:${port}/app`);
    const error = await failure(pollRegistry(await clientFor(src), src, {}));
    expect(error.message).toMatch(/ECONNREFUSED/);
    expect(classify(error)).toEqual({ action: 'back-off' });
  });
});

describe('registry source against the htpasswd registry (basic auth)', () => {
  const env = () => testbed().authRegistry;
  const name = repo('private');
  let pushed = '';
  let dir = '';
  beforeAll(async () => {
    const auth = { username: env().username, password: env().password };
    pushed = (await pushImage({ registry: env().url, repository: name, tag: '1.0.0', auth })).digest;
    dir = await mkdtemp(join(tmpdir(), 'mooring-registry-auth-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    process.env.MOORING_TEST_REGISTRY_USER = env().username;
    process.env.MOORING_TEST_REGISTRY_PASSWORD = env().password;
    process.env.MOORING_TEST_REGISTRY_WRONG = 'not-the-password';
    cleanups.push(() => {
      delete process.env.MOORING_TEST_REGISTRY_USER;
      delete process.env.MOORING_TEST_REGISTRY_PASSWORD;
      delete process.env.MOORING_TEST_REGISTRY_WRONG;
    });
  });

  it('username and password from secrets', async () => {
    const src = source(`${env().host}/${name}`, {
      policy: { type: 'fixed', tag: '1.0.0' },
      credentials: {
        username: { env: 'MOORING_TEST_REGISTRY_USER' },
        password: { env: 'MOORING_TEST_REGISTRY_PASSWORD' },
      },
    });
    const client = await clientFor(src);
    expect((await pollRegistry(client, src, {})).digest).toBe(pushed);
    // After the first challenge, credentials go along at once: a steady poll is one HEAD, no 401 first.
    const before = client.stats;
    await pollRegistry(client, src, { lastDigest: pushed, lastTag: '1.0.0' });
    expect(client.stats).toEqual({ ...before, head: before.head + 1 });
  });

  it.each([
    [
      '"auth" (base64 user:password)',
      (u: string, p: string) => ({ auth: Buffer.from(`${u}:${p}`).toString('base64') }),
    ],
    ['"username" and "password"', (u: string, p: string) => ({ username: u, password: p })],
  ])('a docker config.json file with %s', async (label, entry) => {
    const file = join(dir, `config-${label.length}.json`);
    // Keyed as `docker login` writes it for a non-Hub registry; the other registry's entry is not used.
    const config = {
      auths: {
        'other.example.com': entry('x', 'y'),
        [`http://${env().host}`]: entry(env().username, env().password),
      },
    };
    await writeFile(file, `${JSON.stringify(config)}\n`, { mode: 0o600 });
    const src = source(`${env().host}/${name}`, {
      policy: { type: 'fixed', tag: '1.0.0' },
      credentials: { dockerConfigJson: { file } },
    });
    expect((await pollRegistry(await clientFor(src), src, {})).digest).toBe(pushed);
  });

  it('a wrong password is an authentication failure that never shows the password', async () => {
    const src = source(`${env().host}/${name}`, {
      policy: { type: 'fixed', tag: '1.0.0' },
      credentials: {
        username: { env: 'MOORING_TEST_REGISTRY_USER' },
        password: { env: 'MOORING_TEST_REGISTRY_WRONG' },
      },
    });
    const error = await failure(pollRegistry(await clientFor(src), src, {}));
    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toMatch(new RegExp(`authentication failed for ${env().host}`));
    expect(error.message).not.toContain('not-the-password');
    expect(error.message).not.toMatch(/not found/);
  });

  it('no credentials at all is an authentication failure too', async () => {
    const src = source(`${env().host}/${name}`, { policy: { type: 'fixed', tag: '1.0.0' } });
    const error = await failure(pollRegistry(await clientFor(src), src, {}));
    expect(error.message).toMatch(
      /authentication failed for .*: the registry requires credentials; none are configured/,
    );
  });

  it('with good credentials, an unknown tag is "not found", not an auth problem', async () => {
    const src = source(`${env().host}/${name}`, {
      policy: { type: 'fixed', tag: '9.9.9' },
      credentials: {
        username: { env: 'MOORING_TEST_REGISTRY_USER' },
        password: { env: 'MOORING_TEST_REGISTRY_PASSWORD' },
      },
    });
    const error = await failure(pollRegistry(await clientFor(src), src, {}));
    expect(error.message).toBe(`registry source app: tag 9.9.9 not found in ${env().host}/${name}`);
  });
});

interface TokenIssuer {
  realm: string;
  service: string;
  issuer: string;
  certFile: string;
  username: string;
  password: string;
  /** `scope` query values of every token request, in order. */
  requests: string[];
  /** Sign with a key the registry does not trust (the x5c still names the trusted certificate). */
  forge: boolean;
}

const base64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

/**
 * A token service as the distribution spec describes it: basic credentials in, an RS256 JWT out, whose x5c
 * header carries the certificate the registry trusts (its rootcertbundle). Grants what the scope asks.
 */
async function startTokenIssuer(dir: string): Promise<TokenIssuer> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyFile = join(dir, 'issuer.key');
  const certFile = join(dir, 'issuer.crt');
  await writeFile(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  const openssl = await runTool('openssl', [
    'req',
    '-x509',
    '-new',
    '-key',
    keyFile,
    '-out',
    certFile,
    '-days',
    '1',
    '-subj',
    '/CN=mooring-test-token-issuer',
  ]);
  if (openssl.code !== 0) throw new Error(`openssl: ${openssl.stderr}`);
  const certDer = new X509Certificate(await readFile(certFile)).raw.toString('base64');
  const issuer: TokenIssuer = {
    realm: '',
    service: 'mooring-test-registry',
    issuer: 'mooring-test-issuer',
    certFile,
    username: 'robot',
    password: randomBytes(8).toString('hex'),
    requests: [],
    forge: false,
  };
  const { privateKey: untrusted } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const expected = `Basic ${Buffer.from(`${issuer.username}:${issuer.password}`).toString('base64')}`;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const scopes = url.searchParams.getAll('scope');
    issuer.requests.push(scopes.join(' '));
    if (url.pathname !== '/token' || url.searchParams.get('service') !== issuer.service) {
      res.writeHead(400).end();
      return;
    }
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"details":"bad credentials"}');
      return;
    }
    const now = Math.floor(Date.now() / 1000);
    const access = scopes.map((scope) => {
      const [type, name, actions] = scope.split(':');
      return { type, name, actions: (actions ?? '').split(',') };
    });
    const header = base64url(JSON.stringify({ typ: 'JWT', alg: 'RS256', x5c: [certDer] }));
    const claims = base64url(
      JSON.stringify({
        iss: issuer.issuer,
        sub: issuer.username,
        aud: issuer.service,
        exp: now + 300,
        nbf: now - 10,
        iat: now,
        jti: randomUUID(),
        access,
      }),
    );
    const signature = base64url(
      sign('sha256', Buffer.from(`${header}.${claims}`), issuer.forge ? untrusted : privateKey),
    );
    const token = `${header}.${claims}.${signature}`;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ token, expires_in: 300, issued_at: new Date(now * 1000).toISOString() }));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  issuer.realm = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  cleanups.push(() => new Promise<void>((ok) => server.close(() => ok())));
  return issuer;
}

/** A distribution registry process of this test, stopped (by its pid) after the file. */
async function startRegistry(dir: string, name: string, options: Parameters<typeof registryConfigYaml>[0]) {
  const configFile = join(dir, `${name}.yml`);
  await writeFile(configFile, registryConfigYaml(options));
  const { command, args } = registryCommand(configFile);
  const log = createWriteStream(join(dir, `${name}.log`));
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  cleanups.push(
    () =>
      new Promise<void>((ok) => {
        if (child.exitCode !== null) return ok();
        child.once('exit', () => ok());
        child.kill('SIGTERM');
      }),
  );
  const url = `http://127.0.0.1:${options.port}`;
  await waitForRegistry(url, 20_000);
  return { url, host: `127.0.0.1:${options.port}` };
}

describe('registry source against a token-auth registry (Bearer flow)', () => {
  let issuer: TokenIssuer;
  let open: { url: string; host: string };
  let guarded: { url: string; host: string };
  const name = repo('tokened');
  let pushed = '';

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-token-registry-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    issuer = await startTokenIssuer(dir);
    const [openPort, guardedPort] = (await freePorts(2)) as [number, number];
    // Two registries on one storage folder: an open one to push to (pushImage speaks basic auth only) and the
    // token-auth one under test, which sees the same repositories.
    const dataDir = join(dir, 'data');
    await mkdir(dataDir);
    open = await startRegistry(dir, 'open', { dataDir, port: openPort });
    guarded = await startRegistry(dir, 'guarded', {
      dataDir,
      port: guardedPort,
      token: {
        realm: issuer.realm,
        service: issuer.service,
        issuer: issuer.issuer,
        rootCertBundle: issuer.certFile,
      },
    });
    pushed = (await pushImage({ registry: open.url, repository: name, tag: '1.0.0' })).digest;
    await pushImage({ registry: open.url, repository: repo('tokened-other'), tag: '1.0.0' });
    process.env.MOORING_TEST_TOKEN_USER = issuer.username;
    process.env.MOORING_TEST_TOKEN_PASSWORD = issuer.password;
    process.env.MOORING_TEST_TOKEN_WRONG = 'wrong-token-password';
    cleanups.push(() => {
      delete process.env.MOORING_TEST_TOKEN_USER;
      delete process.env.MOORING_TEST_TOKEN_PASSWORD;
      delete process.env.MOORING_TEST_TOKEN_WRONG;
    });
  });

  const credentials = (password = 'MOORING_TEST_TOKEN_PASSWORD') => ({
    username: { env: 'MOORING_TEST_TOKEN_USER' },
    password: { env: password },
  });

  it('the registry really demands a token', async () => {
    const answer = await fetch(`${guarded.url}/v2/${name}/manifests/1.0.0`, { method: 'HEAD' });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toContain(`Bearer realm="${issuer.realm}"`);
  });

  it('follows the realm, then reuses the cached token', async () => {
    const src = source(`${guarded.host}/${name}`, {
      policy: { type: 'fixed', tag: '1.0.0' },
      credentials: credentials(),
    });
    const client = await clientFor(src);
    issuer.requests.length = 0;

    expect(await client.digest(name, '1.0.0')).toBe(pushed);
    expect(issuer.requests).toEqual([`repository:${name}:pull`]);
    expect(await client.digest(name, '1.0.0')).toBe(pushed);
    expect(issuer.requests).toHaveLength(1);
    // 401, retry with the token, then straight to the point with the cached one.
    expect(client.stats).toEqual({ head: 3, get: 0, token: 1 });

    // Another repository is another scope: its own token, fetched before asking (no second 401).
    expect(await client.digest(repo('tokened-other'), '1.0.0')).toMatch(/^sha256:/);
    expect(issuer.requests).toEqual([`repository:${name}:pull`, `repository:${repo('tokened-other')}:pull`]);
    expect(client.stats).toEqual({ head: 4, get: 0, token: 2 });
  });

  it('asks for a new token once the cached one has expired', async () => {
    let now = Date.now();
    const clock = { now: () => now, sleep: async () => undefined };
    const src = source(`${guarded.host}/${name}`, {
      policy: { type: 'fixed', tag: '1.0.0' },
      credentials: credentials(),
    });
    const client = await clientFor(src, { clock });
    await client.digest(name, '1.0.0');
    now += 301_000;
    await client.digest(name, '1.0.0');
    expect(client.stats.token).toBe(2);
  });

  it('a steady-state poll makes only HEAD requests at the registry, and none at the token service', async () => {
    const proxy = await countingProxy(guarded.url);
    const src = source(`${proxy.host}/${name}`, {
      policy: { type: 'fixed', tag: '1.0.0' },
      credentials: credentials(),
    });
    const client = await clientFor(src);
    const first = await pollRegistry(client, src, {});
    expect(first).toMatchObject({ changed: true, digest: pushed });

    proxy.requests.length = 0;
    issuer.requests.length = 0;
    for (let i = 0; i < 3; i++) {
      expect((await pollRegistry(client, src, { lastDigest: pushed, lastTag: '1.0.0' })).changed).toBe(false);
    }
    expect(proxy.requests).toEqual(Array(3).fill(`HEAD /v2/${name}/manifests/1.0.0`));
    expect(issuer.requests).toEqual([]);
  });

  it('tag policies list tags with the same token', async () => {
    const src = source(`${guarded.host}/${name}`, {
      policy: { type: 'semver', range: '*' },
      credentials: credentials(),
    });
    const client = await clientFor(src);
    expect(await pollRegistry(client, src, {})).toMatchObject({ tag: '1.0.0', digest: pushed });
    expect(client.stats.token).toBe(1);
  });

  it('credentials the token service refuses are an authentication failure', async () => {
    const src = source(`${guarded.host}/${name}`, {
      policy: { type: 'fixed', tag: '1.0.0' },
      credentials: credentials('MOORING_TEST_TOKEN_WRONG'),
    });
    const error = await failure(pollRegistry(await clientFor(src), src, {}));
    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toMatch(
      new RegExp(`authentication failed for ${guarded.host}: token service .* refused the credentials`),
    );
    expect(error.message).not.toContain('wrong-token-password');
  });

  it('a token the registry does not accept is an authentication failure after one retry', async () => {
    const src = source(`${guarded.host}/${name}`, {
      policy: { type: 'fixed', tag: '1.0.0' },
      credentials: credentials(),
    });
    const client = await clientFor(src);
    issuer.forge = true;
    try {
      const error = await failure(pollRegistry(client, src, {}));
      expect(error.message).toBe(
        `registry source app: authentication failed for ${guarded.host}: the registry refused the credentials for ${name}`,
      );
    } finally {
      issuer.forge = false;
    }
    // 401 without a token, 401 with the forged one; then a good token works on the same client.
    expect(client.stats).toEqual({ head: 2, get: 0, token: 1 });
    expect((await pollRegistry(client, src, {})).digest).toBe(pushed);
  });

  it('with a token, an unknown tag is "not found"', async () => {
    const src = source(`${guarded.host}/${name}`, {
      policy: { type: 'fixed', tag: 'nope' },
      credentials: credentials(),
    });
    const error = await failure(pollRegistry(await clientFor(src), src, {}));
    expect(error.message).toBe(`registry source app: tag nope not found in ${guarded.host}/${name}`);
  });
});
