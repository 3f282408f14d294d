// The test bed's chart and artifact helpers against real servers and real clients: a chart packaged and indexed
// by helm, served over TLS by startChartRepo and read back by node's https (with the CA) and by `helm pull`; a chart
// pushed to the registry by `helm push`; manifest artifacts in the flux and oras layouts, and corrupt ones, read
// back from the registry and cross-checked with skopeo.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  type ChartRepo,
  indexRepo,
  packageChart,
  pushChart,
  startChartRepo,
  writeChart,
} from '../testbed/chart-repo.ts';
import { ARTIFACT_MEDIA_TYPES, pushArtifact, type RegistryAuth } from '../testbed/oci-push.ts';
import { makeCertificates } from '../testbed/tls.ts';
import { runTool, tempDir, testbed } from './helpers.ts';

const run = randomBytes(3).toString('hex');
const TEMPLATE =
  'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {color: {{ .Values.color }}}\n';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One HTTPS request with node's own client; `path` is sent as is (no URL normalisation). */
function httpsRequest(
  url: string,
  options: { ca?: Buffer; path?: string; method?: string; auth?: string } = {},
): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: target.hostname,
        port: target.port,
        path: options.path ?? `${target.pathname}${target.search}`,
        method: options.method ?? 'GET',
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.auth ? { auth: options.auth } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

async function registryGet(
  base: string,
  path: string,
  auth?: RegistryAuth,
  accept = 'application/vnd.oci.image.manifest.v1+json',
): Promise<Response> {
  const headers: Record<string, string> = { Accept: accept };
  if (auth)
    headers.Authorization = `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  return fetch(`${base}/v2/${path}`, { headers });
}

interface Manifest {
  mediaType?: string;
  artifactType?: string;
  config: { mediaType: string; digest: string; size: number };
  layers: { mediaType: string; digest: string; size: number; annotations?: Record<string, string> }[];
  annotations?: Record<string, string>;
}

async function readManifest(
  base: string,
  repository: string,
  tag: string,
  auth?: RegistryAuth,
): Promise<Manifest> {
  const response = await registryGet(base, `${repository}/manifests/${tag}`, auth);
  expect(response.status).toBe(200);
  return (await response.json()) as Manifest;
}

async function readBlob(base: string, repository: string, digest: string): Promise<Buffer> {
  const response = await registryGet(base, `${repository}/blobs/${digest}`, undefined, '*/*');
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

describe('a chart repository served by startChartRepo', () => {
  let folder = '';
  let tgz = '';
  let repo: ChartRepo | undefined;
  let privateRepo: ChartRepo | undefined;
  let ca: Buffer = Buffer.alloc(0);

  beforeAll(async () => {
    const { helm } = testbed().tools;
    const work = await tempDir('mooring-charts-');
    folder = join(work, 'repo');
    const chartDir = await writeChart(join(work, 'src'), {
      name: 'demo',
      version: '0.1.0',
      appVersion: '1.0',
      templates: { 'cm.yaml': TEMPLATE },
      values: 'color: blue\n',
    });
    tgz = await packageChart(helm, chartDir, folder);
    await writeFile(join(work, 'outside.txt'), 'outside the repository\n');
    await symlink(join(work, 'outside.txt'), join(folder, 'escape.txt'));
    const certificates = await makeCertificates(await tempDir('mooring-charts-tls-'));
    repo = await startChartRepo(folder, { certificates });
    // The private server gets its own folder: an index names the URL of the server it is served from.
    const privateFolder = join(work, 'private');
    await packageChart(helm, chartDir, privateFolder);
    privateRepo = await startChartRepo(privateFolder, {
      username: 'reader',
      password: 'sesame',
      certificates,
    });
    await indexRepo(helm, folder, repo.url);
    await indexRepo(helm, privateFolder, privateRepo.url);
    ca = await readFile(repo.ca);
  });

  afterAll(async () => {
    await repo?.close();
    await privateRepo?.close();
  });

  it('packages the chart with helm and serves the index helm wrote over TLS with the CA', async () => {
    expect(tgz).toBe(join(folder, 'demo-0.1.0.tgz'));
    const answer = await httpsRequest(`${repo?.url}/index.yaml`, { ca });
    expect(answer.status).toBe(200);
    const index = parse(answer.body.toString('utf8')) as {
      entries: Record<string, { version: string; digest: string; urls: string[] }[]>;
    };
    const entry = index.entries.demo?.[0];
    expect(entry?.version).toBe('0.1.0');
    expect(entry?.digest).toBe(sha256(await readFile(tgz)));
    expect(entry?.urls).toEqual([`${repo?.url}/demo-0.1.0.tgz`]);
    const chart = await httpsRequest(entry?.urls[0] ?? '', { ca });
    expect(chart.status).toBe(200);
    expect(chart.body.equals(await readFile(tgz))).toBe(true);
    expect(repo?.requests.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(['GET /index.yaml', 'GET /demo-0.1.0.tgz']),
    );
  });

  it('is refused without the CA', async () => {
    await expect(httpsRequest(`${repo?.url}/index.yaml`)).rejects.toThrow(/self[- ]signed|unable to verify/i);
  });

  it('is read-only and keeps to its folder', async () => {
    const url = repo?.url ?? '';
    expect((await httpsRequest(`${url}/index.yaml`, { ca, method: 'PUT' })).status).toBe(405);
    expect((await httpsRequest(`${url}/index.yaml`, { ca, method: 'HEAD' })).status).toBe(200);
    expect((await httpsRequest(`${url}/missing.tgz`, { ca })).status).toBe(404);
    expect((await httpsRequest(url, { ca, path: '/../outside.txt' })).status).toBe(404);
    expect((await httpsRequest(url, { ca, path: '/%2e%2e/outside.txt' })).status).toBe(404);
    expect((await httpsRequest(url, { ca, path: '/escape.txt' })).status).toBe(404);
    expect((await httpsRequest(url, { ca, path: '/' })).status).toBe(404);
  });

  it('asks for basic auth when given credentials, and real helm pulls with them', async () => {
    const url = privateRepo?.url ?? '';
    const refused = await httpsRequest(`${url}/index.yaml`, { ca });
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toMatch(/^Basic realm=/);
    expect((await httpsRequest(`${url}/index.yaml`, { ca, auth: 'reader:wrong' })).status).toBe(401);
    expect((await httpsRequest(`${url}/index.yaml`, { ca, auth: 'reader:sesame' })).status).toBe(200);

    const { helm } = testbed().tools;
    const home = await tempDir('mooring-helm-pull-');
    const out = join(home, 'out');
    await mkdir(out);
    const pulled = await runTool(
      helm,
      [
        'pull',
        'demo',
        '--repo',
        url,
        '--version',
        '0.1.0',
        '--ca-file',
        privateRepo?.ca ?? '',
        '-d',
        out,
      ].concat(['--username', 'reader', '--password', 'sesame']),
      {
        env: {
          PATH: process.env.PATH,
          HOME: home,
          HELM_CACHE_HOME: join(home, 'cache'),
          HELM_CONFIG_HOME: join(home, 'config'),
          HELM_DATA_HOME: join(home, 'data'),
        },
      },
    );
    expect(pulled.code, pulled.stderr).toBe(0);
    expect(await readdir(out)).toEqual(['demo-0.1.0.tgz']);
    expect((await readFile(join(out, 'demo-0.1.0.tgz'))).equals(await readFile(tgz))).toBe(true);
    const seen = privateRepo?.requests
      .filter((r) => r.method === 'GET' && r.withCredentials)
      .map((r) => r.path);
    expect(seen).toEqual(expect.arrayContaining(['/index.yaml', '/demo-0.1.0.tgz']));
  });
});

describe('charts pushed with helm push', () => {
  it('pushes to the registry under the version tag, + written as _', async () => {
    const env = testbed();
    const work = await tempDir('mooring-charts-push-');
    const chartDir = await writeChart(work, {
      name: `pushed-${run}`,
      version: '1.2.3+build.5',
      templates: { 'cm.yaml': TEMPLATE },
    });
    const tgz = await packageChart(env.tools.helm, chartDir, join(work, 'out'));
    const pushed = await pushChart(env.tools.helm, tgz, env.registry, 'testbed-charts');
    const repository = `testbed-charts/pushed-${run}`;
    expect(pushed.tag).toBe('1.2.3_build.5');
    expect(pushed.reference).toBe(`${env.registry.host}/${repository}:1.2.3_build.5`);
    const tags = await (await registryGet(env.registry.url, `${repository}/tags/list`)).json();
    expect(tags).toEqual({ name: repository, tags: ['1.2.3_build.5'] });

    const response = await registryGet(env.registry.url, `${repository}/manifests/1.2.3_build.5`);
    expect(response.headers.get('docker-content-digest')).toBe(pushed.digest);
    const manifest = (await response.json()) as Manifest;
    expect(manifest.config.mediaType).toBe('application/vnd.cncf.helm.config.v1+json');
    expect(manifest.layers.map((l) => l.mediaType)).toEqual([
      'application/vnd.cncf.helm.chart.content.v1.tar+gzip',
    ]);
    // The layer is the .tgz helm package wrote, byte for byte.
    expect(manifest.layers[0]?.digest).toBe(`sha256:${sha256(await readFile(tgz))}`);
    expect(manifest.annotations).toMatchObject({
      'org.opencontainers.image.title': `pushed-${run}`,
      'org.opencontainers.image.version': '1.2.3+build.5',
    });
  });

  it('logs in to a registry with basic auth', async () => {
    const env = testbed();
    const work = await tempDir('mooring-charts-push-');
    const chartDir = await writeChart(work, { name: `private-${run}`, version: '2.0.0', templates: {} });
    const tgz = await packageChart(env.tools.helm, chartDir, work);
    const pushed = await pushChart(env.tools.helm, tgz, env.authRegistry, 'testbed-charts');
    expect(pushed.reference).toBe(`${env.authRegistry.host}/testbed-charts/private-${run}:2.0.0`);
    const manifest = await readManifest(
      env.authRegistry.url,
      `testbed-charts/private-${run}`,
      '2.0.0',
      env.authRegistry,
    );
    expect(manifest.layers[0]?.digest).toBe(`sha256:${sha256(await readFile(tgz))}`);
    await expect(
      pushChart(env.tools.helm, tgz, { ...env.authRegistry, password: 'wrong' }, 'x'),
    ).rejects.toThrow(/helm registry login/);
  });
});

describe('manifest artifacts pushed with pushArtifact', () => {
  const revision = `main@sha1:${'a1'.repeat(20)}`;
  const annotations = {
    'org.opencontainers.image.created': '2025-01-02T03:04:05Z',
    'org.opencontainers.image.source': 'https://example.test/app.git',
    'org.opencontainers.image.revision': revision,
  };
  const files = {
    'apps/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n',
    'b.yaml': 'x: 1\n',
  };

  async function tarList(blob: Buffer): Promise<string[]> {
    const dir = await tempDir('mooring-artifact-');
    await writeFile(join(dir, 'layer.tgz'), blob);
    const listed = await runTool('tar', ['-tvzf', join(dir, 'layer.tgz')]);
    expect(listed.code, listed.stderr).toBe(0);
    return listed.stdout.trim().split('\n');
  }

  /** skopeo copies by digest (it takes no reference with both a tag and a digest), checking every blob. */
  async function skopeoCopy(reference: string): Promise<{ code: number; stderr: string }> {
    const dir = await tempDir('mooring-skopeo-');
    const byDigest = reference.replace(/:[^:/@]+@/, '@');
    const { code, stderr } = await runTool('skopeo', [
      'copy',
      '--src-tls-verify=false',
      `docker://${byDigest}`,
      `dir:${join(dir, 'copy')}`,
    ]);
    return { code, stderr };
  }

  it('has the layout of flux push artifact', async () => {
    const env = testbed();
    const repository = `testbed-artifacts/flux-${run}`;
    const pushed = await pushArtifact({
      registry: env.registry.url,
      repository,
      tag: 'v1',
      files,
      annotations,
    });
    const manifest = await readManifest(env.registry.url, repository, 'v1');
    expect(manifest.mediaType).toBe('application/vnd.oci.image.manifest.v1+json');
    expect(manifest.config.mediaType).toBe(ARTIFACT_MEDIA_TYPES.flux.config);
    expect(manifest.annotations).toEqual(annotations);
    expect(manifest.layers).toHaveLength(1);
    expect(manifest.layers[0]?.mediaType).toBe(ARTIFACT_MEDIA_TYPES.flux.layer);
    expect(manifest.layers[0]?.digest).toBe(pushed.layerDigest);
    const layer = await readBlob(env.registry.url, repository, pushed.layerDigest);
    expect(`sha256:${sha256(layer)}`).toBe(pushed.layerDigest);
    expect(manifest.layers[0]?.size).toBe(layer.length);
    const listing = await tarList(layer);
    expect(listing.map((line) => line.split(/\s+/).slice(-1)[0])).toEqual([
      '.',
      'apps',
      'apps/cm.yaml',
      'b.yaml',
    ]);
    expect(listing[2]).toMatch(/^-rw-r--r-- 0\/0 /);
    const config = JSON.parse(
      (await readBlob(env.registry.url, repository, manifest.config.digest)).toString(),
    );
    expect(config.created).toBe(annotations['org.opencontainers.image.created']);
    // Same inputs, same digest.
    const again = await pushArtifact({
      registry: env.registry.url,
      repository,
      tag: 'v2',
      files,
      annotations,
    });
    expect(again.digest).toBe(pushed.digest);
    expect(await skopeoCopy(pushed.reference)).toEqual({ code: 0, stderr: '' });
  });

  it('has the layout of oras push, also behind basic auth', async () => {
    const env = testbed();
    const auth = { username: env.authRegistry.username, password: env.authRegistry.password };
    const repository = `testbed-artifacts/oras-${run}`;
    const pushed = await pushArtifact({
      registry: env.authRegistry.url,
      repository,
      tag: 'v1',
      files,
      layout: 'oras',
      auth,
    });
    const manifest = await readManifest(env.authRegistry.url, repository, 'v1', auth);
    expect(manifest.artifactType).toBe(ARTIFACT_MEDIA_TYPES.oras.artifactType);
    expect(manifest.config).toMatchObject({ mediaType: 'application/vnd.oci.empty.v1+json', size: 2 });
    expect(manifest.layers).toEqual([
      {
        mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip',
        digest: pushed.layerDigest,
        size: pushed.layerSize,
        annotations: { 'org.opencontainers.image.title': 'manifests.tar.gz' },
      },
    ]);
    expect(manifest.annotations).toHaveProperty(['org.opencontainers.image.created']);
  });

  it('can declare a layer size the blob does not have', async () => {
    const env = testbed();
    const repository = `testbed-artifacts/size-${run}`;
    const pushed = await pushArtifact({
      registry: env.registry.url,
      repository,
      tag: 'v1',
      files,
      corrupt: 'size',
    });
    const manifest = await readManifest(env.registry.url, repository, 'v1');
    expect(manifest.layers[0]?.size).toBe(pushed.layerSize + 1024);
    const layer = await readBlob(env.registry.url, repository, pushed.layerDigest);
    expect(layer.length).toBe(pushed.layerSize);
  });

  it('can make the registry serve layer bytes that do not match the digest', async () => {
    const env = testbed();
    const repository = `testbed-artifacts/digest-${run}`;
    const pushed = await pushArtifact({
      registry: env.registry.url,
      repository,
      tag: 'v1',
      files,
      corrupt: 'digest',
    });
    const manifest = await readManifest(env.registry.url, repository, 'v1');
    expect(manifest.layers[0]).toMatchObject({ digest: pushed.layerDigest, size: pushed.layerSize });
    const layer = await readBlob(env.registry.url, repository, pushed.layerDigest);
    expect(layer.length).toBe(pushed.layerSize);
    expect(`sha256:${sha256(layer)}`).not.toBe(pushed.layerDigest);
    // A real client refuses it; the clean artifact of the same files is untouched.
    const copied = await skopeoCopy(pushed.reference);
    expect(copied.code).not.toBe(0);
    expect(copied.stderr).toMatch(/digest/i);
    const clean = await pushArtifact({ registry: env.registry.url, repository, tag: 'clean', files });
    expect(await skopeoCopy(clean.reference)).toEqual({ code: 0, stderr: '' });
  });
});
