// A webhook taken by one replica is passed on to the others (replicas sharing the work): each polls the sources it
// names and syncs its own deployments. The body and the provider's headers are sent on as they came, except those
// that carry the provider's secret as it is (a GitLab token, a bearer token); the delivery is signed under that
// secret instead (src/server/forwarded.ts), and each replica checks it. A webhook passed on is not passed on again.
import type { IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { fullJitter } from '../backoff.ts';
import { errorMessage } from '../errors.ts';
import { sendBounded } from '../http/request.ts';
import type { Member } from '../kube/membership.ts';
import { forwardSignature, passesOn } from '../server/forwarded.ts';

export { wasForwarded } from '../server/forwarded.ts';

const TIMEOUT_MS = 5_000;
/**
 * A peer that did not take the webhook (no answer, a refusal it may get over) is sent it again: a webhook lost
 * here is a commit that peer deploys only at its next poll.
 */
const ATTEMPTS = 4;
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

/** Sends the webhook to every peer that said where it takes webhooks; never throws, never waits long. */
export async function forwardWebhook(
  peers: readonly Member[],
  provider: string,
  delivery: { headers: IncomingHttpHeaders; body: Buffer },
  from: string,
  /** The provider's secret, which signs what is passed on. */
  secret: string,
  log: ForwardLogger,
): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(delivery.headers)) {
    const name = key.toLowerCase();
    if (value === undefined || HOP_BY_HOP.has(name) || !passesOn(key)) continue;
    if (name.startsWith('x-mooring-forwarded')) continue;
    // Several values of one name travel as one header, `, `-joined (as fetch's Headers would send them).
    const values = (Array.isArray(value) ? value : [value]).join(', ');
    headers[name] = name in headers ? `${headers[name]}, ${values}` : values;
  }
  for (const [key, value] of Object.entries(forwardSignature(provider, from, delivery.body, secret)))
    headers[key.toLowerCase()] = value;
  await Promise.all(
    peers.map(async (peer) => {
      if (!peer.address) return;
      const url = `${peer.address.replace(/\/+$/, '')}/hooks/${encodeURIComponent(provider)}`;
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        if (attempt > 0) await sleep(fullJitter(attempt - 1, { baseMs: 500, maxMs: 4_000, minMs: 250 }));
        const last = attempt === ATTEMPTS - 1;
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
          // 503: a replica starting, or standing by for a moment; 429 and 5xx may pass too. 4xx will not.
          if (res.status >= 500 || res.status === 429) {
            if (last) log.warn({ replica: peer.identity, status: res.status }, 'webhook passed on: refused');
            continue;
          }
          if (res.status >= 300)
            log.warn({ replica: peer.identity, status: res.status }, 'webhook passed on: refused');
          else log.debug({ replica: peer.identity, status: res.status, attempt }, 'webhook passed on');
          return;
        } catch (error) {
          if (last)
            log.warn({ replica: peer.identity, err: errorMessage(error) }, 'cannot pass the webhook on');
          else
            log.debug(
              { replica: peer.identity, err: errorMessage(error), attempt },
              'webhook not passed on yet',
            );
        }
      }
    }),
  );
}
