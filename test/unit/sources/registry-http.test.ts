// The registry client's transport against local HTTP servers: a body that keeps coming is not cut off by the
// timeout (a timeout of silence, as a socket's), a server that stops answering is given up, a body past its bound
// is refused, redirects leave the origin only without credentials, and bytes are taken as sent, never decoded.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { StalledError, TransientError } from '../../../src/errors.ts';
import { HttpTransport } from '../../../src/sources/registry/http.ts';

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.closeAllConnections();
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const transport = (timeoutMs: number, redirects?: 'anywhere-without-credentials') =>
  new HttpTransport({ allowHttp: true, timeoutMs, ...(redirects ? { redirects } : {}) });

describe('the registry transport', () => {
  it('takes a body that keeps coming for longer than the timeout, and gives a silent server up', async () => {
    const base = await serve((req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      if (req.url === '/hang') {
        res.write('x');
        return;
      }
      let sent = 0;
      const tick = setInterval(() => {
        res.write('y'.repeat(10));
        if (++sent === 8) {
          clearInterval(tick);
          res.end();
        }
      }, 60);
    });
    const slow = await transport(300).send({
      method: 'GET',
      url: new URL(`${base}/slow`),
      headers: {},
      maxBytes: 1000,
    });
    expect(slow.body.toString()).toBe('y'.repeat(80));
    const hung = transport(300).send({
      method: 'GET',
      url: new URL(`${base}/hang`),
      headers: {},
      maxBytes: 1000,
    });
    await expect(hung).rejects.toThrow(TransientError);
    await expect(hung).rejects.toThrow(/no answer in 300 ms/);
  });

  it('gives up a body that trickles past the whole deadline, though never silent for the timeout', async () => {
    let ticks: NodeJS.Timeout | undefined;
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      // A byte every 50 ms, for ten seconds: never silent for the 100 ms timeout.
      let sent = 0;
      ticks = setInterval(() => {
        res.write('z');
        if (++sent === 200) {
          clearInterval(ticks);
          res.end();
        }
      }, 50);
    });
    const started = Date.now();
    const trickle = transport(100).send({
      method: 'GET',
      url: new URL(`${base}/trickle`),
      headers: {},
      maxBytes: 1000,
    });
    // 4 × 100 ms, and 1,000 bytes at 256 KiB/s.
    await expect(trickle).rejects.toThrow(TransientError);
    await expect(trickle).rejects.toThrow(
      `GET ${base}/trickle: not answered whole within 404 ms (the answer came slower than 256 KiB/s)`,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    clearInterval(ticks);
  });

  it('refuses a body past its bound, declared or not', async () => {
    const base = await serve((req, res) => {
      if (req.url === '/declared') res.writeHead(200, { 'content-length': '5000' }).end('z'.repeat(5000));
      else {
        res.writeHead(200);
        res.end('z'.repeat(5000));
      }
    });
    for (const path of ['/declared', '/chunked'])
      await expect(
        transport(2000).send({ method: 'GET', url: new URL(`${base}${path}`), headers: {}, maxBytes: 100 }),
      ).rejects.toThrow(StalledError);
  });

  it('leaves the origin only without credentials, and only when made to', async () => {
    const seen: (string | undefined)[] = [];
    const storage = await serve((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200).end('blob');
    });
    const registry = await serve((_req, res) => res.writeHead(307, { location: `${storage}/signed` }).end());
    const request = {
      method: 'GET' as const,
      url: new URL(`${registry}/v2/x/blobs/sha256:0`),
      headers: { Authorization: 'Bearer secret' },
      maxBytes: 100,
    };
    await expect(transport(2000).send(request)).rejects.toThrow(/outside its origin/);
    const answer = await transport(2000, 'anywhere-without-credentials').send(request);
    expect(answer.body.toString()).toBe('blob');
    expect(seen).toEqual([undefined]);
  });

  it('asks for the bytes as they are and never decodes them', async () => {
    const packed = gzipSync(Buffer.from('a chart'));
    let asked: string | undefined;
    const base = await serve((req, res) => {
      asked = req.headers['accept-encoding'];
      res.writeHead(200, { 'content-encoding': 'gzip' }).end(packed);
    });
    const answer = await transport(2000).send({
      method: 'GET',
      url: new URL(`${base}/chart.tgz`),
      headers: {},
      maxBytes: 1000,
    });
    expect(asked).toBe('identity');
    expect(answer.body.equals(packed)).toBe(true);
  });
});
