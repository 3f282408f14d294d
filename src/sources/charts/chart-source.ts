// A chart source's poller: the versions of its chart (the tags of `oci://host/path/<chart>`, where helm writes `+`
// as `_`; or the entries of the repository's index.yaml), the version its policy picks, and that version's digest:
// the OCI manifest's digest, or the package's sha256 as the index gives it. A package is fetched for a version and
// digest the poll found or a release recorded, and checked against it on the way in: an OCI chart's manifest by
// its digest, its one chart layer by the layer's digest and declared size, an index's package by its sha256.
import type { ChartSource } from '../../config/schema.ts';
import { StalledError, withSubject } from '../../errors.ts';
import type { ArtifactPoller } from '../artifact-poller.ts';
import { cosignVerifier } from '../registry/cosign.ts';
import { readCaFile, registryClientFor } from '../registry/create.ts';
import { resolveCredentials } from '../registry/credentials.ts';
import type { RegistryPollResult, RegistryPollState } from '../registry/poll.ts';
import { type ChartEntry, ChartRepositoryClient } from './repository.ts';
import { selectVersion } from './versions.ts';

export const HELM_CHART_LAYER = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip';
const HELM_CONFIG = 'application/vnd.cncf.helm.config.v1+json';

/** `oci://host/path` split into the registry host and the chart's repository path. */
function ociLocation(source: ChartSource): { host: string; repository: string } {
  const rest = source.url.slice('oci://'.length).replace(/\/+$/, '');
  const slash = rest.indexOf('/');
  const host = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash + 1);
  return { host, repository: path === '' ? source.chart : `${path}/${source.chart}` };
}

export async function createChartPoller(
  source: ChartSource,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<ArtifactPoller> {
  // Short: messages end in commit statuses (140 characters on GitHub); the source's name is their prefix.
  const what = `chart ${source.chart}`;
  if (source.url.startsWith('oci://')) {
    const { host, repository } = ociLocation(source);
    const client = await registryClientFor(host, source, { signal: options.signal });
    return {
      kind: 'chart',
      name: source.name,
      reference: `oci://${host}/${repository}`,
      client,
      verifier: cosignVerifier(
        source.verify,
        `sources.charts ${source.name}`,
        client,
        repository,
        (digest) => `${what} (oci://${host}/${repository}@${digest.slice(0, 19)}…)`,
      ),
      poll: (state) =>
        named(source, async () => {
          // Helm pushes version 1.2.3+build as tag 1.2.3_build (a tag cannot hold `+`).
          const versions = (await client.tags(repository)).map((tag) => tag.replaceAll('_', '+'));
          const version = selectVersion(versions, source.policy, what);
          const digest = await client.digest(repository, version.replaceAll('+', '_'));
          return result(source, `oci://${host}/${repository}`, version, digest, state);
        }),
      fetch: (version, digest) =>
        named(source, async () => {
          const manifest = await client.artifactManifest(repository, digest);
          const layers = manifest.layers.filter((l) => l.mediaType === HELM_CHART_LAYER);
          const layer = layers[0];
          if (
            layers.length !== 1 ||
            !layer ||
            (manifest.configMediaType && manifest.configMediaType !== HELM_CONFIG)
          )
            throw new StalledError(
              `${what} ${version ?? digest}: ${digest} is not a Helm chart (expected one ${HELM_CHART_LAYER} layer)`,
            );
          if (layer.size > source.maxBytes)
            throw new StalledError(
              `${what} ${version ?? digest}: the chart is ${layer.size} bytes, more than maxBytes (${source.maxBytes})`,
            );
          const data = await client.blob(repository, layer.digest, source.maxBytes);
          if (data.length !== layer.size)
            throw new StalledError(
              `${what} ${version ?? digest}: the chart layer is ${data.length} bytes, its manifest says ${layer.size}`,
            );
          return data;
        }),
    };
  }
  const credentials = await resolveCredentials(source.credentials, new URL(source.url).host);
  const client = new ChartRepositoryClient({
    url: source.url,
    credentials,
    ca: await readCaFile(source.caFile),
    insecure: source.insecure,
    requestsPerSecond: source.requestsPerSecond,
    maxIndexBytes: source.maxIndexBytes,
    maxIndexNodes: source.maxIndexNodes,
    signal: options.signal,
  });
  const reference = `${source.url.replace(/\/+$/, '')}/${source.chart}`;
  const entryOf = async (version: string): Promise<ChartEntry> => {
    const entry = (await client.versions(source.chart)).find((e) => e.version === version);
    if (!entry) throw new StalledError(`${what}: the index no longer lists version ${version}`);
    return entry;
  };
  return {
    kind: 'chart',
    name: source.name,
    reference,
    client,
    poll: (state) =>
      named(source, async () => {
        const entries = await client.versions(source.chart);
        if (entries.length === 0) throw new StalledError(`${what}: the index lists no such chart`);
        const version = selectVersion(
          entries.map((e) => e.version),
          source.policy,
          what,
        );
        const entry = entries.find((e) => e.version === version) as ChartEntry;
        if (!entry.digest)
          throw new StalledError(
            `${what} ${version}: the index gives no digest for it (helm repo index writes one); it cannot be verified`,
          );
        return result(source, reference, version, entry.digest, state);
      }),
    fetch: (version, digest) =>
      named(source, async () => {
        if (version === undefined) throw new StalledError(`${what}: no version recorded for ${digest}`);
        const entry = await entryOf(version);
        if (entry.digest !== undefined && entry.digest !== digest)
          throw new StalledError(
            `${what} ${version}: the index now gives digest ${entry.digest}, not ${digest} as recorded; a chart version must not change`,
          );
        return client.download(source.chart, entry, digest, source.maxBytes);
      }),
  };
}

function result(
  source: ChartSource,
  reference: string,
  version: string,
  digest: string,
  state: RegistryPollState,
): RegistryPollResult {
  const changed = digest !== state.lastDigest || (state.lastTag !== undefined && version !== state.lastTag);
  return {
    source: source.name,
    changed,
    revision: digest,
    artifacts: [{ type: 'helm/chart', source: source.name, reference, name: version, version: digest }],
    tag: version,
    digest,
  };
}

/** Errors of the poll or download say which chart source they are about (the commit status shows them). */
async function named<T>(source: ChartSource, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw withSubject(error, `chart source ${source.name}`);
  }
}
