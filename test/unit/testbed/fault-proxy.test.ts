// The fault proxy against a tiny origin on loopback (a byte source, not a stand-in for any real server): each
// fault is seen by a real client (fetch) as it would see it from a failing server, and the proxy counts them.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../../testbed/fault-proxy.ts';

let origin: http.Server;
let originUrl: string;
const seen: { method: string; path: string; body: string }[] = [];
let proxy: FaultProxy;

beforeAll(async () => {
  origin = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', body });
      if (req.url === '/die') {
        // The origin dies in the middle of its answer.
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      const text = `origin ${req.method} ${req.url} ${body}`.padEnd(64 * 1024, '.');
      res.writeHead(200, { 'content-type': 'text/plain', 'x-origin': 'yes' });
      res.end(text);
    });
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => origin.close(() => r())));
afterEach(async () => {
  await proxy?.close();
  seen.length = 0;
});

async function get(path: string, init: RequestInit = {}) {
  const response = await fetch(`${proxy.url}${path}`, init);
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('fault proxy', () => {
  it('passes requests, bodies and answers through unchanged', async () => {
    proxy = await FaultProxy.start(originUrl);
    const answer = await get('/a/b?x=1', { method: 'POST', body: 'hello' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-origin')).toBe('yes');
    expect(answer.text.startsWith('origin POST /a/b?x=1 hello')).toBe(true);
    expect(answer.text.length).toBe(64 * 1024);
    expect(seen).toEqual([{ method: 'POST', path: '/a/b?x=1', body: 'hello' }]);
    expect(proxy.count('pass')).toBe(1);
  });

  it('answers a status for the next N requests, then passes again', async () => {
    proxy = await FaultProxy.start(originUrl);
    proxy.set({ kind: 'status', status: 503 }, { times: 2 });
    expect((await get('/1')).status).toBe(503);
    expect((await get('/2')).status).toBe(503);
    expect((await get('/3')).status).toBe(200);
    expect(seen.map((s) => s.path)).toEqual(['/3']);
    expect(proxy.count('status')).toBe(2);
    expect(proxy.count('pass')).toBe(1);
  });

  it('rate limits with Retry-After and RateLimit headers, only on matching paths', async () => {
    proxy = await FaultProxy.start(originUrl);
    proxy.set(
      {
        kind: 'rate-limit',
        retryAfterSeconds: 30,
        rateLimit: { limit: 100, remaining: 0, resetSeconds: 30 },
      },
      { match: (r) => r.path.startsWith('/v2/') },
    );
    const limited = await get('/v2/app/tags/list');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('30');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect((await get('/healthz')).status).toBe(200);
    expect(proxy.count('rate-limit', (r) => r.path.startsWith('/v2/'))).toBe(1);
    expect(proxy.count()).toBe(2);
  });

  it('resets the connection before the request reaches the origin', async () => {
    proxy = await FaultProxy.start(originUrl);
    proxy.set({ kind: 'reset', when: 'request' }, { times: 1 });
    await expect(get('/reset', { method: 'POST', body: 'x' })).rejects.toThrow();
    expect(seen).toEqual([]);
    expect((await get('/after')).status).toBe(200);
  });

  it('resets the connection in the middle of the answer', async () => {
    proxy = await FaultProxy.start(originUrl);
    proxy.set({ kind: 'reset', when: 'response' });
    // The headers arrive; the body is cut short, so reading it fails.
    await expect(get('/cut')).rejects.toThrow();
    expect(seen.map((s) => s.path)).toEqual(['/cut']);
    expect(proxy.count('reset')).toBe(1);
  });

  it('resets the connection after exactly N bytes of the answer', async () => {
    proxy = await FaultProxy.start(originUrl);
    proxy.set({ kind: 'reset', when: 'response', afterBytes: 10_000 });
    const got = await new Promise<{ bytes: number; error: boolean }>((resolve) => {
      let bytes = 0;
      http.get(`${proxy.url}/cut`, (res) => {
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('error', () => resolve({ bytes, error: true }));
        res.on('end', () => resolve({ bytes, error: false }));
      });
    });
    expect(got).toEqual({ bytes: 10_000, error: true });
    expect(proxy.count('reset')).toBe(1);
  });

  it('ends the answer properly after N bytes (truncate)', async () => {
    proxy = await FaultProxy.start(originUrl);
    proxy.set({ kind: 'truncate', afterBytes: 10_000 }, { times: 1 });
    const answer = await get('/short');
    expect(answer.status).toBe(200);
    expect(answer.text.length).toBe(10_000);
    expect(answer.text.startsWith('origin GET /short')).toBe(true);
    expect((await get('/whole')).text.length).toBe(64 * 1024);
    expect(proxy.count('truncate')).toBe(1);
  });

  it('cuts the client off when the origin dies in the middle of its answer', async () => {
    proxy = await FaultProxy.start(originUrl);
    await expect(get('/die')).rejects.toThrow();
  });

  it('hangs until the fault is lifted, then passes the held request on', async () => {
    proxy = await FaultProxy.start(originUrl);
    proxy.set({ kind: 'hang' });
    const pending = get('/held', { method: 'PUT', body: 'kept' });
    const raced = await Promise.race([
      pending.then(() => 'answered'),
      new Promise<string>((resolve) => {
        const check = setInterval(() => {
          if (proxy.hanging === 1) {
            clearInterval(check);
            resolve('hanging');
          }
        }, 10);
      }),
    ]);
    expect(raced).toBe('hanging');
    expect(seen).toEqual([]);
    proxy.pass();
    const answer = await pending;
    expect(answer.status).toBe(200);
    expect(seen).toEqual([{ method: 'PUT', path: '/held', body: 'kept' }]);
    expect(proxy.count('hang')).toBe(1);
  });

  it('a client that gives up on a hang sees its own timeout; close() ends every socket', async () => {
    proxy = await FaultProxy.start(originUrl);
    proxy.set({ kind: 'hang' });
    await expect(fetch(`${proxy.url}/slow`, { signal: AbortSignal.timeout(200) })).rejects.toThrow();
    const stuck = fetch(`${proxy.url}/stuck`);
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (proxy.hanging >= 1) {
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
    await proxy.close();
    await expect(stuck).rejects.toThrow();
    expect(seen).toEqual([]);
  });

  it('the first matching rule applies; add() puts one in front', async () => {
    proxy = await FaultProxy.start(originUrl);
    proxy.set({ kind: 'status', status: 500 });
    proxy.add({ kind: 'status', status: 502 }, { match: (r) => r.method === 'POST', times: 1 });
    expect((await get('/x', { method: 'POST', body: '' })).status).toBe(502);
    expect((await get('/x', { method: 'POST', body: '' })).status).toBe(500);
    expect((await get('/x')).status).toBe(500);
    expect(proxy.count('status')).toBe(3);
  });
});
