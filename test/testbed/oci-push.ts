// Pushing tiny but real images to the test bed's registry with the plain distribution API (no docker, no
// skopeo), so tests can create tags and digests on demand; and reading a tag's digest back with HEAD.
// The image is complete: a gzip'd tar layer, a config whose diff_ids match it, and a schema 2 or OCI manifest.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

export interface RegistryAuth {
  username: string;
  password: string;
}

export interface PushImageOptions {
  /** Base URL of the registry, e.g. `http://127.0.0.1:5000`. */
  registry: string;
  repository: string;
  tag: string;
  auth?: RegistryAuth;
  /** Become `config.Labels` of the image config. */
  labels?: Record<string, string>;
  /** Content of the one file in the layer; by default it names the tag, so each tag gets its own digest. */
  content?: string;
  mediaType?: 'docker' | 'oci';
}

export interface PushedImage {
  /** `sha256:…` of the manifest, as the registry reported it. */
  digest: string;
  /** `host:port/repository:tag@digest` */
  reference: string;
}

const MEDIA_TYPES = {
  docker: {
    manifest: 'application/vnd.docker.distribution.manifest.v2+json',
    config: 'application/vnd.docker.container.image.v1+json',
    layer: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
  },
  oci: {
    manifest: 'application/vnd.oci.image.manifest.v1+json',
    config: 'application/vnd.oci.image.config.v1+json',
    layer: 'application/vnd.oci.image.layer.v1.tar+gzip',
  },
} as const;

const MANIFEST_ACCEPT = [
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
].join(', ');

const FILE_NAME = 'mooring-testbed.txt';
const MAX_ERROR_BODY = 2000;

export async function pushImage(options: PushImageOptions): Promise<PushedImage> {
  const types = MEDIA_TYPES[options.mediaType ?? 'docker'];
  const content = options.content ?? `mooring test bed image ${options.repository}:${options.tag}\n`;
  const tar = tarOneFile(FILE_NAME, Buffer.from(content, 'utf8'));
  const layer = gzipSync(tar);
  const imageConfig = Buffer.from(
    JSON.stringify({
      // A fixed creation time keeps the digest a function of the inputs only.
      created: '1970-01-01T00:00:00Z',
      architecture: 'amd64',
      os: 'linux',
      config: options.labels === undefined ? {} : { Labels: options.labels },
      rootfs: { type: 'layers', diff_ids: [sha256(tar)] },
    }),
  );

  await uploadBlob(options, layer);
  await uploadBlob(options, imageConfig);

  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: types.manifest,
      config: { mediaType: types.config, size: imageConfig.length, digest: sha256(imageConfig) },
      layers: [{ mediaType: types.layer, size: layer.length, digest: sha256(layer) }],
    }),
  );
  const url = repoUrl(options, `manifests/${encodeURIComponent(options.tag)}`);
  const response = await send('push manifest', url, {
    method: 'PUT',
    headers: { ...authHeader(options.auth), 'Content-Type': types.manifest },
    body: manifest,
  });
  await expectStatus('push manifest', url, response, 201);
  const expected = sha256(manifest);
  const reported = response.headers.get('docker-content-digest');
  if (reported !== expected) {
    throw new Error(
      `push manifest: PUT ${safeUrl(url)}: registry reported digest ${reported ?? '(none)'}, the manifest sent is ${expected}`,
    );
  }
  return {
    digest: expected,
    reference: `${new URL(options.registry).host}/${options.repository}:${options.tag}@${expected}`,
  };
}

/** The digest the registry serves for `repository:tag`, read with a HEAD request that accepts every image type. */
export async function manifestDigest(options: {
  registry: string;
  repository: string;
  tag: string;
  auth?: RegistryAuth;
}): Promise<string> {
  const url = repoUrl(options, `manifests/${encodeURIComponent(options.tag)}`);
  const response = await send('read manifest digest', url, {
    method: 'HEAD',
    headers: { ...authHeader(options.auth), Accept: MANIFEST_ACCEPT },
  });
  await expectStatus('read manifest digest', url, response, 200);
  const digest = response.headers.get('docker-content-digest');
  if (digest === null) {
    throw new Error(
      `read manifest digest: HEAD ${safeUrl(url)}: no Docker-Content-Digest header in the answer`,
    );
  }
  return digest;
}

/** A POSIX ustar archive holding one regular file, with fixed owner and mtime so equal input gives equal bytes. */
export function tarOneFile(name: string, data: Buffer): Buffer {
  const nameBytes = Buffer.from(name, 'utf8');
  if (nameBytes.length > 100) throw new Error(`tar: file name longer than 100 bytes: ${name}`);
  const header = Buffer.alloc(512);
  header.set(nameBytes, 0);
  writeOctal(header, 100, 8, 0o644); // mode
  writeOctal(header, 108, 8, 0); // uid
  writeOctal(header, 116, 8, 0); // gid
  writeOctal(header, 124, 12, data.length); // size
  writeOctal(header, 136, 12, 0); // mtime
  header.fill(0x20, 148, 156); // the checksum is computed with its own field as spaces
  header.write('0', 156, 'ascii'); // typeflag: regular file
  header.write('ustar\u000000', 257, 'ascii'); // magic "ustar\0" + version "00"
  let sum = 0;
  for (const byte of header) sum += byte;
  // Six octal digits, NUL, space: the form GNU tar writes and every reader accepts.
  header.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'ascii');
  const padding = (512 - (data.length % 512)) % 512;
  return Buffer.concat([header, data, Buffer.alloc(padding), Buffer.alloc(1024)]);
}

function writeOctal(header: Buffer, offset: number, width: number, value: number): void {
  // width - 1 digits then a NUL terminator.
  const digits = value.toString(8).padStart(width - 1, '0');
  if (digits.length > width - 1) throw new Error(`tar: value ${value} does not fit in ${width} bytes`);
  header.write(`${digits}\u0000`, offset, 'ascii');
}

async function uploadBlob(options: PushImageOptions, blob: Buffer): Promise<void> {
  const digest = sha256(blob);
  const start = repoUrl(options, 'blobs/uploads/');
  const started = await send('start blob upload', start, {
    method: 'POST',
    headers: authHeader(options.auth),
  });
  await expectStatus('start blob upload', start, started, 202);
  const location = started.headers.get('location');
  if (location === null) throw new Error(`start blob upload: POST ${safeUrl(start)}: no Location header`);
  // Location may be absolute or relative to the registry, and may already carry a query (upload state).
  const target = new URL(location, start);
  target.searchParams.set('digest', digest);
  const put = await send(`upload blob ${digest}`, target, {
    method: 'PUT',
    headers: { ...authHeader(options.auth), 'Content-Type': 'application/octet-stream' },
    body: blob,
  });
  await expectStatus(`upload blob ${digest}`, target, put, 201);
}

function repoUrl(options: { registry: string; repository: string }, rest: string): URL {
  const base = options.registry.endsWith('/') ? options.registry : `${options.registry}/`;
  return new URL(`v2/${options.repository}/${rest}`, base);
}

function authHeader(auth: RegistryAuth | undefined): Record<string, string> {
  if (auth === undefined) return {};
  return { Authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` };
}

async function send(step: string, url: URL, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    const reason =
      error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    throw new Error(`${step}: ${init.method ?? 'GET'} ${safeUrl(url)}: ${reason}`, { cause: error });
  }
}

async function expectStatus(step: string, url: URL, response: Response, expected: number): Promise<void> {
  if (response.status === expected) {
    await response.body?.cancel();
    return;
  }
  const body = (await response.text()).slice(0, MAX_ERROR_BODY).trim();
  throw new Error(
    `${step}: ${safeUrl(url)} answered ${response.status} ${response.statusText} (expected ${expected})${body ? `: ${body}` : ''}`,
  );
}

/** The URL without credentials and query: upload Locations carry signed state that is noise in a message. */
function safeUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}
