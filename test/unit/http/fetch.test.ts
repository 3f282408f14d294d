// The one outbound client (src/http/fetch.ts) against local servers: bytes as sent, redirects left to the caller,
// aborts and idle servers, a kept-alive connection the server dropped, a private CA, and a process it does not
// keep alive.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AnswerHeaders,
  exchange,
  type FetchAnswer,
  fetchFor,
  headerRecord,
  isTimeout,
} from '../../../src/http/fetch.ts';
import { makeCertificates } from '../../testbed/tls.ts';

let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];
let server: Server;
let base = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const fetch = fetchFor();

async function bytesOf(res: FetchAnswer): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  if (res.body) for await (const chunk of res.body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('fetchFor', () => {
  it('returns a body labelled gzip as the server sent it, having asked for identity', async () => {
    const packed = gzipSync(Buffer.from('the bytes a digest names'));
    handler = (_req, res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(packed);
    seen.length = 0;

    const res = await fetch(`${base}/blob`, { redirect: 'manual' });

    expect(Buffer.from(await bytesOf(res))).toEqual(packed);
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(seen[0]?.headers['accept-encoding']).toBe('identity');
  });

  it('sends the method, headers and a text or byte body with its length', async () => {
    handler = (_req, res) => res.writeHead(201, { 'x-a': '1' }).end('done');
    seen.length = 0;

    const text = await fetch(`${base}/hook`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer t' },
      body: '{"ä":1}',
      redirect: 'manual',
    });
    const bytes = await fetch(`${base}/hook`, {
      method: 'PUT',
      body: new Uint8Array([104, 105]),
      redirect: 'error',
    });

    expect([text.status, text.headers.get('x-a'), (await bytesOf(text)).toString()]).toEqual([
      201,
      '1',
      'done',
    ]);
    expect(bytes.status).toBe(201);
    expect(seen.map((r) => [r.method, r.body, r.headers['content-length']])).toEqual([
      ['POST', '{"ä":1}', '8'],
      ['PUT', 'hi', '2'],
    ]);
    expect(seen[0]?.headers).toMatchObject({ 'content-type': 'application/json', authorization: 'Bearer t' });
  });

  it('hands a redirect back under manual, fails it under error, and follows none on its own', async () => {
    handler = (_req, res) => res.writeHead(302, { location: 'https://elsewhere.example/x' }).end();
    seen.length = 0;

    const manual = await fetch(`${base}/r`, { redirect: 'manual' });
    const error = await fetch(`${base}/r`, { redirect: 'error' }).catch((e: unknown) => e);
    const follow = await fetch(`${base}/r`, { redirect: 'follow' }).catch((e: unknown) => e);
    const unsaid = await fetch(`${base}/r`, {}).catch((e: unknown) => e);

    expect([manual.status, manual.headers.get('location')]).toEqual([302, 'https://elsewhere.example/x']);
    expect(error).toBeInstanceOf(TypeError);
    expect(((error as Error).cause as Error).message).toBe('unexpected redirect');
    expect(follow).toBeInstanceOf(TypeError);
    expect(unsaid).toBeInstanceOf(TypeError);
    expect(seen).toHaveLength(2);
  });

  it('answers HEAD and 204 with no body', async () => {
    handler = (req, res) =>
      res.writeHead(req.method === 'HEAD' ? 200 : 204, { 'content-length': '12' }).end();

    const head = await fetch(`${base}/h`, { method: 'HEAD', redirect: 'manual' });
    const none = await fetch(`${base}/n`, { method: 'DELETE', redirect: 'manual' });

    expect([head.status, head.body, none.status, none.body]).toEqual([200, null, 204, null]);
  });

  it('refuses credentials in the URL and schemes other than http(s)', async () => {
    await expect(fetch('http://u:p@127.0.0.1:1/', { redirect: 'manual' })).rejects.toThrow(/credentials/);
    await expect(fetch('file:///etc/passwd', { redirect: 'manual' })).rejects.toThrow(TypeError);
  });

  it('puts a network failure in the cause, with its code', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    const error = await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(TypeError);
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
  });

  it('stops a request or the reading of its answer when the signal aborts, with its reason', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('first part');
      // and nothing more
    };
    const controller = new AbortController();
    const res = await fetch(`${base}/slow`, { redirect: 'manual', signal: controller.signal });
    const reader = res.body?.getReader();
    expect(new TextDecoder().decode((await reader?.read())?.value)).toBe('first part');
    const reason = new Error('deadline');
    controller.abort(reason);
    await expect(reader?.read()).rejects.toBe(reason);

    handler = () => undefined; // no answer at all
    const timeout = await fetch(`${base}/never`, {
      redirect: 'manual',
      signal: AbortSignal.timeout(150),
    }).catch((e: unknown) => e);
    expect((timeout as Error).name).toBe('TimeoutError');
  });
});

describe('exchange', () => {
  it('fails a silent server with a TimeoutError after the idle time', async () => {
    handler = () => undefined;
    const error = await exchange({
      method: 'GET',
      url: new URL(`${base}/quiet`),
      headers: {},
      idleTimeoutMs: 150,
    }).catch((e: unknown) => e);

    expect((error as Error).name).toBe('TimeoutError');
    expect((error as Error).message).toBe('no answer in 150 ms');
  });

  it('fails the body of a server that falls silent after its head with a TimeoutError', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('a first part');
    };
    const res = await exchange({
      method: 'GET',
      url: new URL(`${base}/stalls`),
      headers: {},
      idleTimeoutMs: 150,
    });
    const chunks: Buffer[] = [];
    const error = await new Promise<unknown>((resolve) => {
      res.body.on('data', (c: Buffer) => chunks.push(c));
      res.body.on('error', resolve);
      res.body.on('end', () => resolve(undefined));
    });

    expect(Buffer.concat(chunks).toString()).toBe('a first part');
    expect(isTimeout(error)).toBe(true);
    expect((error as Error).message).toBe('no answer in 150 ms');
  });

  it('sends an idempotent request again when the kept-alive connection was dropped under it, and no other', async () => {
    const counts = new WeakMap<object, number>();
    handler = (req, res) => {
      const n = (counts.get(req.socket) ?? 0) + 1;
      counts.set(req.socket, n);
      // The second request on a connection finds it closed, as a server's keep-alive timeout does.
      if (n >= 2) req.socket.destroy();
      else res.end('ok');
    };
    seen.length = 0;
    const read = async (method: string) => {
      const res = await exchange({ method, url: new URL(`${base}/k`), headers: {} });
      res.body.resume();
      await new Promise((resolve) => res.body.on('end', resolve));
      // The connection is free for the next request once the answer's end has been taken in.
      await new Promise((resolve) => setImmediate(resolve));
      return res.statusCode;
    };

    expect(await read('GET')).toBe(200);
    expect(await read('GET')).toBe(200);
    expect(seen.map((r) => r.method)).toEqual(['GET', 'GET', 'GET']);
    const post = await read('POST').catch((e: NodeJS.ErrnoException) => e.code);
    expect(post).toBe('ECONNRESET');
  });
});

describe('answers left unread', () => {
  it('hold up no later request to the same server', async () => {
    handler = (_req, res) => res.end('x'.repeat(256 * 1024));
    // Twenty answers whose bodies nobody reads: each keeps its connection until it is read or times out.
    const unread = await Promise.all(
      Array.from({ length: 20 }, () => exchange({ method: 'GET', url: new URL(`${base}/big`), headers: {} })),
    );
    const next = await fetch(`${base}/next`, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });

    expect((await bytesOf(next)).toString()).toHaveLength(256 * 1024);
    for (const res of unread) res.body.destroy();
  });
});

describe('a server on a private CA', () => {
  let dir = '';
  let tls: https.Server;
  let url = '';
  let ca = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mooring-fetch-ca-'));
    const pems = await makeCertificates(dir);
    ca = await readFile(pems.ca, 'utf8');
    tls = https.createServer(
      { key: await readFile(pems.key), cert: await readFile(pems.cert) },
      (_req, res) => res.end('private'),
    );
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}/`;
  });

  afterAll(async () => {
    tls.closeAllConnections();
    await new Promise<void>((resolve) => tls.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  it('is reached with its CA and refused, naming the certificate, without it', async () => {
    const trusted = await fetchFor(ca)(url, { redirect: 'manual' });
    const refused = await fetchFor()(url, { redirect: 'manual' }).catch((e: unknown) => e);

    expect((await bytesOf(trusted)).toString()).toBe('private');
    expect(((refused as Error).cause as NodeJS.ErrnoException).code).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
  });
});

describe('a process that used the client', () => {
  it("exits when its work is done (kept-alive connections do not hold it), having loaded neither Node's fetch nor HTTP/2", async () => {
    handler = (_req, res) => res.end('ok');
    const module = new URL('../../../src/http/fetch.ts', import.meta.url).href;
    const script = `const { fetchFor } = await import(${JSON.stringify(module)});
      const res = await fetchFor()(${JSON.stringify(`${base}/exit`)}, { redirect: 'manual' });
      let text = '';
      for await (const chunk of res.body) text += Buffer.from(chunk).toString();
      // Node's fetch, Request, Response and Headers come with its bundled undici: about 14 MiB resident.
      const nodeFetch = process.moduleLoadList.some((m) => m.includes('internal/deps/undici'));
      // Nor anything beyond Node's http and https: no HTTP/2, no module from node_modules.
      const more = process.moduleLoadList.some((m) => m.includes('http2')) || Object.keys(process.getBuiltinModule('node:module')._cache).length > 0;
      process.stdout.write(text + ' ' + nodeFetch + ' ' + more);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const timer = setTimeout(() => child.kill(), 10_000);
    const code = await exited;
    clearTimeout(timer);

    expect([code, out]).toEqual([0, 'ok false false']);
  });
});

describe('the headers of a request and of an answer', () => {
  it('reads an answer by name in any case, several values joined as fetch joins them', () => {
    const headers = new AnswerHeaders({
      'content-type': 'text/plain',
      'set-cookie': ['a=1', 'b=2'],
      'x-none': undefined,
    });
    const seen: string[] = [];
    headers.forEach((value, name) => {
      seen.push(`${name}=${value}`);
    });

    expect([headers.get('Content-Type'), headers.get('set-cookie'), headers.get('x-none')]).toEqual([
      'text/plain',
      'a=1, b=2',
      null,
    ]);
    expect(seen).toEqual(['content-type=text/plain', 'set-cookie=a=1, b=2']);
  });

  it('sends names in lower case, a repeated one as one header, and refuses what would split a header', () => {
    expect(headerRecord({ Accept: ' a/b ', 'X-A': '1' })).toEqual({ accept: 'a/b', 'x-a': '1' });
    expect(
      headerRecord([
        ['X-A', '1'],
        ['x-a', '2'],
      ]),
    ).toEqual({ 'x-a': '1, 2' });
    expect(headerRecord(undefined)).toEqual({});
    expect(() => headerRecord({ 'X-A': 'one\r\nX-B: two' })).toThrow(/invalid value for header x-a/);
    expect(() => headerRecord({ 'X A': '1' })).toThrow(/invalid header name "X A"/);
  });
});
