// Answering one registry's auth challenges: nothing for an open registry, Basic after a Basic challenge, and
// for a Bearer challenge a token from the realm (sent our basic credentials when we have them), cached per
// scope. Once a registry has shown it wants tokens, a new scope gets its token before the request rather
// than after a 401, as Docker's client does after its /v2/ ping.
import { StalledError, TransientError, WaitingError } from '../../errors.ts';
import { parseRetryAfter } from '../../http/retry-after.ts';
import {
  type BasicCredentials,
  basicAuthorization,
  type Challenge,
  parseChallenge,
  TokenCache,
  tokenFromResponse,
  tokenResponseSchema,
} from './auth.ts';
import { type HttpResponse, type HttpTransport, header, safeUrl } from './http.ts';
import { type Clock, DEFAULT_RETRY_AFTER_MS } from './rate-limit.ts';
import { bodyJson } from './schemas.ts';

type BearerChallenge = Extract<Challenge, { scheme: 'bearer' }>;

export interface AuthenticatorOptions {
  /** The registry as images name it, for messages. */
  host: string;
  /** The registry API's origin (`https://registry-1.docker.io`): a plain-http token realm must be on its host. */
  origin: string;
  credentials: BasicCredentials | undefined;
  http: HttpTransport;
  clock: Clock;
  /** Called once per request to a token service (the client's stats). */
  onTokenRequest: () => void;
}

const MAX_TOKEN_BYTES = 1024 * 1024;

export class Authenticator {
  readonly #options: AuthenticatorOptions;
  readonly #tokens = new TokenCache();
  #bearer: BearerChallenge | undefined;
  #basic = false;

  constructor(options: AuthenticatorOptions) {
    this.#options = options;
  }

  /** What to send with a request for `scope` (`repository:<name>:pull`), from what we learnt so far. */
  async authorization(scope: string): Promise<string | undefined> {
    const cached = this.#tokens.get(scope, this.#options.clock.now());
    if (cached !== undefined) return `Bearer ${cached}`;
    if (this.#bearer !== undefined) return `Bearer ${await this.#token(this.#bearer, [scope], scope)}`;
    if (this.#basic && this.#options.credentials !== undefined) {
      return basicAuthorization(this.#options.credentials);
    }
    return undefined;
  }

  /** The Authorization to retry a 401 with, or an error when the challenge cannot be answered. */
  async answer(response: HttpResponse, scope: string, sent: string | undefined): Promise<string> {
    const { credentials } = this.#options;
    const challenge = parseChallenge(header(response.headers, 'www-authenticate'));
    if (challenge?.scheme === 'bearer') {
      this.#bearer = challenge;
      // The token we sent may have expired early or been revoked: always ask for a fresh one.
      this.#tokens.delete(scope);
      const scopes = challenge.scope?.split(' ').filter((s) => s !== '') ?? [scope];
      return `Bearer ${await this.#token(challenge, scopes, scope)}`;
    }
    if (credentials === undefined)
      throw this.failed('the registry requires credentials; none are configured');
    if (challenge?.scheme === 'other') throw this.failed(`unsupported auth scheme ${challenge.name}`);
    if (sent?.startsWith('Basic ')) throw this.failed('the registry refused the credentials');
    this.#basic = true;
    return basicAuthorization(credentials);
  }

  /** After a retry was refused too: the cached token is useless. */
  rejected(scope: string, repository: string): StalledError {
    this.#tokens.delete(scope);
    return this.failed(`the registry refused the credentials for ${repository}`);
  }

  failed(detail: string): StalledError {
    return new StalledError(`authentication failed for ${this.#options.host}: ${detail}`);
  }

  /** A token from the challenge's realm, cached under `cacheKey` until it expires. */
  async #token(challenge: BearerChallenge, scopes: string[], cacheKey: string): Promise<string> {
    const { credentials, clock } = this.#options;
    let url: URL;
    try {
      url = new URL(challenge.realm);
    } catch {
      throw new StalledError(`${this.#options.host}: the token realm in its challenge is not a URL`);
    }
    // The realm is the registry's choice (Docker Hub's is auth.docker.io), as Docker and containerd follow it;
    // but never in clear text to another host, and never with credentials in it (docs/security.md).
    const registry = new URL(this.#options.origin);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && url.hostname === registry.hostname))
      throw this.failed(
        `its token realm ${safeUrl(url)} is plain http on another host than the registry; credentials are not sent there`,
      );
    if (url.username !== '' || url.password !== '')
      throw this.failed(`its token realm ${safeUrl(url)} holds credentials`);
    if (challenge.service !== undefined) url.searchParams.set('service', challenge.service);
    for (const scope of scopes) url.searchParams.append('scope', scope);
    const headers: Record<string, string> = {};
    if (credentials !== undefined) headers.Authorization = basicAuthorization(credentials);
    this.#options.onTokenRequest();
    // The transport refuses a plain-http realm unless the source is insecure: credentials stay on TLS.
    const response = await this.#options.http.send({
      method: 'GET',
      url,
      headers,
      maxBytes: MAX_TOKEN_BYTES,
    });
    const where = `token service ${safeUrl(url)}`;
    if (response.status === 401 || response.status === 403) {
      throw this.failed(`${where} refused ${credentials ? 'the credentials' : 'anonymous access'}`);
    }
    if (response.status === 429) {
      const ms =
        parseRetryAfter(header(response.headers, 'retry-after'), clock.now()) ?? DEFAULT_RETRY_AFTER_MS;
      throw new WaitingError(`rate limited by ${where}; retry in ${Math.ceil(ms / 1000)}s`, ms);
    }
    if (response.status >= 500) throw new TransientError(`${where} answered HTTP ${response.status}`);
    if (response.status !== 200) throw new StalledError(`${where} answered HTTP ${response.status}`);
    const parsed = tokenResponseSchema.safeParse(bodyJson(response.body));
    if (!parsed.success) throw new StalledError(`${where} answered without a usable token`);
    const token = tokenFromResponse(parsed.data, clock.now());
    this.#tokens.set(cacheKey, token);
    return token.token;
  }
}
