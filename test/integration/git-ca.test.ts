// A Git server on a private CA: the test bed's Git server behind a TLS proxy of this test, whose certificate is
// signed by a CA made here with openssl. With the CA in caFile the source resolves, fetches and reads manifests;
// without it the certificate is refused as something the user must fix, naming caFile.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitSource } from '../../src/config/schema.ts';
import { StalledError } from '../../src/errors.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { makeCertificates } from '../testbed/tls.ts';
import { bareRepo, testbed } from './helpers.ts';

describe('a Git source on a private CA (caFile)', () => {
  let dir = '';
  let proxy: https.Server | undefined;
  let url = '';
  let caFile = '';
  let commit = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mooring-git-ca-'));
    const pems = await makeCertificates(dir);
    caFile = pems.ca;
    const upstream = new URL(testbed().git.url);
    const server = https.createServer({ key: await readFile(pems.key), cert: await readFile(pems.cert) });
    server.on('request', (req, res) => {
      const forward = http.request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      req.pipe(forward);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = server;
    const name = `git-ca-${Date.now().toString(36)}`;
    const bare = await bareRepo(name);
    commit = await bare.commit({
      'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: over-tls}\ndata: {a: b}\n',
    });
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/${name}.git`;
    process.env.MOORING_TEST_CA_USER = testbed().git.username;
    process.env.MOORING_TEST_CA_PASSWORD = testbed().git.password;
  });

  afterAll(async () => {
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  function repository(extra: { caFile?: string }): GitRepository {
    const source = gitSource.parse({
      name: 'app',
      url,
      credentials: {
        username: { env: 'MOORING_TEST_CA_USER' },
        password: { env: 'MOORING_TEST_CA_PASSWORD' },
      },
      ...extra,
    });
    return new GitRepository(source, { cacheDir: join(dir, `cache-${extra.caFile ? 'ca' : 'none'}`) });
  }

  it('resolves, fetches and reads manifests over TLS with the CA in caFile', async () => {
    const repo = repository({ caFile });
    const resolved = await repo.resolve();
    expect(resolved.commit).toBe(commit);
    await repo.fetch(resolved);
    const files = await repo.files(commit, ['app'], []);
    expect(files.map((f) => [f.path, f.text])).toEqual([
      ['app/cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: over-tls}\ndata: {a: b}\n'],
    ]);
  });

  it('refuses the certificate without caFile, as a problem for the user naming caFile', async () => {
    const failure = await repository({})
      .resolve()
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(StalledError);
    expect(String((failure as Error).message)).toMatch(
      /: cannot verify the server's TLS certificate \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\); give its CA in caFile$/,
    );
  });
});
