// One cluster's stack, built in one place for the agent's own cluster (run-agent.ts) and for every other cluster
// it deploys to (cluster-units.ts): the API client with the configured request budget, the watch cache, the
// Events recorder, the ledger a status board reads, and the reporters of its syncs (commit statuses with their
// outbox in that cluster, notifications, Events, the audit log, the metrics). What differs between the two is
// passed in: the reporters a cluster adds, and how a unit wraps them to say its cluster is unreachable.
import type { MooringConfig } from '../config/schema.ts';
import { requestBudget } from '../config/schema-deployment.ts';
import type { Logger, SyncReporter } from '../contract.ts';
import { KubeApi } from '../kube/api.ts';
import { ClusterCache, streamingRefusedLog } from '../kube/cache.ts';
import type { ClusterConfig } from '../kube/client.ts';
import { Discovery } from '../kube/discovery.ts';
import { EventRecorder } from '../kube/events.ts';
import { AuditLog } from '../report/audit.ts';
import { CommitStatusSync } from '../report/commit-status-sync.ts';
import { SyncEvents } from '../report/events.ts';
import { Ledger } from '../report/ledger.ts';
import { Notifier } from '../report/notify/notifier.ts';
import type { AgentMetrics } from '../server/metrics.ts';

/** How long a watch stream stays open after a sync, so that the next sync of the same deployments finds it. */
const STREAM_LINGER_MS = 5 * 60_000;

export class ClusterStack {
  readonly api: KubeApi;
  readonly cache: ClusterCache;
  readonly discovery: Discovery;
  /** Kubernetes Events on the ledger ConfigMaps and the workloads, bounded per object (src/kube/events.ts). */
  readonly events: EventRecorder;
  private readonly log: Logger;
  private readonly metrics: AgentMetrics;
  /** Commit statuses, with the outbox of undelivered ones: delivered again when an agent starts leading. */
  private statuses: CommitStatusSync | undefined;
  /** Notifications: queued per receiver, never awaited by a sync (src/report/notify/). */
  private notifier: Notifier | undefined;

  constructor(access: ClusterConfig, config: MooringConfig, deps: { log: Logger; metrics: AgentMetrics }) {
    this.log = deps.log;
    this.metrics = deps.metrics;
    this.api = new KubeApi(access, {
      maxSockets: config.apply.concurrency * 2,
      requestTimeoutMs: config.cluster.requestTimeout,
      ...requestBudget(config.cluster),
    });
    this.cache = new ClusterCache(this.api, {
      lingerMs: STREAM_LINGER_MS,
      onStreamingRefused: streamingRefusedLog(deps.log),
    });
    this.discovery = new Discovery(this.api);
    this.events = new EventRecorder(this.api, {
      log: deps.log,
      dropped: () => deps.metrics.eventsDropped.inc(),
    });
  }

  /** The cluster's release ledger under `config` (a status board reads it). */
  ledger(config: MooringConfig): Ledger {
    return new Ledger(this.api, config.cluster.namespace, config.ledger.historyLimit);
  }

  /**
   * The reporters of this cluster's syncs under `config`, made again for each new configuration (the statuses
   * and notifications of the one before are closed). `extra` follow the cluster's own; `wrap` is given the
   * statuses, the notifications and `extra` (a unit names its cluster in a failure while it does not answer).
   */
  reporters(
    config: MooringConfig,
    extra: readonly SyncReporter[] = [],
    wrap: (reporter: SyncReporter) => SyncReporter = (reporter) => reporter,
  ): SyncReporter[] {
    const previous = this.statuses;
    const statuses = new CommitStatusSync(config, this.log, { api: this.api });
    // Syncs begun under the previous configuration end through its reporters: the statuses they keep go on here.
    if (previous?.outbox && statuses.outbox) previous.outbox.handOver(statuses.outbox);
    void previous?.close();
    void this.notifier?.close();
    this.statuses = statuses;
    void statuses.start().catch(() => undefined);
    this.notifier = new Notifier(config, {
      log: this.log,
      counted: (receiver, result) => this.metrics.notification(receiver, result),
    });
    return [
      wrap(statuses),
      wrap(this.notifier),
      new SyncEvents(this.events, this.api, config),
      new AuditLog(config, this.log),
      this.metrics,
      ...extra.map(wrap),
    ];
  }

  /** Whether the API server answers: throws what it answered, or why it did not. */
  async probe(): Promise<void> {
    await this.api.request('GET', '/version');
  }

  /** Its reporters' queues end: delivered, or kept in the outbox. The client stays open (for the Lease). */
  async closeReporters(): Promise<void> {
    await this.statuses?.close();
    await this.notifier?.close();
    await this.events.close();
    this.statuses = undefined;
    this.notifier = undefined;
  }

  /** Its streams and connections close. */
  disconnect(): void {
    this.cache.close();
    this.api.close();
  }

  async close(): Promise<void> {
    await this.closeReporters();
    this.disconnect();
  }
}
