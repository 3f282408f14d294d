// What each deployment last deployed, kept in the cluster (a ConfigMap per deployment in the agent's namespace),
// so that an agent that restarts knows what is current and does not redeploy it. The release ledger grows from
// this record.
import type { KubeApi } from '../kube/api.ts';
import { describeKubeError, statusCode } from '../kube/errors.ts';

export interface ReleaseState {
  deployment: string;
  /** The sync revision: the manifests' commit plus every bound image digest. */
  revision: string;
  commit?: string | undefined;
  images: Record<string, string>;
  outcome: string;
  time: string;
}

function configMapName(deployment: string): string {
  return `mooring-state-${deployment}`;
}

export async function readReleaseState(
  api: KubeApi,
  namespace: string,
  deployment: string,
): Promise<ReleaseState | undefined> {
  try {
    const cm = await api.request<{ data?: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${configMapName(deployment)}`,
    );
    const raw = cm.data?.['release.json'];
    return raw ? (JSON.parse(raw) as ReleaseState) : undefined;
  } catch (error) {
    if (statusCode(error) === 404) return undefined;
    throw describeKubeError(error, `read the state of deployment ${deployment}`);
  }
}

export async function writeReleaseState(api: KubeApi, namespace: string, state: ReleaseState): Promise<void> {
  const name = configMapName(state.deployment);
  const body = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'mooring', 'mooring.io/deployment': state.deployment },
    },
    data: { 'release.json': JSON.stringify(state, null, 2) },
  };
  try {
    await api.request('PATCH', `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${name}`, {
      query: { fieldManager: 'mooring', force: true },
      body,
      contentType: 'application/apply-patch+yaml',
    });
  } catch (error) {
    throw describeKubeError(error, `record the state of deployment ${state.deployment}`);
  }
}

/** A deployment's revision: what decides whether anything needs deploying. */
export function syncRevision(commit: string | undefined, images: Record<string, string>): string {
  const digests = Object.entries(images)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([source, digest]) => `${source}=${digest}`);
  return [commit ?? 'local', ...digests].join('|');
}
