// Where a Git source reached over SSH lives: `ssh://[user@]host[:port]/path` or git's scp-like form
// `[user@]host:path`. Parsed here once, for the transport (ssh-transport.ts), the configuration's checks and
// messages. The path is handed to the server's `git-upload-pack` quoted as git quotes it, never through a local
// shell, and a host or user that could read as an option (`-oProxyCommand=…`, CVE-2017-1000117) is refused anyway.

export interface SshEndpoint {
  /** The login name: the URL's, else `git` (what every forge's deploy keys use). */
  user: string;
  host: string;
  port: number;
  /** As git sends it: absolute for ssh:// URLs, relative to the login's home for the scp-like form. */
  path: string;
}

// `user@host:path` without a scheme; a `//` after the colon would make it a URL, a `/` before it a local path.
const SCP_LIKE = /^(?:([^@/:]+)@)?([^@/:[\]]+|\[[0-9A-Fa-f:.]+\]):(?!\/\/)(.+)$/s;
const SSH_URL = /^ssh:\/\/(?:([^@/:]+)@)?([^@/:[\]]+|\[[0-9A-Fa-f:.]+\])(?::(\d*))?(\/.*)$/is;
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_][A-Za-z0-9._-]*)$/;
const USER = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/** Whether the URL is one of the two SSH forms (it may still be refused by `parseSshUrl`). */
export function isSshUrl(url: string): boolean {
  if (/^ssh:\/\//i.test(url)) return true;
  return !url.includes('://') && SCP_LIKE.test(url);
}

/** The endpoint, or why the URL is refused (naming what is wrong, never quoting more than the URL). */
export function parseSshUrl(url: string): SshEndpoint | string {
  if (/[\s\p{Cc}]/u.test(url)) return 'holds a space or control character';
  let user: string | undefined;
  let host: string;
  let port = 22;
  let path: string;
  const full = SSH_URL.exec(url);
  if (full) {
    user = full[1];
    host = full[2] ?? '';
    if (full[3] !== undefined && full[3] !== '') port = Number(full[3]);
    // `ssh://host/~user/repo` names a path in a home folder, as git reads it.
    path = (full[4] ?? '').startsWith('/~') ? (full[4] ?? '').slice(1) : (full[4] ?? '');
  } else if (/^ssh:\/\//i.test(url)) {
    return 'is not of the form ssh://[user@]host[:port]/path (a password has no place in it)';
  } else {
    const scp = url.includes('://') ? null : SCP_LIKE.exec(url);
    if (!scp) return 'is not of the form ssh://[user@]host[:port]/path or [user@]host:path';
    user = scp[1];
    host = scp[2] ?? '';
    path = scp[3] ?? '';
  }
  if (!HOST.test(host)) return 'has no valid host';
  if (host.startsWith('[')) host = host.slice(1, -1);
  if (user !== undefined && !USER.test(user)) return 'has a user name that is not a plain login name';
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return 'has an invalid port';
  if (path === '' || path === '/') return 'has no repository path';
  if (path.startsWith('-')) return 'has a path that starts with "-"';
  return { user: user ?? 'git', host, port, path };
}

/** `git-upload-pack '<path>'`, quoted as git quotes it (sq_quote_buf: `'` and `!` stepped out of the quotes). */
export function uploadPackCommand(path: string): string {
  return `git-upload-pack '${path.replace(/['!]/g, (c) => `'\\${c}'`)}'`;
}

/** The URL as messages show it, in the form it was written: the user is a login name, not a secret, so it is kept. */
export function describeSshEndpoint(endpoint: SshEndpoint): string {
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
  if (!endpoint.path.startsWith('/') && endpoint.port === 22)
    return `${endpoint.user}@${host}:${endpoint.path}`;
  const path = endpoint.path.startsWith('/') ? endpoint.path : `/${endpoint.path}`;
  return `ssh://${endpoint.user}@${host}${endpoint.port === 22 ? '' : `:${endpoint.port}`}${path}`;
}
