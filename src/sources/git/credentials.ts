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
