// Turning a registry source's `credentials` into a username and password: either two secrets, or a Docker
// `config.json` (the same JSON as a `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson`).
// Errors name the secret reference and the registry, never a value from the secret.
import { z } from 'zod';
import type { RegistrySource, SecretRef } from '../../config/schema.ts';
import { readSecret } from '../../config/secret.ts';
import { StalledError } from '../../errors.ts';
import { parseJson } from '../../json.ts';
import type { BasicCredentials } from './auth.ts';

const dockerAuthEntry = z.object({
  auth: z
    .string()
    .max(16 * 1024)
    .optional(),
  username: z.string().max(4096).optional(),
  password: z
    .string()
    .max(16 * 1024)
    .optional(),
  identitytoken: z.string().optional(),
});

const dockerConfigSchema = z.object({ auths: z.record(z.string(), dockerAuthEntry).default({}) });

// Docker writes Docker Hub credentials under its v1 index URL; users write any of these names.
const DOCKER_HUB_NAMES = ['docker.io', 'index.docker.io', 'registry-1.docker.io'];

export async function resolveCredentials(
  credentials: RegistrySource['credentials'],
  host: string,
): Promise<BasicCredentials | undefined> {
  if (credentials === undefined) return undefined;
  const { dockerConfigJson, username, password } = credentials;
  if (dockerConfigJson !== undefined) {
    if (username !== undefined || password !== undefined) {
      throw new StalledError(
        'registry credentials: give "dockerConfigJson" or "username"/"password", not both',
      );
    }
    return fromDockerConfig(await readSecret(dockerConfigJson), host, describe(dockerConfigJson));
  }
  if (username === undefined && password === undefined) return undefined;
  if (username === undefined || password === undefined) {
    throw new StalledError('registry credentials: "username" and "password" go together');
  }
  return { username: await readSecret(username), password: await readSecret(password) };
}

/** The entry for `host` in a Docker config.json; `from` names where it was read, for messages. */
export function fromDockerConfig(text: string, host: string, from: string): BasicCredentials {
  let json: unknown;
  try {
    json = parseJson(text);
  } catch {
    // JSON.parse's message quotes the text around the error, which may be the secret: not passed on.
    throw new StalledError(`docker config ${from} is not valid JSON`);
  }
  const parsed = dockerConfigSchema.safeParse(json);
  if (!parsed.success)
    throw new StalledError(`docker config ${from} does not have the shape of a config.json`);
  const wanted = DOCKER_HUB_NAMES.includes(host) ? DOCKER_HUB_NAMES : [host];
  const entry = Object.entries(parsed.data.auths).find(([key]) => wanted.includes(registryOfKey(key)))?.[1];
  if (entry === undefined) throw new StalledError(`docker config ${from} has no credentials for ${host}`);
  if (entry.auth !== undefined && entry.auth !== '') {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) {
      throw new StalledError(`docker config ${from}: the "auth" of ${host} is not base64 of "user:password"`);
    }
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (entry.username !== undefined && entry.password !== undefined) {
    return { username: entry.username, password: entry.password };
  }
  if (entry.identitytoken !== undefined) {
    throw new StalledError(
      `docker config ${from}: ${host} has an identity token, which mooring does not support; give a username and password`,
    );
  }
  throw new StalledError(
    `docker config ${from}: the entry of ${host} has neither "auth" nor username/password`,
  );
}

// Keys are `host`, `host:port`, `https://host/v1/` and the like: what Docker's ConvertToHostname accepts.
function registryOfKey(key: string): string {
  const withoutScheme = key.replace(/^[a-z]+:\/\//i, '');
  return withoutScheme.split('/')[0] ?? withoutScheme;
}

function describe(ref: SecretRef): string {
  return ref.env !== undefined ? `from environment variable ${ref.env}` : `from file ${ref.file ?? ''}`;
}
