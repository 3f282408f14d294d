// Notifications from an agent on the test bed to local receivers: a sync that fails (a Deployment whose pods never
// become ready) reaches the Slack, Teams and generic receivers with the documented payloads and a valid signature,
// while the Teams receiver answers 500 twice first (it gets the message on the third try, after the sync recorded its
// release: the sync did not wait for it); the next, stable sync reaches only the receiver that asked for `stable`;
// no request carries the value of the Secret deployed beside.
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { slackSchema, teamsSchema, webhookSchema } from '../contract/notification-payloads.ts';
import { api, ledgerOf } from './faults-support.ts';
import {
  deploymentManifest,
  eventually,
  manifestDir,
  secretManifest,
  startGitAgent,
  stopsAfterAll,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const CANARY = `notify-canary-${Math.random().toString(36).slice(2)}`;
const KEY = 'hmac-key-for-tests';

const manifests = (behavior: 'ready' | 'never-ready') =>
  yamlDocuments(
    secretManifest('api-key', { key: CANARY }),
    deploymentManifest({ image: 'app:1', behavior, secret: 'api-key' }),
  );

interface Captured {
  path: string;
  at: number;
  body: string;
  headers: IncomingMessage['headers'];
}

describe('notifications', () => {
  const ns = useNamespace('notify');
  const agentNs = useNamespace('notify-agent');
  const stops = stopsAfterAll();

  it('a failed sync reaches Slack, Teams and a signed webhook; a stable one only who asked for it', async () => {
    const captured: Captured[] = [];
    let teamsCalls = 0;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        captured.push({ path: req.url ?? '', at: Date.now(), body, headers: req.headers });
        // Teams is down for its first two requests.
        if (req.url === '/teams' && ++teamsCalls <= 2) return res.writeHead(500).end();
        res.writeHead(req.url === '/teams' ? 202 : 200).end(req.url === '/slack' ? 'ok' : '');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    stops.push(async () => void server.close());
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const suffix = Date.now().toString(36);
    const files = await manifestDir({
      slack: `${base}/slack`,
      teams: `${base}/teams`,
      hook: `${base}/hook`,
      key: KEY,
    });
    const {
      repo,
      first: failing,
      agent,
    } = await startGitAgent({
      repo: `notify-${suffix}/app`,
      files: { 'app.yaml': manifests('never-ready') },
      cluster: { name: 'notify-east', namespace: agentNs() },
      deployments: [
        {
          name: 'web',
          namespace: ns(),
          stability: { timeout: '3s' },
          notify: [
            { receiver: 'chat', on: ['failed'] },
            { receiver: 'ops', on: ['failed'] },
            { receiver: 'ci', on: ['failed', 'stable'] },
          ],
        },
      ],
      statuses: false,
      extra: {
        notifications: {
          receivers: [
            { name: 'chat', type: 'slack', url: { file: `${files}/slack` } },
            { name: 'ops', type: 'teams', url: { file: `${files}/teams` } },
            {
              name: 'ci',
              type: 'webhook',
              url: { file: `${files}/hook` },
              secret: { file: `${files}/key` },
            },
          ],
        },
      },
    });
    stops.push(agent.stop);

    const at = (path: string) => captured.filter((c) => c.path === path);
    await eventually(
      'the failure reached every receiver',
      async () =>
        at('/slack').length >= 1 && at('/hook').length >= 1 && at('/teams').length >= 3 ? true : undefined,
      // A bound on a liveness wait only (the first sync, its 3 s wait and the retries take seconds): a suite of heavy
      // files on the same two cores once took this test past 60 s.
      120_000,
    );

    const slack = slackSchema.parse(JSON.parse(at('/slack')[0]?.body ?? ''));
    expect(slack.text).toContain('web: sync failed');
    expect(slack.text).toContain(`Deployment ${ns()}/web`);
    const teams = at('/teams').map((c) => teamsSchema.parse(JSON.parse(c.body)));
    expect(new Set(at('/teams').map((c) => c.body)).size).toBe(1); // the same message, retried
    expect(JSON.stringify(teams[0])).toContain('web: sync failed');
    const hook = at('/hook')[0] as Captured;
    const payload = webhookSchema.parse(JSON.parse(hook.body));
    expect(payload).toMatchObject({
      outcome: 'failed',
      deployment: 'web',
      namespace: ns(),
      cluster: 'notify-east',
      commit: failing,
    });
    expect(hook.headers['x-mooring-signature']).toBe(
      `sha256=${createHmac('sha256', KEY).update(hook.body).digest('hex')}`,
    );
    expect(hook.headers['x-mooring-event']).toBe('failed');

    // The sync recorded its release before Teams took the message: it did not wait for the receiver.
    const kube = api();
    try {
      const failed = (await ledgerOf(kube, agentNs(), 'web')).releases.find((r) => r.commit === failing);
      expect(failed?.result).toMatch(/failed|timed-out/);
      expect(Date.parse(failed?.time ?? '')).toBeLessThan((at('/teams')[2] as Captured).at);

      // A stable sync: only the receiver that asked for `stable`.
      const before = { slack: at('/slack').length, teams: at('/teams').length };
      const fixed = await repo.commit({ 'app.yaml': manifests('ready') });
      await eventually(
        'the stable sync notified',
        async () => at('/hook').find((c) => JSON.parse(c.body).outcome === 'stable'),
        120_000,
      );
      const stable = webhookSchema.parse(
        JSON.parse(at('/hook').find((c) => JSON.parse(c.body).outcome === 'stable')?.body ?? ''),
      );
      expect(stable.commit).toBe(fixed);
      expect(stable.objects).toMatchObject({ stable: 2, failed: 0 });
      expect((await ledgerOf(kube, agentNs(), 'web')).releases[0]?.result).toBe('stable');
      // Each receiver has a queue of its own, delivered side by side: a message wrongly sent to Slack or Teams could
      // arrive just after the webhook's. Two more polls give it the time to.
      await agent.morePolls(2);
      expect({ slack: at('/slack').length, teams: at('/teams').length }).toEqual(before);
    } finally {
      kube.close();
    }

    // No Secret value in any request, nor in the log.
    for (const c of captured) expect(c.body).not.toContain(CANARY);
    expect(agent.lines.join('\n')).not.toContain(CANARY);
    // Nor a receiver's URL in the log (a Slack webhook URL is a secret).
    expect(agent.lines.join('\n')).not.toContain(`${base}/slack`);
  }, 300_000);
});
