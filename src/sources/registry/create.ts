// Building the client for a registry source from its config: which host the image lives on, its credentials
// and CA read from where the config points. Done once per source; the client then lives across polls (its
// tokens, rate limit and connections are per registry). Chart sources and OCI artifact sources on a registry
// build theirs the same way (registryClientFor).
import { readFile } from 'node:fs/promises';
import type { RegistrySource } from '../../config/schema.ts';
import { StalledError } from '../../errors.ts';
import { parseImageRef } from '../../render/image-ref.ts';
import { RegistryClient, type RegistryClientOptions } from './client.ts';
import { resolveCredentials } from './credentials.ts';

const MAX_CA_BYTES = 1024 * 1024;

/** What a source says of how to reach its registry. */
export type RegistryAccess = Pick<
  RegistrySource,
  'credentials' | 'caFile' | 'insecure' | 'requestsPerSecond'
>;

export type ClientOverrides = Pick<RegistryClientOptions, 'clock' | 'timeoutMs' | 'maxTags' | 'signal'>;

export async function createRegistryClient(
  source: RegistrySource,
  overrides: ClientOverrides = {},
): Promise<RegistryClient> {
  return registryClientFor(parseImageRef(source.image).domain, source, overrides);
}

/** The client of registry `host` with a source's credentials, CA, plain-HTTP choice and request rate. */
export async function registryClientFor(
  host: string,
  access: RegistryAccess,
  overrides: ClientOverrides = {},
): Promise<RegistryClient> {
  const credentials = await resolveCredentials(access.credentials, host);
  return new RegistryClient({
    host,
    insecure: access.insecure,
    requestsPerSecond: access.requestsPerSecond,
    ca: await readCaFile(access.caFile),
    credentials,
    ...overrides,
  });
}

/** The PEM bundle of a source's `caFile`, bounded; an unreadable one is for the user to fix. */
export async function readCaFile(caFile: string | undefined): Promise<string | undefined> {
  if (caFile === undefined) return undefined;
  try {
    const data = await readFile(caFile);
    if (data.length > MAX_CA_BYTES) throw new Error(`larger than ${MAX_CA_BYTES} bytes`);
    return data.toString('utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new StalledError(`cannot read caFile ${caFile} (${reason})`, { cause: error });
  }
}
