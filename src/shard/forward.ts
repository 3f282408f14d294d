// A webhook taken by one replica is passed on to the others (replicas sharing the work): each polls the sources it
// names and syncs its own deployments. The webhook is sent on as it came (headers and body), so each replica checks
// its signature itself: passing it on grants nothing a sender could not do. A webhook passed on is not passed on
// again (the header below).
import type { IncomingHttpHeaders } from 'node:http';
import { errorMessage } from '../errors.ts';
import { sendBounded } from '../http/request.ts';
import type { Member } from '../kube/membership.ts';

export const FORWARDED_HEADER = 'x-mooring-forwarded-by';
const TIMEOUT_MS = 5_000;
/** Not sent on: they describe the connection it came on, not the webhook. */
const HOP_BY_HOP = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-connection',
]);

export interface ForwardLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Whether this webhook was passed on by another replica already. */
export function wasForwarded(headers: IncomingHttpHeaders): boolean {
  return headers[FORWARDED_HEADER] !== undefined;
}

/** Sends the webhook to every peer that said where it takes webhooks; never throws, never waits long. */
export async function forwardWebhook(
  peers: readonly Member[],
  provider: string,
  delivery: { headers: IncomingHttpHeaders; body: Buffer },
  from: string,
  log: ForwardLogger,
): Promise<void> {
  const headers = new Headers();
  for (const [key, value] of Object.entries(delivery.headers)) {
    if (value === undefined || HOP_BY_HOP.has(key.toLowerCase())) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(key, v);
  }
  headers.set(FORWARDED_HEADER, from);
  await Promise.all(
    peers.map(async (peer) => {
      if (!peer.address) return;
      const url = `${peer.address.replace(/\/+$/, '')}/hooks/${encodeURIComponent(provider)}`;
      try {
        const res = await sendBounded({
          method: 'POST',
          url,
          headers,
          body: new Uint8Array(delivery.body),
          timeoutMs: TIMEOUT_MS,
          maxBodyBytes: 4096,
          redirect: 'error',
          what: `POST ${url}`,
        });
        if (res.status >= 300)
          log.warn({ replica: peer.identity, status: res.status }, 'webhook passed on: refused');
        else log.debug({ replica: peer.identity, status: res.status }, 'webhook passed on');
      } catch (error) {
        log.warn({ replica: peer.identity, err: errorMessage(error) }, 'cannot pass the webhook on');
      }
    }),
  );
}
