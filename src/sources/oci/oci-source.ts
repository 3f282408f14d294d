// An OCI artifact source's poller: manifests shipped as an OCI artifact, in the layout `flux push artifact` writes
// (one `application/vnd.cncf.flux.content.v1.tar+gzip` layer) or ORAS pushes (one
// `application/vnd.oci.image.layer.v1.tar+gzip` layer), found by tag policy or pinned to a digest. Each new digest
// is a revision; the manifest's annotations `org.opencontainers.image.source` and `.revision` say which Git commit
// it was built from, and the commit status goes there. The layer is fetched for a digest the poll found or a
// release recorded, and checked on the way in: the manifest by its digest, the layer by its digest and size.
import type { OciSource } from '../../config/schema.ts';
import { StalledError, withSubject } from '../../errors.ts';
import type { ArtifactPoller } from '../artifact-poller.ts';
import { cosignVerifier } from '../registry/cosign.ts';
import { registryClientFor } from '../registry/create.ts';
import { selectTag } from '../registry/policy.ts';
import type { RegistryPollResult } from '../registry/poll.ts';

/** The layer types that hold a tar.gz of manifests. */
export const MANIFEST_LAYERS = [
  'application/vnd.cncf.flux.content.v1.tar+gzip',
  'application/vnd.oci.image.layer.v1.tar+gzip',
];

const SOURCE = 'org.opencontainers.image.source';
const REVISION = 'org.opencontainers.image.revision';

/** `oci://host/path` split into the registry host and the repository path. */
export function ociLocation(url: string): { host: string; repository: string } {
  const rest = url.slice('oci://'.length);
  const slash = rest.indexOf('/');
  return { host: rest.slice(0, slash), repository: rest.slice(slash + 1) };
}

/**
 * The Git commit an artifact's revision annotation names: Flux writes `main@sha1:<sha>` (older: `main/<sha>`),
 * others the bare sha. Undefined when it names none.
 */
export function commitOfRevision(revision: string | undefined): string | undefined {
  if (revision === undefined) return undefined;
  const match = /(?:^|[@:/])([a-f0-9]{40}|[a-f0-9]{64})$/.exec(revision.trim());
  return match?.[1];
}

export async function createOciPoller(
  source: OciSource,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<ArtifactPoller> {
  const { host, repository } = ociLocation(source.url);
  const client = await registryClientFor(host, source, { signal: options.signal });
  const reference = `oci://${host}/${repository}`;
  return {
    kind: 'manifests',
    name: source.name,
    reference,
    client,
    verifier: cosignVerifier(
      source.verify,
      `sources.oci ${source.name}`,
      client,
      repository,
      (digest) => `${reference}@${digest.slice(0, 19)}…`,
    ),
    poll: (state) =>
      named(source, async (): Promise<RegistryPollResult> => {
        let tag: string;
        let digest: string;
        if (source.digest !== undefined) {
          tag = source.digest;
          digest = source.digest;
        } else {
          if (source.policy.type === 'fixed') tag = source.policy.tag;
          else {
            const selected = selectTag(await client.tags(repository), source.policy, source.exclude);
            if (selected instanceof StalledError) throw selected;
            tag = selected;
          }
          digest = await client.digest(repository, tag);
        }
        const changed = digest !== state.lastDigest || (state.lastTag !== undefined && tag !== state.lastTag);
        const artifact = {
          type: 'oci/manifests' as const,
          source: source.name,
          reference,
          name: tag,
          version: digest,
        };
        const provenance: Record<string, string> = {};
        if (changed) {
          const manifest = await client.artifactManifest(repository, digest);
          const built = manifest.annotations[SOURCE];
          const commit = commitOfRevision(manifest.annotations[REVISION]);
          if (built !== undefined && commit !== undefined) {
            provenance[SOURCE] = built;
            provenance[REVISION] = commit;
          }
        }
        return {
          source: source.name,
          changed,
          revision: digest,
          artifacts: [Object.keys(provenance).length > 0 ? { ...artifact, provenance } : artifact],
          tag,
          digest,
        };
      }),
    fetch: (_tag, digest) =>
      named(source, async () => {
        // Short: the message ends in a commit status (140 characters on GitHub); the source's name says where.
        const at = digest.slice(0, 19);
        const manifest = await client.artifactManifest(repository, digest);
        const layers = manifest.layers.filter((l) => MANIFEST_LAYERS.includes(l.mediaType));
        const layer = layers[0];
        if (layers.length !== 1 || !layer)
          throw new StalledError(
            `${at}: expected one layer of manifests (${MANIFEST_LAYERS.join(' or ')}), found ${layers.length}`,
          );
        if (layer.size > source.maxBytes)
          throw new StalledError(
            `${at}: the layer is ${layer.size} bytes, more than maxBytes (${source.maxBytes})`,
          );
        const data = await client.blob(repository, layer.digest, source.maxBytes);
        if (data.length !== layer.size)
          throw new StalledError(`${at}: the layer is ${data.length} bytes, its manifest says ${layer.size}`);
        return data;
      }),
  };
}

async function named<T>(source: OciSource, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw withSubject(error, `oci source ${source.name}`);
  }
}
