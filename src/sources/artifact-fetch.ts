// The content of a chart or manifests artifact at a recorded tag and digest, as a fresh folder: from the cache when
// it holds those bytes, else fetched by the source's poller (checked against the digest on the way in), then
// extracted under the source's bounds (file count, file size, total size; no links, no path outside the folder).
// The one download path: the sync, a rollback and the CLI read a deployment's chart or artifact through it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MooringConfig } from '../config/schema.ts';
import { StalledError } from '../errors.ts';
import { extractTarGz } from './archive/tar-gz.ts';
import { ArtifactCache, type ArtifactKind } from './artifact-cache.ts';
import { type ArtifactPoller, type ArtifactSourceConfig, artifactSource } from './artifact-poller.ts';
import { createArtifactPoller } from './create-poller.ts';

/** A chart version or an artifact as a release records it. */
export interface ArtifactAt {
  tag?: string | undefined;
  digest: string;
}

export interface FetchContext {
  config: Pick<MooringConfig, 'sources'>;
  /** Where downloads are kept between reads (the agent's cache folder); a temporary folder's otherwise. */
  cacheDir?: string | undefined;
  /** The agent's poller of a source, whose client (rate limit, tokens, connections) the download shares. */
  poller?: ((name: string) => ArtifactPoller | undefined) | undefined;
  /** Aborted when the agent stops: the downloads it makes (without a poller of the agent's) are given up then. */
  signal?: AbortSignal | undefined;
}

export interface ExtractedArtifact {
  /** The folder the archive was extracted into. */
  dir: string;
  /** How messages name it: `chart podinfo 1.2.3`, `oci://host/app@sha256:0123456789ab`. */
  label: string;
  remove(): Promise<void>;
}

/** Artifact source `name` at `at`, extracted into a fresh folder that the caller removes. */
export async function extractArtifact(
  ctx: FetchContext,
  name: string,
  at: ArtifactAt,
): Promise<ExtractedArtifact> {
  const found = artifactSource(ctx.config, name);
  if (!found || found.kind === 'image') throw new StalledError(`no chart or oci source is named ${name}`);
  return extractSource(ctx, found, at);
}

/** What a source's digests are digests of (artifact-cache.ts). */
function artifactKind(found: Exclude<ArtifactSourceConfig, { kind: 'image' }>): ArtifactKind {
  if (found.kind === 'manifests') return 'oci';
  return found.source.url.startsWith('oci://') ? 'chart-oci' : 'chart-index';
}

/**
 * Downloads in flight, by kind and digest: deployments that follow one chart or artifact ask for the same bytes at once
 * when a new version appears; one download serves them all.
 */
const inFlight = new Map<string, Promise<Buffer>>();

/**
 * A chart or artifact source (configured, or made for a chart dependency) at `at`, extracted into a fresh folder
 * that the caller removes: the cache's copy when it holds the digest, else one download checked against it.
 */
export async function extractSource(
  ctx: FetchContext,
  found: Exclude<ArtifactSourceConfig, { kind: 'image' }>,
  at: ArtifactAt,
  label = found.kind === 'chart'
    ? `chart ${found.source.chart} ${at.tag ?? at.digest.slice(0, 19)}`
    : `${found.source.url}@${at.digest.slice(0, 19)}`,
): Promise<ExtractedArtifact> {
  const cache = new ArtifactCache(ctx.cacheDir);
  const kind = artifactKind(found);
  const key = `${kind}:${at.digest}`;
  let data = await cache.get(kind, at.digest);
  if (!data) {
    let download = inFlight.get(key);
    if (!download) {
      download = (async () => {
        const shared = ctx.poller?.(found.source.name);
        const poller = shared ?? (await createArtifactPoller(found, { signal: ctx.signal }));
        try {
          if (!poller.fetch) throw new StalledError(`source ${found.source.name} has nothing to fetch`);
          const bytes = await poller.fetch(at.tag, at.digest);
          await cache.put(kind, at.digest, bytes);
          return bytes;
        } finally {
          if (!shared) poller.client.close();
        }
      })();
      inFlight.set(key, download);
      download.then(
        () => inFlight.delete(key),
        () => inFlight.delete(key),
      );
    }
    data = await download;
  }
  const parent = await mkdtemp(join(tmpdir(), 'mooring-artifact-'));
  const dir = join(parent, 'content');
  const remove = () => rm(parent, { recursive: true, force: true });
  try {
    const { maxFiles, maxFileBytes, maxExtractedBytes } = found.source;
    await extractTarGz(data, dir, { maxEntries: maxFiles, maxFileBytes, maxBytes: maxExtractedBytes }, label);
  } catch (error) {
    await remove();
    throw error;
  }
  return { dir, label, remove };
}
