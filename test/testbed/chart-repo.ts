// Helm charts for integration tests, made and served by real tools: chart folders written from a spec, packaged
// with the real `helm package`, indexed with `helm repo index`, served as a chart repository (which is a static
// folder holding index.yaml) over TLS with a private CA and optional basic auth, and pushed to the test bed's OCI
// registry with `helm push`. Every helm run gets throwaway HELM_*_HOME folders, so no run sees another's
// repositories, registry logins or caches.
import { execFile } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { stringify } from 'yaml';
import { type Certificates, makeCertificates } from './tls.ts';

const HELM_TIMEOUT_MS = 60_000;
const REALM = 'mooring-chart-repo';

export interface ChartSpec {
  name: string;
  version: string;
  appVersion?: string;
  /** Path under templates/ -> content. */
  templates: Record<string, string>;
  /** Content of values.yaml; none is written when absent. */
  values?: string;
}

/** Writes the chart folder `dir/<name>` (Chart.yaml apiVersion v2, values.yaml, templates/); returns its path. */
export async function writeChart(dir: string, spec: ChartSpec): Promise<string> {
  const chartDir = join(dir, spec.name);
  const chart: Record<string, string> = { apiVersion: 'v2', name: spec.name, version: spec.version };
  if (spec.appVersion !== undefined) chart.appVersion = spec.appVersion;
  await mkdir(join(chartDir, 'templates'), { recursive: true });
  await writeFile(join(chartDir, 'Chart.yaml'), stringify(chart));
  if (spec.values !== undefined) await writeFile(join(chartDir, 'values.yaml'), spec.values);
  for (const [path, content] of Object.entries(spec.templates)) {
    const file = inside(join(chartDir, 'templates'), path);
    if (file === undefined)
      throw new Error(`writeChart ${spec.name}: template path leaves templates/: ${path}`);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, content);
  }
  return chartDir;
}

/** `helm package CHART -d OUT`; returns the path of the .tgz helm wrote. */
export async function packageChart(helm: string, chartDir: string, outDir: string): Promise<string> {
  await mkdir(outDir, { recursive: true });
  const { stdout } = await withHelmHome((env) =>
    runHelm(helm, ['package', resolve(chartDir), '--destination', resolve(outDir)], env),
  );
  const saved = /saved it to: (.+\.tgz)\s*$/m.exec(stdout)?.[1];
  if (saved === undefined)
    throw new Error(`helm package ${chartDir}: no package path in its output: ${stdout}`);
  return resolve(saved);
}

/** `helm repo index FOLDER --url URL`: writes FOLDER/index.yaml (entries with digests); returns its path. */
export async function indexRepo(helm: string, folder: string, url: string): Promise<string> {
  await withHelmHome((env) => runHelm(helm, ['repo', 'index', resolve(folder), '--url', url], env));
  return join(folder, 'index.yaml');
}

export interface ChartRegistry {
  /** Base URL, e.g. `http://127.0.0.1:5000`; an http URL makes helm use `--plain-http`. */
  url: string;
  /** `host:port` */
  host: string;
  username?: string;
  password?: string;
}

export interface PushedChart {
  /** As helm printed it: `HOST/PATH/NAME:TAG`, the tag being the version with `+` turned into `_`. */
  reference: string;
  /** `sha256:…` of the manifest. */
  digest: string;
  /** The tag helm pushed (version with `+` replaced by `_`, helm's convention for OCI tags). */
  tag: string;
}

/**
 * `helm push TGZ oci://HOST/PATH` (after `helm registry login` when credentials are given). helm names the
 * repository PATH/<chart name> and the tag after the chart's version; it prints what it pushed on stderr.
 */
export async function pushChart(
  helm: string,
  tgz: string,
  registry: ChartRegistry,
  path: string,
): Promise<PushedChart> {
  const plain = new URL(registry.url).protocol === 'http:' ? ['--plain-http'] : [];
  const output = await withHelmHome(async (env) => {
    if (registry.username !== undefined || registry.password !== undefined) {
      // --password-stdin keeps the password off the command line; the login lands in the throwaway config home.
      await runHelm(
        helm,
        [
          'registry',
          'login',
          registry.host,
          '--username',
          registry.username ?? '',
          '--password-stdin',
          ...plain,
        ],
        env,
        registry.password ?? '',
      );
    }
    return runHelm(helm, ['push', resolve(tgz), `oci://${registry.host}/${path}`, ...plain], env);
  });
  const text = `${output.stdout}\n${output.stderr}`;
  const reference = /^Pushed: (\S+)$/m.exec(text)?.[1];
  const digest = /^Digest: (sha256:[0-9a-f]{64})$/m.exec(text)?.[1];
  if (reference === undefined || digest === undefined) {
    throw new Error(`helm push ${tgz}: no "Pushed:" and "Digest:" lines in its output: ${text.trim()}`);
  }
  return { reference, digest, tag: reference.slice(reference.lastIndexOf(':') + 1) };
}

export interface ChartRepoRequest {
  method: string;
  /** The request target as sent (path and query). */
  path: string;
  /** Whether the request carried an Authorization header (right or wrong). */
  withCredentials: boolean;
}

export interface ChartRepo {
  /** `https://127.0.0.1:PORT`, no trailing slash. */
  url: string;
  /** Path of the CA certificate (PEM) a client must trust. */
  ca: string;
  /** Every request received, in order, including refused ones. */
  requests: ChartRepoRequest[];
  /** Makes every following request fail so (undefined: serve again). */
  fail(fault: ChartRepoFault): void;
  close(): Promise<void>;
}

export interface ChartRepoOptions {
  /** With username and/or password, every request needs HTTP basic auth (else 401 with WWW-Authenticate). */
  username?: string;
  password?: string;
  /** Reuse certificates (from makeCertificates) instead of making a new CA for this server. */
  certificates?: Certificates;
  /** Paths answered with `302 Location: <value>` instead of the file (a package moved to another server). */
  redirects?: Record<string, string>;
}

/**
 * A failure the repository shows for now, set and cleared while it runs: answer with this status (a 429 or 503
 * says `Retry-After: 1`), or `hang` (read the request, never answer).
 */
export type ChartRepoFault = { status: number } | 'hang' | undefined;

/**
 * Serves `folder` read-only over HTTPS on 127.0.0.1: GET and HEAD of regular files inside it (405 for other
 * methods, 404 for anything missing, a folder, or a path that leaves the folder, also through a symlink).
 */
export async function startChartRepo(folder: string, options: ChartRepoOptions = {}): Promise<ChartRepo> {
  const root = await realpath(folder);
  const certDir =
    options.certificates === undefined ? await mkdtemp(join(tmpdir(), 'mooring-chart-repo-')) : '';
  const pems = options.certificates ?? (await makeCertificates(certDir));
  const requests: ChartRepoRequest[] = [];
  const auth =
    options.username === undefined && options.password === undefined
      ? undefined
      : { user: digest(options.username ?? ''), password: digest(options.password ?? '') };

  const server = https.createServer({ key: await readFile(pems.key), cert: await readFile(pems.cert) });
  let fault: ChartRepoFault;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      withCredentials: req.headers.authorization !== undefined,
    });
    if (fault === 'hang') return;
    const moved = options.redirects?.[new URL(req.url ?? '/', 'https://127.0.0.1').pathname];
    if (moved !== undefined && fault === undefined) {
      res.writeHead(302, { location: moved, 'content-type': 'text/plain' });
      res.end('moved');
      return;
    }
    if (fault !== undefined) {
      const retry = fault.status === 429 || fault.status === 503 ? { 'retry-after': '1' } : {};
      res.writeHead(fault.status, { 'content-type': 'text/plain', ...retry });
      res.end(`chart repo: failing with ${fault.status}`);
      return;
    }
    serve(root, auth, req, res).catch((error: unknown) => {
      if (!res.headersSent) reply(res, 500, `chart repo: ${String(error)}`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolveListen());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    ca: pems.ca,
    requests,
    fail(next) {
      fault = next;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
      if (certDir) await rm(certDir, { recursive: true, force: true });
    },
  };
}

async function serve(
  root: string,
  auth: { user: Buffer; password: Buffer } | undefined,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (auth !== undefined && !authorized(req.headers.authorization, auth)) {
    res.setHeader('WWW-Authenticate', `Basic realm="${REALM}"`);
    return reply(res, 401, 'authentication required');
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    return reply(res, 405, 'read-only');
  }
  let pathname: string;
  try {
    // '+' stays '+': helm's index names packages like demo-1.0.0+build.1.tgz and clients send it unescaped.
    pathname = decodeURIComponent(new URL(req.url ?? '/', 'https://127.0.0.1').pathname);
  } catch {
    return reply(res, 400, 'malformed path');
  }
  const file = inside(root, pathname.replace(/^\/+/, ''));
  if (file === undefined || pathname.includes('\0')) return reply(res, 404, 'not found');
  let real: string;
  try {
    real = await realpath(file);
  } catch {
    return reply(res, 404, 'not found');
  }
  const info = await stat(real);
  // A symlink inside the folder may point out of it: check where it really leads.
  if (!real.startsWith(`${root}${sep}`) || !info.isFile()) return reply(res, 404, 'not found');
  res.writeHead(200, { 'Content-Type': contentType(real), 'Content-Length': info.size });
  if (req.method === 'HEAD') return void res.end();
  await new Promise<void>((done, fail) => {
    const stream = createReadStream(real);
    stream.on('error', fail);
    res.on('close', () => {
      stream.destroy();
      done();
    });
    stream.pipe(res);
  });
}

/** `join(root, relative)` when it stays strictly inside `root`, else undefined. */
function inside(root: string, relative: string): string | undefined {
  if (isAbsolute(relative)) return undefined;
  const full = resolve(root, relative);
  return full.startsWith(root.endsWith(sep) ? root : `${root}${sep}`) ? full : undefined;
}

function contentType(file: string): string {
  if (file.endsWith('.yaml') || file.endsWith('.yml')) return 'application/x-yaml';
  if (file.endsWith('.tgz') || file.endsWith('.tar.gz')) return 'application/gzip';
  return 'application/octet-stream';
}

function reply(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(`${message}\n`);
}

function authorized(header: string | undefined, expected: { user: Buffer; password: Buffer }): boolean {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (match?.[1] === undefined) return false;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  // Digests have equal length whatever was sent, so timingSafeEqual applies and no length leaks.
  const userOk = timingSafeEqual(digest(decoded.slice(0, colon)), expected.user);
  const passwordOk = timingSafeEqual(digest(decoded.slice(colon + 1)), expected.password);
  return userOk && passwordOk;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

// ---- helm as a child process ------------------------------------------------------------------------------

interface HelmOutput {
  stdout: string;
  stderr: string;
}

/** Runs `body` with an environment whose HELM_*_HOME (and HOME) are a fresh folder, removed afterwards. */
async function withHelmHome<T>(body: (env: NodeJS.ProcessEnv) => Promise<T>): Promise<T> {
  const home = await mkdtemp(join(tmpdir(), 'mooring-helm-home-'));
  try {
    return await body({
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    });
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

function runHelm(helm: string, args: string[], env: NodeJS.ProcessEnv, stdin?: string): Promise<HelmOutput> {
  return new Promise((resolveRun, reject) => {
    const child = execFile(
      helm,
      args,
      { env, timeout: HELM_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          // The arguments never hold a secret (passwords go through stdin), so they can be shown.
          reject(
            new Error(`helm ${args.join(' ')}: ${String(stderr).trim() || error.message}`, { cause: error }),
          );
          return;
        }
        resolveRun({ stdout: String(stdout), stderr: String(stderr) });
      },
    );
    child.stdin?.end(stdin ?? '');
  });
}
