// Creating the agent's own namespace when it does not exist yet (a `mooring deploy` or an agent run from a laptop
// before any installation): its records (ledger, inventory, hash key) live there.
import type { KubeApi } from './api.ts';
import { describeKubeError, statusCode } from './errors.ts';

/** Creates namespace `name`; one that exists already (a racing creator) is fine. */
export async function createNamespace(api: KubeApi, name: string): Promise<void> {
  try {
    await api.request('POST', '/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
    });
  } catch (error) {
    if (statusCode(error) !== 409) throw describeKubeError(error, `create Namespace ${name}`);
  }
}

/** The agent keeps its records in its own namespace; run from a laptop, it may not exist yet. Read first: an agent
 * allowed only into its own namespace may not create namespaces. */
export async function ensureNamespace(api: KubeApi, name: string): Promise<void> {
  try {
    await api.request('GET', `/api/v1/namespaces/${encodeURIComponent(name)}`);
  } catch (error) {
    if (statusCode(error) !== 404) throw describeKubeError(error, `read Namespace ${name}`);
    await createNamespace(api, name);
  }
}
