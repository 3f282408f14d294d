// Webhooks passed on between replicas: the provider's token never leaves the replica that took the webhook (an
// address in a member Lease may be anyone's), the receiver checks the sender's signature and the delivery's age,
// and then handles the delivery as it came. The real server and the real forwarder, over HTTP on loopback.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createRawServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acceptForwarded,
  FORWARD_WINDOW_MS,
  FORWARDED_AT_HEADER,
  FORWARDED_HEADER,
  FORWARDED_SIGNATURE_HEADER,
  forwardSignature,
} from '../../../src/server/forwarded.ts';
import { createServer } from '../../../src/server/http.ts';
import type { PollTarget, WebhookProvider } from '../../../src/server/webhooks.ts';
import { forwardWebhook } from '../../../src/shard/forward.ts';

const GITLAB_TOKEN = `gl-${randomBytes(16).toString('hex')}`;
const REGISTRY_TOKEN = `rg-${randomBytes(16).toString('hex')}`;
const GITLAB_PUSH = readFileSync(
  join(import.meta.dirname, '..', '..', 'fixtures', 'webhooks', 'gitlab-push.json'),
);
const REGISTRY_PUSH = readFileSync(
  join(import.meta.dirname, '..', '..', 'fixtures', 'webhooks', 'registry-push.json'),
);
const quiet = { debug: () => undefined, warn: () => undefined };

function listen(s: Server): Promise<string> {
  return new Promise((resolve) =>
    s.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`)),
  );
}

const triggers: { provider: WebhookProvider; targets: PollTarget[] }[] = [];
let replica: Server;
let replicaUrl = '';
// Whoever wrote an address into a member Lease: it keeps every byte it is sent.
const received: { headers: IncomingHttpHeaders; body: string }[] = [];
let stranger: Server;
let strangerUrl = '';

beforeAll(async () => {
  replica = createServer({
    maxBodyBytes: 64 * 1024,
    secrets: { gitlab: GITLAB_TOKEN, registry: REGISTRY_TOKEN },
    onTrigger: (targets, provider) => {
      triggers.push({ targets, provider });
      return true;
    },
    health: () => ({ ok: true }),
    ready: () => ({ ok: true }),
    metrics: () => '',
    log: pino({ level: 'silent' }),
  });
  replicaUrl = await listen(replica);
  stranger = createRawServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(202).end();
    });
  });
  strangerUrl = await listen(stranger);
});

afterAll(() => {
  replica.closeAllConnections();
  replica.close();
  stranger.closeAllConnections();
  stranger.close();
});

const gitlabDelivery = {
  headers: {
    'content-type': 'application/json',
    'x-gitlab-event': 'Push Hook',
    'x-gitlab-token': GITLAB_TOKEN,
  } as IncomingHttpHeaders,
  body: GITLAB_PUSH,
};

describe('a webhook passed on to other replicas', () => {
  it('reaches a replica, which handles it, and gives no peer the GitLab or registry token', async () => {
    const before = triggers.length;
    const peers = [
      { identity: 'replica-b', address: replicaUrl, deployments: [], renewed: 0 },
      { identity: 'lease-writer', address: strangerUrl, deployments: [], renewed: 0 },
    ];
    await forwardWebhook(peers, 'gitlab', gitlabDelivery, 'replica-a', GITLAB_TOKEN, quiet);
    const registry = {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${REGISTRY_TOKEN}` },
      body: REGISTRY_PUSH,
    };
    await forwardWebhook(peers, 'registry', registry, 'replica-a', REGISTRY_TOKEN, quiet);
    expect(triggers.slice(before).map((t) => t.provider)).toEqual(['gitlab', 'registry']);
    expect(triggers[before]?.targets).toContainEqual({
      kind: 'git',
      url: 'https://gitlab.example.com/platform/deploy-config',
    });
    expect(received).toHaveLength(2);
    for (const { headers, body } of received) {
      const everything = `${JSON.stringify(headers)}\n${body}`;
      expect(everything).not.toContain(GITLAB_TOKEN);
      expect(everything).not.toContain(REGISTRY_TOKEN);
      expect(headers[FORWARDED_HEADER]).toBe('replica-a');
      expect(headers['x-gitlab-token']).toBeUndefined();
      expect(headers.authorization).toBeUndefined();
    }
    // The provider's own headers go on.
    expect(received[0]?.headers['x-gitlab-event']).toBe('Push Hook');
  });

  it('is sent again to a replica that cannot take it yet (503), until it does', async () => {
    let refusals = 2;
    const taken: WebhookProvider[] = [];
    const starting = createServer({
      maxBodyBytes: 64 * 1024,
      secrets: { gitlab: GITLAB_TOKEN },
      // Not ready to sync yet: the server answers 503, as a replica that is still starting does.
      onTrigger: (_targets, provider) => {
        if (refusals-- > 0) return false;
        taken.push(provider);
        return true;
      },
      health: () => ({ ok: true }),
      ready: () => ({ ok: true }),
      metrics: () => '',
      log: pino({ level: 'silent' }),
    });
    const url = await listen(starting);
    const warnings: string[] = [];
    try {
      await forwardWebhook(
        [{ identity: 'replica-c', address: url, deployments: [], renewed: 0 }],
        'gitlab',
        gitlabDelivery,
        'replica-a',
        GITLAB_TOKEN,
        { debug: () => undefined, warn: (_f, message) => warnings.push(message) },
      );
      expect(taken).toEqual(['gitlab']);
      expect(warnings).toEqual([]);
    } finally {
      starting.closeAllConnections();
      starting.close();
    }
  });

  it('is refused when it claims to be passed on without a valid signature, or is too old, or was altered', async () => {
    const before = triggers.length;
    const post = (headers: Record<string, string>, body: Buffer = GITLAB_PUSH) =>
      fetch(`${replicaUrl}/hooks/gitlab`, { method: 'POST', headers, body });
    const base = { 'content-type': 'application/json', 'x-gitlab-event': 'Push Hook' };
    // The header alone, no token: a caller that hopes "passed on" skips the check.
    expect((await post({ ...base, [FORWARDED_HEADER]: 'replica-a' })).status).toBe(401);
    // Signed under another secret.
    const forged = forwardSignature('gitlab', 'replica-a', GITLAB_PUSH, 'a guess');
    expect((await post({ ...base, ...forged })).status).toBe(401);
    // Signed for another provider: a signature is bound to the provider it was taken by.
    const other = forwardSignature('registry', 'replica-a', GITLAB_PUSH, GITLAB_TOKEN);
    expect((await post({ ...base, ...other })).status).toBe(401);
    // Older than the window: a captured delivery is not replayed later.
    const old = forwardSignature(
      'gitlab',
      'replica-a',
      GITLAB_PUSH,
      GITLAB_TOKEN,
      Date.now() - FORWARD_WINDOW_MS - 60_000,
    );
    const refused = await post({ ...base, ...old });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain(FORWARDED_AT_HEADER);
    // A body altered on the way.
    const signed = forwardSignature('gitlab', 'replica-a', GITLAB_PUSH, GITLAB_TOKEN);
    const altered = Buffer.from(GITLAB_PUSH.toString().replace('deploy-config', 'other-config'));
    expect((await post({ ...base, ...signed }, altered)).status).toBe(401);
    expect(triggers.length).toBe(before);
    // The same, signed right and recent: accepted.
    expect((await post({ ...base, ...signed })).status).toBe(202);
    expect(triggers.length).toBe(before + 1);
  });

  it('puts the token back only from the receiver’s own secret', () => {
    const signed = forwardSignature('gitlab', 'replica-a', GITLAB_PUSH, GITLAB_TOKEN, 1_000_000);
    const accepted = acceptForwarded(
      'gitlab',
      { ...signed, 'x-gitlab-token': 'whatever the sender says' },
      GITLAB_PUSH,
      GITLAB_TOKEN,
      1_000_000 + 1_000,
    );
    expect(accepted.ok && accepted.headers['x-gitlab-token']).toBe(GITLAB_TOKEN);
    const missing = acceptForwarded('gitlab', { [FORWARDED_HEADER]: 'replica-a' }, GITLAB_PUSH, GITLAB_TOKEN);
    expect(missing.ok === false && missing.reason).toContain(FORWARDED_SIGNATURE_HEADER);
  });
});
