// The status page's routes on the agent's HTTP port (read-only; off unless `server.statusPage.enabled`):
//   GET /status            the page (HTML shell: no data in it)
//   GET /status/app.css, /status/app.js
//   GET /status/api/deployments   every deployment's view (board.ts), as {cluster, items}
//   GET /status/api/events        server-sent events: one `deployment` event per changed deployment, a comment every
//                                 15 s. Changes are gathered for batchMs and written together, the latest view of
//                                 each deployment once: a fleet's rollout is not thousands of writes per stream.
// The API needs `Authorization: Bearer <token>` (the token from a Secret, compared in constant time) unless the
// page is configured anonymous (for an authenticating proxy in front). The shell and its files hold no data and
// are served to anyone, so that the page can ask for the token. Streams are bounded in number.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { PAGE_CSS, PAGE_HTML, PAGE_JS } from './assets.ts';
import type { DeploymentView, StatusBoard } from './board.ts';

export interface StatusPageOptions {
  board: StatusBoard;
  /** The boards of the other clusters the agent deploys to (docs/clusters.md), and whether each answers. */
  more?: (() => readonly StatusBoard[]) | undefined;
  clusters?:
    | (() => readonly {
        name: string;
        reachable: boolean;
        since?: string | undefined;
        detail?: string | undefined;
      }[])
    | undefined;
  /** The bearer token the API asks for; undefined: anonymous (an authenticating proxy is in front). */
  token: () => string | undefined;
  cluster: () => string;
  maxStreams?: number | undefined;
  heartbeatMs?: number | undefined;
  /** While a page is open, the ledgers are read this often (a rollback made elsewhere shows). */
  refreshMs?: number | undefined;
  /** How long a stream gathers changes before it writes them (the latest view of each deployment once). */
  batchMs?: number | undefined;
}

const SECURITY: OutgoingHttpHeaders = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
};

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { ...SECURITY, 'Content-Type': type });
  res.end(body);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function authorized(req: IncomingMessage, token: string | undefined): boolean {
  if (token === undefined) return true;
  const header = req.headers.authorization ?? '';
  const match = /^Bearer\s+(.+)$/i.exec(header);
  if (!match?.[1]) return false;
  return timingSafeEqual(digest(match[1].trim()), digest(token));
}

/** The status page's request handler: true when it answered. */
export function statusPage(
  options: StatusPageOptions,
): (req: IncomingMessage, res: ServerResponse, path: string) => boolean {
  const maxStreams = options.maxStreams ?? 50;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const refreshMs = options.refreshMs ?? 15_000;
  const batchMs = options.batchMs ?? 250;
  const boards = () => [options.board, ...(options.more?.() ?? [])];
  const refreshAll = () => Promise.all(boards().map((b) => b.refreshAll()));
  let streams = 0;
  let refresher: NodeJS.Timeout | undefined;
  const watching = (delta: number) => {
    streams += delta;
    if (streams > 0 && !refresher) {
      refresher = setInterval(() => void refreshAll().catch(() => undefined), refreshMs);
      refresher.unref();
    } else if (streams === 0 && refresher) {
      clearInterval(refresher);
      refresher = undefined;
    }
  };

  return (req, res, path) => {
    if (path !== '/status' && !path.startsWith('/status/')) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...SECURITY, Allow: 'GET, HEAD', 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: 'method not allowed' }));
      return true;
    }
    switch (path) {
      case '/status':
      case '/status/':
        send(res, 200, 'text/html; charset=utf-8', PAGE_HTML);
        return true;
      case '/status/app.css':
        send(res, 200, 'text/css; charset=utf-8', PAGE_CSS);
        return true;
      case '/status/app.js':
        send(res, 200, 'text/javascript; charset=utf-8', PAGE_JS);
        return true;
    }
    if (path !== '/status/api/deployments' && path !== '/status/api/events') {
      send(res, 404, 'application/json', JSON.stringify({ error: 'not found' }));
      return true;
    }
    if (!authorized(req, options.token())) {
      res.writeHead(401, {
        ...SECURITY,
        'Content-Type': 'application/json',
        'WWW-Authenticate': 'Bearer realm="mooring status"',
      });
      res.end(JSON.stringify({ error: 'a bearer token is needed' }));
      return true;
    }
    if (path === '/status/api/deployments') {
      send(
        res,
        200,
        'application/json',
        JSON.stringify({
          cluster: options.cluster(),
          items: boards().flatMap((b) => b.list()),
          ...(options.clusters ? { clusters: options.clusters() } : {}),
        }),
      );
      return true;
    }
    if (streams >= maxStreams) {
      res.writeHead(503, { ...SECURITY, 'Content-Type': 'application/json', 'Retry-After': '30' });
      res.end(JSON.stringify({ error: `more than ${maxStreams} open status streams` }));
      return true;
    }
    res.writeHead(200, {
      ...SECURITY,
      'Content-Type': 'text/event-stream; charset=utf-8',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.write(`retry: 5000\n\n`);
    // Views are serialised when written, not when heard: a deployment that changed twice is sent once, as it is now.
    // A client that does not read (or reads slower than the fleet changes) is written nothing more until its socket
    // drains: the views wait in `pending`, one per deployment, each replaced by the next, so what a stream holds is
    // bounded by the fleet, not by the changes that came while the client slept.
    const pending = new Map<string, DeploymentView>();
    let flush: NodeJS.Timeout | undefined;
    let draining = false;
    const write = () => {
      flush = undefined;
      if (draining) return;
      let text = '';
      for (const view of pending.values()) text += `event: deployment\ndata: ${JSON.stringify(view)}\n\n`;
      pending.clear();
      if (text && !res.write(text)) {
        draining = true;
        res.once('drain', () => {
          draining = false;
          if (pending.size > 0) flush ??= setTimeout(write, 0);
        });
      }
    };
    const unsubscribes = boards().map((board) =>
      board.subscribe((view) => {
        pending.set(view.name, view);
        flush ??= setTimeout(write, batchMs);
      }),
    );
    // The stream opens with every view as it is now: the page read the list before it opened the stream, and a
    // change in between (a sync that ended) would otherwise not show until the deployment changed again.
    for (const board of boards())
      for (const view of board.list()) if (!pending.has(view.name)) pending.set(view.name, view);
    if (pending.size > 0) flush ??= setTimeout(write, 0);
    const heartbeat = setInterval(() => {
      if (!draining) res.write(': keep-alive\n\n');
    }, heartbeatMs);
    heartbeat.unref();
    watching(1);
    void refreshAll().catch(() => undefined);
    const close = () => {
      clearInterval(heartbeat);
      clearTimeout(flush);
      for (const unsubscribe of unsubscribes) unsubscribe();
      watching(-1);
    };
    res.once('close', close);
    return true;
  };
}
