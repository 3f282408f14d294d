// Notifications without a cluster: the documented payloads (Slack Block Kit, a Teams Adaptive Card, mooring's JSON,
// each checked against a schema of what the receivers accept), the generic webhook's signature, which outcome goes
// to which receiver, and delivery to a local HTTP receiver: retried on 500 until it is taken, not retried on 400,
// the oldest dropped when a receiver's queue is full, a hung receiver given up without holding anything else.
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import type { DeployReport, SyncRequest } from '../../../src/contract.ts';
import { Channel, type DeliveryResult } from '../../../src/report/notify/channel.ts';
import { Notifier } from '../../../src/report/notify/notifier.ts';
import { type NotifyEvent, slackBody, teamsBody, webhookBody } from '../../../src/report/notify/payloads.ts';
import { slackSchema, teamsSchema, webhookSchema } from '../../contract/notification-payloads.ts';

const event: NotifyEvent = {
  outcome: 'failed',
  cluster: 'east',
  deployment: 'web',
  namespace: 'shop',
  summary: 'Deployment shop/web: 0 of 2 replicas available after 5m <ProgressDeadlineExceeded> & more',
  commit: 'c0ffee'.padEnd(40, '0'),
  commitUrl: `https://forge.test/team/app/commit/${'c0ffee'.padEnd(40, '0')}`,
  trigger: 'commit',
  release: 7,
  durationMs: 300_000,
  images: [
    { source: 'web-image', image: 'registry.test/web', tag: '1.2', digest: `sha256:${'a'.repeat(64)}` },
  ],
  objects: { total: 3, stable: 2, failed: 1 },
  pruned: [],
  time: '2026-11-23T10:00:00.000Z',
};

/** Files holding a receiver's URL and its signing key, for a configuration to read. */
async function receiverFiles(name: string, url: string, key: string) {
  const urlFile = join(tmpdir(), `notify-${name}-url-${process.pid}`);
  const keyFile = join(tmpdir(), `notify-${name}-key-${process.pid}`);
  await writeFile(urlFile, `${url}\n`);
  await writeFile(keyFile, key);
  return { urlFile, keyFile };
}

/**
 * A notifier of `config` counting its delivery results, and a sync of the configuration's first deployment at
 * `commit` with `fields` over it.
 */
function notifying(config: ReturnType<typeof parseConfig>, commit: string, fields: object = {}) {
  const results: DeliveryResult[] = [];
  const notifier = new Notifier(config, { log: quiet, counted: (_n, x) => results.push(x), backoffMs: 5 });
  const sync = { config, deployment: config.deployments[0], commit, ...fields } as unknown as SyncRequest;
  return { results, notifier, sync };
}

describe('notification payloads', () => {
  it('Slack: Block Kit with the outcome, the summary escaped, facts and a linked revision', () => {
    const body = slackSchema.parse(slackBody(event));
    expect(body.text).toContain('web: sync failed');
    const section = body.blocks[1] as { text: { text: string }; fields: { text: string }[] };
    expect(section.text.text).toContain('&lt;ProgressDeadlineExceeded&gt; &amp; more');
    expect(section.fields.map((f) => f.text)).toContain('*Namespace*\nshop');
    expect(JSON.stringify(body)).toContain(`<${event.commitUrl}|c0ffee0>`);
  });

  it('Teams: one Adaptive Card 1.4 with facts and a link to the commit', () => {
    const body = teamsSchema.parse(teamsBody(event));
    const card = body.attachments[0]?.content;
    expect(card?.actions?.[0]?.url).toBe(event.commitUrl);
    expect(JSON.stringify(card?.body)).toContain('"title":"Objects","value":"2/3 stable, 1 failed"');
  });

  it('generic: mooring JSON, every field documented', () => {
    expect(webhookSchema.parse(webhookBody(event))).toMatchObject({ outcome: 'failed', release: 7 });
  });
});

let server: Server | undefined;
afterEach(() => server?.close());

/** A local receiver answering each request with the next of `answers` (the last one repeats; 'hang': never). */
async function receiver(
  answers: (number | 'hang')[],
): Promise<{ url: string; bodies: string[]; headers: IncomingMessage['headers'][] }> {
  const bodies: string[] = [];
  const headers: IncomingMessage['headers'][] = [];
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      bodies.push(body);
      headers.push(req.headers);
      const answer = answers[Math.min(bodies.length - 1, answers.length - 1)];
      if (answer === 'hang') return;
      res.writeHead(answer as number, answer === 429 ? { 'Retry-After': '0' } : {}).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, bodies, headers };
}

const quiet = { info: () => undefined, warn: () => undefined };

function channel(results: DeliveryResult[], extra: Partial<ConstructorParameters<typeof Channel>[0]> = {}) {
  return new Channel({
    name: 'r',
    perMinute: 600,
    queue: 10,
    retryForMs: 60_000,
    backoffMs: 5,
    log: quiet,
    counted: (_name, result) => results.push(result),
    ...extra,
  });
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
};

describe('notification delivery', () => {
  it('retries a 500 (and a 429) until the receiver takes the message', async () => {
    const r = await receiver([500, 429, 200]);
    const results: DeliveryResult[] = [];
    const c = channel(results);
    c.send('web failed', async () => ({ url: r.url, headers: {}, body: 'hello' }));
    await until(() => results.length === 1);
    expect(results).toEqual(['sent']);
    expect(r.bodies).toEqual(['hello', 'hello', 'hello']);
    await c.close();
  });

  it('follows no redirect: a receiver that answers 307 elsewhere gets the message, the other host nothing', async () => {
    const elsewhere: string[] = [];
    const other = createServer((req, res) => {
      elsewhere.push(req.url ?? '');
      res.writeHead(200).end();
    });
    other.listen(0, '127.0.0.1');
    await once(other, 'listening');
    const target = `http://127.0.0.1:${(other.address() as AddressInfo).port}/stolen`;
    const asked: string[] = [];
    server = createServer((req, res) => {
      asked.push(req.url ?? '');
      req.resume();
      res.writeHead(307, { location: target }).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const results: DeliveryResult[] = [];
    const c = channel(results, { retryForMs: 50 });
    try {
      c.send('web failed', async () => ({ url, headers: { authorization: 'Bearer secret' }, body: 'x' }));
      await until(() => results.length === 1);
      expect(results).toEqual(['failed']);
      expect(asked.length).toBeGreaterThan(0);
      expect(elsewhere).toEqual([]);
    } finally {
      await c.close();
      other.close();
    }
  });

  it('does not retry a message the receiver refuses (400)', async () => {
    const r = await receiver([400]);
    const results: DeliveryResult[] = [];
    const c = channel(results);
    c.send('web failed', async () => ({ url: r.url, headers: {}, body: 'x' }));
    await until(() => results.length === 1);
    expect(results).toEqual(['failed']);
    expect(r.bodies).toHaveLength(1);
    await c.close();
  });

  it('drops the oldest when the queue is full, and gives a hung receiver up without waiting on it', async () => {
    const r = await receiver(['hang']);
    const results: DeliveryResult[] = [];
    const c = channel(results, { queue: 2, timeoutMs: 50, retryForMs: 100 });
    for (const n of [1, 2, 3, 4]) c.send(`m${n}`, async () => ({ url: r.url, headers: {}, body: `m${n}` }));
    // send() only queued: the first is in flight, m2 was dropped for m4.
    expect(results).toContain('dropped');
    await until(() => results.filter((x) => x !== 'dropped').length === 3);
    expect(results.filter((x) => x === 'failed')).toHaveLength(3);
    expect(new Set(r.bodies)).toEqual(new Set(['m1', 'm3', 'm4']));
    await c.close();
  });
});

describe('the notifier', () => {
  it('sends each receiver the outcomes it asks for, signed for a generic webhook', async () => {
    const r = await receiver([200]);
    const { urlFile, keyFile } = await receiverFiles('finished', r.url, 's3cret');
    const config = parseConfig(`
cluster: {name: east}
sources: {git: [{name: app, url: "https://forge.test/team/app.git"}]}
notifications:
  receivers:
    - {name: chat, type: slack, url: {file: ${urlFile}}, perMinute: 600}
    - {name: ci, type: webhook, url: {file: ${urlFile}}, secret: {file: ${keyFile}}, perMinute: 600}
deployments:
  - name: web
    namespace: shop
    source: app
    notify: [{receiver: chat, on: [failed]}, {receiver: ci, on: [stable, pruned, failed]}]
`);
    const { results, notifier, sync } = notifying(config, 'b'.repeat(40), {
      files: [],
      images: {},
      revision: 'x',
      trigger: 'commit',
    });
    const report = (outcome: DeployReport['outcome'], deleted: string[] = []) =>
      ({
        outcome,
        summary: `it ${outcome}`,
        applied: [],
        wait: undefined,
        history: undefined,
        prune: { deleted, planned: [], kept: [] },
        error: undefined,
        elapsedMs: 10,
      }) as unknown as DeployReport;
    const release = { id: 3 } as never;
    notifier.finished(sync, report('cancelled'), undefined);
    notifier.finished(sync, report('stable'), undefined); // a quiet pass: nothing recorded, nothing sent
    notifier.finished(sync, report('failed'), undefined);
    await until(() => results.length === 2);
    notifier.finished(sync, report('stable', ['ConfigMap shop/old']), release);
    await until(() => results.length === 3);
    expect(results).toEqual(['sent', 'sent', 'sent']);
    const bodies = r.bodies.map((b) => JSON.parse(b) as Record<string, unknown>);
    const slack = bodies.filter((b) => 'blocks' in b);
    const hooks = bodies.filter((b) => 'version' in b).map((b) => webhookSchema.parse(b));
    expect(slack).toHaveLength(1);
    slackSchema.parse(slack[0]);
    expect(hooks.map((h) => h.outcome)).toEqual(['failed', 'pruned']);
    expect(hooks[1]?.commitUrl).toBe(`https://forge.test/team/app/commit/${'b'.repeat(40)}`);
    // The signature: HMAC-SHA256 of the raw body under the receiver's secret.
    for (const [i, body] of r.bodies.entries()) {
      if (!body.includes('"version":1')) continue;
      const h = r.headers[i] ?? {};
      expect(h['x-mooring-signature']).toBe(
        `sha256=${createHmac('sha256', 's3cret').update(body).digest('hex')}`,
      );
      expect(h['x-mooring-event']).toBe(JSON.parse(body).outcome);
      expect(Number(h['x-mooring-timestamp'])).toBeGreaterThan(0);
    }
    await notifier.close();
  });

  it('says `held` for a commit of a suspended deployment, not for holds that end by themselves', async () => {
    const r = await receiver([200]);
    const { urlFile, keyFile } = await receiverFiles('held', r.url, 'k3y');
    const config = parseConfig(`
cluster: {name: east}
sources: {git: [{name: app, url: "https://forge.test/team/app.git"}]}
notifications:
  receivers: [{name: ci, type: webhook, url: {file: ${urlFile}}, secret: {file: ${keyFile}}, perMinute: 600}]
deployments:
  - {name: web, namespace: shop, source: app, notify: [{receiver: ci, on: [held]}]}
`);
    const { results, notifier, sync } = notifying(config, 'c'.repeat(40));
    notifier.waiting(sync, 'Waiting for db', 'dependency');
    notifier.waiting(sync, 'Waiting for the rollout step before', 'rollout');
    notifier.waiting(sync, 'Waiting for approval', 'promotion');
    notifier.waiting(sync, 'suspended: not deployed until mooring resume web', 'suspended');
    await until(() => results.length === 1);
    await new Promise((done) => setTimeout(done, 50));
    expect(results).toEqual(['sent']);
    const [body] = r.bodies.map((b) => webhookSchema.parse(JSON.parse(b)));
    expect(body).toMatchObject({
      outcome: 'held',
      summary: 'suspended: not deployed until mooring resume web',
    });
    await notifier.close();
  });
});
