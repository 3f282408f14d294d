// The status page's model and routes without a cluster: a sync's start and end change a deployment's view (state,
// revision linked to the forge, images, objects with verdicts, releases), a suspension shows, subscribers hear every
// change; the API needs the bearer token (constant-time compared) unless anonymous, the shell is public, the event
// stream sends views; the configuration refuses an enabled page with neither token nor anonymous.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, parseConfig } from '../../../src/config/load.ts';
import type { MooringConfig } from '../../../src/config/schema.ts';
import type { DeployReport, Release, SyncRequest } from '../../../src/contract.ts';
import { commitUrl } from '../../../src/report/commit-url.ts';
import { type DeploymentView, StatusBoard } from '../../../src/server/status/board.ts';
import { statusPage } from '../../../src/server/status/routes.ts';

// These tests run real work (processes, Git repositories, whole pages): a busy 2-core machine needs more than 5 s.
vi.setConfig({ testTimeout: 30_000 });

const config: MooringConfig = parseConfig(`
cluster: {name: east}
sources:
  git: [{name: app, url: "https://forge.example.test/team/app.git", ref: {branch: prod}}]
deployments:
  - {name: web, namespace: shop, source: app}
  - {name: api, namespace: shop, source: app, commitStatus: {provider: gitlab}}
`);

const sync = (name: string, commit: string): SyncRequest => ({
  config,
  deployment: config.deployments.find((d) => d.name === name) as SyncRequest['deployment'],
  commit,
  files: [],
  images: { 'web-image': { image: 'registry.test/web', tag: '1.2', digest: `sha256:${'a'.repeat(64)}` } },
  revision: commit,
  trigger: 'commit',
});

const report = (outcome: DeployReport['outcome']): DeployReport =>
  ({
    outcome,
    summary: outcome === 'stable' ? '2/2 stable in 3s' : 'Deployment shop/web: 0 of 2 replicas available',
    applied: [
      {
        target: {
          object: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' } },
        },
        action: 'configured',
      },
      {
        target: {
          object: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'web-config-v001', namespace: 'shop' },
          },
        },
        action: 'created',
      },
    ],
    wait: {
      outcome: outcome === 'stable' ? 'stable' : 'failed',
      verdicts: [
        {
          name: 'Deployment shop/web',
          stability:
            outcome === 'stable'
              ? { state: 'stable', message: '' }
              : { state: 'failed', message: 'ProgressDeadlineExceeded' },
        },
      ],
      culprit: undefined,
      elapsedMs: 3000,
    },
    history: undefined,
    prune: undefined,
    error: undefined,
    elapsedMs: 3000,
  }) as unknown as DeployReport;

const release = (id: number, commit: string): Release => ({
  id,
  deployment: 'web',
  time: '2026-11-23T10:00:00Z',
  trigger: 'commit',
  commit,
  images: {},
  revision: commit,
  versions: [],
  objects: [],
  result: 'stable',
  durationMs: 3000,
  messages: [],
});

describe('the status board', () => {
  it('follows a sync from start to end, and tells subscribers', async () => {
    let suspended = false;
    const board = new StatusBoard({ config: () => config, suspended: () => (suspended ? {} : undefined) });
    const heard: DeploymentView[] = [];
    board.subscribe((v) => heard.push(structuredClone(v)));
    expect(board.list().map((v) => [v.name, v.state])).toEqual([
      ['web', 'unknown'],
      ['api', 'unknown'],
    ]);
    const commit = 'c0ffee'.padEnd(40, '0');
    board.started(sync('web', commit));
    expect(heard.at(-1)?.state).toBe('syncing');
    await board.finished(sync('web', commit), report('stable'), release(7, commit));
    const web = heard.at(-1) as DeploymentView;
    expect(web.state).toBe('synced');
    expect(web.message).toBe('2/2 stable in 3s');
    expect(web.revision).toEqual({ commit, url: `https://forge.example.test/team/app/commit/${commit}` });
    expect(web.source).toMatchObject({ kind: 'git', ref: 'prod' });
    expect(web.images).toEqual([
      { source: 'web-image', image: 'registry.test/web', tag: '1.2', digest: `sha256:${'a'.repeat(64)}` },
    ]);
    expect(web.objects).toEqual([
      { object: 'Deployment shop/web', action: 'configured', verdict: 'stable' },
      { object: 'ConfigMap shop/web-config-v001', action: 'created', verdict: 'not waited' },
    ]);
    expect(web.releases.map((r) => r.id)).toEqual([7]);
    await board.finished(sync('web', commit), report('failed'), release(8, commit));
    expect(heard.at(-1)?.state).toBe('failed');
    expect(heard.at(-1)?.objects[0]).toMatchObject({
      verdict: 'failed',
      message: 'ProgressDeadlineExceeded',
    });
    expect(heard.at(-1)?.releases.map((r) => r.id)).toEqual([8, 7]);
    suspended = true;
    expect(board.list()[0]?.state).toBe('suspended');
  });

  it('shows a refused artifact beside the digest that keeps running, until another digest is deployed', async () => {
    const board = new StatusBoard({ config: () => config });
    const commit = 'c0ffee'.padEnd(40, '0');
    await board.finished(sync('web', commit), report('stable'), release(7, commit));
    const web = config.deployments.find((d) => d.name === 'web') as SyncRequest['deployment'];
    const said = `image registry.test/web@sha256:${'b'.repeat(12)}… is not signed: expected a cosign signature by …`;
    board.artifactRefused(web, commit, said);
    const view = () => board.list().find((v) => v.name === 'web');
    expect(view()?.refused).toMatchObject({ description: said, digests: [`sha256:${'a'.repeat(64)}`] });
    expect(view()?.state).toBe('synced');
    // A new commit synced with the same verified digest: the refusal stands.
    await board.finished(sync('web', 'beef'.padEnd(40, '0')), report('stable'), release(8, commit));
    expect(view()?.refused?.description).toBe(said);
    // Another digest deployed (the refused one signed since, or a later one): over.
    const signed = sync('web', commit);
    signed.images = {
      'web-image': { image: 'registry.test/web', tag: '1.2', digest: `sha256:${'b'.repeat(64)}` },
    };
    await board.finished(signed, report('stable'), release(9, commit));
    expect(view()?.refused).toBeUndefined();
  });

  it('links commits on the forge by provider', () => {
    expect(commitUrl('https://user:pw@forge.test/a/b.git?x=1', 'github', 'abc')).toBe(
      'https://forge.test/a/b/commit/abc',
    );
    expect(commitUrl('https://gitlab.test/a/b.git', 'auto', 'abc')).toBe(
      'https://gitlab.test/a/b/-/commit/abc',
    );
    expect(commitUrl('https://forge.test/a/b', 'bitbucket', 'abc')).toBe(
      'https://forge.test/a/b/commits/abc',
    );
    expect(commitUrl('/srv/git/app', undefined, 'abc')).toBeUndefined();
  });
});

describe('the status page routes', () => {
  let server: Server | undefined;
  let currentBoard: StatusBoard | undefined;
  afterEach(() => server?.close());

  async function serve(token: string | undefined): Promise<string> {
    const board = new StatusBoard({ config: () => config });
    currentBoard = board;
    const page = statusPage({ board, token: () => token, cluster: () => 'east', heartbeatMs: 50 });
    server = createServer((req, res) => {
      if (!page(req, res, new URL(req.url ?? '/', 'http://x').pathname)) res.writeHead(404).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The event stream: its first view arrives after a sync starts.
    setTimeout(() => board.started(sync('web', 'f'.repeat(40))), 100);
    return url;
  }

  it('serves the shell to anyone and the data only with the token', async () => {
    const url = await serve('s3cret-token');
    const shell = await fetch(`${url}/status`);
    expect(shell.status).toBe(200);
    expect(shell.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await shell.text()).toContain('<script type="module" src="/status/app.js">');
    expect((await fetch(`${url}/status/api/deployments`)).status).toBe(401);
    const wrong = await fetch(`${url}/status/api/deployments`, { headers: { Authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const right = await fetch(`${url}/status/api/deployments`, {
      headers: { Authorization: 'Bearer s3cret-token' },
    });
    expect(right.status).toBe(200);
    const body = (await right.json()) as { cluster: string; items: DeploymentView[] };
    expect(body.cluster).toBe('east');
    expect(body.items.map((v) => v.name)).toEqual(['web', 'api']);
    expect((await fetch(`${url}/status/api/events`)).status).toBe(401);
    expect((await fetch(`${url}/status/nothing`)).status).toBe(404);
    expect((await fetch(`${url}/status`, { method: 'POST' })).status).toBe(405);
  });

  it('streams views as server-sent events (anonymous page)', async () => {
    const url = await serve(undefined);
    const res = await fetch(`${url}/status/api/events`);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    // First every view as it is, then each change: web's sync starting.
    while (!/data: .*"state":"syncing".*\n\n/.test(text)) text += (await reader.read()).value ?? '';
    const data = /data: (.*"state":"syncing".*)\n\n/.exec(text)?.[1] ?? '';
    expect(text.indexOf('event: deployment')).toBeGreaterThan(-1);
    expect(JSON.parse(data)).toMatchObject({ name: 'web', state: 'syncing' });
    await reader.cancel();
  });

  it('opens the stream with every view as it is now, so a change between the list and the stream shows', async () => {
    const url = await serve(undefined);
    // The page reads the list while web syncs; the sync ends before the stream opens.
    await new Promise((r) => setTimeout(r, 150));
    const listed = (await (await fetch(`${url}/status/api/deployments`)).json()) as {
      items: DeploymentView[];
    };
    expect(listed.items.find((v) => v.name === 'web')?.state).toBe('syncing');
    await currentBoard?.finished(sync('web', 'f'.repeat(40)), report('stable'), release(1, 'f'.repeat(40)));
    const res = await fetch(`${url}/status/api/events`);
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!/"name":"web"[^\n]*\n\n/.test(text)) text += (await reader.read()).value ?? '';
    const web = text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as DeploymentView)
      .find((v) => v.name === 'web');
    expect(web?.state).toBe('synced');
    await reader.cancel();
  });
});

describe('a status stream whose client does not read', () => {
  it('writes nothing more until the socket drains, keeping one view per deployment, then the latest', async () => {
    const board = new StatusBoard({ config: () => config });
    const page = statusPage({
      board,
      token: () => undefined,
      cluster: () => 'east',
      batchMs: 1,
      heartbeatMs: 5,
    });
    let stream: import('node:http').ServerResponse | undefined;
    const server = createServer((req, res) => {
      if (req.url === '/status/api/events') stream = res;
      if (!page(req, res, new URL(req.url ?? '/', 'http://x').pathname)) res.writeHead(404).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const { request } = await import('node:http');
    const response = await new Promise<import('node:http').IncomingMessage>((resolve) =>
      request({ host: '127.0.0.1', port, path: '/status/api/events' }, resolve).end(),
    );
    // The client stops reading at once.
    response.pause();
    try {
      // Each finished sync's view names the first 300 of its objects, of long names: about 80 KB; 400 of them are
      // 32 MB, more than a socket's buffers take.
      const big = report('stable');
      const one = big.applied[0] as DeployReport['applied'][number];
      big.applied = Array.from({ length: 3000 }, (_, i) => ({
        ...one,
        target: {
          object: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `object-${i}`, namespace: 'shop' },
          },
        },
      })) as DeployReport['applied'];
      let most = 0;
      for (let i = 0; i < 400; i++) {
        const commit = String(i).padStart(40, '0');
        await board.finished(sync('web', commit), big, release(i + 1, commit));
        await new Promise((r) => setTimeout(r, 3));
        most = Math.max(most, stream?.writableLength ?? 0);
      }
      // Held: at most the write that found the socket full, never the changes since.
      expect(most).toBeLessThan(1024 * 1024);
      // Read again: the stream goes on with the latest view.
      response.resume();
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      const last = String(399).padStart(40, '0');
      await vi.waitFor(() => expect(text).toContain(`"commit":"${last}"`), { timeout: 10_000 });
    } finally {
      response.destroy();
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('the status page configuration', () => {
  it('is off by default, and refuses an enabled page without a token or anonymous', () => {
    expect(parseConfig('').server.statusPage).toMatchObject({
      enabled: false,
      anonymous: false,
      releases: 10,
    });
    expect(() => parseConfig('server: {statusPage: {enabled: true}}', 'agent.yaml')).toThrow(ConfigError);
    expect(() => parseConfig('server: {statusPage: {enabled: true}}', 'agent.yaml')).toThrow(/needs "token"/);
    expect(
      parseConfig('server: {statusPage: {enabled: true, anonymous: true}}').server.statusPage.enabled,
    ).toBe(true);
  });
});
