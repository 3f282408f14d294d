// A Helm chart repository over HTTP(S): its index.yaml (every version of every chart, with the digest of each
// package) and the packages it lists. The index is untrusted input like a commit: read up to maxIndexBytes, parsed
// under the YAML limits (src/yaml/) in a worker thread when large, validated with zod, and a package is fetched only from the repository's own origin (an
// index that points elsewhere would make the agent fetch, with the repository's credentials, what its author
// chose). The index is asked for with its ETag, so a steady poll costs a 304.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { StalledError, TransientError, WaitingError } from '../../errors.ts';
import { httpVerdict } from '../../http/request.ts';
import { TokenBucket } from '../../http/token-bucket.ts';
import { yamlLimits } from '../../yaml/limits.ts';
import { parseYamlAllAsync } from '../../yaml/parse-async.ts';
import { type BasicCredentials, basicAuthorization } from '../registry/auth.ts';
import { type HttpResponse, HttpTransport, header, safeUrl } from '../registry/http.ts';

export interface ChartRepositoryOptions {
  /** The repository's base URL (index.yaml is under it). */
  url: string;
  credentials?: BasicCredentials | undefined;
  ca?: string | undefined;
  insecure?: boolean | undefined;
  requestsPerSecond?: number | undefined;
  timeoutMs?: number | undefined;
  maxIndexBytes: number;
  /** The most YAML nodes index.yaml may hold (it is one document); the other YAML limits are the configured ones. */
  maxIndexNodes?: number | undefined;
  /** Gives up every request under way, and refuses new ones, once aborted: the agent is stopping. */
  signal?: AbortSignal | undefined;
}

/** One version of a chart as the index lists it. */
export interface ChartEntry {
  version: string;
  /** `sha256:<hex>` of the package, when the index gives it (helm repo index always does). */
  digest: string | undefined;
  urls: string[];
}

const entrySchema = z.object({
  version: z.string().min(1).max(128),
  digest: z
    .string()
    .regex(/^[a-f0-9]{64}$/)
    .optional(),
  urls: z.array(z.string().max(2048)).max(16).default([]),
});
/** What of the index is read: each entry's version, digest and URLs. */
const INDEX_SHAPE = { entries: { '*': [{ version: true, digest: true, urls: true }] } } as const;

const indexSchema = z.object({
  entries: z.record(z.string(), z.array(z.unknown()).max(100_000)).nullish(),
});

export class ChartRepositoryClient {
  readonly #base: URL;
  readonly #http: HttpTransport;
  readonly #bucket: TokenBucket;
  readonly #options: ChartRepositoryOptions;
  readonly #byStatus = new Map<string, number>();
  #index: { etag: string; entries: Map<string, ChartEntry[]> } | undefined;

  constructor(options: ChartRepositoryOptions) {
    this.#options = options;
    this.#base = new URL(options.url.endsWith('/') ? options.url : `${options.url}/`);
    const rate = options.requestsPerSecond ?? 5;
    this.#bucket = new TokenBucket({ ratePerSecond: rate, burst: Math.max(1, rate) });
    this.#http = new HttpTransport({
      ca: options.ca,
      allowHttp: options.insecure === true,
      timeoutMs: options.timeoutMs ?? 30_000,
      signal: options.signal,
    });
  }

  get requestsByStatus(): ReadonlyMap<string, number> {
    return new Map(this.#byStatus);
  }

  /** As a registry client's (the metrics read both): a chart repository has no token service. */
  get stats(): { token: number } {
    return { token: 0 };
  }

  get rateLimitRemaining(): number | undefined {
    return undefined;
  }

  get notBefore(): undefined {
    return undefined;
  }

  /** The versions of `chart` the index lists (unsorted). */
  async versions(chart: string): Promise<ChartEntry[]> {
    const url = new URL('index.yaml', this.#base);
    const headers: Record<string, string> = { Accept: 'application/x-yaml, text/yaml, */*' };
    if (this.#index) headers['If-None-Match'] = this.#index.etag;
    const response = await this.#send(url, headers, this.#options.maxIndexBytes);
    if (response.status === 304 && this.#index) return this.#index.entries.get(chart) ?? [];
    if (response.status === 404)
      throw new StalledError(`chart repository ${safeUrl(this.#base)}: no index.yaml`);
    this.#expectOk(response, 'index.yaml');
    const entries = await this.#parseIndex(response.body);
    const etag = header(response.headers, 'etag');
    this.#index = etag ? { etag, entries } : undefined;
    return entries.get(chart) ?? [];
  }

  /** The package of one chart version: from the repository's own origin, checked against the index's digest. */
  async download(chart: string, entry: ChartEntry, digest: string, maxBytes: number): Promise<Buffer> {
    const first = entry.urls[0];
    if (first === undefined) throw new StalledError(`${this.#name(chart, entry)}: the index lists no URL`);
    let url: URL;
    try {
      url = new URL(first, this.#base);
    } catch {
      throw new StalledError(`${this.#name(chart, entry)}: the index lists an invalid URL`);
    }
    if (url.origin !== this.#base.origin)
      throw new StalledError(
        `${this.#name(chart, entry)}: the index points to ${url.origin}, outside the chart repository ${this.#base.origin}; packages are fetched only from the repository`,
      );
    const response = await this.#send(url, {}, maxBytes);
    if (response.status === 404)
      throw new StalledError(`${this.#name(chart, entry)}: ${safeUrl(url)} not found`);
    this.#expectOk(response, safeUrl(url));
    const actual = `sha256:${createHash('sha256').update(response.body).digest('hex')}`;
    if (actual !== digest)
      throw new StalledError(
        `${this.#name(chart, entry)}: the download's digest ${actual.slice(0, 19)} is not the expected ${digest.slice(0, 19)}`,
      );
    return response.body;
  }

  /** Nothing of its own to close: connections belong to the one outbound client, which closes idle ones. */
  close(): void {}

  #name(chart: string, entry: ChartEntry): string {
    return `chart ${chart} ${entry.version}`;
  }

  async #parseIndex(body: Buffer): Promise<Map<string, ChartEntry[]>> {
    let doc: unknown;
    const file = `chart repository ${safeUrl(this.#base)}: index.yaml`;
    try {
      // Parsed off the event loop when large, and only the fields read here cross back from the worker.
      [doc] = await parseYamlAllAsync(body, {
        file,
        uniqueKeys: false,
        limits: {
          ...yamlLimits(),
          maxNodes: this.#options.maxIndexNodes ?? 2_500_000,
          keys: { maxNodes: 'maxIndexNodes of the chart source' },
        },
        shape: INDEX_SHAPE,
      });
    } catch (error) {
      if (error instanceof StalledError) throw error;
      throw new StalledError(
        `chart repository ${safeUrl(this.#base)}: index.yaml is not valid YAML: ${(error as Error).message.split('\n')[0]}`,
      );
    }
    const index = indexSchema.safeParse(doc);
    if (!index.success)
      throw new StalledError(`chart repository ${safeUrl(this.#base)}: index.yaml has no valid "entries"`);
    const entries = new Map<string, ChartEntry[]>();
    for (const [chart, list] of Object.entries(index.data.entries ?? {})) {
      const valid: ChartEntry[] = [];
      // An entry the schema refuses is left out (as helm skips it), not the whole index.
      for (const item of list) {
        const entry = entrySchema.safeParse(item);
        if (entry.success)
          valid.push({
            version: entry.data.version,
            digest: entry.data.digest ? `sha256:${entry.data.digest}` : undefined,
            urls: entry.data.urls,
          });
      }
      entries.set(chart, valid);
    }
    return entries;
  }

  async #send(url: URL, headers: Record<string, string>, maxBytes: number): Promise<HttpResponse> {
    await this.#bucket.take();
    const credentials = this.#options.credentials;
    const all = credentials ? { ...headers, Authorization: basicAuthorization(credentials) } : headers;
    const response = await this.#http.send({ method: 'GET', url, headers: all, maxBytes });
    const key = `GET ${response.status}`;
    this.#byStatus.set(key, (this.#byStatus.get(key) ?? 0) + 1);
    return response;
  }

  #expectOk(response: HttpResponse, what: string): void {
    if (response.status === 200) return;
    const where = `chart repository ${safeUrl(this.#base)}`;
    if (response.status === 401 || response.status === 403)
      throw new StalledError(
        `${where}: access to ${what} denied (HTTP ${response.status}); check its credentials`,
      );
    const verdict = httpVerdict(response.status, (name) => header(response.headers, name), {
      now: Date.now(),
    });
    const message = `${where} answered HTTP ${response.status} for ${what}`;
    if (verdict.kind === 'waiting') throw new WaitingError(message, verdict.delayMs);
    if (verdict.kind === 'transient') throw new TransientError(message);
    throw new StalledError(message);
  }
}
