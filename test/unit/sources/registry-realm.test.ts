// Where a registry's credentials go in the Bearer token flow: to the realm its challenge names (as Docker and
// containerd do), but never over plain http to another host, and never to a realm that holds credentials itself.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { Authenticator } from '../../../src/sources/registry/authenticator.ts';
import { type HttpResponse, HttpTransport } from '../../../src/sources/registry/http.ts';

function challenge(realm: string): HttpResponse {
  return {
    status: 401,
    headers: { 'www-authenticate': `Bearer realm="${realm}",service="registry"` },
    body: Buffer.alloc(0),
    url: new URL('http://127.0.0.1:5000/v2/app/manifests/1'),
  };
}

async function withTokenService(
  run: (port: number, seen: IncomingMessage[]) => Promise<void>,
): Promise<void> {
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    seen.push(req);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"token":"t"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await run((server.address() as AddressInfo).port, seen);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const auth = (http: HttpTransport, origin = 'http://127.0.0.1:5000') =>
  new Authenticator({
    host: '127.0.0.1:5000',
    origin,
    credentials: { username: 'u', password: 'registry-secret' },
    http,
    clock: { now: () => Date.now(), sleep: async () => undefined },
    onTokenRequest: () => undefined,
  });

describe('the token realm of a registry', () => {
  it('gets the credentials over plain http only on the registry host', async () => {
    const http = new HttpTransport({ allowHttp: true, timeoutMs: 2000 });
    await withTokenService(async (port, seen) => {
      const same = await auth(http).answer(
        challenge(`http://127.0.0.1:${port}/token`),
        'repository:app:pull',
        undefined,
      );
      expect(same).toBe('Bearer t');
      expect(seen.map((r) => r.headers.authorization)).toEqual([expect.stringMatching(/^Basic /)]);
      const other = await auth(http)
        .answer(challenge(`http://localhost:${port}/token?x=1`), 'repository:app:pull', undefined)
        .catch((e: unknown) => e);
      expect(other).toBeInstanceOf(StalledError);
      expect((other as Error).message).toBe(
        `authentication failed for 127.0.0.1:5000: its token realm http://localhost:${port}/token is plain http on another host than the registry; credentials are not sent there`,
      );
      const withUser = await auth(http)
        .answer(challenge(`http://me:pw@127.0.0.1:${port}/token`), 'repository:app:pull', undefined)
        .catch((e: unknown) => e);
      expect((withUser as Error).message).toMatch(
        /token realm http:\/\/127\.0\.0\.1:\d+\/token holds credentials/,
      );
      expect(seen).toHaveLength(1);
    });
  });
});
