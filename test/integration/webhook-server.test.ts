// The webhook server over real HTTP: requests sent with fetch to a server on a loopback port, and a real
// distribution registry sending its own notification envelopes to it after an image push.
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Check, createServer } from '../../src/server/http.ts';
import type { PollTarget, WebhookProvider } from '../../src/server/webhooks.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { freePort } from '../testbed/ports.ts';
import { type DaemonRecord, deathNotice, startDaemon, stopDaemon } from '../testbed/processes.ts';
import { registryCommand, registryConfigYaml, waitForRegistry } from '../testbed/registry.ts';
import { eventually } from './helpers.ts';

const MAX_BODY = 16 * 1024;
const GITHUB_SECRET = randomBytes(20).toString('hex');
const REGISTRY_TOKEN = randomBytes(20).toString('hex');
const GITHUB_PUSH = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'webhooks', 'github-push.json'));
const sign = (body: Buffer) => `sha256=${createHmac('sha256', GITHUB_SECRET).update(body).digest('hex')}`;

const triggers: { targets: PollTarget[]; provider: WebhookProvider }[] = [];
const logLines: string[] = [];
let readiness: Check = { ok: false, detail: 'first sync not done' };
let server: Server;
let base = '';

function listen(s: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`));
  });
}

function close(s: Server): Promise<void> {
  s.closeAllConnections();
  return new Promise((resolve) => s.close(() => resolve()));
}

function githubPush(body: Buffer, signature = sign(body)): Promise<Response> {
  return fetch(`${base}/hooks/github`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-GitHub-Event': 'push',
      'X-Hub-Signature-256': signature,
    },
    body,
  });
}

/** A body that fetch sends chunked, without Content-Length: `piece` repeated `chunks` times. */
function chunked(piece: Buffer, chunks: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent++ < chunks) controller.enqueue(new Uint8Array(piece));
      else controller.close();
    },
  });
}

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  server = createServer({
    maxBodyBytes: MAX_BODY,
    secrets: { github: GITHUB_SECRET, registry: REGISTRY_TOKEN },
    onTrigger: (targets, provider) => {
      triggers.push({ targets, provider });
      return true;
    },
    health: () => ({ ok: true }),
    ready: () => readiness,
    metrics: () => '# TYPE mooring_syncs_total counter\nmooring_syncs_total 3\n',
    log: pino({ level: 'info' }, sink),
  });
  base = await listen(server);
});

afterAll(async () => {
  if (server) await close(server);
});

describe('webhook server', () => {
  it('accepts a signed GitHub push and triggers its repository', async () => {
    const before = triggers.length;
    const response = await githubPush(GITHUB_PUSH);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ reason: 'push', sources: 3 });
    expect(triggers.slice(before)).toEqual([
      {
        provider: 'github',
        targets: [
          { kind: 'git', url: 'https://github.com/mooring-demo/web-app' },
          { kind: 'git', url: 'ssh://github.com/mooring-demo/web-app' },
          { kind: 'git', url: 'git://github.com/mooring-demo/web-app' },
        ],
      },
    ]);
    const line = JSON.parse(logLines.at(-1) ?? '{}');
    expect(line).toMatchObject({ msg: 'webhook', provider: 'github', status: 202, sources: 3 });
  });

  it('refuses a bad signature and triggers nothing', async () => {
    const before = triggers.length;
    const forged = `sha256=${createHmac('sha256', 'guess').update(GITHUB_PUSH).digest('hex')}`;
    const response = await githubPush(GITHUB_PUSH, forged);
    expect(response.status).toBe(401);
    expect(triggers.length).toBe(before);
    expect(JSON.parse(logLines.at(-1) ?? '{}')).toMatchObject({
      provider: 'github',
      status: 401,
      sources: 0,
    });
  });

  it('refuses a body over the limit by its Content-Length', async () => {
    const before = triggers.length;
    const big = Buffer.alloc(MAX_BODY * 64, 0x20);
    const response = await githubPush(big);
    expect(response.status).toBe(413);
    expect(response.headers.get('connection')).toBe('close');
    expect(triggers.length).toBe(before);
  });

  it('refuses a chunked body once it passes the limit, and reads one under it', async () => {
    const before = triggers.length;
    const piece = Buffer.alloc(1024, 0x20);
    const tooBig = await fetch(`${base}/hooks/github`, {
      method: 'POST',
      headers: { 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': sign(piece) },
      body: chunked(piece, 1000),
      duplex: 'half',
    } as RequestInit);
    expect(tooBig.status).toBe(413);

    // The same route reads a streamed body whole when it fits: the push is split into small chunks.
    let offset = 0;
    const fits = await fetch(`${base}/hooks/github`, {
      method: 'POST',
      headers: { 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': sign(GITHUB_PUSH) },
      body: new ReadableStream({
        pull(controller) {
          if (offset >= GITHUB_PUSH.length) return controller.close();
          controller.enqueue(new Uint8Array(GITHUB_PUSH.subarray(offset, offset + 100)));
          offset += 100;
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(fits.status).toBe(202);
    expect(triggers.length).toBe(before + 1);
  });

  it('answers health, readiness and metrics', async () => {
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });

    readiness = { ok: false, detail: 'first sync not done' };
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ ok: false, detail: 'first sync not done' });
    readiness = { ok: true };
    expect((await fetch(`${base}/readyz`)).status).toBe(200);

    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await metrics.text()).toContain('mooring_syncs_total 3');
  });

  it('answers 404 for unknown paths and providers that are not configured', async () => {
    for (const path of [
      '/nope',
      '/hooks/gitlab',
      '/hooks/gitea',
      '/hooks/generic',
      '/hooks/unknown',
      '/hooks/',
    ]) {
      const response = await fetch(`${base}${path}`, { method: 'POST', body: '{}' });
      expect(response.status, path).toBe(404);
    }
    const bare = createServer({
      maxBodyBytes: MAX_BODY,
      secrets: {},
      onTrigger: () => {},
      health: () => ({ ok: true }),
      ready: () => ({ ok: true }),
      log: { info: () => {}, warn: () => {} },
    });
    const bareBase = await listen(bare);
    try {
      expect((await fetch(`${bareBase}/metrics`)).status).toBe(404);
      expect((await fetch(`${bareBase}/hooks/github`, { method: 'POST', body: '{}' })).status).toBe(404);
    } finally {
      await close(bare);
    }
  });

  it('answers 405 with Allow for the wrong method', async () => {
    const hook = await fetch(`${base}/hooks/github`);
    expect(hook.status).toBe(405);
    expect(hook.headers.get('allow')).toBe('POST');
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const response = await fetch(`${base}${path}`, { method: 'POST', body: '' });
      expect(response.status, path).toBe(405);
      expect(response.headers.get('allow')).toBe('GET, HEAD');
    }
  });

  it('never logs a secret, a signature or the body', () => {
    const all = logLines.join('');
    expect(logLines.length).toBeGreaterThan(0);
    expect(all).not.toContain(GITHUB_SECRET);
    expect(all).not.toContain(REGISTRY_TOKEN);
    expect(all).not.toContain(sign(GITHUB_PUSH).slice('sha256='.length));
    expect(all).not.toContain('Bump web to 1.4.2');
  });
});

describe('notifications of a real distribution registry', () => {
  let dir = '';
  let registry: DaemonRecord | undefined;

  afterAll(async () => {
    if (registry) await stopDaemon(registry);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('triggers the pushed image and nothing for its blobs', async () => {
    dir = await mkdtemp(join(tmpdir(), 'mooring-webhook-registry-'));
    await mkdir(join(dir, 'data'));
    const port = await freePort();
    const config = join(dir, 'config.yml');
    await writeFile(
      config,
      registryConfigYaml({
        dataDir: join(dir, 'data'),
        port,
        notificationUrl: `${base}/hooks/registry`,
        notificationToken: REGISTRY_TOKEN,
      }),
    );
    const command = registryCommand(config);
    const started = startDaemon({
      name: 'registry',
      command: command.command,
      args: command.args,
      logDir: dir,
    });
    registry = started;
    await waitForRegistry(`http://127.0.0.1:${port}`, 20_000).catch((error: unknown) => {
      throw new Error(deathNotice(started) ?? String(error));
    });

    const before = triggers.length;
    const logsBefore = logLines.length;
    await pushImage({ registry: `http://127.0.0.1:${port}`, repository: 'webhooks/app', tag: 'v1' });
    const expected: PollTarget = { kind: 'registry', image: `127.0.0.1:${port}/webhooks/app` };
    // The registry sends its envelopes from a queue of its own, after the push has been answered: one per
    // event, so the layer and the config blob come as two envelopes and the manifest as a third.
    const seen = await eventually(
      'the registry notifying two blob pushes and the manifest push',
      async () => {
        const lines = logLines
          .slice(logsBefore)
          .map((l) => JSON.parse(l) as { provider?: string; status?: number });
        const fromRegistry = lines.filter((l) => l.provider === 'registry');
        const ignored = fromRegistry.filter((l) => l.status === 204).length;
        const accepted = fromRegistry.filter((l) => l.status === 202).length;
        return ignored >= 2 && accepted >= 1 ? fromRegistry : undefined;
      },
      30_000,
    );
    expect(seen.every((l) => l.status === 202 || l.status === 204)).toBe(true);
    const fromRegistry = triggers.slice(before).filter((t) => t.provider === 'registry');
    expect(fromRegistry.length).toBeGreaterThan(0);
    for (const trigger of fromRegistry) expect(trigger.targets).toEqual([expected]);
  });
});
