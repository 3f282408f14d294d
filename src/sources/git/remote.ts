// Talking to a Git server: the ref advertisement (one GET) and shallow fetches into the cache repository. Each
// call runs under the source's timeout and transfer bound, sends the credentials up front, and turns failures
// into the error taxonomy with the URL stripped of credentials.
import * as fs from 'node:fs';
import git, { type HttpClient } from 'isomorphic-git';
import type { GitSource } from '../../config/schema.ts';
import { authorizationHeader, gitCredentials } from './credentials.ts';
import { gitNetworkError } from './errors.ts';
import type { ServerRef } from './refs.ts';
import { packOrderedFs } from './store-fs.ts';
import { boundedHttp } from './transport.ts';

export interface RemoteOptions {
  maxTransferBytes: number;
  onRequest?: ((method: string, url: string) => void) | undefined;
  /** The source's private CA (caFile), read when the repository was opened. */
  ca?: string | undefined;
}

// isomorphic-git records a fetched branch under refs/remotes/ and refuses to fetch without a refspec for it.
const FETCH_REFSPEC = '+refs/heads/*:refs/remotes/origin/*';

/** The refs under `prefix`, annotated tags with the commit they point at. */
export function listRefs(source: GitSource, prefix: string, options: RemoteOptions): Promise<ServerRef[]> {
  // Protocol v1 answers in one round trip (v2 needs a second request for ls-refs); the price is that the
  // server lists every ref and the prefix is applied here.
  return withRemote(source, options, (http, headers) =>
    git.listServerRefs({ http, url: source.url, headers, protocolVersion: 1, prefix, peelTags: true }),
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
  await withRemote(source, options, (http, headers) =>
    git.fetch({
      // Packs seen oldest first: a fetch resolves the new pack's external bases from them (pack-order.ts).
      fs: packOrderedFs(),
      http,
      gitdir: request.gitdir,
      url: source.url,
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

/** Creates the bare cache repository unless it exists. */
export async function initCache(gitdir: string): Promise<void> {
  await fs.promises.mkdir(gitdir, { recursive: true });
  await git.init({ fs, gitdir, bare: true });
  await git.setConfig({ fs, gitdir, path: 'remote.origin.fetch', value: FETCH_REFSPEC });
}

export async function pointRef(gitdir: string, ref: string, commit: string): Promise<void> {
  await git.writeRef({ fs, gitdir, ref, value: commit, force: true });
}

async function withRemote<T>(
  source: GitSource,
  options: RemoteOptions,
  run: (http: HttpClient, headers: Record<string, string>) => Promise<T>,
): Promise<T> {
  const credentials = await gitCredentials(source);
  const signal = AbortSignal.timeout(source.timeout);
  const http = boundedHttp({
    signal,
    maxBytes: options.maxTransferBytes,
    onRequest: options.onRequest,
    ca: options.ca,
  });
  // Sent up front: isomorphic-git would otherwise send credentials only after a 401, a wasted round trip.
  const headers: Record<string, string> = credentials
    ? { Authorization: authorizationHeader(credentials) }
    : {};
  try {
    return await run(http, headers);
  } catch (error) {
    throw gitNetworkError(error, { url: source.url, timeoutMs: source.timeout, timedOut: signal.aborted });
  }
}
