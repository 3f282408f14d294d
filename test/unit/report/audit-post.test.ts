// The audit webhook sink posts through the bounded request helper: what it sends is unchanged, a 5xx or 429 is
// retried with back-off (at most three tries), a refusal a retry cannot fix is not retried, and its log line names
// the endpoint without its key.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import type { DeployReport, SyncRequest } from '../../../src/contract.ts';
import { AuditLog } from '../../../src/report/audit.ts';
import { useBodyServer } from '../http/body-server.ts';

const answers: { status: number; headers?: Record<string, string> }[] = [];
const received: { body: string; headers: IncomingMessage['headers']; url: string }[] = [];

const local = useBodyServer((req, body, res) => {
  received.push({ body, headers: req.headers, url: req.url ?? '' });
  const answer = answers.shift() ?? { status: 200 };
  res.writeHead(answer.status, answer.headers ?? {}).end();
});

function audit() {
  const config = parseConfig(`
cluster: {name: c, namespace: mooring}
sources: {git: [{name: app, url: "https://git.example/app.git"}]}
deployments: [{name: web, namespace: shop, source: app}]
audit: {url: "${local.base}/audit?key=K3Y"}
`);
  const warnings: string[] = [];
  const sleeps: number[] = [];
  const log = {
    warn: (fields: unknown, message: string) => warnings.push(`${message} ${JSON.stringify(fields)}`),
    info: () => undefined,
    debug: () => undefined,
    error: () => undefined,
  } as never;
  const sink = new AuditLog(config, log, () => undefined, {
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  const sync = {
    config,
    deployment: config.deployments[0],
    commit: 'a'.repeat(40),
    files: [],
    images: {},
    revision: 'r',
    trigger: 'commit',
  } as unknown as SyncRequest;
  const report = {
    outcome: 'stable',
    applied: [
      {
        target: {
          object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'shop' } },
        },
        action: 'created',
      },
    ],
  } as unknown as DeployReport;
  return { sink, sync, report, warnings, sleeps };
}

describe('AuditLog webhook', () => {
  it('posts the records as JSON, retrying a 503 and a 429 as the server asks', async () => {
    received.length = 0;
    answers.push({ status: 503 }, { status: 429, headers: { 'retry-after': '2' } }, { status: 200 });
    const h = audit();
    await h.sink.finished(h.sync, h.report, undefined);
    expect(received).toHaveLength(3);
    expect(received[0]?.url).toBe('/audit?key=K3Y');
    expect(received[0]?.headers['content-type']).toBe('application/json');
    const body = JSON.parse(received[0]?.body ?? '{}') as {
      records: { deployment: string; action: string }[];
    };
    expect(body.records).toMatchObject([{ deployment: 'web', action: 'created' }]);
    expect(h.sleeps).toHaveLength(2);
    // The first back-off is full jitter under 500 ms; the 429 waits what it asked.
    expect(h.sleeps[0]).toBeGreaterThanOrEqual(0);
    expect(h.sleeps[0]).toBeLessThanOrEqual(500);
    expect(h.sleeps[1]).toBe(2000);
    expect(h.warnings).toEqual([]);
  });

  it('gives up after three tries, naming the endpoint without its key', async () => {
    received.length = 0;
    answers.push({ status: 500 }, { status: 502 }, { status: 500 });
    const h = audit();
    await h.sink.finished(h.sync, h.report, undefined);
    expect(received).toHaveLength(3);
    expect(h.warnings).toHaveLength(1);
    expect(h.warnings[0]).toContain('audit endpoint failed');
    expect(h.warnings[0]).toContain(`${local.base}/audit`);
    expect(h.warnings[0]).not.toContain('K3Y');
  });

  it('does not retry a refusal a retry cannot fix', async () => {
    received.length = 0;
    answers.push({ status: 401 });
    const h = audit();
    await h.sink.finished(h.sync, h.report, undefined);
    expect(received).toHaveLength(1);
    expect(h.sleeps).toEqual([]);
    expect(h.warnings[0]).toContain('HTTP 401');
  });
});
