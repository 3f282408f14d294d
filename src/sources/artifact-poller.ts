// The artifact sources a deployment follows besides its manifests' commit: container images (registry sources),
// Helm charts (chart sources) and manifests shipped as OCI artifacts (oci sources). Each is polled the same way, by
// one poller per source: which tag or version its policy picks and the digest it stands at. That digest joins the
// deployment's revision (commit plus digests), so a new one is an artifact to deploy, recorded in the ledger, lifted
// past a rollback's fence and restored by a rollback, whatever its kind. A chart or manifests poller also fetches
// the content of a digest it found, checked against that digest (the one download path: sync, rollback, CLI).
import type { MooringConfig } from '../config/schema.ts';
import { StalledError } from '../errors.ts';
import type { DigestVerifier } from './registry/cosign.ts';
import type { RegistryPollResult, RegistryPollState } from './registry/poll.ts';
import type { Pause } from './registry/rate-limit.ts';

export type ArtifactKind = 'image' | 'chart' | 'manifests';

/** What the agent's metrics and rate limiting read of a poller's client. */
export interface PollClient {
  readonly stats: { token: number };
  readonly requestsByStatus: ReadonlyMap<string, number>;
  readonly rateLimitRemaining: number | undefined;
  readonly notBefore: Pause | undefined;
  close(): void;
}

export interface ArtifactPoller {
  kind: ArtifactKind;
  name: string;
  /** How the ledger and statuses name what it polls: `example/web`, `oci://host/charts/podinfo`, `https://…/podinfo`. */
  reference: string;
  client: PollClient;
  poll(state: RegistryPollState): Promise<RegistryPollResult>;
  /** A chart's or manifests artifact's content at `tag` and `digest` (the gzip'd tar), checked against the digest. */
  fetch?(tag: string | undefined, digest: string): Promise<Buffer>;
  /** A source with `verify`: the signature check of a digest (registry/cosign.ts), before it is accepted or read. */
  verifier?: DigestVerifier | undefined;
}

export type ArtifactSourceConfig =
  | { kind: 'image'; source: MooringConfig['sources']['registry'][number] }
  | { kind: 'chart'; source: MooringConfig['sources']['charts'][number] }
  | { kind: 'manifests'; source: MooringConfig['sources']['oci'][number] };

/** The artifact source of this name in the configuration, with its kind; undefined for a Git or local source. */
export function artifactSource(
  config: Pick<MooringConfig, 'sources'>,
  name: string,
): ArtifactSourceConfig | undefined {
  const image = config.sources.registry.find((s) => s.name === name);
  if (image) return { kind: 'image', source: image };
  const chart = config.sources.charts.find((s) => s.name === name);
  if (chart) return { kind: 'chart', source: chart };
  const oci = config.sources.oci.find((s) => s.name === name);
  if (oci) return { kind: 'manifests', source: oci };
  return undefined;
}

/** Every artifact source of the configuration. */
export function artifactSources(config: Pick<MooringConfig, 'sources'>): ArtifactSourceConfig[] {
  return [
    ...config.sources.registry.map((source) => ({ kind: 'image' as const, source })),
    ...config.sources.charts.map((source) => ({ kind: 'chart' as const, source })),
    ...config.sources.oci.map((source) => ({ kind: 'manifests' as const, source })),
  ];
}

/**
 * The artifact sources deployment `spec` follows: its images, its chart source, and its manifests' source when
 * that is an OCI artifact. Their digests make up its revision with the commit.
 */
export function followedArtifacts(
  config: Pick<MooringConfig, 'sources'>,
  spec: MooringConfig['deployments'][number],
): string[] {
  const names = [...spec.images];
  if (spec.helm?.chartSource !== undefined) names.push(spec.helm.chartSource);
  if (isOciSourced(config, spec)) names.push(spec.source);
  return names;
}

/**
 * The names of a configuration's OCI sources, made once per list (a configuration is parsed anew, never changed in
 * place): the agent asks of every deployment at each poll which sources it follows, and a fleet of a thousand
 * deployments each with its OCI artifact made that a million comparisons a poll.
 */
const ociNames = new WeakMap<readonly { name: string }[], ReadonlySet<string>>();

/** Whether the deployment's manifests come from an OCI artifact (no commit of its own: the artifact's digest). */
export function isOciSourced(config: Pick<MooringConfig, 'sources'>, spec: { source: string }): boolean {
  const sources = config.sources.oci;
  let names = ociNames.get(sources);
  if (!names) {
    names = new Set(sources.map((s) => s.name));
    ociNames.set(sources, names);
  }
  return names.has(spec.source);
}

export function unknownSource(name: string): StalledError {
  return new StalledError(`no artifact source is named ${name}`);
}
