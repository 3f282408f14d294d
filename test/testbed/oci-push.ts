// Pushing tiny but real images and manifest artifacts to the test bed's registry with the plain distribution API
// (no docker, no skopeo, no flux or oras binary), so tests can create tags and digests on demand; and reading a
// tag's digest back with HEAD. An image is complete: a gzip'd tar layer, a config whose diff_ids match it, and a
// schema 2 or OCI manifest. An artifact has the layout `flux push artifact` or `oras push` gives it, and can be
// made corrupt in the ways a registry can be made to serve (see PushArtifactOptions.corrupt).
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { stateDir } from './paths.ts';

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
  const digest = await putManifest(options, options.tag, types.manifest, manifest);
  return { digest, reference: referenceOf(options, digest) };
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

// ---- Manifest artifacts (what `flux push artifact` and `oras push` put in a registry) --------------------------

export const ARTIFACT_MEDIA_TYPES = {
  flux: {
    config: 'application/vnd.cncf.flux.config.v1+json',
    layer: 'application/vnd.cncf.flux.content.v1.tar+gzip',
  },
  oras: {
    config: 'application/vnd.oci.empty.v1+json',
    layer: 'application/vnd.oci.image.layer.v1.tar+gzip',
    /** What oras 1.x writes when no --artifact-type is given. */
    artifactType: 'application/vnd.unknown.artifact.v1',
  },
} as const;

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const CREATED = 'org.opencontainers.image.created';
const SOURCE = 'org.opencontainers.image.source';
const REVISION = 'org.opencontainers.image.revision';
const TITLE = 'org.opencontainers.image.title';
/** A fixed default creation time keeps an artifact's digest a function of the inputs only. */
const DEFAULT_CREATED = '1970-01-01T00:00:00Z';

export interface PushArtifactOptions {
  /** Base URL of the registry, e.g. `http://127.0.0.1:5000`. */
  registry: string;
  repository: string;
  tag: string;
  /** Path -> content of the layer's tar.gz. Needed unless `layer` is given. */
  files?: Record<string, string | Buffer>;
  /** The layer's bytes as they are, instead of a tar.gz of `files` (for corrupt or oversized layers). */
  layer?: Buffer;
  /**
   * Manifest annotations. The flux layout always carries `org.opencontainers.image.created` (default
   * 1970-01-01T00:00:00Z), `.source` and `.revision` (default empty strings, as flux writes unset ones), e.g.
   * `{'org.opencontainers.image.revision': 'main@sha1:<40 hex>'}`; the oras layout carries `.created`.
   */
  annotations?: Record<string, string>;
  auth?: RegistryAuth;
  /** 'flux' (default): `flux push artifact`. 'oras': `oras push REF manifests.tar.gz:<tar+gzip type>`. */
  layout?: 'flux' | 'oras';
  /** oras layout only: the manifest's artifactType (default application/vnd.unknown.artifact.v1). */
  artifactType?: string;
  /**
   * Make the pushed manifest lie about its layer. What distribution 2.8 allows (checked against the test bed):
   * - It validates only that each descriptor's digest names a blob linked to the repository (else 400
   *   MANIFEST_BLOB_UNKNOWN). It never compares a descriptor's `size` with the blob: larger, smaller, 0, negative
   *   and 2^53-1 were all accepted. 'size' declares `declaredSize` (default: the real size + 1024) for the layer.
   * - Through the API a blob's bytes always match its digest (uploads are verified), and pointing a descriptor
   *   at another existing blob only gives a different but consistent layer. So 'digest' corrupts the stored
   *   blob on disk (`storageDir`, same length, one byte flipped): the registry serves the file as it is, under
   *   the original digest (Docker-Content-Digest too), and a client sees bytes that do not hash to the digest.
   *   The blob store is shared by every repository of the registry, so a files-based layer is made unique first
   *   (random gzip header mtime; the tar inside is unchanged); a raw `layer` is corrupted wherever it is used.
   */
  corrupt?: 'size' | 'digest';
  /** With corrupt 'size': the layer size the manifest declares. */
  declaredSize?: number;
  /** With corrupt 'digest': the registry's storage root (default: the test bed's plain registry). */
  storageDir?: string;
}

export interface PushedArtifact {
  /** `sha256:…` of the manifest, as the registry reported it. */
  digest: string;
  /** `sha256:…` of the layer's bytes as uploaded (before any on-disk corruption). */
  layerDigest: string;
  /** The layer's real size in bytes (the manifest may declare another with corrupt 'size'). */
  layerSize: number;
  /** `host:port/repository:tag@digest` */
  reference: string;
}

export async function pushArtifact(options: PushArtifactOptions): Promise<PushedArtifact> {
  const layout = options.layout ?? 'flux';
  let layer: Buffer;
  if (options.layer !== undefined) layer = options.layer;
  else if (options.files !== undefined)
    layer = gzipSync(tarFiles(options.files, { directories: layout === 'flux' }));
  else throw new Error('pushArtifact: give files or layer');
  if (options.corrupt === 'digest' && options.layer === undefined) {
    // Bytes 4-7 of a gzip header are its MTIME, covered by no checksum: a unique blob with the same content.
    layer = Buffer.from(layer);
    randomBytes(4).copy(layer, 4);
  }
  const layerDigest = sha256(layer);
  const declaredSize =
    options.corrupt === 'size' ? (options.declaredSize ?? layer.length + 1024) : layer.length;

  let config: Buffer;
  let manifest: Record<string, unknown>;
  if (layout === 'flux') {
    const annotations = { [CREATED]: DEFAULT_CREATED, [SOURCE]: '', [REVISION]: '', ...options.annotations };
    config = fluxConfig(annotations[CREATED] ?? DEFAULT_CREATED, layer);
    manifest = {
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: ARTIFACT_MEDIA_TYPES.flux.config, size: config.length, digest: sha256(config) },
      layers: [{ mediaType: ARTIFACT_MEDIA_TYPES.flux.layer, size: declaredSize, digest: layerDigest }],
      annotations,
    };
  } else {
    config = Buffer.from('{}');
    manifest = {
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      artifactType: options.artifactType ?? ARTIFACT_MEDIA_TYPES.oras.artifactType,
      config: { mediaType: ARTIFACT_MEDIA_TYPES.oras.config, digest: sha256(config), size: config.length },
      layers: [
        {
          mediaType: ARTIFACT_MEDIA_TYPES.oras.layer,
          digest: layerDigest,
          size: declaredSize,
          annotations: { [TITLE]: 'manifests.tar.gz' },
        },
      ],
      annotations: { [CREATED]: DEFAULT_CREATED, ...options.annotations },
    };
  }

  await uploadBlob(options, layer);
  await uploadBlob(options, config);
  if (options.corrupt === 'digest') {
    await corruptStoredBlob(options.storageDir ?? registryStorageDir('registry'), layerDigest);
  }
  const digest = await putManifest(options, options.tag, OCI_MANIFEST, Buffer.from(JSON.stringify(manifest)));
  return { digest, layerDigest, layerSize: layer.length, reference: referenceOf(options, digest) };
}

/**
 * Where the test bed's registry (or the one with basic auth) keeps its blobs: the storage root of its config,
 * under stateDir()/run/<name>/data as testbed.ts lays it out.
 */
export function registryStorageDir(which: 'registry' | 'authRegistry'): string {
  return join(stateDir(), 'run', which === 'registry' ? 'registry' : 'registry-auth', 'data');
}

/**
 * The image config go-containerregistry makes for flux: empty.Image with the created time set and the layer
 * appended (its diff_id is the sha256 of the uncompressed tar, or of the bytes when they are not gzip).
 */
function fluxConfig(created: string, layer: Buffer): Buffer {
  let diffId: string;
  try {
    diffId = sha256(gunzipSync(layer));
  } catch {
    diffId = sha256(layer);
  }
  return Buffer.from(
    JSON.stringify({
      architecture: '',
      created,
      history: [{ created: '0001-01-01T00:00:00Z' }],
      os: '',
      rootfs: { type: 'layers', diff_ids: [diffId] },
      config: {},
    }),
  );
}

async function corruptStoredBlob(storageDir: string, digest: string): Promise<void> {
  const hex = digest.slice('sha256:'.length);
  const file = join(storageDir, 'docker', 'registry', 'v2', 'blobs', 'sha256', hex.slice(0, 2), hex, 'data');
  if (!existsSync(file)) {
    throw new Error(
      `corrupt blob ${digest}: ${file} does not exist; pass storageDir of the registry the artifact went to`,
    );
  }
  const bytes = await readFile(file);
  const at = Math.floor(bytes.length / 2);
  bytes[at] = (bytes[at] ?? 0) ^ 0xff;
  await writeFile(file, bytes);
}

// ---- tar ------------------------------------------------------------------------------------------------------

/** A POSIX ustar archive holding one regular file, with fixed owner and mtime so equal input gives equal bytes. */
export function tarOneFile(name: string, data: Buffer): Buffer {
  return Buffer.concat([tarEntry(name, data), Buffer.alloc(1024)]);
}

/**
 * A POSIX ustar archive of `files` (path -> content), entries in the order a directory walk gives (by path
 * segment, so `a/b` comes before `a.txt`), files 0644, owner 0 and mtime 0. With `directories`, each folder
 * gets its own 0755 entry before its content, the root as `.`, as `flux push artifact` (Go's filepath.WalkDir
 * with archive/tar) writes them. Names are taken as given, `../x` included, so tests can build hostile archives.
 */
export function tarFiles(
  files: Record<string, string | Buffer>,
  options: { directories?: boolean } = {},
): Buffer {
  const entries = new Map<string, Buffer | undefined>();
  if (options.directories) entries.set('.', undefined);
  for (const [path, content] of Object.entries(files)) {
    if (options.directories) {
      const parts = path.split('/');
      for (let i = 1; i < parts.length; i++) entries.set(parts.slice(0, i).join('/'), undefined);
    }
    entries.set(path, Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8'));
  }
  const names = [...entries.keys()].sort(walkOrder);
  const blocks = names.map((name) => tarEntry(name, entries.get(name)));
  return Buffer.concat([...blocks, Buffer.alloc(1024)]);
}

function walkOrder(a: string, b: string): number {
  if (a === '.') return b === '.' ? 0 : -1;
  if (b === '.') return 1;
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const c = Buffer.compare(Buffer.from(x[i] ?? ''), Buffer.from(y[i] ?? ''));
    if (c !== 0) return c;
  }
  return x.length - y.length;
}

/** One ustar header (plus data and padding): a regular file, or a directory when `data` is undefined. */
function tarEntry(name: string, data: Buffer | undefined): Buffer {
  const size = data?.length ?? 0;
  const header = Buffer.alloc(512);
  const [prefix, base] = splitName(name);
  header.set(base, 0);
  header.set(prefix, 345);
  writeOctal(header, 100, 8, data === undefined ? 0o755 : 0o644); // mode
  writeOctal(header, 108, 8, 0); // uid
  writeOctal(header, 116, 8, 0); // gid
  writeOctal(header, 124, 12, size); // size
  writeOctal(header, 136, 12, 0); // mtime
  header.fill(0x20, 148, 156); // the checksum is computed with its own field as spaces
  header.write(data === undefined ? '5' : '0', 156, 'ascii'); // typeflag: directory or regular file
  header.write('ustar\u000000', 257, 'ascii'); // magic "ustar\0" + version "00"
  let sum = 0;
  for (const byte of header) sum += byte;
  // Six octal digits, NUL, space: the form GNU tar writes and every reader accepts.
  header.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'ascii');
  const padding = (512 - (size % 512)) % 512;
  return Buffer.concat([header, data ?? Buffer.alloc(0), Buffer.alloc(padding)]);
}

/** ustar keeps up to 100 bytes of name and 155 of prefix (joined by '/'): split a long path at a slash. */
function splitName(name: string): [Buffer, Buffer] {
  const bytes = Buffer.from(name, 'utf8');
  if (bytes.length <= 100) return [Buffer.alloc(0), bytes];
  for (let i = bytes.length - 1; i > 0; i--) {
    if (bytes[i] !== 0x2f) continue;
    const prefix = bytes.subarray(0, i);
    const rest = bytes.subarray(i + 1);
    if (prefix.length <= 155 && rest.length > 0 && rest.length <= 100) return [prefix, rest];
  }
  throw new Error(
    `tar: file name does not fit a ustar header (100 bytes, or 155 + 100 split at a slash): ${name}`,
  );
}

function writeOctal(header: Buffer, offset: number, width: number, value: number): void {
  // width - 1 digits then a NUL terminator.
  const digits = value.toString(8).padStart(width - 1, '0');
  if (digits.length > width - 1) throw new Error(`tar: value ${value} does not fit in ${width} bytes`);
  header.write(`${digits}\u0000`, offset, 'ascii');
}

// ---- distribution API ---------------------------------------------------------------------------------------

interface RegistryTarget {
  registry: string;
  repository: string;
  auth?: RegistryAuth;
}

/** PUTs a manifest under `tag`; returns its digest after checking the registry reports the same one. */
async function putManifest(
  target: RegistryTarget,
  tag: string,
  mediaType: string,
  manifest: Buffer,
): Promise<string> {
  const url = repoUrl(target, `manifests/${encodeURIComponent(tag)}`);
  const response = await send('push manifest', url, {
    method: 'PUT',
    headers: { ...authHeader(target.auth), 'Content-Type': mediaType },
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
  return expected;
}

function referenceOf(target: RegistryTarget & { tag: string }, digest: string): string {
  return `${new URL(target.registry).host}/${target.repository}:${target.tag}@${digest}`;
}

async function uploadBlob(options: RegistryTarget, blob: Buffer): Promise<void> {
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

/**
 * Pushes a manifest of `layers` (each blob uploaded, with its media type, annotations and, if given, a size that
 * lies) under `tag`: what a hostile publisher can put where cosign keeps signatures.
 */
export async function pushLayers(
  target: RegistryTarget,
  tag: string,
  layers: { mediaType: string; blob: Buffer; annotations?: Record<string, string>; declaredSize?: number }[],
): Promise<string> {
  const config = Buffer.from('{}');
  await uploadBlob(target, config);
  for (const layer of layers) await uploadBlob(target, layer.blob);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        size: config.length,
        digest: sha256(config),
      },
      layers: layers.map((l) => ({
        mediaType: l.mediaType,
        size: l.declaredSize ?? l.blob.length,
        digest: sha256(l.blob),
        ...(l.annotations ? { annotations: l.annotations } : {}),
      })),
    }),
  );
  return putManifest(target, tag, 'application/vnd.oci.image.manifest.v1+json', manifest);
}
