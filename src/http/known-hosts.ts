// The host keys an SSH Git source trusts, in OpenSSH's known_hosts format (what `ssh-keyscan` prints and every
// forge documents): `host[,host…] key-type base64-key [comment]`, `[host]:port` for another port than 22, hashed
// names (`|1|salt|hash`, HashKnownHosts), `*`/`?` patterns and `!` negations, and the `@revoked` marker. A server
// is trusted only when an entry for its name and port holds the exact key it offered; a revoked key is refused
// even when another line lists it. `@cert-authority` lines are not supported: they are skipped, and a host known
// only through one is unknown (the message says so).
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { StalledError } from '../errors.ts';

export interface KnownHost {
  /** 1-based line in the file, for messages. */
  line: number;
  marker?: 'revoked' | 'cert-authority' | undefined;
  /** The host patterns (comma-separated in the file), or one hashed name. */
  patterns: string[];
  hashed?: { salt: Buffer; hash: Buffer } | undefined;
  keyType: string;
  key: Buffer;
}

/** Parses known_hosts text; a malformed line is refused naming `origin` and its line. */
export function parseKnownHosts(text: string, origin: string): KnownHost[] {
  const entries: KnownHost[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    let marker: KnownHost['marker'];
    if (fields[0]?.startsWith('@')) {
      const word = fields.shift();
      if (word === '@revoked') marker = 'revoked';
      else if (word === '@cert-authority') marker = 'cert-authority';
      else throw new StalledError(`${origin}:${i + 1}: unknown marker ${JSON.stringify(word?.slice(0, 40))}`);
    }
    const [hosts, keyType, base64] = fields;
    if (!hosts || !keyType || !base64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) {
      throw new StalledError(
        `${origin}:${i + 1}: not a known_hosts line (host key-type base64-key); ssh-keyscan prints them`,
      );
    }
    const key = Buffer.from(base64, 'base64');
    // The key's blob names its own type first: a line whose type and blob disagree is a copy-paste mistake.
    if (blobType(key) !== keyType) {
      throw new StalledError(`${origin}:${i + 1}: the key is not of the type ${keyType} the line names`);
    }
    const entry: KnownHost = { line: i + 1, marker, patterns: [], keyType, key };
    if (hosts.startsWith('|1|')) {
      const [, , salt, hash] = hosts.split('|');
      if (!salt || !hash) throw new StalledError(`${origin}:${i + 1}: a hashed host name is malformed`);
      entry.hashed = { salt: Buffer.from(salt, 'base64'), hash: Buffer.from(hash, 'base64') };
    } else entry.patterns = hosts.split(',').filter((p) => p !== '');
    entries.push(entry);
  }
  return entries;
}

/** The name known_hosts files give a server: `host`, or `[host]:port` for another port than 22. */
export function knownHostName(host: string, port: number): string {
  return port === 22 ? host.toLowerCase() : `[${host.toLowerCase()}]:${port}`;
}

/** Whether the entry is for this host and port (patterns as OpenSSH matches them: any positive, no negated). */
export function entryMatches(entry: KnownHost, host: string, port: number): boolean {
  const name = knownHostName(host, port);
  if (entry.hashed) {
    const mac = createHmac('sha1', entry.hashed.salt).update(name).digest();
    return mac.length === entry.hashed.hash.length && timingSafeEqual(mac, entry.hashed.hash);
  }
  let matched = false;
  for (const pattern of entry.patterns) {
    const negated = pattern.startsWith('!');
    if (globMatch(negated ? pattern.slice(1) : pattern, name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

function globMatch(pattern: string, name: string): boolean {
  const source = pattern
    .toLowerCase()
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, 's').test(name);
}

/** OpenSSH's fingerprint of a key blob: `SHA256:` and the unpadded base64 of its SHA-256. */
export function fingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

/** The key type a public key blob names (its first SSH string). */
export function blobType(key: Buffer): string | undefined {
  if (key.length < 4) return undefined;
  const length = key.readUInt32BE(0);
  if (length > 64 || key.length < 4 + length) return undefined;
  return key.subarray(4, 4 + length).toString('latin1');
}

/**
 * Undefined when `key` is a trusted key of the server, else why not: the server's name and port, the type and
 * fingerprint of what it offered, and what the entries for it hold, so that the operator can compare fingerprints.
 */
export interface HostKeyRefusal {
  /** `unknown`: no entry names the host; `changed`: entries name it with other keys; `revoked`: an @revoked key. */
  reason: 'unknown' | 'changed' | 'revoked';
  message: string;
}

export function hostKeyRefusal(
  entries: readonly KnownHost[],
  host: string,
  port: number,
  key: Buffer,
  origin: string,
): HostKeyRefusal | undefined {
  const offered = `${blobType(key) ?? 'unknown type'} ${fingerprint(key)}`;
  const name = knownHostName(host, port);
  const revoked = entries.find((e) => e.marker === 'revoked' && e.key.equals(key));
  if (revoked)
    return {
      reason: 'revoked',
      message: `the host key of ${name} (${offered}) is revoked in ${origin}:${revoked.line}`,
    };
  const forHost = entries.filter((e) => e.marker === undefined && entryMatches(e, host, port));
  if (forHost.some((e) => e.key.equals(key))) return undefined;
  if (forHost.length === 0) {
    const viaCa = entries.some((e) => e.marker === 'cert-authority' && entryMatches(e, host, port));
    return {
      reason: 'unknown',
      message: `the host ${name} is not in ${origin} (it offered ${offered})${viaCa ? '; @cert-authority lines are not supported' : ''}: add its key (ssh-keyscan${port === 22 ? '' : ` -p ${port}`} ${host}), after checking the fingerprint with the server's owner`,
    };
  }
  const known = forHost.map((e) => `${e.keyType} ${fingerprint(e.key)} (line ${e.line})`).join(', ');
  return {
    reason: 'changed',
    message: `the host key of ${name} does not match ${origin}: it offered ${offered}, ${origin} holds ${known}. The server's key changed, or something between is not the server`,
  };
}
