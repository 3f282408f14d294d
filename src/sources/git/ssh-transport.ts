// Git over SSH, as the requests isomorphic-git makes over HTTP: isomorphic-git has no SSH transport, so its smart-HTTP
// requests are answered here by `git-upload-pack` run on the server through an SSH channel (ssh2, a JavaScript SSH
// client: no ssh binary, no local shell, no agent, no ~/.ssh). Everything else about a fetch stays where it is
// for HTTPS (transport.ts): the byte bound, the deadline, thin packs, the pack taken to disk, the errors.
//
// - `GET …/info/refs?service=git-upload-pack`: one channel runs upload-pack; its ref advertisement (protocol v0,
//   up to the flush packet) is the response, behind the `# service=` line smart HTTP adds. A flush is then sent
//   back, which tells upload-pack that nothing is wanted, and it exits.
// - `POST …/git-upload-pack`: a second channel on the same connection runs upload-pack again; its advertisement is
//   read and dropped (bounded like any answer), the request is written whole (isomorphic-git's request always ends
//   with `done`, so the conversation needs no second round), and everything upload-pack writes until it exits is the
//   response: the same bytes a stateless smart-HTTP server would send.
//
// The server is trusted only when its host key is in the source's knownHosts (known-hosts.ts), or, when the operator
// opted in with trustFirstHostKey, when it is the key this process saw first for that host and port. The private
// key is read when the connection opens and never appears in a message: a key that cannot be read is named by its
// reference, and a key the server refuses by its public fingerprint.
import type { GitHttpRequest, GitHttpResponse } from 'isomorphic-git';
import ssh2, { type ClientChannel } from 'ssh2';
import { StalledError, TransientError } from '../../errors.ts';
import { fingerprint } from '../../http/known-hosts.ts';
import { describeSshEndpoint, type SshEndpoint, uploadPackCommand } from '../../http/ssh-url.ts';

/** The URL isomorphic-git is given for an SSH source: it speaks only http(s); the transport ignores the host. */
export const SSH_PLACEHOLDER_URL = 'http://git-over-ssh.invalid/repository';

export interface SshTransportOptions {
  endpoint: SshEndpoint;
  /** The private key, PEM or OpenSSH format (ed25519, ECDSA, RSA). */
  privateKey: string;
  passphrase?: string | undefined;
  /** Where the key came from, for messages: `file /etc/mooring/git/identity`. */
  keyOrigin: string;
  /** Undefined when the host key is trusted, else why it is not. */
  verifyHost: (key: Buffer) => string | undefined;
  signal: AbortSignal;
  /** The largest advertisement read and dropped before a fetch (the source's transfer bound). */
  maxBytes: number;
}

export interface SshTransport {
  send(request: GitHttpRequest): Promise<GitHttpResponse>;
  /** Ends the connection (once the operation is over, whatever happened). */
  close(): void;
}

const SERVICE_HEADER = Buffer.from('001e# service=git-upload-pack\n0000', 'latin1');
const FLUSH = Buffer.from('0000', 'latin1');
const STDERR_BYTES = 16 * 1024;
const HANDSHAKE_MS = 20_000;

export function sshTransport(options: SshTransportOptions): SshTransport {
  const where = describeSshEndpoint(options.endpoint);
  let connection: Promise<ssh2.Client> | undefined;
  let client: ssh2.Client | undefined;
  const key = readKey(options);
  const connect = (): Promise<ssh2.Client> => {
    connection ??= new Promise<ssh2.Client>((resolve, reject) => {
      let refusal: string | undefined;
      const c = new ssh2.Client();
      client = c;
      const onAbort = () => {
        c.destroy();
        reject(options.signal.reason);
      };
      if (options.signal.aborted) return onAbort();
      options.signal.addEventListener('abort', onAbort, { once: true });
      c.once('ready', () => {
        options.signal.removeEventListener('abort', onAbort);
        resolve(c);
      });
      c.on('error', (error: Error & { level?: string; code?: string }) => {
        options.signal.removeEventListener('abort', onAbort);
        reject(
          refusal !== undefined
            ? new StalledError(refusal, { subject: { describe: where } })
            : connectError(error, options, key.publicKey, where),
        );
      });
      c.connect({
        host: options.endpoint.host,
        port: options.endpoint.port,
        username: options.endpoint.user,
        privateKey: key.text,
        ...(options.passphrase !== undefined ? { passphrase: options.passphrase } : {}),
        hostVerifier: (hostKey: Buffer) => {
          refusal = options.verifyHost(hostKey);
          return refusal === undefined;
        },
        readyTimeout: HANDSHAKE_MS,
        // No agent, no keyboard-interactive, no password: the deploy key or nothing.
        tryKeyboard: false,
      });
    });
    return connection;
  };
  // The run whose advertisement was read last, still waiting for a request: a fetch's POST continues it, as git
  // over SSH does (one upload-pack per fetch); the operation's end tells it that nothing more is wanted.
  let waiting: UploadPack | undefined;
  return {
    async send(request) {
      const path = new URL(request.url).pathname;
      if (path.endsWith('/git-upload-pack') && waiting) {
        const run = waiting;
        waiting = undefined;
        const body = request.body ? await collect(request.body) : new Uint8Array();
        return response(request, 'application/x-git-upload-pack-result', run.answer(body));
      }
      waiting?.release();
      waiting = undefined;
      const c = await connect();
      const channel = await exec(c, uploadPackCommand(options.endpoint.path), where);
      const run = new UploadPack(channel, where);
      if (path.endsWith('/info/refs')) {
        const body = run.advertisement(() => {
          waiting = run;
        });
        return response(request, 'application/x-git-upload-pack-advertisement', body);
      }
      if (path.endsWith('/git-upload-pack')) {
        await run.skipAdvertisement(options.maxBytes);
        const body = request.body ? await collect(request.body) : new Uint8Array();
        return response(request, 'application/x-git-upload-pack-result', run.answer(body));
      }
      channel.destroy();
      throw new StalledError(`${path} is not a request Git over SSH answers (only upload-pack is used)`);
    },
    close() {
      waiting?.release();
      waiting = undefined;
      // Ended in order (the flush above goes first); destroyed if the server does not close it soon.
      const c = client;
      c?.end();
      if (c) setTimeout(() => c.destroy(), 2_000).unref();
    },
  };
}

/** The key, parsed once; its public half's fingerprint names it in messages. */
function readKey(options: SshTransportOptions): { text: string; publicKey: string } {
  const text = options.privateKey.endsWith('\n') ? options.privateKey : `${options.privateKey}\n`;
  const parsed = ssh2.utils.parseKey(text, options.passphrase);
  if (parsed instanceof Error) {
    // ssh2's reasons name the format or the passphrase, never the key's bytes.
    throw new StalledError(`the SSH key in ${options.keyOrigin} cannot be read (${parsed.message})`);
  }
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key.isPrivateKey?.() === false) {
    throw new StalledError(`${options.keyOrigin} holds no SSH private key`);
  }
  return { text, publicKey: `${key.type} ${fingerprint(key.getPublicSSH())}` };
}

function connectError(
  error: Error & { level?: string; code?: string },
  options: SshTransportOptions,
  publicKey: string,
  where: string,
): Error {
  const subject = { describe: where };
  if (error.level === 'client-authentication') {
    return new StalledError(
      `the server refused the SSH key ${publicKey} for user ${options.endpoint.user}: add it as a (read-only) deploy key of the repository, or give the key that is`,
      { subject, cause: error },
    );
  }
  if (error.level === 'client-timeout') {
    return new TransientError('no SSH handshake within 20 s', { subject, cause: error });
  }
  const code = error.code ?? error.level ?? 'error';
  return new TransientError(`cannot reach the SSH server (${code})`, { subject, cause: error });
}

function exec(client: ssh2.Client, command: string, where: string): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    client.exec(command, (error, channel) => {
      if (error)
        reject(
          new TransientError(`the SSH server refused to run git-upload-pack (${error.message})`, {
            subject: { describe: where },
            cause: error,
          }),
        );
      else resolve(channel);
    });
  });
}

/** One run of upload-pack on a channel: its output read as pkt-lines up to the advertisement's flush, then whole. */
class UploadPack {
  private readonly reader: AsyncIterator<Buffer>;
  private readonly stderr: Buffer[] = [];
  private stderrBytes = 0;
  private readonly exited: Promise<{ code: number | undefined; signal: string | undefined }>;
  /** Bytes read past the advertisement's flush, not yet handed on. */
  private leftover: Buffer | undefined;

  private readonly channel: ClientChannel;
  private readonly where: string;

  constructor(channel: ClientChannel, where: string) {
    this.channel = channel;
    this.where = where;
    this.reader = channel[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    channel.stderr.on('data', (chunk: Buffer) => {
      if (this.stderrBytes >= STDERR_BYTES) return;
      this.stderr.push(chunk);
      this.stderrBytes += chunk.length;
    });
    this.exited = new Promise((resolve) => {
      let status: { code: number | undefined; signal: string | undefined } | undefined;
      channel.once('exit', (code: number | null, signal?: string) => {
        status = { code: code ?? undefined, signal: signal ?? undefined };
      });
      channel.once('close', () => resolve(status ?? { code: undefined, signal: undefined }));
    });
  }

  /**
   * The response to `GET info/refs`: the service line, then the advertisement up to its flush. Read whole, the run is
   * handed to `onRead`: upload-pack waits for the request a fetch sends next (or for `release`).
   */
  async *advertisement(onRead: () => void): AsyncIterableIterator<Uint8Array> {
    yield SERVICE_HEADER;
    const scanner = new PktScanner();
    let read = false;
    try {
      for (;;) {
        const next = await this.reader.next();
        if (next.done) return await this.fail('before the end of its ref advertisement');
        const end = scanner.push(next.value);
        if (end >= 0) {
          if (end < next.value.length) this.leftover = next.value.subarray(end);
          read = true;
          onRead();
          yield next.value.subarray(0, end);
          return;
        }
        yield next.value;
      }
    } finally {
      if (!read) this.channel.destroy();
    }
  }

  /** Tells upload-pack that nothing is wanted (a flush): it exits cleanly. */
  release(): void {
    this.channel.end(FLUSH);
  }

  /** Writes the request whole and answers with everything upload-pack writes until it exits. */
  answer(request: Uint8Array): AsyncIterableIterator<Uint8Array> {
    this.channel.end(Buffer.from(request));
    return this.rest();
  }

  /** Reads the advertisement a fetch does not need, bounded. */
  async skipAdvertisement(maxBytes: number): Promise<void> {
    const scanner = new PktScanner();
    let read = 0;
    for (;;) {
      const next = await this.reader.next();
      if (next.done) return await this.fail('before the end of its ref advertisement');
      read += next.value.length;
      if (read > maxBytes) {
        this.channel.destroy();
        throw new StalledError(
          `the server sent more than ${maxBytes} bytes (the transfer limit of a Git source)`,
          { subject: { describe: this.where } },
        );
      }
      const end = scanner.push(next.value);
      if (end >= 0) {
        if (end < next.value.length) this.leftover = next.value.subarray(end);
        return;
      }
    }
  }

  /** Everything upload-pack writes after the request, until it exits; an unclean end is an error. */
  async *rest(): AsyncIterableIterator<Uint8Array> {
    try {
      if (this.leftover) yield this.leftover;
      for (;;) {
        const next = await this.reader.next();
        if (next.done) break;
        yield next.value;
      }
      const status = await this.exited;
      if (status.code !== 0) await this.fail('before it finished', status);
    } finally {
      this.channel.destroy();
    }
  }

  private async fail(
    when: string,
    known?: { code: number | undefined; signal: string | undefined },
  ): Promise<never> {
    const status = known ?? (await this.exited);
    const said = printable(Buffer.concat(this.stderr).toString('utf8'));
    const subject = { describe: this.where };
    if (status.code !== undefined && status.code !== 0) {
      // upload-pack (or the server's git-shell) said why: a wrong path, a repository the key may not read.
      throw new StalledError(`git-upload-pack exited with ${status.code} ${when}${said ? `: ${said}` : ''}`, {
        subject,
      });
    }
    throw new TransientError(
      `the SSH connection ended ${when}${status.signal ? ` (${status.signal})` : ''}${said ? `: ${said}` : ''}`,
      { subject },
    );
  }
}

/** Finds the first flush packet (0000) in a pkt-line stream fed in chunks. */
export class PktScanner {
  private pending = Buffer.alloc(0);
  /** Bytes of the current packet still to skip. */
  private skip = 0;
  done = false;

  /** The offset just past the flush packet within `chunk`, or -1 when it has not come yet. */
  push(chunk: Buffer): number {
    let offset = 0;
    if (this.skip > 0) {
      const step = Math.min(this.skip, chunk.length);
      this.skip -= step;
      offset = step;
    }
    while (offset < chunk.length) {
      const head = Buffer.concat([this.pending, chunk.subarray(offset, offset + 4 - this.pending.length)]);
      if (head.length < 4) {
        this.pending = head;
        return -1;
      }
      offset += 4 - this.pending.length;
      this.pending = Buffer.alloc(0);
      const text = head.toString('latin1');
      if (!/^[0-9a-f]{4}$/i.test(text))
        throw new TransientError(`the server sent no pkt-line (${JSON.stringify(text)})`);
      const length = Number.parseInt(text, 16);
      if (length === 0) {
        this.done = true;
        return offset;
      }
      if (length < 4) continue; // delim/response-end packets (protocol v2) carry no payload
      const payload = length - 4;
      const step = Math.min(payload, chunk.length - offset);
      offset += step;
      this.skip = payload - step;
    }
    return -1;
  }
}

function response(
  request: GitHttpRequest,
  type: string,
  body: AsyncIterableIterator<Uint8Array>,
): GitHttpResponse {
  return {
    url: request.url,
    method: request.method ?? 'GET',
    statusCode: 200,
    statusMessage: 'OK',
    headers: { 'content-type': type },
    body,
  };
}

async function collect(body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The server's words, one line, bounded, without control characters. */
function printable(text: string): string {
  return text
    .replace(/[\p{Cc}]+/gu, ' ')
    .trim()
    .slice(0, 300);
}
