// Talking to a Git server: the ref advertisement (one GET) and shallow fetches into the cache repository. Each
// call runs under the source's timeout and transfer bound, sends the credentials up front, and turns failures
// into the error taxonomy with the URL stripped of credentials. A fetch's pack goes to disk as it arrives and is
// indexed here in bounded memory (pack-receive.ts, pack-index.ts), not by isomorphic-git.
import * as fs from 'node:fs';
import { join } from 'node:path';
import git, { type HttpClient } from 'isomorphic-git';
import type { GitSource } from '../../config/schema.ts';
import { StalledError, TransientError } from '../../errors.ts';
import { isSshUrl, parseSshUrl } from '../../http/ssh-url.ts';
import { linkSignals } from '../../signals.ts';
import { authorizationHeader, gitCredentials, sshCredentials } from './credentials.ts';
import { gitNetworkError, safeUrl } from './errors.ts';
import { readObject } from './object-read.ts';
import { objectSize } from './object-size.ts';
import { TYPE_CODES } from './pack-header.ts';
import { encodeIndex } from './pack-idx.ts';
import { indexPack } from './pack-index.ts';
import { installPack, PackReceiver } from './pack-receive.ts';
import type { ServerRef } from './refs.ts';
import type { SshTransport } from './ssh-transport.ts';
import { packOrderedFs } from './store-fs.ts';
import { boundedHttp } from './transport.ts';

export interface RemoteOptions {
  maxTransferBytes: number;
  /** Takes a fetch's upload-pack response on its way to isomorphic-git (transport.ts). */
  uploadPack?: ((body: AsyncIterableIterator<Uint8Array>) => AsyncIterableIterator<Uint8Array>) | undefined;
  onRequest?: ((method: string, url: string) => void) | undefined;
  /** The source's private CA (caFile), read when the repository was opened. */
  ca?: string | undefined;
  /** Gives up every operation under way, and refuses new ones, once aborted: the agent is stopping. */
  stop?: AbortSignal | undefined;
}

/** The signal of one operation: the source's timeout, or the agent's stop; `release` once it has ended. */
function operationSignal(
  source: GitSource,
  options: RemoteOptions,
): { timeout: AbortSignal; signal: AbortSignal; release: () => void } {
  const timeout = AbortSignal.timeout(source.timeout);
  return { timeout, ...linkSignals(timeout, options.stop) };
}

/** The error of an operation that failed: given up at the agent's stop, or the network's (remote errors.ts). */
function operationError(
  source: GitSource,
  options: RemoteOptions,
  timeout: AbortSignal,
  error: unknown,
): Error {
  if (options.stop?.aborted && !timeout.aborted)
    return new TransientError(`Git source ${source.name}: given up: the agent is stopping`, { cause: error });
  return gitNetworkError(error, { url: source.url, timeoutMs: source.timeout, timedOut: timeout.aborted });
}

// isomorphic-git records a fetched branch under refs/remotes/ and refuses to fetch without a refspec for it.
const FETCH_REFSPEC = '+refs/heads/*:refs/remotes/origin/*';

/** The refs under `prefix`, annotated tags with the commit they point at. */
export function listRefs(source: GitSource, prefix: string, options: RemoteOptions): Promise<ServerRef[]> {
  // Protocol v1 answers in one round trip (v2 needs a second request for ls-refs); the price is that the
  // server lists every ref and the prefix is applied here.
  return withRemote(source, options, (http, headers, url) =>
    git.listServerRefs({ http, url, headers, protocolVersion: 1, prefix, peelTags: true }),
  );
}

export interface FetchRequest {
  /** The bare cache repository. */
  gitdir: string;
  /** What is wanted: a full ref name on the server, or a commit id. */
  want: string;
  /** A local ref whose commit is offered as a `have`, so that only what changed since is sent. */
  have: string;
  depth: number;
}

export async function fetchInto(
  source: GitSource,
  request: FetchRequest,
  options: RemoteOptions,
): Promise<void> {
  const folder = join(request.gitdir, 'objects/pack');
  await fs.promises.mkdir(folder, { recursive: true });
  const receiver = new PackReceiver(folder);
  try {
    await fetchNegotiated(source, request, { ...options, uploadPack: (body) => receiver.filter(body) });
    const pack = await receiver.finish();
    if (pack) await indexReceived(source, request.gitdir, folder, pack.path, pack.sha, pack.trailer);
  } finally {
    await receiver.discard();
  }
}

/** Indexes a received pack (thin-pack bases read from the cache, each checked by size first) and installs it. */
async function indexReceived(
  source: GitSource,
  gitdir: string,
  folder: string,
  path: string,
  sha: string,
  trailer: string,
): Promise<void> {
  const subject = { describe: safeUrl(source.url) };
  if (sha !== trailer)
    throw new TransientError('the fetched pack is corrupt (its checksum does not match)', { subject });
  const store = { gitdir, cache: {} };
  const external = async (oid: string) => {
    const size = await objectSize(store, oid);
    if (size === undefined || size > source.maxObjectBytes) return undefined;
    const { type, data } = await readObject(store, oid, source.maxObjectBytes);
    return { type: TYPE_CODES[type], data };
  };
  let indexed: Awaited<ReturnType<typeof indexPack>>;
  try {
    indexed = await indexPack(path, { maxObjectBytes: source.maxObjectBytes, external });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new TransientError(`the fetched pack cannot be indexed (${reason})`, { subject, cause: error });
  }
  // A pack of no objects (or of none within the limit) brings nothing to read, and isomorphic-git would hang on one.
  if (indexed.entries.length === 0) return;
  await installPack(folder, path, encodeIndex(indexed.entries, indexed.packSha), sha);
}

function fetchNegotiated(source: GitSource, request: FetchRequest, options: RemoteOptions): Promise<unknown> {
  return withRemote(source, options, (http, headers, url) =>
    git.fetch({
      // Packs seen oldest first: a fetch resolves the new pack's external bases from them (pack-order.ts).
      fs: packOrderedFs(),
      http,
      gitdir: request.gitdir,
      url,
      // isomorphic-git offers the commit of `ref` as its only `have` and wants `remoteRef`.
      ref: request.have,
      remoteRef: request.want,
      depth: request.depth,
      singleBranch: true,
      tags: false,
      headers,
    }),
  );
}

/** The cache repository's whole configuration: git's for a bare repository, and the one fetch refspec. */
const CACHE_CONFIG = [
  '[core]',
  '\trepositoryformatversion = 0',
  '\tfilemode = false',
  '\tbare = true',
  '\tsymlinks = false',
  '\tignorecase = true',
  '[remote "origin"]',
  `\tfetch = ${FETCH_REFSPEC}`,
  '',
].join('\n');

/**
 * Creates the bare cache repository unless it exists, and gives it its configuration unless it has it. The
 * configuration is written whole under another name and renamed into place, so that it is never seen half written
 * (isomorphic-git rewrites a config in place: a crash or a second writer could leave a refspec cut short, after
 * which every fetch fails with "Invalid refspec"); one found otherwise (such a leftover) is written again. Callers
 * hold the cache's lock (lock.ts).
 */
export async function initCache(gitdir: string): Promise<void> {
  await fs.promises.mkdir(gitdir, { recursive: true });
  // Folders and HEAD of a new repository; an existing configuration is left to the check below.
  await git.init({ fs, gitdir, bare: true });
  const file = join(gitdir, 'config');
  const lines = (text: string) =>
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '')
      .sort()
      .join('\n');
  const now = await fs.promises.readFile(file, 'utf8').catch(() => '');
  if (lines(now) === lines(CACHE_CONFIG)) return;
  const temporary = `${file}.${process.pid}.${Date.now().toString(36)}.tmp`;
  await fs.promises.writeFile(temporary, CACHE_CONFIG);
  await fs.promises.rename(temporary, file);
}

export async function pointRef(gitdir: string, ref: string, commit: string): Promise<void> {
  await git.writeRef({ fs, gitdir, ref, value: commit, force: true });
}

async function withRemote<T>(
  source: GitSource,
  options: RemoteOptions,
  run: (http: HttpClient, headers: Record<string, string>, url: string) => Promise<T>,
): Promise<T> {
  if (isSshUrl(source.url)) return withSshRemote(source, options, run);
  const credentials = await gitCredentials(source);
  const { timeout, signal, release } = operationSignal(source, options);
  const http = boundedHttp({
    signal,
    maxBytes: options.maxTransferBytes,
    onRequest: options.onRequest,
    ca: options.ca,
    uploadPack: options.uploadPack,
  });
  // Sent up front: isomorphic-git would otherwise send credentials only after a 401, a wasted round trip.
  const headers: Record<string, string> = credentials
    ? { Authorization: authorizationHeader(credentials) }
    : {};
  try {
    return await run(http, headers, source.url);
  } catch (error) {
    throw operationError(source, options, timeout, error);
  } finally {
    release();
  }
}

/**
 * The same conversation over SSH (ssh-transport.ts): isomorphic-git's requests go through the same bounded client,
 * which hands them to upload-pack on the server instead of an HTTP server. One connection per operation.
 */
async function withSshRemote<T>(
  source: GitSource,
  options: RemoteOptions,
  run: (http: HttpClient, headers: Record<string, string>, url: string) => Promise<T>,
): Promise<T> {
  const endpoint = parseSshUrl(source.url);
  if (typeof endpoint === 'string')
    throw new StalledError(`the URL of Git source ${source.name} ${endpoint}`);
  const credentials = await sshCredentials(source, endpoint);
  const { timeout, signal, release } = operationSignal(source, options);
  let transport: SshTransport | undefined;
  try {
    // Loaded by the first SSH source: ssh2 and its WebAssembly cost an agent of HTTPS sources nothing.
    const { SSH_PLACEHOLDER_URL, sshTransport } = await import('./ssh-transport.ts');
    transport = sshTransport({
      endpoint,
      ...credentials,
      signal,
      maxBytes: options.maxTransferBytes,
    });
    const http = boundedHttp({
      signal,
      maxBytes: options.maxTransferBytes,
      onRequest:
        options.onRequest &&
        ((method, url) => options.onRequest?.(method, url.replace(SSH_PLACEHOLDER_URL, safeUrl(source.url)))),
      uploadPack: options.uploadPack,
      send: transport.send,
    });
    return await run(http, {}, SSH_PLACEHOLDER_URL);
  } catch (error) {
    throw operationError(source, options, timeout, error);
  } finally {
    transport?.close();
    release();
  }
}
