// The agent: polls every source on its schedule (or at once when a webhook says so), decides which deployments a
// change concerns, and syncs them through the queue and the deploy pipeline. What each deployment last deployed
// is kept in the cluster, so a restarted agent with nothing new deploys nothing. The agent owns the schedule, the
// queue and the sync of a deployment; polling each kind of source is in agent-sources.ts, and the decision whether
// a deployment needs a sync in reconcile.ts.
import cron from 'node-cron';
import type { GitSource, LocalSource, MooringConfig, RegistrySource } from '../config/schema.ts';
import { errorMessage } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { ClusterCache } from '../kube/cache.ts';
import type { Discovery } from '../kube/discovery.ts';
import { describeKubeError, statusCode } from '../kube/errors.ts';
import type { ManifestFile } from '../render/parse.ts';
import { current, Ledger } from '../report/ledger.ts';
import type { AgentMetrics } from '../server/metrics.ts';
import { GitRepository } from '../sources/git/repository.ts';
import { filesRevision, watchFolder } from '../sources/local/watch.ts';
import { createRegistryClient } from '../sources/registry/create.ts';
import {
  type DeploymentState,
  digestsOf,
  imagesOf,
  isLocal,
  manifestFiles,
  pollGitSource,
  pollRegistrySource,
  type SourceState,
  syncLocalSource,
} from './agent-sources.ts';
import type { Logger } from './logger.ts';
import { outcomeOf } from './outcome.ts';
import { SyncQueue } from './queue.ts';
import { reconcile } from './reconcile.ts';
import { endInterrupted, type SyncDeps, type SyncReporter, syncDeployment } from './sync-deployment.ts';

export interface AgentDeps {
  config: MooringConfig;
  api: KubeApi;
  discovery: Discovery;
  /** One cluster cache for every sync the agent runs: the stability waits of all deployments share its streams. */
  cache?: ClusterCache;
  log: Logger;
  /** Where Git sources keep their object caches. */
  cacheDir: string;
  reporters?: readonly SyncReporter[];
  metrics?: AgentMetrics;
}

/** The agent keeps its records in its own namespace; run from a laptop, it may not exist yet. */
async function ensureNamespace(api: KubeApi, name: string): Promise<void> {
  try {
    await api.request('GET', `/api/v1/namespaces/${encodeURIComponent(name)}`);
  } catch (error) {
    if (statusCode(error) !== 404) throw describeKubeError(error, `read Namespace ${name}`);
    await api
      .request('POST', '/api/v1/namespaces', {
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
      })
      .catch((e: unknown) => {
        if (statusCode(e) !== 409) throw describeKubeError(e, `create Namespace ${name}`);
      });
  }
}

/** How a sync that replaces another names itself in the replaced one's final status: its commit, or its image. */
function supersedingLabel(
  trigger: string,
  commit: string | undefined,
  images: Record<string, { image: string; digest: string }>,
): string {
  if (trigger === 'image' || commit === undefined) {
    const named = Object.values(images).map((i) => `${i.image}@${i.digest.slice(0, 19)}`);
    if (named.length > 0) return named.join(', ');
  }
  return commit ?? 'a newer change of its files';
}

export class Agent {
  private readonly deps: AgentDeps;
  private readonly queue: SyncQueue;
  private readonly state: SourceState;
  private readonly polling = new Map<string, { again: boolean }>();
  private readonly stops: (() => void | Promise<void>)[] = [];
  private stopped = false;
  private readonly ledger: Ledger;

  constructor(deps: AgentDeps) {
    this.deps = deps;
    this.state = {
      config: deps.config,
      log: deps.log,
      deployments: new Map(),
      repos: new Map(),
      registries: new Map(),
      knownDigests: new Map(),
    };
    this.ledger = new Ledger(deps.api, deps.config.cluster.namespace, deps.config.ledger.historyLimit);
    this.queue = new SyncQueue({
      concurrency: deps.config.concurrency,
      onEvent: (e) => {
        if (e.type === 'retry-scheduled')
          deps.log.warn({ deployment: e.deployment, in: e.detail }, 'sync will be retried');
      },
    });
  }

  private sources(): (GitSource | RegistrySource | LocalSource)[] {
    const { git, registry, local } = this.deps.config.sources;
    return [...git, ...registry, ...local];
  }

  /** Learns what is deployed, builds the sources, polls each once and schedules the rest. */
  async start(): Promise<void> {
    const { config, api, log } = this.deps;
    await ensureNamespace(api, config.cluster.namespace);
    for (const spec of config.deployments) {
      const data = await this.ledger.read(spec.name);
      if (data.attempt) await endInterrupted(this.syncDeps(), config, spec, data.attempt);
      const now = current(data);
      this.state.deployments.set(spec.name, { spec, commit: now?.commit, deployed: now?.revision });
      for (const [source, image] of Object.entries(now?.images ?? {}))
        this.state.knownDigests.set(source, image.digest);
    }
    for (const source of config.sources.git) {
      this.state.repos.set(source.name, new GitRepository(source, { cacheDir: this.deps.cacheDir }));
    }
    for (const source of config.sources.registry) {
      this.state.registries.set(source.name, {
        source,
        client: await createRegistryClient(source),
        current: undefined,
      });
    }
    for (const source of config.sources.local) {
      const watcher = watchFolder(source.path, {
        debounceMs: source.debounce,
        onChange: () => this.pollSafely(source.name),
      });
      this.stops.push(() => watcher.close());
    }
    log.info({ deployments: config.deployments.length, sources: this.sources().length }, 'agent started');
    // Registries first, so that the first sync of a deployment already binds its images.
    await Promise.all(config.sources.registry.map((s) => this.poll(s.name)));
    await Promise.all([...config.sources.git, ...config.sources.local].map((s) => this.poll(s.name)));
    for (const source of [...config.sources.git, ...config.sources.registry]) this.schedule(source);
    const drift = config.drift.interval;
    if (drift !== undefined) {
      const timer = setInterval(() => this.correctDrift(), drift);
      this.stops.push(() => clearInterval(timer));
    }
  }

  private schedule(source: GitSource | RegistrySource): void {
    if (source.cron !== undefined) {
      const task = cron.schedule(source.cron, () => this.pollSafely(source.name), {
        name: `poll-${source.name}`,
      });
      this.stops.push(() => void task.stop());
      return;
    }
    const interval = source.interval ?? 60_000;
    const timer = setInterval(() => this.pollSafely(source.name), interval);
    this.stops.push(() => clearInterval(timer));
  }

  /** A poll started by a timer, a watcher or a webhook: nothing it throws may end the process. */
  private pollSafely(name: string): void {
    this.poll(name).catch((error: unknown) =>
      this.deps.log.error({ source: name, err: errorMessage(error) }, 'poll failed'),
    );
  }

  /** Polls a source now (a webhook, the schedule); a poll already under way runs once more when it ends. */
  async poll(name: string): Promise<void> {
    if (this.stopped) return;
    const running = this.polling.get(name);
    if (running) {
      running.again = true;
      return;
    }
    const flag = { again: false };
    this.polling.set(name, flag);
    try {
      do {
        flag.again = false;
        await this.pollOnce(name);
      } while (flag.again && !this.stopped);
    } finally {
      this.polling.delete(name);
    }
  }

  private async pollOnce(name: string): Promise<void> {
    const log = this.deps.log.child({ source: name });
    const { repos, registries } = this.state;
    const kind = repos.has(name) ? 'git' : registries.has(name) ? 'registry' : 'local';
    const decide = (d: DeploymentState, commit: string | undefined) => this.reconcileDeployment(d, commit);
    try {
      const repo = repos.get(name);
      const registry = registries.get(name);
      const local = this.deps.config.sources.local.find((s) => s.name === name);
      if (repo) await pollGitSource(this.state, repo, decide);
      else if (registry) await pollRegistrySource(this.state, registry, decide);
      else if (local) await syncLocalSource(this.state, local, decide);
      this.deps.metrics?.poll(name, kind, 'unchanged');
    } catch (error) {
      this.deps.metrics?.poll(name, kind, 'error');
      log.error({ err: errorMessage(error) }, 'poll failed');
    }
  }

  /** Request counts and rate-limit headroom of each registry, for the metrics. */
  registryStats(): {
    registry: string;
    token: number;
    byStatus: ReadonlyMap<string, number>;
    remaining: number | undefined;
    pausedUntil: number | undefined;
  }[] {
    return [...this.state.registries.values()].map((r) => ({
      registry: r.source.name,
      token: r.client.stats.token,
      byStatus: r.client.requestsByStatus,
      remaining: r.client.rateLimitRemaining,
      pausedUntil: r.client.notBefore?.until,
    }));
  }

  private correctDrift(): void {
    for (const d of this.state.deployments.values()) {
      if (d.deployed)
        this.reconcileDeployment(d, d.commit, 'drift').catch((error: unknown) =>
          this.deps.log.error(
            { deployment: d.spec.name, err: errorMessage(error) },
            'cannot check the deployment for drift',
          ),
        );
    }
  }

  /** Queues a sync of deployment `d` to `commit` and the current images, unless `reconcile` finds none is due. */
  private async reconcileDeployment(
    d: DeploymentState,
    commit: string | undefined,
    reason?: 'drift',
  ): Promise<void> {
    const images = imagesOf(this.state, d);
    const digests = digestsOf(this.state, d);
    const log = this.deps.log.child({ deployment: d.spec.name, revision: commit?.slice(0, 12) ?? 'local' });
    const data = await this.ledger.read(d.spec.name);
    const decision = reconcile({
      ledger: data,
      commit,
      digests,
      reason,
      local: isLocal(this.state, d),
      at: Date.now(),
      sameAs: d.sameAs,
    });
    if (decision.action === 'held') {
      d.commit = commit;
      log.debug(
        { release: decision.fence.release },
        'held at a rolled-back release until a new commit or image',
      );
      return;
    }
    if (decision.action === 'current') {
      d.commit = commit;
      d.deployed = decision.revision;
      log.debug('deployment is current');
      return;
    }
    const { revision, trigger, key, release: now, fence } = decision;
    this.queue.trigger(
      d.spec.name,
      key,
      async (signal) => {
        if (fence) {
          log.info({ release: fence.release }, 'a new commit or image lifts the rollback fence');
          await this.ledger.setFence(d.spec.name, undefined);
        }
        let files: ManifestFile[];
        try {
          files = await manifestFiles(this.state, d, commit);
        } catch (error) {
          log.error({ err: errorMessage(error) }, 'cannot read the manifests');
          return outcomeOf({ outcome: 'error', error } as never);
        }
        const local = isLocal(this.state, d) ? `${filesRevision(files)}|${revision}` : revision;
        if (isLocal(this.state, d) && !reason && local === now?.revision) return { result: 'done' };
        const { report } = await syncDeployment(this.syncDeps(), {
          config: this.deps.config,
          deployment: d.spec,
          commit,
          files,
          images,
          revision: local,
          trigger,
          signal,
        });
        if (report.outcome === 'stable') {
          d.commit = commit;
          d.deployed = local;
          d.sameAs = undefined;
        }
        return outcomeOf(report);
      },
      supersedingLabel(trigger, commit, images),
    );
  }

  private syncDeps(): SyncDeps {
    return {
      api: this.deps.api,
      discovery: this.deps.discovery,
      cache: this.deps.cache,
      ledger: this.ledger,
      log: this.deps.log,
      reporters: this.deps.reporters ?? [],
    };
  }

  /** Sources whose names are given (a webhook) are polled now. */
  pollNow(names: readonly string[]): void {
    for (const name of names) this.pollSafely(name);
  }

  /** Resolves when no sync runs or waits (for tests and one-shot runs). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** Stops polling, cancels stability waits, lets the write in progress finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const stop of this.stops.splice(0)) await stop();
    await this.queue.stop();
  }
}
