// A webhook passed on from one replica to another (replicas sharing the work, src/shard/forward.ts). The replica
// that took it checked it; the ones it is passed to must be able to check it too, without the sender's secret ever
// leaving the replica. A GitLab token or a registry's bearer token is the secret itself: it is taken out of the
// delivery, and the delivery is signed instead, with an HMAC under the provider's secret over the provider, the
// sender, the time and the body. The receiver checks that signature (and that it is recent: a captured delivery
// cannot be replayed for long) and puts the token back from its own copy of the secret, so that the provider's
// handler checks the delivery as it came. Addresses come from member Leases, which whoever may write Leases in the
// agent's namespace can set: such a writer receives bodies (commit information), never a secret.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const FORWARDED_HEADER = 'x-mooring-forwarded-by';
export const FORWARDED_AT_HEADER = 'x-mooring-forwarded-at';
export const FORWARDED_SIGNATURE_HEADER = 'x-mooring-forwarded-signature';
/** How old a passed-on webhook may be, either way (clocks of replicas differ a little). */
export const FORWARD_WINDOW_MS = 5 * 60_000;

/** Headers that carry a provider's secret as it is: never passed on. */
const SECRET_HEADERS = new Set(['authorization', 'x-gitlab-token', 'cookie']);

/** Whether this webhook was passed on by another replica already. */
export function wasForwarded(headers: IncomingHttpHeaders): boolean {
  return headers[FORWARDED_HEADER] !== undefined;
}

/** Whether a header may be passed on to another replica as it is. */
export function passesOn(header: string): boolean {
  return !SECRET_HEADERS.has(header.toLowerCase());
}

function mac(secret: string, provider: string, from: string, at: string, body: Uint8Array): string {
  return createHmac('sha256', secret)
    .update(`mooring-forwarded\n${provider}\n${from}\n${at}\n`)
    .update(body)
    .digest('hex');
}

/** The headers that sign a delivery passed on by replica `from`. */
export function forwardSignature(
  provider: string,
  from: string,
  body: Uint8Array,
  secret: string,
  now = Date.now(),
): Record<string, string> {
  const at = String(now);
  return {
    [FORWARDED_HEADER]: from,
    [FORWARDED_AT_HEADER]: at,
    [FORWARDED_SIGNATURE_HEADER]: `sha256=${mac(secret, provider, from, at, body)}`,
  };
}

function one(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? undefined : value;
}

/**
 * Checks a passed-on delivery's signature; when it holds, the headers the provider's handler reads, with the
 * token put back from this replica's own secret. Otherwise the reason it is refused.
 */
export function acceptForwarded(
  provider: string,
  headers: IncomingHttpHeaders,
  body: Uint8Array,
  secret: string,
  now = Date.now(),
): { ok: true; headers: IncomingHttpHeaders } | { ok: false; reason: string } {
  const from = one(headers, FORWARDED_HEADER);
  const at = one(headers, FORWARDED_AT_HEADER);
  const signature = one(headers, FORWARDED_SIGNATURE_HEADER);
  if (!from || !at || !signature)
    return {
      ok: false,
      reason: `a passed-on webhook needs ${FORWARDED_AT_HEADER} and ${FORWARDED_SIGNATURE_HEADER}`,
    };
  if (!/^\d{1,15}$/.test(at) || Math.abs(now - Number(at)) > FORWARD_WINDOW_MS)
    return {
      ok: false,
      reason: `${FORWARDED_AT_HEADER} is not within ${FORWARD_WINDOW_MS / 60_000} minutes of now`,
    };
  const expected = Buffer.from(`sha256=${mac(secret, provider, from, at, body)}`);
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: `${FORWARDED_SIGNATURE_HEADER} does not match` };
  const restored: IncomingHttpHeaders = { ...headers };
  for (const name of SECRET_HEADERS) delete restored[name];
  if (provider === 'gitlab') restored['x-gitlab-token'] = secret;
  if (provider === 'registry') restored.authorization = `Bearer ${secret}`;
  return { ok: true, headers: restored };
}
