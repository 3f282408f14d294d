// Every cluster an agent deploys to, its own first (docs/clusters.md), is a unit: its client, request budget, watch
// cache, discovery, Events, commit statuses (with their outbox in that cluster), status board and agent, built
// here from the configuration of that cluster (config/targets.ts). Each starts, fails and retries on its own: a
// cluster that cannot be reached holds up no other, and says since when it cannot. What the agent's own cluster
// does differently is its HomeRole: its stack is built before (the Lease, readiness and the status page use it
// while no agent runs) and outlives the unit, and a replica syncs only its share of the deployments.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fullJitter } from '../backoff.ts';
import type { MooringConfig, TargetCluster } from '../config/schema.ts';
import { clusterConfig } from '../config/targets.ts';
import type { DeployReport, Logger, Release, SyncReporter, SyncRequest } from '../contract.ts';
import { errorMessage, TransientError } from '../errors.ts';
import { type KubeApi, RequestTimeoutError, UnreachableError } from '../kube/api.ts';
import { type ClusterConfig, loadKubeConfig } from '../kube/client.ts';
import { kubeconfigFromSecret } from '../kube/kubeconfig-secret.ts';
import type { Ledger } from '../report/ledger.ts';
import type { AgentMetrics } from '../server/metrics.ts';
import type { StatusBoard } from '../server/status/board.ts';
import { Agent } from '../sync/agent.ts';
import type { AgentDeps, SetFolders } from '../sync/agent-context.ts';
import type { Fleet } from '../sync/fleet.ts';
import type { PollTrigger, SharedSources } from '../sync/shared-sources.ts';
import { ClusterStack } from './cluster-stack.ts';

/** What makes the agent's own cluster's unit differ from the others'. */
export interface HomeRole {
  /** Its stack, built by runAgent and left open when the unit stops. */
  stack: ClusterStack;
  /** Its board, read before any agent runs. */
  board: StatusBoard;
  /** The deployments this replica syncs (all of them without sharding). */
  share: (config: MooringConfig) => MooringConfig;
  shard?: AgentDeps['shard'];
  /** The metrics' cluster label: none for an agent of one cluster. */
  metricsCluster: string | undefined;
  /** Reporters of the agent's own cluster besides its stack's (memory release). */
  reporters: () => SyncReporter[];
}

const PROBE_MS = 10_000;

export interface ClusterUnitDeps {
  /** The agent's own cluster's client: where kubeconfig Secrets are read. */
  homeApi: KubeApi;
  homeNamespace: string;
  log: Logger;
  metrics: AgentMetrics;
  fleet: Fleet;
  cacheDir: string;
  /** The sources' clients and schedules, one for every cluster's agent (sync/shared-sources.ts). */
  sources: SharedSources;
  /** The keeper of deployment sets: the agent of the process's own cluster tells it the folders it reads. */
  sets?: SetFolders | undefined;
  /** Reporters every cluster shares (memory release). */
  shared: () => SyncReporter[];
  /** The status page's board of a cluster's deployments, read from its ledgers. */
  board: (options: {
    config: () => MooringConfig;
    ledger: Ledger;
    suspended: (name: string) => { since?: string | undefined } | undefined;
    cluster: string;
  }) => StatusBoard;
}

/** What the status page and `mooring status` say of a cluster. */
export interface ClusterHealth {
  name: string;
  reachable: boolean;
  /** Since when it has not answered (ISO time). */
  since?: string | undefined;
  detail?: string | undefined;
}

/** When the error says the API server did not answer: since when (an unreachable error's), or now. */
function unansweredSince(error: unknown): number | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof UnreachableError) return e.since;
    if (e instanceof RequestTimeoutError) return Date.now();
  }
  return undefined;
}

/** A sync that failed while its cluster did not answer says so: `cluster eu-2 unreachable since …`. */
function unreachableReport(report: DeployReport, cluster: string, since: string | undefined): DeployReport {
  if (report.outcome !== 'error' || since === undefined) return report;
  const error = new TransientError(
    `cluster ${cluster} unreachable since ${since}: ${errorMessage(report.error)}`,
    { cause: report.error },
  );
  return { ...report, error, summary: errorMessage(error) };
}

/** One cluster with its agent: the agent's own (`home`), or another (`spec`). */
export class ClusterUnit {
  readonly name: string;
  private readonly deps: ClusterUnitDeps;
  private readonly home: HomeRole | undefined;
  private spec: TargetCluster | undefined;
  /** The whole configuration, and (config) this cluster's part of it. */
  private full: MooringConfig;
  private config: MooringConfig;
  /** Its client, cache, Events and reporters, once its kubeconfig is read (cluster-stack.ts). */
  private stack: ClusterStack | undefined;
  agent: Agent | undefined;
  /** Its deployments on the status page, once it has been reached. */
  board: StatusBoard | undefined;
  private readonly stopping = new AbortController();
  private probe: NodeJS.Timeout | undefined;
  private unreachableSince: string | undefined;
  private detail: string | undefined;
  private running: Promise<void> | undefined;
  /** Its agent's start, while it runs: a new configuration waits for it. */
  private starting: Promise<void> | undefined;

  constructor(
    cluster: { spec: TargetCluster } | { home: HomeRole },
    config: MooringConfig,
    deps: ClusterUnitDeps,
  ) {
    this.home = 'home' in cluster ? cluster.home : undefined;
    this.spec = 'spec' in cluster ? cluster.spec : undefined;
    this.name = this.spec?.name ?? config.cluster.name;
    this.full = config;
    this.config = clusterConfig(config, this.name);
    this.deps = deps;
  }

  /** The deployments its agent syncs: a replica's share of the agent's own cluster's. */
  private agentConfig(): MooringConfig {
    return this.home ? this.home.share(this.config) : this.config;
  }

  /** Its client's request counts and open streams, for the metrics (undefined while not connected). */
  kubeStats(): { client: object; stats: KubeApi['requestStats']; streams: number } | undefined {
    const api = this.stack?.api;
    return api && { client: api, stats: api.requestStats, streams: api.streams };
  }

  health(): ClusterHealth {
    return {
      name: this.name,
      reachable: this.unreachableSince === undefined && this.agent !== undefined,
      since: this.unreachableSince,
      detail: this.detail,
    };
  }

  private unreachable(error: unknown, since = Date.now()): void {
    this.unreachableSince ??= new Date(since).toISOString();
    this.detail = errorMessage(error);
    this.deps.metrics.clusterReachable.set({ cluster: this.name }, 0);
  }

  private reached(): void {
    if (this.unreachableSince !== undefined)
      this.deps.log.info({ cluster: this.name, since: this.unreachableSince }, 'cluster reachable again');
    this.unreachableSince = undefined;
    this.detail = undefined;
    this.deps.metrics.clusterReachable.set({ cluster: this.name }, 1);
  }

  /**
   * How it is reached: a kubeconfig file, the service account, or a kubeconfig in a Secret of the agent's own
   * cluster, read as data (src/kube/kubeconfig-secret.ts) and never written to disk.
   */
  private async access(): Promise<ClusterConfig> {
    const { spec } = this;
    if (!spec) throw new Error(`cluster ${this.name}: no kubeconfig`);
    if (spec.inCluster) return loadKubeConfig({ inCluster: true });
    if (spec.kubeconfig) return loadKubeConfig({ kubeconfig: spec.kubeconfig, context: spec.context });
    const ref = spec.kubeconfigSecret;
    if (!ref) throw new Error(`cluster ${spec.name}: no kubeconfig`);
    return kubeconfigFromSecret(
      this.deps.homeApi,
      {
        cluster: spec.name,
        namespace: ref.namespace ?? this.deps.homeNamespace,
        name: ref.name,
        key: ref.key,
        context: spec.context,
        allowExec: ref.allowExec,
        allowInsecureTLS: ref.allowInsecureTLS,
      },
      { execHome: join(this.deps.cacheDir, 'clusters', `${spec.name}.exec-home`) },
    );
  }

  private reporters(stack: ClusterStack): SyncReporter[] {
    // The agent's own cluster reports under the whole configuration, as it always has.
    if (this.home) return stack.reporters(this.full, [...this.home.reporters(), this.home.board]);
    // A failure while the cluster does not answer is reported as that (commit status, notification, board).
    const unit = this;
    const naming = (r: SyncReporter): SyncReporter =>
      new Proxy(r, {
        get(target, key, receiver) {
          if (key !== 'finished') return Reflect.get(target, key, receiver);
          return (sync: SyncRequest, report: DeployReport, release: Release | undefined) => {
            const since = report.outcome === 'error' ? unansweredSince(report.error) : undefined;
            if (since !== undefined && unit.unreachableSince === undefined)
              unit.unreachable(report.error, since);
            return target.finished?.(
              sync,
              unreachableReport(report, unit.name, unit.unreachableSince),
              release,
            );
          };
        },
      });
    return stack.reporters(this.config, [...(this.board ? [this.board] : []), ...this.deps.shared()], naming);
  }

  /**
   * Connects and starts its agent, trying again with back-off while the cluster cannot be reached. Settles once
   * the agent has started, or the unit is stopped.
   */
  start(): Promise<void> {
    this.running ??= this.run();
    return this.running;
  }

  /** Its stack: the agent's own cluster's as built, another's from its kubeconfig. */
  private async connect(): Promise<ClusterStack> {
    if (this.home) return this.home.stack;
    return new ClusterStack(await this.access(), this.config, this.deps);
  }

  private async run(): Promise<void> {
    const { log, metrics } = this.deps;
    const signal = this.stopping.signal;
    const home = this.home;
    for (let attempt = 0; !signal.aborted; attempt++) {
      let agent: Agent | undefined;
      let loaded = false;
      try {
        const stack = await this.connect();
        loaded = true;
        this.stack = stack;
        this.board =
          home?.board ??
          this.deps.board({
            config: () => this.config,
            ledger: stack.ledger(this.config),
            suspended: (name) => this.agent?.suspended(name),
            cluster: this.name,
          });
        agent = new Agent({
          config: this.agentConfig(),
          shard: home?.shard,
          api: stack.api,
          discovery: stack.discovery,
          cache: stack.cache,
          log: home ? log : log.child({ cluster: this.name }),
          cacheDir: home ? this.deps.cacheDir : join(this.deps.cacheDir, 'clusters', this.name),
          reporters: this.reporters(stack),
          metrics: metrics.forCluster(home ? home.metricsCluster : this.name),
          fleet: this.deps.fleet,
          sources: this.deps.sources,
          sets: home ? this.deps.sets : undefined,
        });
        this.agent = agent;
        this.starting = agent.start();
        await this.starting;
        if (signal.aborted) break;
        if (home) return; // its reachability is the readiness probe's (run-agent.ts)
        this.reached();
        log.info(
          { cluster: this.name, deployments: this.config.deployments.length },
          'cluster agent started',
        );
        this.probe = setInterval(() => void this.check(), PROBE_MS);
        this.probe.unref();
        return;
      } catch (error) {
        if (!home) this.unreachable(error);
        await agent?.stop().catch(() => undefined);
        if (this.agent === agent) this.agent = undefined;
        await this.close();
        const delay = fullJitter(attempt, { baseMs: 1000, maxMs: 30_000 });
        log.error(
          {
            ...(home ? {} : { cluster: this.name, since: this.unreachableSince }),
            err: errorMessage(error),
            retryInMs: Math.round(delay),
          },
          // A kubeconfig refused (kubeconfig-secret.ts) is said as that: the Secret must change, not the network.
          home
            ? 'cannot start the agent; trying again'
            : loaded
              ? `cluster ${this.name} unreachable since ${this.unreachableSince}; trying again`
              : `cluster ${this.name}: cannot use its kubeconfig; trying again`,
        );
        await sleep(delay, undefined, { signal }).catch(() => undefined);
      }
    }
  }

  /** Asks the API server whether it answers (the agent's own syncs go on either way). */
  private async check(): Promise<void> {
    try {
      await this.stack?.probe();
      this.reached();
    } catch (error) {
      if (this.unreachableSince === undefined)
        this.deps.log.warn(
          { cluster: this.name, err: errorMessage(error) },
          `cluster ${this.name} unreachable`,
        );
      this.unreachable(error);
    }
  }

  /**
   * A new configuration: its agent takes over its part (a changed connection needs a restart). `reporters`: the
   * reporting settings changed, so they are made again; `handover`: the share of a replica moved.
   */
  async reconfigure(
    config: MooringConfig,
    options: { spec?: TargetCluster | undefined; reporters?: boolean; handover?: boolean } = {},
  ): Promise<void> {
    if (options.spec) this.spec = options.spec;
    this.full = config;
    this.config = clusterConfig(config, this.name);
    await this.starting?.catch(() => undefined);
    const { agent, stack } = this;
    if (!agent || !stack) return;
    const reporters = options.reporters === false ? undefined : this.reporters(stack);
    await agent.reconfigure(this.agentConfig(), reporters, { handover: options.handover === true });
  }

  /** Polls the named sources it has; `trigger`: the cause, shared with the other clusters' polls of it. */
  pollNow(names: readonly string[], trigger?: PollTrigger): void {
    const own = new Set(
      [
        ...this.config.sources.git,
        ...this.config.sources.registry,
        ...this.config.sources.charts,
        ...this.config.sources.oci,
      ].map((s) => s.name),
    );
    this.agent?.pollNow(
      names.filter((n) => own.has(n)),
      trigger,
    );
  }

  /** Its stack closes; the agent's own cluster's stays open for the Lease and the readiness probe. */
  private async close(): Promise<void> {
    const stack = this.stack;
    this.stack = undefined;
    if (!this.home) await stack?.close();
  }

  /** Its client closes: every request still waiting fails at once (a stop that cannot wait any longer). */
  disconnect(): void {
    this.stack?.disconnect();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.probe) clearInterval(this.probe);
    await this.agent?.stop().catch(() => undefined);
    this.agent = undefined;
    await this.close();
    await this.running?.catch(() => undefined);
  }
}
