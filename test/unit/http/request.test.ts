// The one outbound request (src/http/request.ts) against a local HTTP server: bounded in time and in the answer
// read, and every kind of answer put in the error taxonomy.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { StalledError, TransientError, WaitingError } from '../../../src/errors.ts';
import { httpFailure, httpVerdict, sendBounded } from '../../../src/http/request.ts';
import { useBodyServer } from './body-server.ts';

let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
const received: { method: string; body: string; headers: IncomingMessage['headers'] }[] = [];

const local = useBodyServer((req, body, res) => {
  received.push({ method: req.method ?? '', body, headers: req.headers });
  handler(req, res);
});

const what = 'POST receiver';

describe('sendBounded', () => {
  it('sends the method, headers and body as given, and returns the answer', async () => {
    handler = (_req, res) => res.writeHead(201, { 'x-a': '1' }).end('{"ok":true}');
    const res = await sendBounded({
      method: 'POST',
      url: `${local.base}/hook?key=secret`,
      headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
      body: '{"a":1}',
      timeoutMs: 5000,
      what,
    });
    expect(res).toMatchObject({ status: 201, ok: true, body: '{"ok":true}', truncated: false });
    expect(res.headers.get('x-a')).toBe('1');
    const last = received.at(-1);
    expect(last?.method).toBe('POST');
    expect(last?.body).toBe('{"a":1}');
    expect(last?.headers.authorization).toBe('Bearer t');
  });

  it('reads no more of an answer than its bound', async () => {
    handler = (_req, res) => {
      res.writeHead(500);
      // Far more than the bound, written in pieces; the client stops reading.
      for (let i = 0; i < 64; i++) res.write('x'.repeat(16 * 1024));
      res.end();
    };
    const res = await sendBounded({
      method: 'POST',
      url: local.base,
      timeoutMs: 5000,
      maxBodyBytes: 1000,
      what,
    });
    expect(res.body.length).toBe(1000);
    expect(res.truncated).toBe(true);
  });

  it('gives up an answer that does not come in time, as a transient failure', async () => {
    handler = () => undefined; // never answers
    const error = await sendBounded({ method: 'POST', url: local.base, timeoutMs: 100, what }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(TransientError);
    expect(error.message).toBe('POST receiver: no answer in 100 ms');
  });

  it('says why a connection failed, without the URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await sendBounded({
      method: 'POST',
      url: `http://127.0.0.1:${port}/hook/SECRET`,
      timeoutMs: 5000,
      what,
    }).catch((e) => e);
    expect(error).toBeInstanceOf(TransientError);
    expect(error.message).toBe('POST receiver: ECONNREFUSED');
    expect(String(error.cause ?? '')).not.toContain('SECRET');
  });

  it('does not follow a redirect it was told to refuse', async () => {
    handler = (_req, res) => res.writeHead(302, { location: 'http://example.invalid/' }).end();
    const manual = await sendBounded({
      method: 'POST',
      url: local.base,
      timeoutMs: 5000,
      redirect: 'manual',
      what,
    });
    expect(manual.status).toBe(302);
    await expect(
      sendBounded({ method: 'POST', url: local.base, timeoutMs: 5000, redirect: 'error', what }),
    ).rejects.toBeInstanceOf(TransientError);
  });
});

describe('httpVerdict and httpFailure', () => {
  const now = Date.parse('2026-11-22T00:00:00Z');
  const h = (values: Record<string, string>) => (name: string) => values[name];
  it.each([
    [200, {}, { kind: 'ok' }],
    [204, {}, { kind: 'ok' }],
    [429, { 'retry-after': '7' }, { kind: 'waiting', delayMs: 7000 }],
    [429, { 'retry-after': 'Sun, 22 Nov 2026 00:00:30 GMT' }, { kind: 'waiting', delayMs: 30_000 }],
    [429, { 'x-ratelimit-reset': String(now / 1000 + 20) }, { kind: 'waiting', delayMs: 20_000 }],
    [429, {}, { kind: 'transient' }],
    [429, { 'retry-after': 'garbage' }, { kind: 'transient' }],
    [503, { 'retry-after': '3' }, { kind: 'waiting', delayMs: 3000 }],
    [503, { 'x-ratelimit-reset': '20' }, { kind: 'transient' }],
    [500, {}, { kind: 'transient' }],
    [502, {}, { kind: 'transient' }],
    [408, {}, { kind: 'transient' }],
    [400, { 'retry-after': '3' }, { kind: 'stalled' }],
    [401, {}, { kind: 'stalled' }],
    [404, {}, { kind: 'stalled' }],
    [302, {}, { kind: 'stalled' }],
  ])('HTTP %i %j is %j', (status, headers, verdict) => {
    expect(httpVerdict(status, h(headers), { now })).toEqual(verdict);
  });

  it('takes the API’s own rate-limit rule (GitHub’s 403) and a cap', () => {
    const reset = h({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 12) });
    expect(httpVerdict(403, reset, { now })).toEqual({ kind: 'stalled' });
    expect(httpVerdict(403, reset, { now, rateLimited: true })).toEqual({ kind: 'waiting', delayMs: 12_000 });
    expect(httpVerdict(429, h({ 'retry-after': '600' }), { now, capMs: 1000 })).toEqual({
      kind: 'waiting',
      delayMs: 1000,
    });
  });

  it('makes mooring errors of the verdicts', () => {
    const headers = new Headers({ 'retry-after': '9' });
    const waiting = httpFailure({ status: 429, headers }, 'limited', { now });
    expect(waiting).toBeInstanceOf(WaitingError);
    expect((waiting as WaitingError).retryAfterMs).toBe(9000);
    expect(httpFailure({ status: 500, headers: new Headers() }, 'boom', { now })).toBeInstanceOf(
      TransientError,
    );
    expect(httpFailure({ status: 404, headers: new Headers() }, 'gone', { now })).toBeInstanceOf(
      StalledError,
    );
    expect(httpFailure({ status: 200, headers: new Headers() }, 'fine', { now })).toBeUndefined();
  });
});

describe('sendBounded and redirects', () => {
  it('follows a redirect within the origin, keeping the request, and refuses one that leaves it, naming both', async () => {
    const other = createServer((req, res) => {
      received.push({ method: req.method ?? '', body: '', headers: req.headers });
      res.end('the other host answers');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const elsewhere = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      handler = (req, res) => {
        if (req.url === '/moved') res.writeHead(307, { location: '/here' }).end();
        else if (req.url === '/away') res.writeHead(302, { location: `${elsewhere}/there?sig=secret` }).end();
        else res.writeHead(200).end(`at ${req.url}`);
      };
      const request = {
        method: 'POST' as const,
        headers: { 'private-token': 'glpat-secret' },
        body: 'x',
        timeoutMs: 5000,
        what,
      };
      const before = received.length;
      const moved = await sendBounded({ ...request, url: `${local.base}/moved` });
      expect(moved).toMatchObject({ status: 200, body: 'at /here' });
      expect(received.slice(before).map((r) => [r.method, r.body, r.headers['private-token']])).toEqual([
        ['POST', 'x', 'glpat-secret'],
        ['POST', 'x', 'glpat-secret'],
      ]);
      const count = received.length;
      const error = await sendBounded({ ...request, url: `${local.base}/away` }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StalledError);
      expect((error as Error).message).toBe(
        `POST receiver: redirected to ${elsewhere}/there, outside its origin ${local.base}; redirects are followed only within the origin`,
      );
      // The other host got nothing: not the token, not the body.
      expect(received.length).toBe(count + 1);
    } finally {
      other.closeAllConnections();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });
});
