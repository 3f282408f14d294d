// `mooring run --config FILE`: the agent and its HTTP server (health, readiness, metrics, webhooks) until SIGTERM.
// With leader election on, the agent syncs only while it holds the Lease; a standby is ready and waits.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { MooringConfig } from '../config/schema.ts';
import { watchConfig } from '../config/watch.ts';
import type { Logger } from '../contract.ts';
import { errorMessage } from '../errors.ts';
import { type ClusterAccess, loadKubeConfig } from '../kube/client.ts';
import { LeaderLabel } from '../kube/leader-label.ts';
import { LeaderElector } from '../kube/lease.ts';
import { SetStore } from '../kube/set-store.ts';
import { createServer } from '../server/http.ts';
import { AgentMetrics } from '../server/metrics.ts';
import { selectPulls, selectSources } from '../server/source-match.ts';
import { StatusBoard } from '../server/status/board.ts';
import { statusPage } from '../server/status/routes.ts';
import { forwardWebhook, wasForwarded } from '../shard/forward.ts';
import { Shard } from '../shard/shard.ts';
import { Fleet } from '../sync/fleet.ts';
import { memoryRelease } from '../sync/memory-release.ts';
import { describePlan, effectiveConfig, planReload } from '../sync/reload.ts';
import { SharedSources } from '../sync/shared-sources.ts';
import { ClusterStack } from './cluster-stack.ts';
import { ClusterUnit, type ClusterUnitDeps } from './cluster-units.ts';
import { SetKeeper } from './deployment-sets.ts';
import { pageToken, webhookSecrets } from './server-secrets.ts';

/** How long the requests made on the way out may wait for an API server that does not answer. */
const FAREWELL_MS = 10_000;
/**
 * How long a stop waits for the writes in progress (in every cluster) before it closes the clients: with the
 * farewell's 10 s after it, well within the chart's grace period (60 s).
 */
const WRITES_MS = 20_000;

export interface RunAgentOptions {
  /** Flags override the config's cluster section, as kubectl's do. */
  access: ClusterAccess;
  cacheDir?: string;
  /** Called with the server's port once it listens (the config may say 0: any free port). */
  onListening?: (port: number) => void;
  /** This candidate's name in leader election: the pod's name in a cluster. */
  identity?: string;
  /** The file the configuration was read from: watched, and a change is applied without a restart. */
  configFile?: string;
}

export async function runAgent(
  initial: MooringConfig,
  log: Logger,
  options: RunAgentOptions,
  stop: AbortSignal,
) {
  // Replaced by a reload of the file; what only a restart changes keeps its first value (reload.ts). With the
  // deployments of deployment sets: `fileConfig` is the file's (as it runs), `config` adds the sets' folders' and
  // files' (deployment-sets.ts).
  let config = initial;
  let fileConfig = initial;
  const access: ClusterAccess = {
    inCluster: options.access.kubeconfig || options.access.context ? false : config.cluster.inCluster,
    kubeconfig: options.access.kubeconfig ?? config.cluster.kubeconfig,
    context: options.access.context ?? config.cluster.context,
  };
  const metrics = new AgentMetrics(config.clusters.length > 0 ? config.cluster.name : undefined);
  // The agent's own cluster: its client, cache, Events and reporters, built as every other cluster's (cluster-stack.ts).
  const stack = new ClusterStack(loadKubeConfig(access), config, { log, metrics });
  const { api } = stack;
  const home = config.cluster.name;
  // Rollouts across clusters and promotions are decided with the ledgers of every cluster (sync/fleet.ts).
  const fleet = new Fleet(() => config);
  const cacheDir =
    options.cacheDir ?? process.env.MOORING_CACHE_DIR ?? join(homedir(), '.cache', 'mooring', 'sources');
  const release = memoryRelease(); // pages V8 keeps after a burst of syncs, given back once it is over
  // The status page's views, kept as syncs run (and read from the ledgers while a page is open).
  const board = new StatusBoard({
    config: () => config,
    ledger: stack.ledger(config),
    suspended: (name) => agentNow()?.suspended(name),
    log,
    releases: config.server.statusPage.releases,
    owner: (name) => shard?.ownerOf(name),
    keepViews: () => config.server.statusPage.enabled,
    cluster: config.clusters.length > 0 ? config.cluster.name : undefined,
  });
  // Every cluster is a unit (cluster-units.ts), the agent's own first: each with its own client, agent and retries,
  // started while this agent leads, so that one that cannot be reached holds up none of the others.
  // The deployments of Git-directories sets follow the folders the home agent reads at each commit; a change
  // reloads every agent with them, through the same path as a reload of the file.
  const sets = new SetKeeper({
    log,
    // What the repository sets had, kept for the next agent: a pull request closed meanwhile is removed at start.
    store: new SetStore(api, config.cluster.namespace),
    apply: () =>
      adopt(
        () => {
          const next = sets.expand(fileConfig, config);
          if (
            isDeepStrictEqual(next.deployments, config.deployments) &&
            isDeepStrictEqual(next.sources.git, config.sources.git)
          )
            return undefined;
          log.info(describePlan(planReload(config, next)), 'deployment sets changed the deployments');
          return next;
        },
        // A pull request's environment comes with a Git source of its own, which its commit statuses name.
        (next) => !isDeepStrictEqual(next.sources.git, config.sources.git),
      ),
  });
  const unitDeps: ClusterUnitDeps = {
    sets,
    homeApi: api,
    homeNamespace: config.cluster.namespace,
    log,
    metrics,
    fleet,
    cacheDir,
    sources: new SharedSources(cacheDir),
    shared: () => [release],
    board: (o) =>
      new StatusBoard({
        ...o,
        log,
        releases: config.server.statusPage.releases,
        keepViews: () => config.server.statusPage.enabled,
      }),
  };
  /** The agent's own cluster's unit while this agent leads (a new one each term). */
  let homeUnit: ClusterUnit | undefined;
  const agentNow = () => homeUnit?.agent;
  const newHomeUnit = () =>
    new ClusterUnit(
      {
        home: {
          stack,
          board,
          // Replicas sharing the work: this one syncs its share of the deployments.
          share: (c) => (shard ? shard.share(c) : c),
          shard: shard && {
            identity: shard.identity,
            live: (id) => shard?.live(id) ?? false,
            gone: async (id) => (await shard?.gone(id)) ?? false,
            elsewhere: (name) => {
              const owner = shard?.ownerOf(name);
              return owner !== undefined && owner !== shard?.identity;
            },
          },
          metricsCluster: config.clusters.length > 0 ? home : undefined,
          reporters: () => [release],
        },
      },
      config,
      unitDeps,
    );
  const units = new Map<string, ClusterUnit>();
  const startUnits = async () => {
    for (const spec of config.clusters) {
      if (units.has(spec.name) || stop.aborted) continue;
      const unit = new ClusterUnit({ spec }, config, unitDeps);
      units.set(spec.name, unit);
      void unit.start();
    }
  };
  const stopUnits = async () => {
    const stopping = [...units.values()];
    units.clear();
    await Promise.all(stopping.map((u) => u.stop()));
  };
  let shard: Shard | undefined;
  let started = false;
  let standby = false;

  // Readiness asks the API server at most every 10 s.
  let reachable = { ok: false, at: 0, detail: 'not checked yet' };
  const clusterReachable = async () => {
    if (Date.now() - reachable.at > 10_000) {
      try {
        await stack.probe();
        reachable = { ok: true, at: Date.now(), detail: '' };
        if (config.clusters.length > 0) metrics.clusterReachable.set({ cluster: home }, 1);
      } catch (error) {
        reachable = { ok: false, at: Date.now(), detail: `cluster unreachable: ${errorMessage(error)}` };
        if (config.clusters.length > 0) metrics.clusterReachable.set({ cluster: home }, 0);
      }
    }
    return reachable;
  };
  let secrets = await webhookSecrets(config);
  let statusToken = await pageToken(config);
  const page = statusPage({
    board,
    token: () => statusToken,
    cluster: () => config.cluster.name,
    more: () => [...units.values()].flatMap((u) => (u.board ? [u.board] : [])),
    clusters:
      config.clusters.length > 0
        ? () => [
            {
              name: config.cluster.name,
              reachable: reachable.ok,
              ...(reachable.ok ? {} : { detail: reachable.detail }),
            },
            ...[...units.values()].map((u) => u.health()),
          ]
        : undefined,
  });
  const server = createServer({
    // Getters, so that a reloaded configuration is seen by the next request.
    get maxBodyBytes() {
      return config.server.maxBodyBytes;
    },
    get secrets() {
      return secrets;
    },
    // A webhook only says which sources to poll now; what to deploy comes from the poll.
    // Only the leader takes webhooks (the chart's webhook Service selects it); a standby answers 503 to one that
    // still arrives, so that the sender retries and reaches the leader.
    onTrigger: (targets, provider, delivery) => {
      if (shard) {
        // Every replica polls what a webhook names and syncs its own share; the one that took it tells the others.
        if (!wasForwarded(delivery.headers))
          void forwardWebhook(
            shard.peers(),
            provider,
            delivery,
            shard.identity,
            secrets[provider as keyof typeof secrets] ?? '',
            log,
          );
        agentNow()?.pollNow(selectSources(targets, config.sources));
        agentNow()?.previewNow(selectPulls(targets, config.sources));
        return true;
      }
      const agent = agentNow();
      if (standby || !agent) return false;
      // One trigger for every cluster: its polls of a source share one request (sync/shared-sources.ts).
      const trigger = {};
      agent.pollNow(selectSources(targets, config.sources), trigger);
      for (const unit of units.values()) unit.pollNow(selectSources(targets, config.sources), trigger);
      agent.previewNow(selectPulls(targets, config.sources));
      return true;
    },
    health: () => ({ ok: true }),
    ready: () => {
      if (!started && !standby) return { ok: false, detail: 'starting' };
      return reachable.ok
        ? { ok: true, detail: shard ? 'replica' : standby ? 'standby' : 'leader' }
        : { ok: false, detail: reachable.detail };
    },
    metrics: async () => {
      await clusterReachable();
      metrics.watchStreams.set({ cluster: config.clusters.length > 0 ? home : undefined }, api.streams);
      metrics.kubeRequests(api.requestStats);
      for (const unit of units.values()) {
        const kube = unit.kubeStats();
        if (kube) metrics.clusterKubeRequests(unit.name, kube.client, kube.stats, kube.streams);
      }
      metrics.processMemory();
      for (const s of agentNow()?.registryStats() ?? []) {
        for (const [key, count] of s.byStatus) {
          const [method = '', status = ''] = key.split(' ');
          metrics.registryRequests.set({ registry: s.registry, method, status }, count);
        }
        metrics.registryRequests.set({ registry: s.registry, method: 'token', status: '' }, s.token);
        if (s.remaining !== undefined) metrics.rateLimitRemaining.set({ registry: s.registry }, s.remaining);
        metrics.registryPausedUntil.set({ registry: s.registry }, Math.ceil((s.pausedUntil ?? 0) / 1000));
      }
      return metrics.text();
    },
    sources: () => config.sources,
    // The status page, while enabled (a reload may turn it on or off).
    pages: (req, res, path) => config.server.statusPage.enabled && page(req, res, path),
    log,
  });
  server.listen(config.server.port, config.server.address);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  log.info({ port }, 'http server listening');
  options.onListening?.(port);
  // Replicas sharing the work: this replica's membership, and the share of the deployments it syncs.
  const identity = options.identity ?? process.env.POD_NAME ?? `${hostname()}-${process.pid}`;
  if (config.leaderElection.mode === 'shared') {
    const podIp = process.env.POD_IP;
    const host = podIp ? (podIp.includes(':') ? `[${podIp}]` : podIp) : '127.0.0.1';
    shard = new Shard(api, {
      namespace: config.cluster.namespace,
      prefix: config.leaderElection.leaseName,
      identity,
      address: config.leaderElection.address ?? `http://${host}:${port}`,
      durationMs: config.leaderElection.leaseDuration,
      renewMs: config.leaderElection.renewInterval,
      loadFactor: config.leaderElection.loadFactor,
      // In a Pod, the other members must be Pods of this workload, reached at their IPs (docs/replicas.md).
      pod: process.env.POD_NAME && identity === process.env.POD_NAME ? { name: identity, port } : undefined,
    });
  }
  // The page shows where each deployment is from the ledgers before this agent syncs anything.
  if (config.server.statusPage.enabled) void board.refreshAll().catch(() => undefined);
  const probe = setInterval(() => void clusterReachable(), 10_000);
  await clusterReachable();

  /** The agents take over `next` (a reload of the file, or deployment sets that changed). */
  const adopt = (
    make: () => MooringConfig | undefined,
    reportersChanged: boolean | ((next: MooringConfig) => boolean),
  ) =>
    sets.serially(async () => {
      const next = make();
      if (!next) return;
      const reporters = typeof reportersChanged === 'boolean' ? reportersChanged : reportersChanged(next);
      config = next;
      await homeUnit?.reconfigure(next, { reporters, handover: shard !== undefined });
      for (const unit of units.values())
        await unit
          .reconfigure(next, { spec: next.clusters.find((c) => c.name === unit.name) })
          .catch((error: unknown) =>
            log.error({ cluster: unit.name, err: errorMessage(error) }, 'cannot reload the cluster'),
          );
    });

  // A new configuration in the file: the running agent takes it over (reload.ts says what changes); an agent
  // that starts later (a new leader, a start retried) is built with it.
  const reload = async (file: string, loaded: MooringConfig) => {
    // What only a restart changes keeps its running value here too, when a set's change is taken later.
    fileConfig = effectiveConfig(config, loaded);
    const next = sets.expand(fileConfig, config);
    // The file as written (a restart-only setting it changes is reported), with the sets' deployments.
    const plan = planReload(config, { ...loaded, sources: next.sources, deployments: next.deployments });
    if (plan.restart.length > 0)
      log.warn({ file, settings: plan.restart }, `needs a restart: ${plan.restart.join(', ')}`);
    const reporting = ['deployments', 'audit', 'notifications'] as const;
    const reportersChanged =
      reporting.some((k) => !isDeepStrictEqual(config[k], next[k])) ||
      !isDeepStrictEqual(config.sources.git, next.sources.git);
    secrets = await webhookSecrets(next);
    statusToken = await pageToken(next);
    await adopt(() => next, reportersChanged);
    metrics.configReload('applied');
    log.info({ file, ...describePlan(plan) }, 'configuration reloaded');
  };
  const file = options.configFile;
  const watcher =
    file === undefined
      ? undefined
      : watchConfig(file, {
          onConfig: (loaded) => reload(file, loaded),
          onInvalid: (problems) => {
            metrics.configReload('invalid');
            log.error(
              { file, problems },
              'configuration not reloaded: the file is invalid; the agent keeps the previous one',
            );
          },
          onError: (error) => log.error({ file, err: errorMessage(error) }, 'configuration reload failed'),
        });
  void watcher?.ready.then(() => log.info({ file }, 'watching the configuration file'));

  // An API server that is down or restarting when the agent starts (or takes the lease) delays the start; it is
  // tried again with back-off until it works or the agent is stopped, never ending the process.
  const election = config.leaderElection;
  // The leader's Pod carries mooring.io/leader=true (the chart's webhook Service selects it).
  const leaderLabel = new LeaderLabel(
    api,
    { namespace: config.cluster.namespace, name: options.identity ?? process.env.POD_NAME },
    log,
  );
  let leading = 0;
  /** The stop of the last term's unit, under way: the next term's agent starts once it has ended its write. */
  let handingBack: Promise<void> = Promise.resolve();
  const lead = async () => {
    const term = ++leading;
    if (stop.aborted) return;
    void startUnits().catch((error: unknown) =>
      log.error({ err: errorMessage(error) }, 'cannot start the other clusters'),
    );
    await handingBack;
    // Before the first poll reads a set: what each set had when the last agent stopped.
    await sets.restore(fileConfig);
    // The term ended (the lease lost) or the agent was stopped meanwhile: no agent is started for it.
    if (term !== leading || stop.aborted) return;
    const unit = newHomeUnit();
    homeUnit = unit;
    // Settles once its agent has started (tried again with back-off until then), or the unit is stopped.
    await unit.start();
    if (term !== leading || stop.aborted || !unit.agent) return;
    started = true;
    standby = false;
    metrics.leader.set(1);
    if (election.enabled && !shard) void leaderLabel.mark(true);
  };
  let elector: LeaderElector | undefined;
  const stopped = new Promise<void>((resolve) => {
    if (stop.aborted) resolve();
    stop.addEventListener('abort', () => resolve(), { once: true });
  });
  try {
    if (shard) {
      const replicas = shard;
      // Members change: the share is computed again; deployments that moved here are synced, those that moved
      // away end the sync they run and are left to their new replica (its sync waits for the fence in the ledger).
      let balancing = Promise.resolve();
      replicas.run({
        onChange: (members) => {
          balancing = balancing
            .then(async () => {
              // Stopping: the share is left as it is; the member Lease is deleted on the way out (finally).
              if (stop.aborted) return;
              metrics.shardMembers.set(members.length);
              if (!homeUnit) {
                log.info({ identity: replicas.identity, members }, 'joined the replicas: syncing a share');
                await lead();
              } else {
                const before = agentNow()?.deploymentNames().length ?? 0;
                await homeUnit.reconfigure(config, { reporters: false, handover: true });
                log.info(
                  { members, deployments: agentNow()?.deploymentNames().length ?? 0, before },
                  'replicas changed: share computed again',
                );
              }
              metrics.shardDeployments.set(agentNow()?.deploymentNames().length ?? 0);
            })
            .catch((error: unknown) =>
              log.error({ err: errorMessage(error) }, 'cannot take the share of the deployments'),
            );
        },
        onError: (error) => log.warn({ err: errorMessage(error) }, 'membership Lease request failed'),
        // A forged or foreign member Lease takes no deployment and no webhook; the operator learns of it here.
        onRefused: (lease, why) =>
          log.warn(
            { lease: `${config.cluster.namespace}/${lease}`, why },
            `member Lease ${lease} is not counted: ${why}`,
          ),
      });
    } else if (!election.enabled) {
      // Its start (the first polls) is not waited for once the stop has come: the stop ends it (below).
      const led = lead();
      led.catch(() => undefined);
      await Promise.race([led, stopped]);
    } else {
      elector = new LeaderElector(api, {
        namespace: config.cluster.namespace,
        name: election.leaseName,
        identity,
        durationMs: election.leaseDuration,
        renewMs: election.renewInterval,
      });
      standby = true;
      metrics.leader.set(0);
      log.info({ identity, lease: election.leaseName }, 'standing by for the leader lease');
      elector.run({
        onLead: () => {
          log.info({ identity }, 'leading: syncing');
          lead().catch((error: unknown) => log.error({ err: errorMessage(error) }, 'cannot start the agent'));
        },
        onLose: () => {
          // Stopping: the agents are stopped, the label removed and the lease given up on the way out (finally).
          if (stop.aborted) return;
          log.warn({ identity }, 'lost the leader lease: standing by');
          metrics.leader.set(0);
          void leaderLabel.mark(false);
          started = false;
          standby = true;
          const previous = homeUnit;
          homeUnit = undefined;
          leading++;
          void stopUnits();
          handingBack = (previous?.stop() ?? Promise.resolve()).catch((error: unknown) =>
            log.warn({ err: errorMessage(error) }, 'cannot stop the agent'),
          );
        },
        onError: (error) => log.warn({ err: errorMessage(error) }, 'leader election request failed'),
      });
    }
    await stopped;
    log.info('stopping: polling ends, the write in progress finishes');
  } finally {
    clearInterval(probe);
    // The agents first and at once: no sync starts after the stop.
    const others = [...units.values()];
    const agentsStopped = Promise.all([homeUnit?.stop(), stopUnits()]);
    // The sources' requests under way are given up now: a poll waiting on a Git server or a registry that does not
    // answer would hold the agent's start (its first polls) and the stop with it until the source's timeout.
    unitDeps.sources.stop();
    // The writes in progress get WRITES_MS to end. Against a server that does not answer they would wait out their
    // sync's deadline, past the grace period; then every cluster's client closes, those writes fail at once and
    // their syncs end (a sync left unrecorded is synced again by the next agent).
    const writesLate = setTimeout(() => {
      log.warn({ waitedMs: WRITES_MS }, 'the writes in progress did not end in time: stopping without them');
      stack.disconnect();
      for (const unit of others) unit.disconnect();
    }, WRITES_MS);
    try {
      await watcher?.close();
      await agentsStopped;
      await handingBack;
    } catch (error) {
      // The farewell below is still said: the lease given up, the member Lease deleted, the statuses stored.
      log.error({ err: errorMessage(error) }, 'stopping the syncs failed');
    } finally {
      clearTimeout(writesLate);
    }
    // What is said to the API server on the way out (the member Lease deleted, the last Events and statuses stored,
    // the leader label removed, the lease given up) is worth at most FAREWELL_MS: a server that does not answer then
    // has its client closed, and every request still waiting fails at once, so that the process ends well within
    // its grace period instead of being killed (the lease expires by itself; an unfinished status is ended by the
    // next agent, src/sync/attempts.ts).
    const farewell = setTimeout(() => {
      log.warn(
        { waitedMs: FAREWELL_MS },
        'the last requests to the API server did not end in time: stopping without them',
      );
      stack.disconnect();
    }, FAREWELL_MS);
    try {
      // The others take this replica's deployments at once.
      await shard?.stop();
      await stack.closeReporters();
      // Webhooks stop coming here before the lease is given up.
      if (election.enabled && !shard) await leaderLabel.mark(false);
      await elector?.stop();
    } finally {
      clearTimeout(farewell);
    }
    server.close();
    stack.disconnect();
    log.info('stopped');
  }
}
