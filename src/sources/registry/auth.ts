// How registries ask for credentials, and the bearer tokens they hand out: the WWW-Authenticate challenge,
// the token service's answer (validated with zod), and a bounded cache of tokens per scope.
// See the distribution spec's token flow (docs/spec/auth/token.md) and Docker's client (registry/auth.go).
import { z } from 'zod';

export interface BasicCredentials {
  username: string;
  password: string;
}

export type Challenge =
  | { scheme: 'bearer'; realm: string; service: string | undefined; scope: string | undefined }
  | { scheme: 'basic' }
  | { scheme: 'other'; name: string };

const PARAM = /([A-Za-z][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))/g;

/**
 * The challenge to answer. Bearer wins when a registry offers several, as Docker's client does; a header we
 * cannot read is undefined (the caller reports the 401 as it is).
 */
export function parseChallenge(value: string | undefined): Challenge | undefined {
  if (value === undefined) return undefined;
  const bearer = /(?:^|[\s,])Bearer\s+/i.exec(value);
  if (bearer !== null) {
    const params = new Map<string, string>();
    for (const match of value.slice(bearer.index + bearer[0].length).matchAll(PARAM)) {
      const key = match[1]?.toLowerCase();
      // A later challenge's params would come after ours; the first occurrence of a key is ours.
      if (key !== undefined && !params.has(key)) {
        params.set(key, match[2]?.replace(/\\(.)/g, '$1') ?? match[3] ?? '');
      }
    }
    const realm = params.get('realm');
    if (realm === undefined || realm === '') return undefined;
    return { scheme: 'bearer', realm, service: params.get('service'), scope: params.get('scope') };
  }
  if (/^\s*Basic\b/i.test(value) || /,\s*Basic\b/i.test(value)) return { scheme: 'basic' };
  const name = /^\s*(\S+)/.exec(value)?.[1];
  return name === undefined ? undefined : { scheme: 'other', name };
}

// The spec says `token`; OAuth2-style services send `access_token`; either may be missing when the other
// is there. issued_at is RFC 3339.
export const tokenResponseSchema = z
  .object({
    token: z
      .string()
      .min(1)
      .max(64 * 1024)
      .optional(),
    access_token: z
      .string()
      .min(1)
      .max(64 * 1024)
      .optional(),
    expires_in: z.number().int().positive().optional(),
    issued_at: z.string().max(64).optional(),
  })
  .refine((r) => r.token !== undefined || r.access_token !== undefined, {
    message: 'has neither "token" nor "access_token"',
  });

// The spec's default lifetime when the service does not say.
export const DEFAULT_TOKEN_SECONDS = 60;
// Renew a little early, so a token does not expire between our check and the registry's.
const EXPIRY_MARGIN_MS = 5_000;

export interface CachedToken {
  token: string;
  expiresAt: number;
}

/** The bearer token and until when we may use it, from the service's answer received at `now`. */
export function tokenFromResponse(response: z.infer<typeof tokenResponseSchema>, now: number): CachedToken {
  const token = response.token ?? response.access_token ?? '';
  const lifetimeMs = (response.expires_in ?? DEFAULT_TOKEN_SECONDS) * 1000;
  const issued = response.issued_at === undefined ? Number.NaN : Date.parse(response.issued_at);
  // A token that was issued earlier (a caching token service) expires earlier; a clock ahead of ours must
  // not make it live longer than the lifetime counted from now.
  const start = Number.isNaN(issued) ? now : Math.min(issued, now);
  return { token, expiresAt: start + lifetimeMs - Math.min(EXPIRY_MARGIN_MS, lifetimeMs / 2) };
}

/** Tokens per scope, bounded; the oldest entry goes first when full. */
export class TokenCache {
  readonly #entries = new Map<string, CachedToken>();
  readonly #max: number;

  constructor(max = 256) {
    this.#max = max;
  }

  get(scope: string, now: number): string | undefined {
    const entry = this.#entries.get(scope);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= now) {
      this.#entries.delete(scope);
      return undefined;
    }
    return entry.token;
  }

  set(scope: string, token: CachedToken): void {
    this.#entries.delete(scope);
    if (this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(scope, token);
  }

  delete(scope: string): void {
    this.#entries.delete(scope);
  }
}

export function basicAuthorization(credentials: BasicCredentials): string {
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
}
