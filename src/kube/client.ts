// Connecting to a cluster: kubeconfig (path and context, as kubectl resolves them) or the in-cluster service
// account, read by src/kube/kubeconfig.ts. This module and its siblings are the only code that talks to the
// Kubernetes API; every request goes through KubeApi.
import { StalledError } from '../errors.ts';
import type { KubeApi } from './api.ts';
import { describeKubeError } from './errors.ts';
import {
  type ClusterAccess,
  type ClusterConfig,
  type KubeconfigDeps,
  loadClusterConfig,
} from './kubeconfig.ts';

export type { ClusterAccess, ClusterConfig };

/**
 * Synchronous: files are read and checked now, so a bad kubeconfig fails before any work starts; credentials
 * that rotate (token files, exec plugins) are refreshed per request.
 */
export function loadKubeConfig(access: ClusterAccess, deps?: KubeconfigDeps): ClusterConfig {
  try {
    return loadClusterConfig(access, deps);
  } catch (error) {
    if (error instanceof StalledError) throw error;
    throw new StalledError(`cannot load cluster credentials: ${(error as Error).message}`, {
      subject: {
        describe: access.inCluster ? 'in-cluster service account' : (access.kubeconfig ?? 'kubeconfig'),
      },
      cause: error,
    });
  }
}

/** The namespace as kubectl picks it: the flag, else the current context's, else "default". */
export function contextNamespace(config: ClusterConfig, flag?: string): string {
  return flag ?? config.namespace ?? 'default';
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
