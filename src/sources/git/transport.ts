// The HTTP client isomorphic-git talks through: the one outbound client's fetch (src/http/fetch.ts; keep-alive
// connections, so a poll after the first costs no handshake) with a deadline for the whole operation and a bound on the bytes a server may send.
// isomorphic-git's own clients accept an AbortSignal per request but the library never passes one; this one
// injects it, so a server that stops answering mid-pack cannot hold a poll forever.
//
// It also asks for thin packs. isomorphic-git leaves `thin-pack` out of its fetch requests (canonical git cannot
// read the packs it would store; only isomorphic-git reads this cache, and it resolves external delta bases).
// Without it, git's upload-pack answers a shallow fetch (`deepen`) with every object of the new commit even when
// the client has the previous one: each poll after a one-file change would download the whole tree again.
//
// A server on a private CA (`caFile`) is reached through the same client trusting that CA besides the public roots
// (one Agent per CA, kept, so connections stay alive across polls).
//
// A fetch's upload-pack response can be handed to `uploadPack` on its way: the pack is then taken off to disk
// (pack-receive.ts) before isomorphic-git, which would hold all of it in memory, reads the rest.
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';
import { StalledError } from '../../errors.ts';
import { streamFetchFor } from '../../http/fetch.ts';
import { safeUrl } from './errors.ts';

export interface TransportOptions {
  signal: AbortSignal;
  /** Largest number of response bytes over the whole operation. */
  maxBytes: number;
  /** Told about each request (method and URL without credentials), e.g. for metrics. */
  onRequest?: ((method: string, url: string) => void) | undefined;
  /** PEM certificates trusted besides the public roots (the source's `caFile`, as read at start). */
  ca?: string | undefined;
  /**
   * Sends each request instead of the HTTP client: Git over SSH (ssh-transport.ts) answers the same requests by
   * running upload-pack on the server, and keeps every bound and check of this client.
   */
  send?: ((request: GitHttpRequest) => Promise<GitHttpResponse>) | undefined;
  /** Takes the body of each upload-pack response (a fetch's pack) before isomorphic-git reads it. */
  uploadPack?: ((body: AsyncIterableIterator<Uint8Array>) => AsyncIterableIterator<Uint8Array>) | undefined;
}

// The capabilities follow a NUL on the first ref line of the advertisement, well within this many bytes.
const ADVERTISEMENT_HEAD_BYTES = 64 * 1024;

export function boundedHttp(options: TransportOptions): HttpClient {
  let received = 0;
  let thinPackOffered = false;
  const send = options.send ?? requestOver(streamFetchFor(options.ca));
  const count = (url: string, chunk: Uint8Array): void => {
    received += chunk.byteLength;
    if (received > options.maxBytes) {
      throw new StalledError(
        `the server sent more than ${options.maxBytes} bytes (the transfer limit of a Git source)`,
        { subject: { describe: safeUrl(url) } },
      );
    }
  };
  return {
    async request(request: GitHttpRequest): Promise<GitHttpResponse> {
      options.signal.throwIfAborted();
      options.onRequest?.(request.method ?? 'GET', safeUrl(request.url));
      let bytes = request.body ? await collect(request.body) : undefined;
      if (bytes && thinPackOffered && new URL(request.url).pathname.endsWith('/git-upload-pack')) {
        bytes = withThinPack(bytes);
      }
      const response = await sendInOrigin(send, { ...request, signal: options.signal }, bytes);
      if (!response.body) return response;
      const advertisement = new URL(request.url).pathname.endsWith('/info/refs');
      let head = advertisement ? '' : undefined;
      const onChunk = (chunk: Uint8Array): void => {
        count(request.url, chunk);
        if (head === undefined || head.length >= ADVERTISEMENT_HEAD_BYTES) return;
        head += Buffer.from(chunk).toString('latin1');
        const nul = head.indexOf('\0');
        const end = nul === -1 ? -1 : head.indexOf('\n', nul);
        if (end !== -1) {
          thinPackOffered = head
            .slice(nul + 1, end)
            .split(' ')
            .includes('thin-pack');
          head = undefined;
        }
      };
      const received = observed(response.body, onChunk);
      const pack = options.uploadPack && new URL(request.url).pathname.endsWith('/git-upload-pack');
      return { ...response, body: pack && options.uploadPack ? options.uploadPack(received) : received };
    },
  };
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

/**
 * The request, following redirects only within its origin: the Git credentials go in every request, and what
 * answers is taken as the repository's refs. fetch drops Authorization on a redirect to another origin, but the
 * refs would still be the other host's choice; such a redirect is refused, naming both ends.
 */
async function sendInOrigin(
  send: (request: GitHttpRequest) => Promise<GitHttpResponse>,
  request: GitHttpRequest,
  body: Uint8Array | undefined,
): Promise<GitHttpResponse> {
  let url = request.url;
  for (let hop = 0; ; hop++) {
    const response = await send({
      ...request,
      url,
      ...(body ? { body: single(body) } : {}),
      fetchOptions: { redirect: 'manual' },
    });
    const location = response.headers?.location;
    if (!REDIRECTS.has(response.statusCode) || location === undefined) return response;
    const next = new URL(location, url);
    const origin = new URL(url).origin;
    if (next.origin !== origin)
      throw new StalledError(
        `${request.method ?? 'GET'} ${safeUrl(url)} was redirected to ${safeUrl(next.href)}, outside its origin ${origin}; redirects are followed only within the origin`,
      );
    if (hop >= MAX_REDIRECTS)
      throw new StalledError(`${safeUrl(request.url)}: more than ${MAX_REDIRECTS} redirects`);
    url = next.href;
  }
}

/** The upload-pack request with `thin-pack` added to the capabilities on its first `want` line. */
export function withThinPack(request: Uint8Array): Uint8Array {
  const buffer = Buffer.from(request);
  const length = Number.parseInt(buffer.subarray(0, 4).toString('latin1'), 16);
  if (!Number.isInteger(length) || length < 4 || length > buffer.length) return request;
  const line = buffer.subarray(4, length).toString('latin1');
  if (!line.startsWith('want ') || line.split(/[ \n]/).includes('thin-pack')) return request;
  const changed = line.endsWith('\n') ? `${line.slice(0, -1)} thin-pack\n` : `${line} thin-pack`;
  const header = (changed.length + 4).toString(16).padStart(4, '0');
  return Buffer.concat([Buffer.from(header + changed, 'latin1'), buffer.subarray(length)]);
}

async function collect(body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function* single(chunk: Uint8Array): AsyncIterableIterator<Uint8Array> {
  yield chunk;
}

async function* observed(
  body: AsyncIterableIterator<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
): AsyncIterableIterator<Uint8Array> {
  for await (const chunk of body) {
    onChunk(chunk);
    yield chunk;
  }
}

/** isomorphic-git's request over the one outbound client (src/http/fetch.ts), its answer's body read as chunks. */
function requestOver(
  trusted: ReturnType<typeof streamFetchFor>,
): (request: GitHttpRequest) => Promise<GitHttpResponse> {
  return async (request) => {
    const method = request.method ?? 'GET';
    const response = await trusted(request.url, {
      method,
      headers: request.headers ?? {},
      ...(request.fetchOptions?.redirect ? { redirect: request.fetchOptions.redirect } : {}),
      ...(request.body ? { body: await collect(request.body) } : {}),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    const headers: Record<string, string> = {};
    response.headers.forEach((value, key) => {
      headers[key] = value;
    });
    return {
      url: request.url,
      method,
      statusCode: response.status,
      statusMessage: response.statusText,
      headers,
      ...(response.body ? { body: response.body[Symbol.asyncIterator]() } : {}),
    };
  };
}
