// What the Git, registry and status-API fault tests share: checks of what the agent left in the cluster (ledger,
// outbox, versioned ConfigMaps). The agent and the commit statuses come from the harness (harness.ts).
import { KubeApi } from '../../src/kube/api.ts';
import { current, Ledger, type LedgerData } from '../../src/report/ledger.ts';
import type { OutboxEntry } from '../../src/report/outbox-policy.ts';
import { ConfigMapOutboxStore } from '../../src/report/outbox-store.ts';
import type { Agent } from './harness.ts';
import { clusterConfig } from './helpers.ts';

// The agent and the status parser live in the harness; re-exported for the files that import them from here.
export { type PostedStatus, postedStatuses, startAgent, unended } from './harness.ts';
export type RunningAgent = Agent;

export function api(): KubeApi {
  return new KubeApi(clusterConfig());
}

export async function ledgerOf(kube: KubeApi, namespace: string, deployment: string): Promise<LedgerData> {
  return new Ledger(kube, namespace).read(deployment);
}

export async function newestStable(kube: KubeApi, namespace: string, deployment: string) {
  return current(await ledgerOf(kube, namespace, deployment));
}

export async function outboxOf(kube: KubeApi, namespace: string): Promise<OutboxEntry[]> {
  return new ConfigMapOutboxStore(kube, namespace).read();
}

interface Meta {
  name: string;
  annotations?: Record<string, string>;
}

/**
 * Versioned ConfigMaps of a namespace that are duplicated (two versions of one name with the same content) or
 * dangling (no Deployment or ReplicaSet refers to them, and no release of the ledger lists them).
 */
export async function versionProblems(
  kube: KubeApi,
  namespace: string,
  ledgers: readonly LedgerData[],
): Promise<{ duplicated: string[]; dangling: string[]; versions: string[] }> {
  const ns = encodeURIComponent(namespace);
  const maps = await kube.request<{ items: { metadata: Meta; data?: Record<string, string> }[] }>(
    'GET',
    `/api/v1/namespaces/${ns}/configmaps`,
  );
  const workloads = [
    ...(await kube.request<{ items: unknown[] }>('GET', `/apis/apps/v1/namespaces/${ns}/deployments`)).items,
    ...(await kube.request<{ items: unknown[] }>('GET', `/apis/apps/v1/namespaces/${ns}/replicasets`)).items,
  ];
  const referenced = JSON.stringify(workloads);
  const released = new Set(ledgers.flatMap((l) => l.releases.flatMap((r) => r.versions)));
  const versions = maps.items.filter((m) => /-v\d{3,}$/.test(m.metadata.name));
  const seen = new Map<string, string>();
  const duplicated: string[] = [];
  const dangling: string[] = [];
  for (const m of versions) {
    const base = m.metadata.name.replace(/-v\d{3,}$/, '');
    const content = `${base} ${JSON.stringify(m.data ?? {})}`;
    const twin = seen.get(content);
    if (twin) duplicated.push(`${twin} = ${m.metadata.name}`);
    seen.set(content, m.metadata.name);
    if (!referenced.includes(`"${m.metadata.name}"`) && !released.has(`ConfigMap ${m.metadata.name}`))
      dangling.push(m.metadata.name);
  }
  return { duplicated, dangling, versions: versions.map((m) => m.metadata.name) };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
