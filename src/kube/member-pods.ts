// Which member Leases are replicas of this agent, when it runs in a Pod (POD_NAME): a Lease is written by whoever
// may write Leases in the agent's namespace, a Pod only by whoever may run code there. A member counts only when
// its Lease's holder names a Pod of the agent's own workload (the same `app.kubernetes.io/name` and
// `app.kubernetes.io/instance` labels as the agent's own Pod, the chart's selector; without them, the own Pod's
// labels but those that differ from Pod to Pod) that is Running with an IP; and webhooks are passed on to that IP
// from the API at the agent's own port, never to an address a Lease names.
import type { KubeApi } from './api.ts';
import { describeKubeError } from './errors.ts';
import { eachListPage } from './list-pages.ts';

/** The labels of the agent's workload (the chart's selector labels). */
const WORKLOAD_LABELS = ['app.kubernetes.io/name', 'app.kubernetes.io/instance'];
/** Labels that differ from one Pod (or rollout) of a workload to the next, or that the leader sets on itself. */
const PER_POD_LABELS = new Set([
  'pod-template-hash',
  'controller-revision-hash',
  'statefulset.kubernetes.io/pod-name',
  'apps.kubernetes.io/pod-index',
  'helm.sh/chart',
  'app.kubernetes.io/version',
  'mooring.io/leader',
]);

interface Pod {
  metadata: { name: string; labels?: Record<string, string> };
  status?: { phase?: string; podIP?: string };
}

/** The label selector of the workload of a Pod with these labels. */
export function workloadSelector(labels: Readonly<Record<string, string>>): string {
  const chosen = WORKLOAD_LABELS.some((k) => labels[k] !== undefined)
    ? Object.entries(labels).filter(([k]) => WORKLOAD_LABELS.includes(k))
    : Object.entries(labels).filter(([k]) => !PER_POD_LABELS.has(k));
  return chosen
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

const podsPath = (namespace: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;

/**
 * The names of the running Pods of `namespace` (with a selector: of that workload). `mooring status`, which has
 * no Pod of its own to take a workload from, counts a member held by no running Pod out when others are.
 */
export async function runningPods(
  api: KubeApi,
  namespace: string,
  selector?: string,
  signal?: AbortSignal,
): Promise<Map<string, string>> {
  // A page at a time, keeping each running Pod's address alone: whoever can create Pods chooses their number and size.
  const pods = new Map<string, string>();
  try {
    await eachListPage<Pod>(
      api,
      podsPath(namespace),
      { query: { labelSelector: selector }, restart: () => pods.clear(), signal },
      (items) => {
        for (const pod of items) {
          const ip = pod.status?.podIP;
          // A Pod being deleted still counts: its replica deletes its own Lease when it stops.
          if (pod.status?.phase === 'Running' && ip)
            pods.set(pod.metadata.name, ip.includes(':') ? `[${ip}]` : ip);
        }
      },
    );
  } catch (error) {
    throw describeKubeError(error, `list the Pods of ${namespace}${selector ? ` (${selector})` : ''}`);
  }
  return pods;
}

export class MemberPods {
  private readonly api: KubeApi;
  private readonly namespace: string;
  private readonly self: string;
  private readonly port: number;
  private selector: string | undefined;

  constructor(api: KubeApi, options: { namespace: string; pod: string; port: number }) {
    this.api = api;
    this.namespace = options.namespace;
    this.self = options.pod;
    this.port = options.port;
  }

  /**
   * The running Pods of the agent's workload by name, each with where it takes webhooks: `http://IP:port`. Its
   * requests fail when `signal` is aborted.
   */
  async addresses(signal?: AbortSignal): Promise<Map<string, string>> {
    if (this.selector === undefined) {
      let own: Pod;
      try {
        own = await this.api.request<Pod>(
          'GET',
          `${podsPath(this.namespace)}/${encodeURIComponent(this.self)}`,
          signal ? { signal } : undefined,
        );
      } catch (error) {
        throw describeKubeError(error, `read the agent's own Pod ${this.namespace}/${this.self}`);
      }
      this.selector = workloadSelector(own.metadata.labels ?? {});
    }
    const pods = new Map<string, string>();
    for (const [name, ip] of await runningPods(this.api, this.namespace, this.selector, signal))
      pods.set(name, `http://${ip}:${this.port}`);
    return pods;
  }
}
