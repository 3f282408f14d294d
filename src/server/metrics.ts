// The agent's Prometheus metrics (written by ./prometheus.ts, its own registry). Labels are names of deployments, sources and
// registries from the config: bounded, and never a secret.

import type { DeployReport, Release, SyncMetrics, SyncReporter, SyncRequest } from '../contract.ts';
import type { RequestStats } from '../http/request-counter.ts';
import type { DriftFinding } from '../kube/drift.ts';
import { Counter, Gauge, Histogram, Registry } from './prometheus.ts';

/** The `cluster` label of a sync's series: only when the agent deploys to several clusters (docs/clusters.md). */
function clusterLabel(sync: SyncRequest): string | undefined {
  return sync.config.clusters.length > 0 ? sync.config.cluster.name : undefined;
}

export class AgentMetrics implements SyncReporter, SyncMetrics {
  readonly registry = new Registry();
  /**
   * The agent's own cluster, which series outside a sync are labelled with (held, suspended). Undefined for an
   * agent of one cluster: its series carry no `cluster` label, as before there were several.
   */
  private readonly cluster: string | undefined;

  constructor(cluster?: string) {
    this.cluster = cluster;
  }

  private readonly syncDuration = new Histogram({
    name: 'mooring_sync_duration_seconds',
    help: 'Duration of syncs, from the first request to the last verdict',
    labelNames: ['deployment', 'result', 'cluster'],
    buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
    registers: [this.registry],
  });
  private readonly syncs = new Counter({
    name: 'mooring_syncs_total',
    help: 'Syncs by deployment and result',
    labelNames: ['deployment', 'result', 'trigger', 'cluster'],
    registers: [this.registry],
  });
  private readonly stabilityWait = new Histogram({
    name: 'mooring_stability_wait_seconds',
    help: 'Time spent waiting for manifest stability',
    labelNames: ['deployment', 'cluster'],
    buckets: [0.5, 1, 5, 15, 30, 60, 120, 300, 900, 1800],
    registers: [this.registry],
  });
  private readonly polls = new Counter({
    name: 'mooring_source_polls_total',
    help: 'Polls of sources by result (changed, unchanged, error; refused: a new digest whose signature does not verify)',
    labelNames: ['source', 'kind', 'result'],
    registers: [this.registry],
  });
  readonly registryRequests = new Gauge({
    name: 'mooring_registry_requests',
    help: 'Requests made to each registry since start, by method and HTTP status (token requests: method token)',
    labelNames: ['registry', 'method', 'status'],
    registers: [this.registry],
  });
  readonly rateLimitRemaining = new Gauge({
    name: 'mooring_registry_rate_limit_remaining',
    help: 'The last RateLimit-Remaining a registry reported',
    labelNames: ['registry'],
    registers: [this.registry],
  });
  readonly registryPausedUntil = new Gauge({
    name: 'mooring_registry_paused_until_seconds',
    help: 'Until when (Unix seconds) a registry asked not to be polled (429 Retry-After, RateLimit-Remaining: 0); 0 when it may be',
    labelNames: ['registry'],
    registers: [this.registry],
  });
  private readonly revision = new Gauge({
    name: 'mooring_deployed_revision_info',
    help: 'The release each deployment is at (value 1)',
    labelNames: ['deployment', 'release', 'commit', 'cluster'],
    registers: [this.registry],
  });
  private readonly revisions = new Map<
    string,
    { deployment: string; release: string; commit: string; cluster: string | undefined }
  >();
  /** Kept by the cluster cache: grows with resource types times namespaces in use, never with objects. */
  readonly watchStreams = new Gauge({
    name: 'mooring_cluster_watch_streams',
    help: 'Watch streams open to the API server (one per resource type and namespace being watched)',
    labelNames: ['cluster'],
    registers: [this.registry],
  });
  private readonly kubeRequestsTotal = new Counter({
    name: 'mooring_kube_requests_total',
    help: 'Requests to the Kubernetes API server by verb, HTTP status code (error: no answer; watch: streams opened) and resource',
    labelNames: ['verb', 'code', 'resource', 'cluster'],
    registers: [this.registry],
  });
  private readonly kubeThrottled = new Counter({
    name: 'mooring_kube_throttled_seconds_total',
    help: "Time requests to the Kubernetes API waited for the agent's request budget (cluster.qps, cluster.burst) or a 429's Retry-After",
    registers: [this.registry],
  });
  private readonly kubeBudget = new Gauge({
    name: 'mooring_kube_request_budget',
    help: "The request budget's rate now, requests a second: it adapts to the API server's answers unless cluster.qps is set alone",
    labelNames: ['cluster'],
    registers: [this.registry],
  });
  private readonly kubeSeen = new Map<string, number>();
  private kubeThrottledSeen = 0;
  /** The other clusters' clients (docs/clusters.md): what each had counted when last read, by cluster. */
  private readonly otherClients = new Map<string, { client: object; seen: Map<string, number> }>();

  /** Brings the Kubernetes API counters up to a client's counts since its start (KubeApi.requestStats). */
  kubeRequests(stats: RequestStats, cluster: string | undefined = this.cluster): void {
    for (const { verb, code, resource, count } of stats.requests) {
      const key = `${verb} ${code} ${resource}`;
      const delta = count - (this.kubeSeen.get(key) ?? 0);
      if (delta > 0) this.kubeRequestsTotal.inc({ verb, code, resource, cluster }, delta);
      this.kubeSeen.set(key, Math.max(count, this.kubeSeen.get(key) ?? 0));
    }
    const throttled = stats.throttledSeconds - this.kubeThrottledSeen;
    if (throttled > 0) this.kubeThrottled.inc({}, throttled);
    this.kubeThrottledSeen = Math.max(this.kubeThrottledSeen, stats.throttledSeconds);
    if (stats.budgetRate !== undefined) this.kubeBudget.set({ cluster }, stats.budgetRate);
  }

  /**
   * The same for the client of another cluster, under its `cluster` label; a new client of the cluster (it was
   * connected again) counts from zero.
   */
  clusterKubeRequests(cluster: string, client: object, stats: RequestStats, streams: number): void {
    let known = this.otherClients.get(cluster);
    if (known?.client !== client) {
      known = { client, seen: new Map() };
      this.otherClients.set(cluster, known);
    }
    for (const { verb, code, resource, count } of stats.requests) {
      const key = `${verb} ${code} ${resource}`;
      const delta = count - (known.seen.get(key) ?? 0);
      if (delta > 0) this.kubeRequestsTotal.inc({ verb, code, resource, cluster }, delta);
      known.seen.set(key, Math.max(count, known.seen.get(key) ?? 0));
    }
    this.watchStreams.set({ cluster }, streams);
    if (stats.budgetRate !== undefined) this.kubeBudget.set({ cluster }, stats.budgetRate);
  }

  /** The process's memory, as Prometheus' client libraries name it: what the memory goals are measured by. */
  private readonly memory = new Gauge({
    name: 'mooring_process_memory_bytes',
    help: 'Memory of the agent process by kind: rss (resident), heap_used and heap_total (V8), external (buffers)',
    labelNames: ['kind'],
    registers: [this.registry],
  });

  /** Reads the process's memory now (each scrape). */
  processMemory(usage: NodeJS.MemoryUsage = process.memoryUsage()): void {
    this.memory.set({ kind: 'rss' }, usage.rss);
    this.memory.set({ kind: 'heap_used' }, usage.heapUsed);
    this.memory.set({ kind: 'heap_total' }, usage.heapTotal);
    this.memory.set({ kind: 'external' }, usage.external);
    this.memory.set({ kind: 'array_buffers' }, usage.arrayBuffers);
  }

  /** Set by the control ConfigMap's watch (src/sync/control.ts). */
  readonly suspended = new Gauge({
    name: 'mooring_deployment_suspended',
    help: '1 while a deployment is suspended (mooring suspend): its changes are noted, not deployed',
    labelNames: ['deployment', 'cluster'],
    registers: [this.registry],
  });
  readonly eventsDropped = new Counter({
    name: 'mooring_events_dropped_total',
    help: 'Kubernetes Events not written: over the per-object limit (25, then one per 5 minutes) or a full queue',
    registers: [this.registry],
  });

  private readonly notifications = new Counter({
    name: 'mooring_notifications_total',
    help: 'Notifications by receiver and result: sent, failed (refused, or given up after retries), dropped (queue full)',
    labelNames: ['receiver', 'result'],
    registers: [this.registry],
  });

  notification(receiver: string, result: 'sent' | 'failed' | 'dropped'): void {
    this.notifications.inc({ receiver, result });
  }

  private readonly heldSince = new Gauge({
    name: 'mooring_deployment_held_since_seconds',
    help: 'Since when (Unix seconds) a rollback holds a deployment at its release (new commits and images are not deployed); absent when not held',
    labelNames: ['deployment', 'cluster'],
    registers: [this.registry],
  });

  /** A rollback holds the deployment since `since` (ISO time), or no longer does (undefined). */
  held(deployment: string, since: string | undefined, cluster: string | undefined = this.cluster): void {
    if (since === undefined) this.heldSince.remove({ deployment, cluster });
    else this.heldSince.set({ deployment, cluster }, Math.floor(Date.parse(since) / 1000));
  }

  /**
   * What the agent of one cluster counts (docs/clusters.md): its deployments' series carry its `cluster` label.
   * Syncs are counted by the cluster their request names.
   */
  forCluster(cluster: string | undefined): SyncMetrics {
    return {
      poll: (source, kind, result) => this.poll(source, kind, result),
      held: (deployment, since) => this.held(deployment, since, cluster),
      suspended: {
        set: (labels, value) => this.suspended.set({ ...labels, cluster }, value),
        remove: (labels) => this.suspended.remove({ ...labels, cluster }),
      },
    };
  }

  /** Whether each cluster's API server answers (1) or not (0), and since when it does not. */
  readonly clusterReachable = new Gauge({
    name: 'mooring_cluster_reachable',
    help: "1 while the cluster's API server answers the agent, 0 while it does not",
    labelNames: ['cluster'],
    registers: [this.registry],
  });

  readonly leader = new Gauge({
    name: 'mooring_leader',
    help: '1 when this agent holds the leader lease (or runs without leader election)',
    registers: [this.registry],
  });

  /** Replicas sharing the work (docs/replicas.md): the live replicas, and the deployments this one syncs. */
  readonly shardMembers = new Gauge({
    name: 'mooring_replicas',
    help: 'Live replicas sharing the deployments, as this replica sees them (0 outside leaderElection.mode shared)',
    registers: [this.registry],
  });

  readonly shardDeployments = new Gauge({
    name: 'mooring_replica_deployments',
    help: 'Deployments this replica syncs (replicas sharing the work)',
    registers: [this.registry],
  });

  private readonly configReloads = new Counter({
    name: 'mooring_config_reloads_total',
    help: 'Changes of the configuration file: applied, or refused as invalid (the agent keeps the previous one)',
    labelNames: ['result'],
    registers: [this.registry],
  });

  configReload(result: 'applied' | 'invalid'): void {
    this.configReloads.inc({ result });
  }

  private readonly driftObjects = new Gauge({
    name: 'mooring_drift_objects',
    help: 'Objects of a deployment found changed by hand at its last drift pass (drift mode report: left as they are)',
    labelNames: ['deployment', 'cluster'],
    registers: [this.registry],
  });
  private readonly driftCorrections = new Counter({
    name: 'mooring_drift_corrections_total',
    help: 'Objects put back by drift correction',
    labelNames: ['deployment', 'cluster'],
    registers: [this.registry],
  });

  drifted(sync: SyncRequest, findings: readonly DriftFinding[]): void {
    this.driftObjects.set({ deployment: sync.deployment.name, cluster: clusterLabel(sync) }, findings.length);
  }

  poll(
    source: string,
    kind: 'git' | 'registry' | 'local',
    result: 'changed' | 'unchanged' | 'error' | 'refused',
  ): void {
    this.polls.inc({ source, kind, result });
  }

  finished(sync: SyncRequest, report: DeployReport, release: Release | undefined): void {
    const deployment = sync.deployment.name;
    const cluster = clusterLabel(sync);
    this.syncs.inc({ deployment, result: report.outcome, trigger: sync.trigger, cluster });
    this.syncDuration.observe({ deployment, result: report.outcome, cluster }, report.elapsedMs / 1000);
    if (report.wait) this.stabilityWait.observe({ deployment, cluster }, report.wait.elapsedMs / 1000);
    if (sync.trigger === 'drift' && report.drift?.length) {
      this.driftCorrections.inc({ deployment, cluster }, report.drift.length);
      this.driftObjects.set({ deployment, cluster }, 0);
    }
    if (report.outcome === 'stable' && release) {
      const key = `${cluster}/${deployment}`;
      const previous = this.revisions.get(key);
      if (previous) this.revision.remove(previous);
      const labels = { deployment, release: String(release.id), commit: sync.commit ?? '', cluster };
      this.revisions.set(key, labels);
      this.revision.set(labels, 1);
    }
  }

  text(): string {
    return this.registry.text();
  }
}
