// The test bed's Git server: HTTP basic auth in front of `git http-backend` run as a CGI program, so that
// mooring's git source (isomorphic-git) and the git CLI talk the real smart-HTTP protocol (v0 and v2) to
// real bare repositories, with credentials that can be right or wrong.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { Readable } from 'node:stream';
import { Transform, type TransformCallback } from 'node:stream';

export interface GitHttpServerOptions {
  /** The folder of the bare repositories (GIT_PROJECT_ROOT): `/<name>.git` is served from `root/<name>.git`. */
  root: string;
  username: string;
  password: string;
  /** Largest request body accepted, as sent (a gzip body counts compressed); 64 MiB when absent. */
  maxBodyBytes?: number;
  /** Told about requests that git http-backend failed; never receives credentials. */
  onBackendError?: (event: BackendErrorEvent) => void;
}

export interface BackendErrorEvent {
  method: string;
  path: string;
  message: string;
}

const REALM = 'mooring-testbed';
const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;
// git http-backend's headers are a few short lines; more than this means the output is not CGI at all.
const MAX_CGI_HEADER_BYTES = 64 * 1024;
const MAX_STDERR_CHARS = 4096;
// Git-Protocol is `version=2`, possibly with more `:key=value`; anything else is not passed on to git.
const GIT_PROTOCOL_PATTERN = /^[A-Za-z0-9=:._-]{1,256}$/;

export function createGitHttpServer(options: GitHttpServerOptions): http.Server {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  // Digests have equal length whatever was sent, so timingSafeEqual applies and no length leaks.
  const expectedUser = digest(options.username);
  const expectedPassword = digest(options.password);

  return http.createServer((req, res) => {
    const target = req.url ?? '/';
    const queryAt = target.indexOf('?');
    const rawPath = queryAt === -1 ? target : target.slice(0, queryAt);
    const query = queryAt === -1 ? '' : target.slice(queryAt + 1);
    if (rawPath === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
      reply(res, 200, 'ok');
      return;
    }
    const user = authenticatedUser(req.headers.authorization, expectedUser, expectedPassword);
    if (user === undefined) {
      res.setHeader('WWW-Authenticate', `Basic realm="${REALM}"`);
      reply(res, 401, 'authentication required');
      return;
    }
    // The raw target, not a parsed URL: WHATWG URL parsing would resolve `..` away before we could refuse it.
    const pathInfo = decodePath(rawPath);
    if (pathInfo === undefined) {
      reply(res, 400, 'bad path');
      return;
    }
    const declaredLength = req.headers['content-length'];
    if (declaredLength !== undefined && Number(declaredLength) > maxBodyBytes) {
      res.setHeader('Connection', 'close');
      reply(res, 413, 'request body too large');
      return;
    }
    runBackend({ req, res, user, pathInfo, query, maxBodyBytes, options });
  });
}

function decodePath(rawPath: string): string | undefined {
  if (!rawPath.startsWith('/')) return undefined;
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    return undefined;
  }
  if (path.includes('..') || path.includes('\\') || path.includes('\0')) return undefined;
  return path;
}

interface BackendRequest {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  user: string;
  pathInfo: string;
  query: string;
  maxBodyBytes: number;
  options: GitHttpServerOptions;
}

function runBackend({ req, res, user, pathInfo, query, maxBodyBytes, options }: BackendRequest): void {
  const method = req.method ?? 'GET';
  let child: ChildProcessWithoutNullStreams | undefined;
  let failed = false;
  // One failure is reported once; the answer is a short status while nothing was sent, else a cut connection.
  const fail = (message: string, status = 500): void => {
    if (failed) return;
    failed = true;
    options.onBackendError?.({ method, path: pathInfo, message });
    child?.stdout.unpipe(res);
    if (!res.headersSent) {
      if (status === 413) res.setHeader('Connection', 'close');
      reply(res, status, status === 500 ? 'git http-backend failed' : message);
    } else if (!res.writableEnded) {
      res.destroy();
    }
  };

  // A write racing a cut connection must not take the whole server down with an unhandled 'error'.
  res.on('error', () => {});
  try {
    child = spawn('git', ['http-backend'], { env: cgiEnvironment(req, user, pathInfo, query, options.root) });
  } catch (error) {
    fail(`cannot start git http-backend: ${(error as Error).message}`);
    return;
  }

  let stderrText = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    if (stderrText.length < MAX_STDERR_CHARS)
      stderrText += chunk.slice(0, MAX_STDERR_CHARS - stderrText.length);
  });
  child.on('error', (error) => fail(`cannot start git http-backend: ${error.message}`));
  let clientGone = false;
  child.on('close', (code, signal) => {
    // Exit 0 without a header block would otherwise leave the client waiting forever.
    if (clientGone || (code === 0 && res.headersSent)) return;
    const why = signal ? `killed by ${signal}` : `exit ${code}`;
    fail(`git http-backend ${why}${stderrText ? `: ${stderrText.trim()}` : ''}`);
  });
  // A client gone mid-request leaves nobody to read the answer.
  res.on('close', () => {
    if (res.writableFinished) return;
    clientGone = true;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });

  // The backend may answer (404, 403) without reading the body; the broken pipe that follows is expected.
  child.stdin.on('error', () => {});
  let received = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      received += chunk.length;
      if (received > maxBodyBytes) callback(new Error('request body too large'));
      else callback(null, chunk);
    },
  });
  limit.on('error', () => {
    fail('request body too large', 413);
    child.kill('SIGTERM');
  });
  req.pipe(limit).pipe(child.stdin);

  readCgiResponse(child.stdout, res, fail);
}

function cgiEnvironment(
  req: http.IncomingMessage,
  user: string,
  pathInfo: string,
  query: string,
  root: string,
): NodeJS.ProcessEnv {
  // Built from nothing: the server's own environment (the test bed's credentials, GIT_*) stays out of git.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: process.env.HOME ?? root,
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    PATH_INFO: pathInfo,
    QUERY_STRING: query,
    REQUEST_METHOD: req.method ?? 'GET',
    REMOTE_USER: user,
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
  };
  const contentType = req.headers['content-type'];
  if (contentType) env.CONTENT_TYPE = contentType;
  // Absent for chunked bodies (large pushes); git http-backend then reads to end of input.
  const contentLength = req.headers['content-length'];
  if (contentLength !== undefined && /^\d+$/.test(contentLength)) env.CONTENT_LENGTH = contentLength;
  const gitProtocol = req.headers['git-protocol'];
  if (typeof gitProtocol === 'string' && GIT_PROTOCOL_PATTERN.test(gitProtocol))
    env.GIT_PROTOCOL = gitProtocol;
  // git http-backend inflates gzip bodies itself (git sends them for fetch negotiations over 1 KiB).
  const contentEncoding = req.headers['content-encoding'];
  if (contentEncoding) env.HTTP_CONTENT_ENCODING = contentEncoding;
  return env;
}

/** Parses the CGI headers (up to the blank line), then streams the rest of stdout as the body. */
function readCgiResponse(stdout: Readable, res: http.ServerResponse, fail: (message: string) => void): void {
  let head = Buffer.alloc(0);
  const stop = (): void => {
    stdout.removeListener('data', onData);
    stdout.removeListener('end', onEnd);
  };
  const onData = (chunk: Buffer): void => {
    head = Buffer.concat([head, chunk]);
    const end = headerEnd(head);
    if (end === undefined) {
      if (head.length > MAX_CGI_HEADER_BYTES) {
        stop();
        stdout.resume();
        fail('git http-backend sent no CGI header block');
      }
      return;
    }
    stop();
    stdout.pause();
    if (!writeCgiHead(head.subarray(0, end.start).toString('latin1'), res)) {
      stdout.resume();
      fail('git http-backend sent a malformed CGI header');
      return;
    }
    const rest = head.subarray(end.bodyStart);
    if (rest.length > 0) res.write(rest);
    stdout.pipe(res);
  };
  // Output ending inside (or before) the header block is reported by the exit handler, with git's stderr.
  const onEnd = (): void => stop();
  stdout.on('data', onData);
  stdout.on('end', onEnd);
}

function headerEnd(buffer: Buffer): { start: number; bodyStart: number } | undefined {
  const crlf = buffer.indexOf('\r\n\r\n');
  const lf = buffer.indexOf('\n\n');
  if (crlf === -1 && lf === -1) return undefined;
  if (lf === -1 || (crlf !== -1 && crlf < lf)) return { start: crlf, bodyStart: crlf + 4 };
  return { start: lf, bodyStart: lf + 2 };
}

function writeCgiHead(block: string, res: http.ServerResponse): boolean {
  let status = 200;
  let statusMessage: string | undefined;
  const headers: [string, string][] = [];
  for (const line of block.split(/\r?\n/)) {
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return false;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') {
      const match = /^([1-5]\d\d)(?:\s+(.*))?$/.exec(value);
      if (!match?.[1]) return false;
      status = Number(match[1]);
      statusMessage = match[2];
    } else {
      headers.push([name, value]);
    }
  }
  try {
    for (const [name, value] of headers) res.appendHeader(name, value);
  } catch {
    return false;
  }
  res.statusCode = status;
  if (statusMessage) res.statusMessage = statusMessage;
  return true;
}

function authenticatedUser(
  authorization: string | undefined,
  expectedUser: Buffer,
  expectedPassword: Buffer,
): string | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return undefined;
  const user = decoded.slice(0, colon);
  // Both comparisons always run, so the time taken does not tell which half was wrong.
  const userOk = timingSafeEqual(digest(user), expectedUser);
  const passwordOk = timingSafeEqual(digest(decoded.slice(colon + 1)), expectedPassword);
  return userOk && passwordOk ? user : undefined;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function reply(res: http.ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.end(`${text}\n`);
}
