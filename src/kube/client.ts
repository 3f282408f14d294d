// Connecting to a cluster: kubeconfig (path and context, as kubectl resolves them) or the in-cluster service
// account. This module and its siblings are the only code that talks to the Kubernetes API.
import { KubeConfig, VersionApi } from '@kubernetes/client-node';
import { StalledError, TransientError } from '../errors.ts';

export interface ClusterAccess {
  /** A kubeconfig file; $KUBECONFIG, then ~/.kube/config when absent. */
  kubeconfig?: string | undefined;
  context?: string | undefined;
  inCluster?: boolean | undefined;
}

export function loadKubeConfig(access: ClusterAccess): KubeConfig {
  const kc = new KubeConfig();
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

export interface ServerVersion {
  gitVersion: string;
  platform: string;
}

export async function serverVersion(kc: KubeConfig): Promise<ServerVersion> {
  const server = kc.getCurrentCluster()?.server ?? 'cluster';
  try {
    const info = await kc.makeApiClient(VersionApi).getCode();
    return { gitVersion: info.gitVersion, platform: info.platform };
  } catch (error) {
    throw new TransientError(`cannot reach the API server: ${(error as Error).message}`, {
      subject: { describe: server },
      cause: error,
    });
  }
}
