// The poller of an artifact source of any kind (artifact-poller.ts), built from its configuration. Chart and OCI
// artifact pollers are loaded only when a configuration has such a source: an agent without one does not carry them.
import type { ArtifactPoller, ArtifactSourceConfig } from './artifact-poller.ts';
import { createRegistryClient } from './registry/create.ts';
import { pollRegistry } from './registry/poll.ts';

export async function createArtifactPoller(found: ArtifactSourceConfig): Promise<ArtifactPoller> {
  switch (found.kind) {
    case 'image': {
      const client = await createRegistryClient(found.source);
      return {
        kind: 'image',
        name: found.source.name,
        reference: found.source.image,
        client,
        poll: (state) => pollRegistry(client, found.source, state),
      };
    }
    case 'chart':
      return (await import('./charts/chart-source.ts')).createChartPoller(found.source);
    case 'manifests':
      return (await import('./oci/oci-source.ts')).createOciPoller(found.source);
  }
}
