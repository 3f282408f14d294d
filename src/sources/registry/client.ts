// A client of the OCI distribution API for one registry host: manifest digests (HEAD), tag lists and image
// labels, with anonymous, basic and bearer-token auth, our own rate limit and bounded answers.
// Every failure is a typed error that says which: "tag not found" and "bad credentials" never look alike.

import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { append } from '../../arrays.ts';
import { StalledError, TransientError, WaitingError } from '../../errors.ts';
import { httpVerdict } from '../../http/request.ts';
import { parseRateLimitRemaining } from '../../http/retry-after.ts';
import { TokenBucket } from '../../http/token-bucket.ts';
import type { BasicCredentials } from './auth.ts';
import { Authenticator } from './authenticator.ts';
import { type HttpResponse, HttpTransport, header, type Method, safeUrl } from './http.ts';
import { type Clock, DEFAULT_RETRY_AFTER_MS, type Pause, RegistryPause, systemClock } from './rate-limit.ts';
import {
  artifactManifestSchema,
  bodyJson,
  DIGEST,
  errorBodySchema,
  imageConfigSchema,
  imageManifestSchema,
  indexSchema,
  isIndex,
  MANIFEST_ACCEPT,
  MEDIA_TYPES,
  referrersSchema,
  tagListSchema,
} from './schemas.ts';

export interface RegistryClientOptions {
  /** The registry as image names spell it: `docker.io`, `ghcr.io`, `127.0.0.1:5000`. */
  host: string;
  /** Plain http instead of https. */
  insecure?: boolean;
  /** PEM certificates to trust besides the public roots. */
  ca?: string;
  credentials?: BasicCredentials;
  requestsPerSecond?: number;
  timeoutMs?: number;
  /** Largest answer read into memory (manifests, tag list pages, image configs). */
  maxBodyBytes?: number;
  maxTags?: number;
  clock?: Clock;
  /** What the registry said about when to ask again; one per client unless a test hands one in. */
  pause?: RegistryPause;
  /** Gives up every request under way, and refuses new ones, once aborted: the agent is stopping. */
  signal?: AbortSignal | undefined;
}

/** What an artifact's manifest says of it (artifactManifestSchema), its annotations bounded. */
export interface ArtifactManifest {
  digest: string;
  mediaType: string | undefined;
  artifactType: string | undefined;
  configMediaType: string | undefined;
  layers: {
    mediaType: string;
    digest: string;
    size: number;
    annotations?: Record<string, string> | undefined;
  }[];
  annotations: Record<string, string>;
}

export interface RegistryStats {
  head: number;
  get: number;
  token: number;
}

const TAGS_PAGE_SIZE = 1000;
const MAX_TAG_PAGES = 200;
const MAX_LABELS = 64;
const MAX_LABEL_VALUE = 1024;

export class RegistryClient {
  readonly #byStatus = new Map<string, number>();
  /** The registry as images name it (`docker.io`), used in messages. */
  readonly host: string;
  /** Where API requests go (`registry-1.docker.io` for Docker Hub). */
  readonly apiHost: string;
  readonly #base: URL;
  readonly #insecure: boolean;
  readonly #http: HttpTransport;
  readonly #bucket: TokenBucket;
  readonly #clock: Clock;
  readonly #maxBody: number;
  readonly #maxTags: number;
  readonly #auth: Authenticator;
  readonly #stats: RegistryStats = { head: 0, get: 0, token: 0 };
  #rateLimitRemaining: number | undefined;
  readonly #pause: RegistryPause;
  /** Whether the registry serves the OCI 1.1 referrers API (false: its fallback tags are read instead). */
  #referrersApi: boolean | undefined;

  constructor(options: RegistryClientOptions) {
    this.host = options.host;
    this.apiHost = options.host === 'docker.io' ? 'registry-1.docker.io' : options.host;
    this.#insecure = options.insecure ?? false;
    this.#base = new URL(`${this.#insecure ? 'http' : 'https'}://${this.apiHost}/v2/`);
    this.#clock = options.clock ?? systemClock;
    // A second's worth of requests at once, then the rate.
    const rate = options.requestsPerSecond ?? 5;
    this.#bucket = new TokenBucket({ ratePerSecond: rate, burst: Math.max(1, rate), clock: this.#clock });
    this.#pause = options.pause ?? new RegistryPause(this.#clock);
    this.#maxBody = options.maxBodyBytes ?? 4 * 1024 * 1024;
    this.#maxTags = options.maxTags ?? 10_000;
    this.#http = new HttpTransport({
      ca: options.ca,
      allowHttp: this.#insecure,
      timeoutMs: options.timeoutMs ?? 30_000,
      // Blobs are served from object storage the registry redirects to; digests are checked (docs/security.md).
      redirects: 'anywhere-without-credentials',
      signal: options.signal,
    });
    this.#auth = new Authenticator({
      host: this.host,
      origin: this.#base.origin,
      credentials: options.credentials,
      http: this.#http,
      clock: this.#clock,
      onTokenRequest: () => this.#stats.token++,
    });
  }

  /** Requests sent so far, by kind: registry HEADs and GETs, and token service requests. */
  /** Requests by method and HTTP status (`HEAD 200`, `GET 401`), for the metrics. */
  get requestsByStatus(): ReadonlyMap<string, number> {
    return new Map(this.#byStatus);
  }

  get stats(): RegistryStats {
    return { ...this.#stats };
  }

  /** The registry's last `RateLimit-Remaining` (Docker Hub pulls left in its window), if it sends one. */
  get rateLimitRemaining(): number | undefined {
    return this.#rateLimitRemaining;
  }

  /**
   * Until when the registry asked not to be asked again (a 429's Retry-After, or RateLimit-Remaining: 0 until
   * its reset); undefined when it may be asked now. Polls check this before they send anything.
   */
  get notBefore(): Pause | undefined {
    return this.#pause.current;
  }

  /**
   * The digest of `repository:tag` from a HEAD request, which registries (Docker Hub included) do not count
   * as a pull. Only a registry that leaves out Docker-Content-Digest costs a GET.
   */
  async digest(repository: string, tag: string): Promise<string> {
    const url = this.#url(repository, `manifests/${encodeURIComponent(tag)}`);
    const head = await this.#request('HEAD', repository, url, MANIFEST_ACCEPT);
    if (head.status === 404) throw await this.#notFound(repository, `tag ${tag}`);
    this.#expectOk(head, repository);
    const digest = header(head.headers, 'docker-content-digest');
    if (digest !== undefined && DIGEST.test(digest)) return digest;
    const get = await this.#request('GET', repository, url, MANIFEST_ACCEPT);
    if (get.status === 404) throw await this.#notFound(repository, `tag ${tag}`);
    this.#expectOk(get, repository);
    return sha256(get.body);
  }

  /** Every tag of the repository, following `Link: <…>; rel="next"`; more than maxTags is an error. */
  async tags(repository: string): Promise<string[]> {
    const tags: string[] = [];
    let url: URL | undefined = this.#url(repository, `tags/list?n=${TAGS_PAGE_SIZE}`);
    for (let page = 0; url !== undefined; page++) {
      if (page >= MAX_TAG_PAGES) {
        throw new StalledError(`${this.#name(repository)}: tag list has more than ${MAX_TAG_PAGES} pages`);
      }
      const response: HttpResponse = await this.#request('GET', repository, url, 'application/json');
      if (response.status === 404) throw this.#repositoryNotFound(repository);
      this.#expectOk(response, repository);
      append(tags, this.#json(response, tagListSchema, repository, 'tag list').tags);
      if (tags.length > this.#maxTags) {
        throw new StalledError(`${this.#name(repository)} has more than ${this.#maxTags} tags`);
      }
      url = this.#nextPage(response, repository);
    }
    return tags;
  }

  /** `config.Labels` of the image (linux/amd64 of an index); empty for an image without labels. */
  async labels(repository: string, digest: string): Promise<Record<string, string>> {
    let manifest = await this.#manifest(repository, digest);
    if (isIndex(manifest.mediaType)) {
      const index = this.#parse(manifest.json, indexSchema, repository, 'image index');
      const entry = index.manifests.find(
        (m) => m.platform?.os === 'linux' && m.platform.architecture === 'amd64',
      );
      if (entry === undefined) return {};
      manifest = await this.#manifest(repository, entry.digest);
    }
    const image = imageManifestSchema.safeParse(manifest.json);
    // Labels are provenance only: an artifact type we do not know (a Helm chart, schema 1) simply has none.
    if (!image.success) return {};
    const blob = await this.#request(
      'GET',
      repository,
      this.#url(repository, `blobs/${image.data.config.digest}`),
    );
    if (blob.status === 404) throw new StalledError(`${this.#name(repository)}: image config blob not found`);
    this.#expectOk(blob, repository);
    this.#verify(blob.body, image.data.config.digest, repository);
    const config = this.#parse(bodyJson(blob.body), imageConfigSchema, repository, 'image config');
    const labels = Object.entries(config.config?.Labels ?? {}).slice(0, MAX_LABELS);
    return Object.fromEntries(labels.map(([k, v]) => [k, v.slice(0, MAX_LABEL_VALUE)]));
  }

  /**
   * The manifest of `repository` at a tag or digest, its digest (computed from the bytes, and checked against a
   * digest asked for), media type and annotations: what an artifact (a chart, a manifests artifact) is made of.
   */
  artifactManifest(repository: string, reference: string): Promise<ArtifactManifest>;
  artifactManifest(
    repository: string,
    reference: string,
    absent: 'undefined',
  ): Promise<ArtifactManifest | undefined>;
  /**
   * `absent: 'undefined'`: a tag that is not there (a `.sig` tag of an image nobody signed) is undefined, without
   * the request that tells a missing repository from a missing tag.
   */
  async artifactManifest(
    repository: string,
    reference: string,
    absent?: 'undefined',
  ): Promise<ArtifactManifest | undefined> {
    const byDigest = DIGEST.test(reference);
    const url = this.#url(repository, `manifests/${byDigest ? reference : encodeURIComponent(reference)}`);
    const response = await this.#request('GET', repository, url, MANIFEST_ACCEPT);
    if (response.status === 404 && absent === 'undefined') return undefined;
    if (response.status === 404)
      throw byDigest
        ? new StalledError(`manifest ${reference} not found in ${this.#name(repository)}`)
        : await this.#notFound(repository, `tag ${reference}`);
    this.#expectOk(response, repository);
    if (byDigest) this.#verify(response.body, reference, repository);
    const parsed = this.#parse(bodyJson(response.body), artifactManifestSchema, repository, 'manifest');
    return {
      digest: byDigest ? reference : sha256(response.body),
      mediaType: parsed.mediaType,
      artifactType: parsed.artifactType,
      configMediaType: parsed.config.mediaType,
      layers: parsed.layers,
      annotations: Object.fromEntries(
        Object.entries(parsed.annotations ?? {})
          .slice(0, MAX_LABELS)
          .map(([k, v]) => [k, v.slice(0, MAX_LABEL_VALUE)]),
      ),
    };
  }

  /**
   * The manifests that refer to `digest` (OCI 1.1 referrers: signatures, attestations), of `artifactType`: from the
   * referrers API, or, where the registry has none (404), from the index kept under the fallback tag
   * `sha256-<hex>` as the distribution spec describes and cosign writes; none when neither is there.
   */
  async referrers(
    repository: string,
    digest: string,
    artifactType: string,
  ): Promise<{ digest: string; artifactType?: string | undefined }[]> {
    const index = MEDIA_TYPES.ociIndex;
    const fallback = () =>
      this.#request('GET', repository, this.#url(repository, `manifests/${digest.replace(':', '-')}`), index);
    let response: HttpResponse;
    if (this.#referrersApi === false) response = await fallback();
    else {
      response = await this.#request(
        'GET',
        repository,
        this.#url(repository, `referrers/${digest}?artifactType=${encodeURIComponent(artifactType)}`),
        index,
      );
      // A registry that has the API answers an empty list, never 404: one that does not is asked the tag after.
      if (response.status === 404 || response.status === 405 || response.status === 400) {
        this.#referrersApi = false;
        response = await fallback();
      } else if (response.status === 200) this.#referrersApi = true;
    }
    if (response.status === 404) return [];
    this.#expectOk(response, repository);
    const parsed = this.#parse(bodyJson(response.body), referrersSchema, repository, 'referrers list');
    // Those of the type asked for first; the others too (a registry may ignore the filter, and cosign's fallback
    // index names the empty config's type): the caller reads what each manifest holds.
    const all = parsed.manifests.map((m) => ({ digest: m.digest, artifactType: m.artifactType }));
    return [
      ...all.filter((m) => m.artifactType === artifactType),
      ...all.filter((m) => m.artifactType !== artifactType),
    ];
  }

  /**
   * The blob `digest` of `repository`, read into memory up to `maxBytes` (a larger one is refused before or while
   * it is read) and checked against its digest.
   */
  async blob(repository: string, digest: string, maxBytes: number): Promise<Buffer> {
    const url = this.#url(repository, `blobs/${digest}`);
    const response = await this.#request('GET', repository, url, undefined, maxBytes);
    if (response.status === 404)
      throw new StalledError(`blob ${digest} not found in ${this.#name(repository)}`);
    this.#expectOk(response, repository);
    this.#verify(response.body, digest, repository);
    return response.body;
  }

  /** Nothing of its own to close: connections belong to the one outbound client, which closes idle ones. */
  close(): void {}

  async #manifest(
    repository: string,
    digest: string,
  ): Promise<{ json: unknown; mediaType: string | undefined }> {
    const response = await this.#request(
      'GET',
      repository,
      this.#url(repository, `manifests/${digest}`),
      MANIFEST_ACCEPT,
    );
    if (response.status === 404)
      throw new StalledError(`manifest ${digest} not found in ${this.#name(repository)}`);
    this.#expectOk(response, repository);
    this.#verify(response.body, digest, repository);
    const json = bodyJson(response.body);
    const declared = (json as { mediaType?: unknown } | undefined)?.mediaType;
    const contentType = header(response.headers, 'content-type')?.split(';')[0]?.trim();
    return { json, mediaType: typeof declared === 'string' ? declared : contentType };
  }

  /** One registry request, answering an auth challenge once. Maps 401, 403, 429 and 5xx to errors. */
  async #request(
    method: Method,
    repository: string,
    url: URL,
    accept?: string,
    maxBytes?: number,
  ): Promise<HttpResponse> {
    const scope = `repository:${repository}:pull`;
    let authorization = await this.#auth.authorization(scope);
    let response = await this.#send(method, url, accept, authorization, maxBytes);
    if (response.status === 401) {
      // A challenge from where a redirect led (blob storage) would choose who gets the registry's credentials.
      if (response.url.origin !== this.#base.origin)
        throw new StalledError(
          `${this.#name(repository)}: ${safeUrl(response.url)}, where the registry redirected, asks for credentials; the registry's are sent only to the registry`,
        );
      authorization = await this.#auth.answer(response, scope, authorization);
      response = await this.#send(method, url, accept, authorization, maxBytes);
      if (response.status === 401) throw this.#auth.rejected(scope, repository);
    }
    if (response.status === 403)
      throw new StalledError(`access to ${this.#name(repository)} denied (HTTP 403)`);
    const now = this.#clock.now();
    if (response.status === 429) {
      // The pause holds what the registry said (src/sources/registry/rate-limit.ts); polls wait for it.
      const until = this.#pause.current?.until;
      const ms = until !== undefined ? until - now : DEFAULT_RETRY_AFTER_MS;
      throw new WaitingError(
        `rate limited by ${this.host} (HTTP 429); polls wait until ${new Date(now + ms).toISOString()}`,
        ms,
      );
    }
    if (response.status >= 500 || response.status === 408) {
      const message = `${this.host} answered HTTP ${response.status} for ${method} ${safeUrl(url)}`;
      const verdict = httpVerdict(response.status, (name) => header(response.headers, name), { now });
      if (verdict.kind === 'waiting') throw new WaitingError(message, verdict.delayMs);
      throw new TransientError(message);
    }
    return response;
  }

  async #send(
    method: Method,
    url: URL,
    accept: string | undefined,
    authorization: string | undefined,
    maxBytes = this.#maxBody,
  ) {
    await this.#bucket.take();
    this.#stats[method === 'HEAD' ? 'head' : 'get']++;
    const headers: Record<string, string> = {};
    if (accept !== undefined) headers.Accept = accept;
    if (authorization !== undefined) headers.Authorization = authorization;
    const response = await this.#http.send({ method, url, headers, maxBytes });
    const key = `${method} ${response.status}`;
    this.#byStatus.set(key, (this.#byStatus.get(key) ?? 0) + 1);
    const remaining = parseRateLimitRemaining(header(response.headers, 'ratelimit-remaining'));
    if (remaining !== undefined) this.#rateLimitRemaining = remaining;
    this.#pause.observe(response.status, (name) => header(response.headers, name));
    return response;
  }

  /** A 404 on a manifest: the repository's tag list tells a missing repository from a missing tag. */
  async #notFound(repository: string, what: string): Promise<StalledError> {
    const probe = await this.#request(
      'GET',
      repository,
      this.#url(repository, 'tags/list?n=1'),
      'application/json',
    );
    if (probe.status === 404) return this.#repositoryNotFound(repository);
    return new StalledError(`${what} not found in ${this.#name(repository)}`);
  }

  #repositoryNotFound(repository: string): StalledError {
    return new StalledError(`repository ${this.#name(repository)} not found`);
  }

  #expectOk(response: HttpResponse, repository: string): void {
    if (response.status === 200) return;
    const body = errorBodySchema.safeParse(bodyJson(response.body));
    const code = body.success && body.data.errors[0] ? ` (${body.data.errors[0].code})` : '';
    throw new StalledError(
      `${this.#name(repository)}: unexpected HTTP ${response.status}${code} for ${safeUrl(response.url)}`,
    );
  }

  #nextPage(response: HttpResponse, repository: string): URL | undefined {
    const link = header(response.headers, 'link');
    const target = link === undefined ? undefined : /<([^>]*)>[^,]*;\s*rel="?next"?/.exec(link)?.[1];
    if (target === undefined) return undefined;
    const next = new URL(target, response.url);
    // Our token goes with the request: a next page must stay on the registry.
    if (next.origin !== this.#base.origin) {
      throw new StalledError(`${this.#name(repository)}: tag list points to another host (${next.host})`);
    }
    return next;
  }

  #json<S extends z.ZodType>(
    response: HttpResponse,
    schema: S,
    repository: string,
    what: string,
  ): z.infer<S> {
    return this.#parse(bodyJson(response.body), schema, repository, what);
  }

  #parse<S extends z.ZodType>(json: unknown, schema: S, repository: string, what: string): z.infer<S> {
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const at = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
      throw new StalledError(`${this.#name(repository)}: the registry sent an invalid ${what}${at}`);
    }
    return parsed.data;
  }

  #verify(body: Buffer, digest: string, repository: string): void {
    if (sha256(body) !== digest) {
      // The digest's start first: the message may end in a 140-character commit status.
      throw new StalledError(
        `content of ${digest.slice(0, 19)} does not match its digest (${this.#name(repository)}@${digest})`,
      );
    }
  }

  #url(repository: string, rest: string): URL {
    return new URL(`${repository}/${rest}`, this.#base);
  }

  #name(repository: string): string {
    return `${this.host}/${repository}`;
  }
}

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}
