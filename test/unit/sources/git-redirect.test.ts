// The Git transport follows a redirect only within its origin: every request carries the Git credentials, and the
// refs that answer are taken as the repository's.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { boundedHttp } from '../../../src/sources/git/transport.ts';

const seen: { server: string; req: IncomingMessage }[] = [];
let git: Server;
let other: Server;
let gitUrl = '';
let otherUrl = '';

async function listen(name: string, handle: (req: IncomingMessage) => [number, Record<string, string>]) {
  const server = createServer((req, res) => {
    seen.push({ server: name, req });
    const [status, headers] = handle(req);
    res.writeHead(status, headers).end(status === 200 ? 'refs' : '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

beforeAll(async () => {
  ({ server: other, url: otherUrl } = await listen('other', () => [200, {}]));
  ({ server: git, url: gitUrl } = await listen('git', (req) => {
    if (req.url?.startsWith('/moved/')) return [301, { location: req.url.replace('/moved/', '/repo/') }];
    if (req.url?.startsWith('/away/')) return [302, { location: `${otherUrl}/repo/info/refs?token=secret` }];
    return [200, {}];
  }));
});
afterAll(async () => {
  for (const server of [git, other]) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

describe('the Git transport and redirects', () => {
  const http = () => boundedHttp({ signal: new AbortController().signal, maxBytes: 1024 * 1024 });
  const headers = { authorization: 'Basic Z2l0OnNlY3JldA==' };

  it('follows one within the origin, with the credentials', async () => {
    const response = await http().request({
      url: `${gitUrl}/moved/info/refs?service=git-upload-pack`,
      headers,
    });
    expect(response.statusCode).toBe(200);
    expect(seen.map((s) => [s.server, s.req.url, s.req.headers.authorization]).slice(-2)).toEqual([
      ['git', '/moved/info/refs?service=git-upload-pack', headers.authorization],
      ['git', '/repo/info/refs?service=git-upload-pack', headers.authorization],
    ]);
  });

  it('refuses one to another origin, naming both, and asks the other host nothing', async () => {
    const before = seen.length;
    const error = await http()
      .request({ url: `${gitUrl}/away/info/refs?service=git-upload-pack`, headers })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect((error as Error).message).toBe(
      `GET ${gitUrl}/away/info/refs was redirected to ${otherUrl}/repo/info/refs, outside its origin ${gitUrl}; redirects are followed only within the origin`,
    );
    expect(seen.slice(before).map((s) => s.server)).toEqual(['git']);
  });
});
