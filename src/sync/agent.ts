// The agent: polls every source on its schedule (or at once when a webhook says so), decides which deployments a
// change concerns, and syncs them through the queue and the deploy pipeline. What each deployment last deployed
// is kept in the cluster, so a restarted agent with nothing new deploys nothing.
import cron from 'node-cron';
import type { Deployment, GitSource, LocalSource, MooringConfig, RegistrySource } from '../config/schema.ts';
import { errorMessage } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { Discovery } from '../kube/discovery.ts';
import { describeKubeError, statusCode } from '../kube/errors.ts';
import type { ManifestFile } from '../render/parse.ts';
import { current, Ledger, type ReleaseImage, syncRevision, type Trigger } from '../report/ledger.ts';
import type { AgentMetrics } from '../server/metrics.ts';
import { GitRepository } from '../sources/git/repository.ts';
import { readManifestFiles } from '../sources/local/files.ts';
import { filesRevision, watchFolder } from '../sources/local/watch.ts';
import type { RegistryClient } from '../sources/registry/client.ts';
import { createRegistryClient } from '../sources/registry/create.ts';
import { pollRegistry } from '../sources/registry/poll.ts';
import type { Logger } from './logger.ts';
import { outcomeOf } from './outcome.ts';
import { SyncQueue } from './queue.ts';
import { type SyncDeps, type SyncReporter, syncDeployment } from './sync-deployment.ts';

export interface AgentDeps {
  config: MooringConfig;
  api: KubeApi;
  discovery: Discovery;
  log: Logger;
  /** Where Git sources keep their object caches. */
  cacheDir: string;
  reporters?: readonly SyncReporter[];
  metrics?: AgentMetrics;
}

interface DeploymentState {
  spec: Deployment;
  /** The manifests' commit this deployment is at (deployed, or seen to change none of its files). */
  commit: string | undefined;
  /** The revision last deployed and stable. */
  deployed: string | undefined;
}

interface RegistryState {
  source: RegistrySource;
  client: RegistryClient;
  current: { tag: string; digest: string; source: ReleaseImage['source'] } | undefined;
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

export class Agent {
  private readonly deps: AgentDeps;
  private readonly queue: SyncQueue;
  private readonly deployments = new Map<string, DeploymentState>();
  private readonly repos = new Map<string, GitRepository>();
  private readonly registries = new Map<string, RegistryState>();
  private readonly polling = new Map<string, { again: boolean }>();
  private readonly stops: (() => void | Promise<void>)[] = [];
  private stopped = false;
  private readonly ledger: Ledger;

  constructor(deps: AgentDeps) {
    this.deps = deps;
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
      const now = current(await this.ledger.read(spec.name));
      this.deployments.set(spec.name, { spec, commit: now?.commit, deployed: now?.revision });
      for (const [source, image] of Object.entries(now?.images ?? {}))
        this.knownDigests.set(source, image.digest);
    }
    for (const source of config.sources.git) {
      this.repos.set(source.name, new GitRepository(source, { cacheDir: this.deps.cacheDir }));
    }
    for (const source of config.sources.registry) {
      this.registries.set(source.name, {
        source,
        client: await createRegistryClient(source),
        current: undefined,
      });
    }
    for (const source of config.sources.local) {
      const watcher = watchFolder(source.path, {
        debounceMs: source.debounce,
        onChange: () => void this.poll(source.name),
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

  private readonly knownDigests = new Map<string, string>();

  private schedule(source: GitSource | RegistrySource): void {
    if (source.cron !== undefined) {
      const task = cron.schedule(source.cron, () => void this.poll(source.name), {
        name: `poll-${source.name}`,
      });
      this.stops.push(() => void task.stop());
      return;
    }
    const interval = source.interval ?? 60_000;
    const timer = setInterval(() => void this.poll(source.name), interval);
    this.stops.push(() => clearInterval(timer));
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
    const kind = this.repos.has(name) ? 'git' : this.registries.has(name) ? 'registry' : 'local';
    try {
      const repo = this.repos.get(name);
      const registry = this.registries.get(name);
      const local = this.deps.config.sources.local.find((s) => s.name === name);
      if (repo) await this.pollGit(repo);
      else if (registry) await this.pollRegistry(registry);
      else if (local) await this.syncLocal(local);
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
  }[] {
    return [...this.registries.values()].map((r) => ({
      registry: r.source.name,
      token: r.client.stats.token,
      byStatus: r.client.requestsByStatus,
      remaining: r.client.rateLimitRemaining,
    }));
  }

  private users(source: string): DeploymentState[] {
    return [...this.deployments.values()].filter(
      (d) => d.spec.source === source || d.spec.images.includes(source),
    );
  }

  private async pollGit(repo: GitRepository): Promise<void> {
    const users = this.users(repo.source.name).filter((d) => d.spec.source === repo.source.name);
    const resolved = await repo.resolve();
    // Nothing moved: no fetch at all. The ledger is still read, so that a resume after a rollback is seen.
    if (users.some((d) => d.commit !== resolved.commit)) await repo.fetch(resolved);
    for (const d of users) {
      if (d.commit !== resolved.commit) {
        const { everything, files } = await repo.changedManifests(
          d.commit,
          resolved.commit,
          d.spec.paths,
          d.spec.exclude,
        );
        if (!everything && files.length === 0 && d.deployed !== undefined) {
          this.deps.log.info(
            { deployment: d.spec.name, commit: resolved.commit },
            'commit changes none of its paths',
          );
          d.commit = resolved.commit;
          d.deployed = syncRevision(resolved.commit, this.digests(d));
          continue;
        }
      }
      await this.reconcile(d, resolved.commit);
    }
  }

  private async pollRegistry(registry: RegistryState): Promise<void> {
    const name = registry.source.name;
    const result = await pollRegistry(registry.client, registry.source, {
      lastDigest: registry.current?.digest ?? this.knownDigests.get(name),
      lastTag: registry.current?.tag,
    });
    const moved = registry.current?.digest !== result.digest;
    const labels = result.artifacts[0]?.provenance;
    const built = labels?.['org.opencontainers.image.source'];
    const revision = labels?.['org.opencontainers.image.revision'];
    registry.current = {
      tag: result.tag,
      digest: result.digest,
      // Labels are read only when the digest moved; an unchanged image keeps what was read before.
      source:
        built && revision ? { repository: built, revision } : moved ? undefined : registry.current?.source,
    };
    if (!moved) return;
    for (const d of this.users(name).filter((u) => u.spec.images.includes(name))) {
      if (d.commit !== undefined || this.isLocal(d)) await this.reconcile(d, d.commit);
    }
  }

  private isLocal(d: DeploymentState): boolean {
    return this.deps.config.sources.local.some((s) => s.name === d.spec.source);
  }

  private async syncLocal(source: LocalSource): Promise<void> {
    for (const d of this.users(source.name).filter((u) => u.spec.source === source.name)) {
      await this.reconcile(d, undefined);
    }
  }

  private correctDrift(): void {
    for (const d of this.deployments.values()) {
      if (d.deployed) void this.reconcile(d, d.commit, 'drift');
    }
  }

  private digests(d: DeploymentState): Record<string, string> {
    return Object.fromEntries(Object.entries(this.images(d)).map(([k, v]) => [k, v.digest]));
  }

  private images(d: DeploymentState): Record<string, ReleaseImage> {
    const images: Record<string, ReleaseImage> = {};
    for (const name of d.spec.images) {
      const r = this.registries.get(name);
      if (r?.current) {
        const { tag, digest, source } = r.current;
        images[name] = { image: r.source.image, tag, digest, ...(source ? { source } : {}) };
      }
    }
    return images;
  }

  /**
   * Decides whether deployment `d` needs a sync to `commit` and the current images, from its ledger: current when
   * its last stable release has this revision; held while a rollback fence stands and its sources have not moved
   * past it; otherwise queued.
   */
  private async reconcile(d: DeploymentState, commit: string | undefined, reason?: 'drift'): Promise<void> {
    const images = this.images(d);
    const digests = this.digests(d);
    const revision = syncRevision(commit, digests);
    const log = this.deps.log.child({ deployment: d.spec.name, revision: commit?.slice(0, 12) ?? 'local' });
    const data = await this.ledger.read(d.spec.name);
    const now = current(data);
    const fence = data.fence;
    if (fence) {
      const moved =
        (commit !== undefined && commit !== fence.heads.commit) ||
        Object.entries(digests).some(([source, digest]) => fence.heads.images[source] !== digest);
      if (!moved) {
        d.commit = commit;
        log.debug({ release: fence.release }, 'held at a rolled-back release until a new commit or image');
        return;
      }
    } else if (!reason && !this.isLocal(d) && now?.revision === revision) {
      d.commit = commit;
      d.deployed = revision;
      log.debug('deployment is current');
      return;
    }
    const newImage = Object.entries(digests).some(
      ([source, digest]) => now?.images[source]?.digest !== digest,
    );
    const trigger: Trigger = reason ?? (now === undefined ? 'start' : newImage ? 'image' : 'commit');
    // The key names the ledger's state too: after a rollback or a resume the same revision is synced again.
    const key = `${revision}|release ${now?.id ?? 0}|fence ${fence?.release ?? 0}${reason ? `|${reason}@${Date.now()}` : ''}`;
    this.queue.trigger(d.spec.name, key, async (signal) => {
      if (fence) {
        log.info({ release: fence.release }, 'a new commit or image lifts the rollback fence');
        await this.ledger.setFence(d.spec.name, undefined);
      }
      let files: ManifestFile[];
      try {
        files = await this.files(d, commit);
      } catch (error) {
        log.error({ err: errorMessage(error) }, 'cannot read the manifests');
        return outcomeOf({ outcome: 'error', error } as never);
      }
      const local = this.isLocal(d) ? `${filesRevision(files)}|${revision}` : revision;
      if (this.isLocal(d) && !reason && local === now?.revision) return { result: 'done' };
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
      }
      return outcomeOf(report);
    });
  }

  private syncDeps(): SyncDeps {
    return {
      api: this.deps.api,
      discovery: this.deps.discovery,
      ledger: this.ledger,
      log: this.deps.log,
      reporters: this.deps.reporters ?? [],
    };
  }

  private async files(d: DeploymentState, commit: string | undefined): Promise<ManifestFile[]> {
    const repo = this.repos.get(d.spec.source);
    if (repo) {
      if (!commit) throw new Error(`no commit of ${d.spec.source} is known yet`);
      await repo.fetch(commit);
      return repo.files(commit, d.spec.paths, d.spec.exclude);
    }
    const local = this.deps.config.sources.local.find((s) => s.name === d.spec.source);
    if (!local) throw new Error(`deployment ${d.spec.name}: no source ${d.spec.source}`);
    return readManifestFiles(d.spec.paths.map((p) => (p === '.' ? local.path : `${local.path}/${p}`)));
  }

  /** Sources whose names are given (a webhook) are polled now. */
  pollNow(names: readonly string[]): void {
    for (const name of names) void this.poll(name);
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
