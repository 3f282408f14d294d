// A kubeconfig kept in a Secret (clusters[].kubeconfigSecret; docs/clusters.md) is data written by whoever may
// write that Secret, not the operator's own file: it may hold inline certificates, keys and tokens (and basic
// auth), nothing that makes the agent run a program, read one of its own files, or drop TLS. This is the one
// place such a kubeconfig is read: every path that connects with one goes through kubeconfigFromSecret, which
// refuses, before anything connects, with the Secret, the key, the kubeconfig's cluster or user and the field:
// - `exec` (a command run inside the agent) unless the cluster sets `allowExec: true`;
// - `auth-provider` always: client-node's gcp provider runs its `cmd-path` outside mooring's one runner;
// - file paths always (`tokenFile`, `client-certificate`, `client-key`, `certificate-authority`): a path names a
//   file of the agent (its Git password file, say), which would be sent to the server the Secret names;
// - `insecure-skip-tls-verify` and an `http:` server unless the cluster sets `allowInsecureTLS: true`;
// - `proxy-url` (refused in every kubeconfig, kubeconfig-file.ts).
// An exec plugin allowed by `allowExec` runs through the one runner (child-process.ts) with a minimal environment
// (PATH, a HOME of its own, LANG, TZ, its own `env` entries): none of the agent's variables (SOPS_AGE_KEY, …).
import { mkdir } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { StalledError } from '../errors.ts';
import type { KubeApi } from './api.ts';
import { describeKubeError } from './errors.ts';
import { type ClusterConfig, fromKubeconfig } from './kubeconfig.ts';
import { type Entry, type Kubeconfig, parseKubeconfig } from './kubeconfig-file.ts';

/** The largest kubeconfig a Secret may hold. */
export const MAX_KUBECONFIG_SECRET_BYTES = 1024 * 1024;

export interface KubeconfigSecret {
  /** The cluster of the configuration it is for (`clusters[].name`), for messages. */
  cluster: string;
  namespace: string;
  name: string;
  key: string;
  context?: string | undefined;
  /** The operator's opt-ins for this cluster: an exec plugin, TLS without verification (or none). */
  allowExec: boolean;
  allowInsecureTLS: boolean;
}

/** `Secret mooring/eu-1-kubeconfig key value`: how messages name the kubeconfig (its lines follow, `…:14`). */
export function describeSecret(ref: Pick<KubeconfigSecret, 'namespace' | 'name' | 'key'>): string {
  return `Secret ${ref.namespace}/${ref.name} key ${ref.key}`;
}

/** What the refusal of `field` tells the operator to do. */
function refusal(
  ref: KubeconfigSecret,
  field: string,
  why: string,
  optIn?: 'allowExec' | 'allowInsecureTLS',
) {
  const remedy = optIn
    ? `set clusters[${ref.cluster}].kubeconfigSecret.${optIn}: true to allow it (docs/security.md)`
    : 'a kubeconfig from a Secret holds inline certificates and tokens only';
  return `${field}: ${why}: refused in a kubeconfig from a Secret; ${remedy}`;
}

function refuse(entry: Entry<unknown>, field: string, kind: string, message: string): never {
  throw new StalledError(`${kind} "${entry.name}": ${message}`, { subject: { describe: entry.at(field) } });
}

/**
 * Refuses what a kubeconfig from a Secret may not hold, in every cluster and user it defines (a context is chosen
 * by the configuration, and any of them may be chosen later).
 */
export function checkKubeconfigData(config: Kubeconfig, ref: KubeconfigSecret): void {
  for (const entry of config.clusters.values()) {
    const c = entry.value;
    if (c['certificate-authority'])
      refuse(entry, 'certificate-authority', 'cluster', refusal(ref, 'certificate-authority', 'a file path'));
    if (c['insecure-skip-tls-verify'] && !ref.allowInsecureTLS)
      refuse(
        entry,
        'insecure-skip-tls-verify',
        'cluster',
        refusal(ref, 'insecure-skip-tls-verify', 'TLS without verification', 'allowInsecureTLS'),
      );
    if (/^http:\/\//i.test(c.server) && !ref.allowInsecureTLS)
      refuse(
        entry,
        'server',
        'cluster',
        refusal(ref, 'server', 'http: sends the credentials unencrypted', 'allowInsecureTLS'),
      );
  }
  for (const entry of config.users.values()) {
    const u = entry.value;
    for (const field of ['tokenFile', 'client-certificate', 'client-key'] as const)
      if (u[field]) refuse(entry, field, 'user', refusal(ref, field, 'a file path'));
    if (u['auth-provider'])
      refuse(
        entry,
        'auth-provider',
        'user',
        refusal(ref, 'auth-provider', 'a legacy provider that may run a command (gcp cmd-path)'),
      );
    if (u.exec && !ref.allowExec)
      refuse(entry, 'exec', 'user', refusal(ref, 'exec', 'runs a command inside the agent', 'allowExec'));
    // There is no folder for a relative path to start from: a command on PATH, or an absolute path.
    if (u.exec && !isAbsolute(u.exec.command) && u.exec.command.includes('/'))
      refuse(entry, 'exec', 'user', `exec: command "${u.exec.command}" must be on PATH or an absolute path`);
  }
}

/** The whole environment of an allowed exec plugin: nothing of the agent's beyond PATH. */
export function execEnv(home: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TZ: 'UTC' };
}

/** Cluster access from the kubeconfig text of a Secret, checked by checkKubeconfigData first. */
export function kubeconfigFromSecretText(
  text: Buffer,
  ref: KubeconfigSecret,
  options: { execHome: string; now?: () => number },
): ClusterConfig {
  const where = describeSecret(ref);
  if (text.length > MAX_KUBECONFIG_SECRET_BYTES)
    throw new StalledError(`the kubeconfig is over ${MAX_KUBECONFIG_SECRET_BYTES / 1024 / 1024} MiB`, {
      subject: { describe: where },
    });
  const config = parseKubeconfig(text.toString('utf8'), where);
  checkKubeconfigData(config, ref);
  return fromKubeconfig(config, ref.context, execEnv(options.execHome), options.now ?? Date.now);
}

/**
 * Reads the Secret from the agent's own cluster (`home`) and returns the access it describes, or throws a
 * StalledError naming the Secret, the key, the entry and the field it refuses.
 */
export async function kubeconfigFromSecret(
  home: KubeApi,
  ref: KubeconfigSecret,
  options: { execHome: string; now?: () => number },
): Promise<ClusterConfig> {
  let secret: { data?: Record<string, string> } | undefined;
  try {
    secret = await home.request<{ data?: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/secrets/${encodeURIComponent(ref.name)}`,
    );
  } catch (error) {
    throw describeKubeError(error, `cluster ${ref.cluster}: read Secret ${ref.namespace}/${ref.name}`);
  }
  const encoded = secret?.data?.[ref.key];
  if (!encoded)
    throw new StalledError(
      `cluster ${ref.cluster}: Secret ${ref.namespace}/${ref.name} has no key "${ref.key}"`,
    );
  // Only an allowed exec plugin uses it: a HOME of its own, not the agent's.
  if (ref.allowExec) await mkdir(options.execHome, { recursive: true, mode: 0o700 });
  return kubeconfigFromSecretText(Buffer.from(encoded, 'base64'), ref, options);
}
