// The pieces of Git over SSH that need no server: the two URL forms, the quoting of the path git-upload-pack is
// given, known_hosts matching (patterns, ports, hashed names, negation, revoked keys) and its messages, the
// pkt-line scanner that finds the end of an advertisement however the bytes are cut, and the configuration's
// refusals. The transport itself is tested against OpenSSH's sshd on the test bed (test/integration/git-ssh.test.ts).
import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { gitSource } from '../../../src/config/schema.ts';
import { fingerprint, hostKeyRefusal, parseKnownHosts } from '../../../src/http/known-hosts.ts';
import { describeSshEndpoint, isSshUrl, parseSshUrl, uploadPackCommand } from '../../../src/http/ssh-url.ts';
import { safeUrl } from '../../../src/sources/git/errors.ts';
import { PktScanner } from '../../../src/sources/git/ssh-transport.ts';

/** An ed25519 public key blob, as a known_hosts line holds it (base64). */
function ed25519Blob(): Buffer {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const type = Buffer.from('ssh-ed25519');
  const len = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  return Buffer.concat([len(type.length), type, len(raw.length), raw]);
}

describe('ssh URLs', () => {
  it('reads ssh:// and scp-like URLs as git does', () => {
    expect(parseSshUrl('ssh://git@git.example.com/team/app.git')).toEqual({
      user: 'git',
      host: 'git.example.com',
      port: 22,
      path: '/team/app.git',
    });
    expect(parseSshUrl('ssh://deploy@git.example.com:2222/team/app.git')).toMatchObject({
      user: 'deploy',
      port: 2222,
    });
    expect(parseSshUrl('ssh://git.example.com/~alice/app.git')).toMatchObject({
      user: 'git',
      path: '~alice/app.git',
    });
    expect(parseSshUrl('git@github.com:org/repo.git')).toEqual({
      user: 'git',
      host: 'github.com',
      port: 22,
      path: 'org/repo.git',
    });
    expect(parseSshUrl('ssh://git@[::1]:2200/r.git')).toMatchObject({ host: '::1', port: 2200 });
    expect(isSshUrl('https://github.com/org/repo.git')).toBe(false);
    expect(isSshUrl('git@github.com:org/repo.git')).toBe(true);
  });

  it('refuses what could be read as an option or holds a password', () => {
    expect(parseSshUrl('ssh://-oProxyCommand=touch%20x/r.git')).toEqual(expect.any(String));
    expect(parseSshUrl('-oProxyCommand=x@host:r.git')).toEqual(expect.any(String));
    expect(parseSshUrl('git@host:-u/evil')).toBe('has a path that starts with "-"');
    expect(parseSshUrl('ssh://git:secret@host/r.git')).toContain('a password has no place in it');
    expect(parseSshUrl('ssh://git@host/')).toBe('has no repository path');
    expect(parseSshUrl('git@host:a\nb')).toBe('holds a space or control character');
  });

  it("quotes the path as git's sq_quote does", () => {
    expect(uploadPackCommand('/srv/app.git')).toBe("git-upload-pack '/srv/app.git'");
    expect(uploadPackCommand("it's!.git")).toBe("git-upload-pack 'it'\\''s'\\!'.git'");
    expect(uploadPackCommand("x'; rm -rf /; '")).toBe("git-upload-pack 'x'\\''; rm -rf /; '\\'''");
  });

  it('shows the URL in the form it was written, never with more than a login name', () => {
    expect(describeSshEndpoint(parseSshUrl('git@github.com:org/repo.git') as never)).toBe(
      'git@github.com:org/repo.git',
    );
    expect(safeUrl('ssh://git@host:2222/srv/r.git')).toBe('ssh://git@host:2222/srv/r.git');
    expect(safeUrl('ssh://git:pw@host/r.git')).toBe('<invalid url>');
  });
});

describe('known_hosts', () => {
  const key = ed25519Blob();
  const other = ed25519Blob();
  const b64 = key.toString('base64');

  it('trusts a host whose entry holds the key offered, by name and port', () => {
    const entries = parseKnownHosts(`# a comment\ngit.example.com,10.0.0.1 ssh-ed25519 ${b64}\n`, 'kh');
    expect(hostKeyRefusal(entries, 'git.example.com', 22, key, 'kh')).toBeUndefined();
    expect(hostKeyRefusal(entries, 'GIT.example.com', 22, key, 'kh')).toBeUndefined();
    // Another port is another host to ssh: `[host]:port`.
    expect(hostKeyRefusal(entries, 'git.example.com', 2222, key, 'kh')?.reason).toBe('unknown');
    const ported = parseKnownHosts(`[git.example.com]:2222 ssh-ed25519 ${b64}`, 'kh');
    expect(hostKeyRefusal(ported, 'git.example.com', 2222, key, 'kh')).toBeUndefined();
  });

  it('names both fingerprints when the key differs, and the fix when the host is unknown', () => {
    const entries = parseKnownHosts(`git.example.com ssh-ed25519 ${other.toString('base64')}`, 'file kh');
    const changed = hostKeyRefusal(entries, 'git.example.com', 22, key, 'file kh');
    expect(changed?.reason).toBe('changed');
    expect(changed?.message).toContain(`it offered ssh-ed25519 ${fingerprint(key)}`);
    expect(changed?.message).toContain(`holds ssh-ed25519 ${fingerprint(other)} (line 1)`);
    const unknown = hostKeyRefusal(entries, 'other.example.com', 2200, key, 'file kh');
    expect(unknown?.message).toContain('ssh-keyscan -p 2200 other.example.com');
  });

  it('matches hashed names, patterns and negations as OpenSSH does', () => {
    const salt = randomBytes(20);
    const hash = createHmac('sha1', salt).update('[git.example.com]:2222').digest();
    const hashed = parseKnownHosts(
      `|1|${salt.toString('base64')}|${hash.toString('base64')} ssh-ed25519 ${b64}`,
      'kh',
    );
    expect(hostKeyRefusal(hashed, 'git.example.com', 2222, key, 'kh')).toBeUndefined();
    expect(hostKeyRefusal(hashed, 'git.example.com', 22, key, 'kh')?.reason).toBe('unknown');
    const patterns = parseKnownHosts(`*.example.com,!evil.example.com ssh-ed25519 ${b64}`, 'kh');
    expect(hostKeyRefusal(patterns, 'git.example.com', 22, key, 'kh')).toBeUndefined();
    expect(hostKeyRefusal(patterns, 'evil.example.com', 22, key, 'kh')?.reason).toBe('unknown');
  });

  it('refuses a revoked key even where another line trusts it', () => {
    const entries = parseKnownHosts(
      `git.example.com ssh-ed25519 ${b64}\n@revoked * ssh-ed25519 ${b64}\n`,
      'kh',
    );
    expect(hostKeyRefusal(entries, 'git.example.com', 22, key, 'kh')).toMatchObject({
      reason: 'revoked',
      message: expect.stringContaining('kh:2'),
    });
  });

  it('refuses a malformed line by its number', () => {
    expect(() => parseKnownHosts('\n\ngit.example.com ssh-ed25519\n', 'file kh')).toThrow(
      /^file kh:3: not a known_hosts line/,
    );
    expect(() => parseKnownHosts(`git.example.com ssh-rsa ${b64}`, 'kh')).toThrow(
      /kh:1: the key is not of the type ssh-rsa/,
    );
    expect(() => parseKnownHosts(`@bogus h ssh-ed25519 ${b64}`, 'kh')).toThrow(/kh:1: unknown marker/);
  });
});

describe('the end of an advertisement', () => {
  const pkt = (line: string) => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;
  const advertisement = Buffer.from(
    `${pkt(`${'a'.repeat(40)} HEAD\0multi_ack thin-pack\n`)}${pkt(`${'b'.repeat(40)} refs/heads/main\n`)}0000NAK-after`,
    'latin1',
  );
  const flushEnd = advertisement.indexOf('0000') + 4;

  it('is found however the bytes are cut', () => {
    for (let cut = 1; cut < advertisement.length; cut++) {
      const scanner = new PktScanner();
      const first = scanner.push(advertisement.subarray(0, cut));
      if (first >= 0) {
        expect(first).toBe(flushEnd);
        continue;
      }
      expect(scanner.push(advertisement.subarray(cut))).toBe(flushEnd - cut);
    }
  });

  it('refuses bytes that are no pkt-line', () => {
    expect(() => new PktScanner().push(Buffer.from('HTTP/1.1 200 OK'))).toThrow(/no pkt-line/);
  });
});

describe('the configuration of an ssh source', () => {
  const base = { name: 'app', url: 'git@github.com:org/app.git' };
  const key = { file: '/etc/mooring/git/identity' };

  it('needs a deploy key and the host keys, or the opt-in to trust the first', () => {
    expect(
      gitSource.safeParse({ ...base, credentials: { sshKey: key, knownHosts: { file: '/kh' } } }).success,
    ).toBe(true);
    expect(
      gitSource.safeParse({ ...base, credentials: { sshKey: key, trustFirstHostKey: true } }).success,
    ).toBe(true);
    const noHosts = gitSource.safeParse({ ...base, credentials: { sshKey: key } });
    expect(noHosts.error?.issues[0]?.message).toContain('an ssh URL needs credentials.knownHosts');
    const noKey = gitSource.safeParse(base);
    expect(noKey.error?.issues[0]?.message).toContain('an ssh URL needs credentials.sshKey');
    const token = gitSource.safeParse({
      ...base,
      credentials: { sshKey: key, token: { env: 'T' }, trustFirstHostKey: true },
    });
    expect(token.error?.issues[0]?.message).toContain('not a username, password or token');
  });

  it('refuses ssh settings on an https source, and a malformed inline knownHosts at its line', () => {
    const https = gitSource.safeParse({
      name: 'app',
      url: 'https://github.com/org/app.git',
      credentials: { sshKey: key },
    });
    expect(https.error?.issues[0]?.message).toContain('are for ssh URLs');
    const bad = gitSource.safeParse({ ...base, credentials: { sshKey: key, knownHosts: 'github.com\n' } });
    expect(bad.error?.issues[0]?.message).toContain('knownHosts:1: not a known_hosts line');
    const url = gitSource.safeParse({ name: 'app', url: 'ftp://host/r.git' });
    expect(url.error?.issues[0]?.message).toContain('must be an http(s) URL, ssh://');
  });
});
