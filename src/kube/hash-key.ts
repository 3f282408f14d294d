// The installation's key of the content hash of versioned Secrets (src/render/versioning.ts): 32 random bytes in the
// Secret `mooring-content-hash-key` of the agent's namespace, made on first use. Two agents (or an agent and a
// `mooring deploy`) that race to make it agree: each POSTs its own, the loser's 409 makes it read the winner's.
// The key never leaves this module but as bytes handed to render; no message carries it.
import { randomBytes } from 'node:crypto';
import { StalledError } from '../errors.ts';
import type { KubeApi } from './api.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { createNamespace } from './namespace.ts';
import { reduceSecretError } from './secret-errors.ts';

export const HASH_KEY_SECRET = 'mooring-content-hash-key';
const FIELD = 'key';
const KEY_BYTES = 32;

function secretPath(namespace: string, name?: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets${name ? `/${name}` : ''}`;
}

function where(namespace: string): string {
  return `Secret ${namespace}/${HASH_KEY_SECRET}`;
}

function keyOf(secret: { data?: Record<string, string> | null }, namespace: string): Buffer {
  const encoded = secret.data?.[FIELD];
  const key = typeof encoded === 'string' ? Buffer.from(encoded, 'base64') : undefined;
  if (!key || key.length < KEY_BYTES) {
    throw new StalledError(
      `${where(namespace)}: data.${FIELD} must hold at least ${KEY_BYTES} bytes (delete the Secret to have a new key made; Secrets deployed since then get new versions)`,
    );
  }
  return key;
}

/** The key, or undefined when there is none yet (a read-only lookup: `mooring render`, a dry run). */
export async function readHashKey(api: KubeApi, namespace: string): Promise<Buffer | undefined> {
  try {
    const secret = await api.request<{ data?: Record<string, string> }>(
      'GET',
      secretPath(namespace, HASH_KEY_SECRET),
    );
    return keyOf(secret, namespace);
  } catch (error) {
    if (statusCode(error) === 404) return undefined;
    if (error instanceof StalledError) throw error;
    throw describeKubeError(reduceSecretError(error), `read ${where(namespace)}`);
  }
}

/** The key, made (with its namespace, if need be) when there is none. Create-if-absent: racers agree on one key. */
export async function ensureHashKey(api: KubeApi, namespace: string): Promise<Buffer> {
  const existing = await readHashKey(api, namespace);
  if (existing) return existing;
  const body = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: HASH_KEY_SECRET,
      namespace,
      labels: {
        'app.kubernetes.io/managed-by': 'mooring',
        'app.kubernetes.io/component': 'content-hash-key',
      },
    },
    type: 'Opaque',
    data: { [FIELD]: randomBytes(KEY_BYTES).toString('base64') },
  };
  const create = () =>
    api.request<{ data?: Record<string, string> }>('POST', secretPath(namespace), { body });
  try {
    try {
      return keyOf(await create(), namespace);
    } catch (error) {
      // No namespace yet (a `mooring deploy` before any agent ran): make it, then the key.
      if (statusCode(error) !== 404) throw error;
      await createNamespace(api, namespace);
      return keyOf(await create(), namespace);
    }
  } catch (error) {
    if (error instanceof StalledError) throw error;
    if (statusCode(error) === 409) {
      const winner = await readHashKey(api, namespace);
      if (winner) return winner;
    }
    throw describeKubeError(reduceSecretError(error), `create ${where(namespace)}`);
  }
}
