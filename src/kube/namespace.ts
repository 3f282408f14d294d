// Namespaces mooring creates: the agent's own (a `mooring deploy` or an agent run from a laptop before any
// installation keeps its records there), and a deployment's target namespace when createNamespace is set. Both
// carry mooring's labels; neither is ever pruned (no inventory records them).
import { LABEL_MANAGED_BY, MANAGED_BY } from '../render/annotations.ts';
import type { KubeApi } from './api.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { namespaceExists } from './live-state.ts';

export { namespaceExists } from './live-state.ts';

/** Creates namespace `name` with mooring's labels; one that exists already (a racing creator) is fine. */
export async function createNamespace(
  api: KubeApi,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  try {
    await api.request('POST', '/api/v1/namespaces', {
      body: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { ...labels, [LABEL_MANAGED_BY]: MANAGED_BY } },
      },
    });
  } catch (error) {
    if (statusCode(error) !== 409) throw describeKubeError(error, `create Namespace ${name}`);
  }
}

/** The agent keeps its records in its own namespace; run from a laptop, it may not exist yet. Read first: an agent
 * allowed only into its own namespace may not create namespaces. */
export async function ensureNamespace(api: KubeApi, name: string): Promise<void> {
  if (!(await namespaceExists(api, name))) await createNamespace(api, name);
}
