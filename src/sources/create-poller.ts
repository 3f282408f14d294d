// The poller of an artifact source of any kind (artifact-poller.ts), built from its configuration.
import type { ArtifactPoller, ArtifactSourceConfig } from './artifact-poller.ts';
import { createChartPoller } from './charts/chart-source.ts';
import { createOciPoller } from './oci/oci-source.ts';
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
      return createChartPoller(found.source);
    case 'manifests':
      return createOciPoller(found.source);
  }
}
