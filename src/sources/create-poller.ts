// The poller of an artifact source of any kind (artifact-poller.ts), built from its configuration. Chart and OCI
// artifact pollers are loaded only when a configuration has such a source: an agent without one does not carry them.

import { parseImageRef } from '../render/image-ref.ts';
import type { ArtifactPoller, ArtifactSourceConfig } from './artifact-poller.ts';
import { cosignVerifier } from './registry/cosign.ts';
import { createRegistryClient } from './registry/create.ts';
import { pollRegistry } from './registry/poll.ts';

/** `signal`: aborted when the agent stops; every request of the poller under way is then given up. */
export async function createArtifactPoller(
  found: ArtifactSourceConfig,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<ArtifactPoller> {
  switch (found.kind) {
    case 'image': {
      const client = await createRegistryClient(found.source, { signal: options.signal });
      const { image, name, verify } = found.source;
      return {
        kind: 'image',
        name,
        reference: image,
        client,
        poll: (state) => pollRegistry(client, found.source, state),
        verifier: cosignVerifier(
          verify,
          `sources.registry ${name}`,
          client,
          parseImageRef(image).path,
          (digest) => `image ${image}@${digest.slice(0, 19)}…`,
        ),
      };
    }
    case 'chart':
      return (await import('./charts/chart-source.ts')).createChartPoller(found.source, options);
    case 'manifests':
      return (await import('./oci/oci-source.ts')).createOciPoller(found.source, options);
  }
}
