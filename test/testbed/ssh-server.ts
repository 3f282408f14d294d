// The test bed's SSH Git server: Debian's OpenSSH sshd on loopback, serving the same bare repositories as the HTTP
// Git server, with every key forced into `git-shell` (upload-pack and receive-pack only, as a forge's SSH endpoint
// allows). Its host key and three client keys (ed25519, ECDSA, RSA) are made with ssh-keygen at start; the
// known_hosts line for it is written beside them.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SshServerEnv {
  host: string;
  port: number;
  /** The login every key logs in as (the user the test bed runs as). */
  user: string;
  /** Private keys the server accepts, by type. */
  keys: { ed25519: string; ecdsa: string; rsa: string };
  /** A known_hosts file holding the server's host key for `[host]:port`. */
  knownHosts: string;
  /** The server's host key, as a known_hosts line would hold it (`ssh-ed25519 AAAA…`). */
  hostKey: string;
  /** Where its authorized_keys is: a test may add a key of its own. */
  authorizedKeys: string;
}

export const SSHD = '/usr/sbin/sshd';

/** Makes the keys and configuration of an sshd in `dir` listening on `port`; returns how to start it. */
export async function prepareSshServer(
  dir: string,
  port: number,
): Promise<{ env: SshServerEnv; command: string; args: string[] }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const hostKeyFile = join(dir, 'host_ed25519');
  await keygen(hostKeyFile, 'ed25519');
  const keys = {
    ed25519: join(dir, 'client_ed25519'),
    ecdsa: join(dir, 'client_ecdsa'),
    rsa: join(dir, 'client_rsa'),
  };
  await Promise.all([keygen(keys.ed25519, 'ed25519'), keygen(keys.ecdsa, 'ecdsa'), keygen(keys.rsa, 'rsa')]);
  const authorizedKeys = join(dir, 'authorized_keys');
  const lines: string[] = [];
  for (const file of Object.values(keys)) lines.push(forcedKeyLine(await readFile(`${file}.pub`, 'utf8')));
  await writeFile(authorizedKeys, `${lines.join('\n')}\n`, { mode: 0o600 });
  const hostKey = (await readFile(`${hostKeyFile}.pub`, 'utf8')).trim().split(/\s+/).slice(0, 2).join(' ');
  const knownHosts = join(dir, 'known_hosts');
  await writeFile(knownHosts, `[127.0.0.1]:${port} ${hostKey}\n`);
  const config = join(dir, 'sshd_config');
  await writeFile(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKeyFile}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${authorizedKeys}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'StrictModes no',
      'UsePAM no',
      'AllowTcpForwarding no',
      'AllowAgentForwarding no',
      'X11Forwarding no',
      'PermitTTY no',
      'PrintMotd no',
      'LogLevel VERBOSE',
      '',
    ].join('\n'),
  );
  // sshd run as root wants its privilege separation folder (Debian's service makes it at boot).
  if (process.getuid?.() === 0) await mkdir('/run/sshd', { recursive: true, mode: 0o755 });
  return {
    env: { host: '127.0.0.1', port, user: userInfo().username, keys, knownHosts, hostKey, authorizedKeys },
    command: SSHD,
    args: ['-D', '-e', '-f', config],
  };
}

/** An authorized_keys line that lets the key run git's transfer commands and nothing else. */
export function forcedKeyLine(publicKey: string): string {
  return `restrict,command="git-shell -c \\"$SSH_ORIGINAL_COMMAND\\"" ${publicKey.trim()}`;
}

export async function keygen(file: string, type: 'ed25519' | 'ecdsa' | 'rsa'): Promise<void> {
  await run('ssh-keygen', [
    '-q',
    '-t',
    type,
    ...(type === 'rsa' ? ['-b', '3072'] : []),
    '-N',
    '',
    '-C',
    `mooring-testbed-${type}`,
    '-f',
    file,
  ]);
}

/** Waits until the server answers with its SSH banner. */
export async function waitForSsh(port: number, timeoutMs = 15_000): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const banner = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.setTimeout(2_000, () => socket.destroy());
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1');
        if (text.includes('\n')) socket.destroy();
      });
      socket.on('close', () => resolve(text));
      socket.on('error', () => resolve(''));
    });
    if (banner.startsWith('SSH-2.0-')) return;
    if (Date.now() > deadline) throw new Error(`sshd on port ${port} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
