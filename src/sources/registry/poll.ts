// One poll of a registry source: which tag the policy picks and which digest it points to now. A fixed tag
// costs one HEAD; only semver and regex policies list tags. Labels (provenance) are read only when the
// digest or tag moved, so a steady-state poll of a fixed tag is a single HEAD request.
import type { RegistrySource } from '../../config/schema.ts';
import { StalledError, withSubject } from '../../errors.ts';
import { parseImageRef, repositoryOf } from '../../render/image-ref.ts';
import type { Artifact, PollResult } from '../artifact.ts';
import type { RegistryClient } from './client.ts';
import { selectTag } from './policy.ts';

export interface RegistryPollState {
  lastDigest?: string | undefined;
  lastTag?: string | undefined;
}

export type RegistryPollResult = PollResult & { tag: string; digest: string };

// The labels worth carrying into reports: where the image was built from. Others stay in the registry.
const PROVENANCE_LABELS = [
  'org.opencontainers.image.source',
  'org.opencontainers.image.revision',
  'org.opencontainers.image.version',
  'org.opencontainers.image.created',
];

export async function pollRegistry(
  client: RegistryClient,
  source: RegistrySource,
  state: RegistryPollState,
): Promise<RegistryPollResult> {
  try {
    return await poll(client, source, state);
  } catch (error) {
    throw withSubject(error, `registry source ${source.name}`);
  }
}

async function poll(
  client: RegistryClient,
  source: RegistrySource,
  state: RegistryPollState,
): Promise<RegistryPollResult> {
  const ref = parseImageRef(source.image);
  let tag: string;
  if (source.policy.type === 'fixed') {
    tag = source.policy.tag;
  } else {
    const selected = selectTag(await client.tags(ref.path), source.policy, source.exclude);
    if (selected instanceof StalledError) throw selected;
    tag = selected;
  }
  const digest = await client.digest(ref.path, tag);
  const changed = digest !== state.lastDigest || (state.lastTag !== undefined && tag !== state.lastTag);
  const artifact: Artifact = {
    type: 'docker/image',
    source: source.name,
    reference: repositoryOf(ref),
    name: tag,
    version: digest,
  };
  if (changed) {
    const labels = await client.labels(ref.path, digest);
    const provenance = Object.fromEntries(
      PROVENANCE_LABELS.flatMap((key) => (labels[key] === undefined ? [] : [[key, labels[key]]])),
    );
    if (Object.keys(provenance).length > 0) artifact.provenance = provenance;
  }
  return { source: source.name, changed, revision: digest, artifacts: [artifact], tag, digest };
}
