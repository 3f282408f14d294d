// Connecting to a cluster: kubeconfig (path and context, as kubectl resolves them) or the in-cluster service
// account. This module and its siblings are the only code that talks to the Kubernetes API.
//
// @kubernetes/client-node is used for one thing only: reading a kubeconfig (exec plugins, tokens, certificates,
// in-cluster config); every request goes through KubeApi. Its config module alone pulls in the whole generated
// API (some 850 modules, about 0.4 s), so it is required on the first kubeconfig read rather than imported:
// commands that never reach a cluster (`version`, `--help`, `render --offline`) do not pay for it.
import { createRequire } from 'node:module';
import type { KubeConfig } from '@kubernetes/client-node';
import { StalledError } from '../errors.ts';
import type { KubeApi } from './api.ts';
import { describeKubeError } from './errors.ts';

type ConfigModule = typeof import('@kubernetes/client-node/dist/config.js');

const require = createRequire(import.meta.url);

function kubeConfigClass(): ConfigModule['KubeConfig'] {
  // A synchronous require of an ES module: loadKubeConfig stays synchronous for its callers.
  return (require('@kubernetes/client-node/dist/config.js') as ConfigModule).KubeConfig;
}

export interface ClusterAccess {
  /** A kubeconfig file; $KUBECONFIG, then ~/.kube/config when absent. */
  kubeconfig?: string | undefined;
  context?: string | undefined;
  inCluster?: boolean | undefined;
}

export function loadKubeConfig(access: ClusterAccess): KubeConfig {
  const kc = new (kubeConfigClass())();
  try {
    // MOORING_IN_CLUSTER_ROOT: where the pod's files are when they are not at / (a ServiceAccount token and CA
    // mounted elsewhere, as in tests of the Helm chart's RBAC).
    if (access.inCluster) kc.loadFromCluster(process.env.MOORING_IN_CLUSTER_ROOT);
    else if (access.kubeconfig) kc.loadFromFile(access.kubeconfig);
    else kc.loadFromDefault();
  } catch (error) {
    const where = access.inCluster
      ? 'in-cluster service account'
      : (access.kubeconfig ?? 'default kubeconfig');
    throw new StalledError(`cannot load cluster credentials: ${(error as Error).message}`, {
      subject: { describe: where },
      cause: error,
    });
  }
  if (access.context) {
    if (!kc.getContextObject(access.context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new StalledError(
        `context "${access.context}" is not in the kubeconfig (known: ${known.join(', ') || 'none'})`,
      );
    }
    kc.setCurrentContext(access.context);
  }
  if (!kc.getCurrentCluster()) {
    throw new StalledError('the kubeconfig has no current cluster: pass --kubeconfig and --context');
  }
  return kc;
}

/** The namespace as kubectl picks it: the flag, else the current context's, else "default". */
export function contextNamespace(kc: KubeConfig, flag?: string): string {
  return flag ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}

export interface ServerVersion {
  gitVersion: string;
  platform: string;
}

export async function serverVersion(api: KubeApi): Promise<ServerVersion> {
  try {
    const info = await api.request<Partial<ServerVersion>>('GET', '/version');
    return {
      gitVersion: String(info?.gitVersion ?? 'unknown'),
      platform: String(info?.platform ?? 'unknown'),
    };
  } catch (error) {
    throw describeKubeError(error, `${api.serverUrl}: cannot read the server version`);
  }
}
