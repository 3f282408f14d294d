// Building the client for a registry source from its config: which host the image lives on, its credentials
// and CA read from where the config points. Done once per source; the client then lives across polls (its
// tokens, rate limit and connections are per registry).
import { readFile } from 'node:fs/promises';
import type { RegistrySource } from '../../config/schema.ts';
import { StalledError } from '../../errors.ts';
import { parseImageRef } from '../../render/image-ref.ts';
import { RegistryClient, type RegistryClientOptions } from './client.ts';
import { resolveCredentials } from './credentials.ts';

const MAX_CA_BYTES = 1024 * 1024;

export async function createRegistryClient(
  source: RegistrySource,
  overrides: Pick<RegistryClientOptions, 'clock' | 'timeoutMs' | 'maxTags'> = {},
): Promise<RegistryClient> {
  const ref = parseImageRef(source.image);
  const credentials = await resolveCredentials(source.credentials, ref.domain);
  let ca: string | undefined;
  if (source.caFile !== undefined) {
    try {
      const data = await readFile(source.caFile);
      if (data.length > MAX_CA_BYTES) throw new Error(`larger than ${MAX_CA_BYTES} bytes`);
      ca = data.toString('utf8');
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new StalledError(`cannot read caFile ${source.caFile} (${reason})`, { cause: error });
    }
  }
  return new RegistryClient({
    host: ref.domain,
    insecure: source.insecure,
    requestsPerSecond: source.requestsPerSecond,
    ca,
    credentials,
    ...overrides,
  });
}
