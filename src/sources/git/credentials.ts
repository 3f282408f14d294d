// Credentials of a Git source, read from their secret references at the moment they are needed (so a rotated
// Secret file is picked up by the next poll) and turned into HTTP basic auth for isomorphic-git.
//
// A token is sent as the basic-auth PASSWORD with a fixed, non-empty username (`x-access-token`). That form is
// accepted by GitHub (personal and fine-grained tokens ignore the username; installation tokens document
// `x-access-token`), GitLab (personal, project and group tokens accept any non-blank username) and Gitea
// (a token in the password field is looked up whatever the username). Servers that insist on a particular
// username (Bitbucket's `x-token-auth`, GitLab OAuth's `oauth2`) are served by giving `username` too: with a
// token it replaces the default. The `token`-as-username form (`password: x-oauth-basic`) is not used: GitLab
// refuses it.
import type { AuthCallback, GitAuth } from 'isomorphic-git';
import type { GitSource } from '../../config/schema.ts';
import { readSecret } from '../../config/secret.ts';
import { StalledError } from '../../errors.ts';
import { hostKeyRefusal, parseKnownHosts } from '../../http/known-hosts.ts';
import type { SshEndpoint } from '../../http/ssh-url.ts';

export const TOKEN_USERNAME = 'x-access-token';

export interface BasicCredentials {
  username: string;
  password: string;
}

/** The source's credentials, or undefined for an anonymous source. Throws StalledError for an unreadable secret. */
export async function gitCredentials(
  source: Pick<GitSource, 'credentials'>,
): Promise<BasicCredentials | undefined> {
  const refs = source.credentials;
  if (!refs) return undefined;
  const username =
    typeof refs.username === 'string'
      ? refs.username
      : refs.username
        ? await readSecret(refs.username)
        : undefined;
  if (refs.token) return { username: username || TOKEN_USERNAME, password: await readSecret(refs.token) };
  const password = refs.password ? await readSecret(refs.password) : undefined;
  if (username === undefined && password === undefined) return undefined;
  return { username: username ?? '', password: password ?? '' };
}

/**
 * isomorphic-git's `onAuth` for the source. It is called only after the server answered 401; callers that know
 * the server wants credentials send them up front with `authorizationHeader` and save that round trip.
 */
export async function gitAuth(source: Pick<GitSource, 'credentials'>): Promise<AuthCallback | undefined> {
  const credentials = await gitCredentials(source);
  if (!credentials) return undefined;
  const auth: GitAuth = { ...credentials };
  return () => auth;
}

/** The `Authorization` header value for basic credentials. */
export function authorizationHeader(credentials: BasicCredentials): string {
  const pair = `${credentials.username}:${credentials.password}`;
  return `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
}

/** What an SSH Git source connects with: the deploy key, and the check of the server's host key. */
export interface SshCredentials {
  privateKey: string;
  passphrase?: string | undefined;
  keyOrigin: string;
  verifyHost: (key: Buffer) => string | undefined;
}

type SecretRefLike = { env?: string | undefined; file?: string | undefined };

function origin(ref: SecretRefLike): string {
  return ref.file !== undefined ? `file ${ref.file}` : `environment variable ${ref.env}`;
}

/**
 * The first host key this process saw per `host:port`, for sources with trustFirstHostKey: kept for the process's
 * life, so that a key that changes afterwards is refused as a known_hosts entry would refuse it.
 */
const firstSeen = new Map<string, Buffer>();

/** The key, its passphrase and the host check of an SSH source, read now (a rotated Secret file is read again). */
export async function sshCredentials(
  source: Pick<GitSource, 'name' | 'credentials'>,
  endpoint: SshEndpoint,
): Promise<SshCredentials> {
  const refs = source.credentials;
  if (!refs?.sshKey)
    throw new StalledError(`Git source ${source.name} reaches its server over SSH: give credentials.sshKey`);
  const privateKey = await readSecret(refs.sshKey);
  const passphrase = refs.sshKeyPassphrase ? await readSecret(refs.sshKeyPassphrase) : undefined;
  const known = refs.knownHosts;
  let entries: ReturnType<typeof parseKnownHosts> = [];
  let where = `sources.git ${source.name} credentials.knownHosts`;
  if (typeof known === 'string') entries = parseKnownHosts(known, where);
  else if (known) {
    where = origin(known);
    entries = parseKnownHosts(await readSecret(known), where);
  }
  const trustFirst = refs.trustFirstHostKey === true;
  const verifyHost = (key: Buffer): string | undefined => {
    const refusal = hostKeyRefusal(entries, endpoint.host, endpoint.port, key, where);
    if (refusal === undefined) return undefined;
    // Only a host knownHosts does not name is trusted on first use; a listed host's other key is still refused.
    if (!trustFirst || refusal.reason !== 'unknown') return refusal.message;
    const id = `${endpoint.host.toLowerCase()}:${endpoint.port}`;
    const first = firstSeen.get(id);
    if (!first) {
      firstSeen.set(id, Buffer.from(key));
      return undefined;
    }
    return first.equals(key)
      ? undefined
      : `the host key of ${id} changed since this agent first trusted it (trustFirstHostKey); put the right key in credentials.knownHosts`;
  };
  return { privateKey, passphrase, keyOrigin: origin(refs.sshKey), verifyHost };
}
