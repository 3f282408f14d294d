// The agent: polls every source on its schedule (or when a webhook says so), decides which deployments a change
// concerns and syncs them through the queue; what each last deployed is kept in the cluster. It owns the queue, the
// reload and the drift timer; the polls are in agent-polling.ts and agent-sources.ts, the decision before the queue
// in agent-decide.ts (agent-promotion.ts, reconcile.ts), its holds in gates.ts, and the sync the queue runs in
// agent-job.ts.
import type { MooringConfig } from '../config/schema.ts';
import { Superseded, type SyncReporter, Withdrawn } from '../contract.ts';
import { errorMessage } from '../errors.ts';
import { beginDriftPass, keepDriftMarks, keyMarks, restoreMarks } from '../kube/drift-pass.ts';
import { chartLookup } from '../kube/lookup-server.ts';
import { ensureNamespace } from '../kube/namespace.ts';
import { StateStore } from '../kube/state-store.ts';
import { CorruptLedgerError, current, Ledger, type LedgerData } from '../report/ledger.ts';
import { artifactSources, followedArtifacts } from '../sources/artifact-poller.ts';
import { adaptConcurrency } from './adaptive-concurrency.ts';
import type { AgentDeps, JobContext } from './agent-context.ts';
import { decide } from './agent-decide.ts';
import { type AgentSync, agentJob } from './agent-job.ts';
import { type AnySource, SourcePolls } from './agent-polling.ts';
import { type DeploymentState, isLocal, isOci, type SourceState } from './agent-sources.ts';
import { runsHere, unfinishedAttempt } from './attempts.ts';
import { CONFIGMAPS, Control } from './control.ts';
import type { FleetMember } from './fleet.ts';
import { endHold, heldSync } from './holds.ts';
import type { PreviewRunner } from './previews.ts';
import { SyncQueue } from './queue.ts';
import { planReload, type ReloadPlan } from './reload.ts';
import { retryIntervalOf } from './retry.ts';
import type { PollTrigger } from './shared-sources.ts';
import { endInterrupted, type SyncDeps } from './sync-deployment.ts';

/** How often a promoted deployment looks at its upstream again (stable long enough, approved). */
const PROMOTION_CHECK_MS = 5_000;

/** A sync of a deployment as the agent queues it: the reconcile requests it answers ride along. */
export class Agent {
  private readonly deps: AgentDeps;
  private readonly queue: SyncQueue<AgentSync>;
  private readonly state: SourceState;
  /**
   * Pull-request previews (sync/previews.ts): renders only, never a write to the cluster. Loaded when a source
   * first has one to make, so that an agent without previews does not carry their modules.
   */
  private previewRunner: Promise<PreviewRunner> | undefined;
  private readonly polls: SourcePolls;
  private readonly stops: (() => void | Promise<void>)[] = [];
  /** Stops the syncs in flight following the API server. */
  private unfollow: (() => void) | undefined;
  private stopped = false;
  private ledger: Ledger;
  /** What stops each source's schedule or folder watch, by source name: a reload stops one source at a time. */
  private driftTimer: NodeJS.Timeout | undefined;
  /** Deployments whose spec a reload changed: their next reconcile syncs them even when current. */
  private readonly resync = new Set<string>();
  /** `mooring suspend`, `resume` and `reconcile`, through the control ConfigMap. */
  private readonly control: Control;
  /** What the fleet reads of this agent's cluster (rollouts, promotions). */
  private readonly member: FleetMember = {
    releases: async (name) => (await this.ledger.read(name)).releases,
  };
  private promotionTimer: NodeJS.Timeout | undefined;
  /** Commits of signed releases read from the ledgers before their Git sources were built. */
  private signedReleases: { source: string; commit: string }[] = [];

  constructor(deps: AgentDeps) {
    this.deps = deps;
    this.state = {
      config: deps.config,
      log: deps.log,
      deployments: new Map(),
      repos: new Map(),
      registries: new Map(),
      knownDigests: new Map(),
      cacheDir: deps.cacheDir,
      signal: deps.sources?.signal,
      lookup: chartLookup(deps.api, { exclude: [deps.config.cluster.namespace] }),
      refused: async (d, description, built) => {
        for (const r of this.deps.reporters ?? [])
          await Promise.resolve(r.artifactRefused?.(d.spec, d.commit, description, built)).catch(
            (error: unknown) =>
              this.deps.log.warn(
                { deployment: d.spec.name, err: errorMessage(error) },
                'cannot report the refusal',
              ),
          );
      },
      // Shared by the renders of a short while, read again after it or once mooring applied CRDs (discovery.ts).
      capabilities: () => deps.discovery.capabilities(),
    };
    this.ledger = new Ledger(deps.api, deps.config.cluster.namespace, deps.config.ledger.historyLimit);
    this.control = new Control({
      api: deps.api,
      cache: deps.cache,
      namespace: deps.config.cluster.namespace,
      log: deps.log,
      metrics: deps.metrics,
      deployments: () => [...this.state.deployments.keys()],
      elsewhere: deps.shard?.elsewhere,
      reporters: () => this.deps.reporters ?? [],
    });
    this.queue = new SyncQueue<AgentSync>({
      concurrency: deps.config.concurrency,
      onEvent: (e) => {
        if (e.type === 'retry-scheduled')
          deps.log.warn({ deployment: e.deployment, in: e.detail }, 'sync will be retried');
        else if (e.type === 'coalesced')
          deps.log.debug({ deployment: e.deployment, detail: e.detail }, 'sync coalesced');
      },
    });
    this.followServer(deps.config);
    this.polls = new SourcePolls({
      deps,
      state: this.state,
      stopped: () => this.stopped,
      decide: (d, commit) => this.reconcileDeployment(d, commit),
      previewRefs: (source, log) => {
        // Pull requests to preview, found by their refs (webhooks name them sooner); never holds up the poll.
        if (this.previewsOn(source))
          void this.previews()
            .then((p) => p.pollRefs(source))
            .catch((error: unknown) => log.warn({ err: errorMessage(error) }, 'cannot list pull requests'));
      },
    });
  }

  /**
   * Polls a source now (a webhook, the schedule); a poll already under way runs once more when it ends, and the
   * caller waits for that round too (a reconcile request then knows whether a poll took it).
   */
  poll(name: string): Promise<void> {
    return this.polls.poll(name);
  }

  /** Request counts and rate-limit headroom of each registry, for the metrics. */
  registryStats(): ReturnType<SourcePolls['registryStats']> {
    return this.polls.registryStats();
  }
  private sources(): AnySource[] {
    const { git, registry, local, charts, oci } = this.deps.config.sources;
    return [...git, ...registry, ...charts, ...oci, ...local];
  }

  /** The sources that poll artifacts (images, charts, OCI artifacts): polled before Git, so a first sync has them. */
  private artifactNames(config: MooringConfig = this.deps.config): string[] {
    return artifactSources(config).map((a) => a.source.name);
  }

  /**
   * Learns what is deployed, builds the sources, polls each once and schedules the rest. A stop that comes while it
   * runs (the lease lost, SIGTERM) ends it at its next step: nothing is built, watched or scheduled after the stop,
   * and what was made before it is undone (a watch or timer left behind kept the process alive, and an agent that
   * had lost its lease syncing).
   */
  async start(): Promise<void> {
    const { config, api, log } = this.deps;
    await ensureNamespace(api, config.cluster.namespace);
    if (this.stopped) return;
    await this.control.start();
    this.whenStopped(() => this.control.stop());
    if (this.stopped) return;
    // The control map's watch holds every ConfigMap of the agent's namespace (metadata only): a ledger or inventory
    // read whose remembered copy is at the watched version, or that the watch knows absent, sends no request
    // (src/kube/state-store.ts).
    const cache = this.deps.cache;
    const namespace = config.cluster.namespace;
    if (cache)
      StateStore.watchVersions(api, namespace, (name) => cache.watchedVersion(CONFIGMAPS, namespace, name));
    // Saved drift marks match only under the installation's key: it is read before the ledgers are.
    await keyMarks(cache, api, namespace, log);
    for (const spec of config.deployments) {
      if (this.stopped) return;
      await this.learnFromLedger(spec, false);
    }
    for (const source of this.sources()) {
      if (this.stopped) return;
      await this.polls.build(source);
    }
    if (this.stopped) return;
    this.trustSignedReleases();
    log.info({ deployments: config.deployments.length, sources: this.sources().length }, 'agent started');
    // Registries first, so that the first sync of a deployment already binds its images.
    await Promise.all(this.artifactNames().map((name) => this.poll(name)));
    await Promise.all([...config.sources.git, ...config.sources.local].map((s) => this.poll(s.name)));
    if (this.stopped) return;
    for (const source of this.sources()) this.polls.schedule(source);
    this.scheduleDrift();
    this.control.listen({
      reconcile: async (name) => {
        const d = this.state.deployments.get(name);
        if (d) await this.pollDeployment(d);
        // Its sources' polls found nothing to sync: it is synced at the revision it is at.
        if (d && this.control.pending(name)) await this.reconcileDeployment(d, d.commit ?? d.attempted);
      },
      resume: async (name) => {
        const d = this.state.deployments.get(name);
        if (d) await this.pollDeployment(d);
      },
      promote: async (name) => {
        const d = this.state.deployments.get(name);
        if (d?.spec.promote) await this.reconcileDeployment(d, d.commit);
      },
      rollback: async (name, rollback) => {
        this.queue.cancel(name, new Superseded({ by: 'rollback', who: rollback.by }));
        await this.queue.quiet(name);
      },
    });
    const fleet = this.deps.fleet;
    if (fleet) {
      fleet.join(config.cluster.name, this.member);
      this.whenStopped(() => fleet.leave(this.deps.config.cluster.name, this.member));
      // Promoted deployments follow their upstream's ledger, not a poll of their own source.
      this.promotionTimer = setInterval(() => this.checkPromotions(), PROMOTION_CHECK_MS);
      this.promotionTimer.unref();
      this.whenStopped(() => clearInterval(this.promotionTimer));
      this.checkPromotions();
    }
  }

  /** Undoes what start made at the stop, or at once when the agent has already stopped. */
  private whenStopped(undo: () => void | Promise<void>): void {
    if (!this.stopped) this.stops.push(undo);
    else
      Promise.resolve()
        .then(undo)
        .catch((error: unknown) => this.deps.log.warn({ err: errorMessage(error) }, 'cannot stop cleanly'));
  }

  /** Looks again at the upstream of each promoted deployment that does not sync now. */
  private checkPromotions(): void {
    for (const d of this.state.deployments.values()) {
      if (!d.spec.promote || this.queue.busy(d.spec.name) || this.control.suspended(d.spec.name)) continue;
      this.reconcileDeployment(d, d.commit).catch((error: unknown) =>
        this.deps.log.error(
          { deployment: d.spec.name, err: errorMessage(error) },
          'cannot look at the promotion',
        ),
      );
    }
  }

  /** Polls the sources of one deployment now (registries first); a local one is reconciled at once. */
  private async pollDeployment(d: DeploymentState): Promise<void> {
    const artifacts = followedArtifacts(this.deps.config, d.spec);
    for (const name of artifacts) await this.poll(name);
    if (isLocal(this.state, d) || isOci(this.state, d)) await this.reconcileDeployment(d, undefined);
    else await this.poll(d.spec.source);
  }

  private scheduleDrift(): void {
    if (this.driftTimer) clearInterval(this.driftTimer);
    this.driftTimer = undefined;
    const drift = this.deps.config.drift.interval;
    keepDriftMarks(this.deps.cache, this.deps.config.apply.fieldManager, drift !== undefined);
    if (drift !== undefined && !this.stopped) this.driftTimer = setInterval(() => this.correctDrift(), drift);
  }

  private correctDrift(): void {
    const due = [...this.state.deployments.values()].filter(
      (d) => d.deployed && !this.control.suspended(d.spec.name),
    );
    // One line sums the pass up (src/kube/drift-pass.ts): objects, what moved, requests, time.
    beginDriftPass(
      this.deps.cache,
      due.map((d) => d.spec.name),
      this.deps.log,
    );
    for (const d of due)
      this.reconcileDeployment(d, d.commit, 'drift').catch((error: unknown) =>
        this.deps.log.error(
          { deployment: d.spec.name, err: errorMessage(error) },
          'cannot check the deployment for drift',
        ),
      );
  }

  /**
   * Dispatch: whether `d` needs a sync at `commit` (decide), what holds it (the gates, judged before the queue),
   * and the queue's job (agent-job.ts), now or after the hold's delay.
   */
  private async reconcileDeployment(
    d: DeploymentState,
    commit: string | undefined,
    reason?: 'drift',
  ): Promise<void> {
    const planned = await decide({ ...this.jobContext, resync: this.resync }, d, commit, reason);
    if (!planned) return;
    const job = agentJob(this.jobContext, d, planned);
    const after = await job.look();
    if (after === 'stop') return;
    // A stop that came while it was decided: the queue, stopped first (stop), takes it no more.
    const queued = this.queue.request(d.spec.name, job, { afterMs: after === 'go' ? undefined : after });
    // A request joined to the sync of the same revision is answered by that sync when it ends.
    if (queued === 'stopped' && planned.request)
      await this.control.answer(planned.request, 'cancelled', 'the agent is stopping');
  }

  /** What the jobs of this agent are lent (agent-job.ts). */
  private get jobContext(): JobContext {
    return {
      deps: this.deps,
      state: this.state,
      control: this.control,
      ledger: () => this.ledger,
      pollRound: (name) => this.polls.roundOf(name),
      // A deployment synced now, or whose source's poll round `round` has not yet decided it, is not yet stable at
      // what it will be. Only that round: a later one (polls every second) would hold its dependents for ever.
      busy: (name, round) => this.queue.busy(name) || !this.polls.decided(name, round),
      retryInterval: (d) => this.retryInterval(d),
      syncDeps: () => this.syncDeps(),
    };
  }

  /** The longest wait before a failed sync of `d` that may pass is retried (retry.ts). */
  private retryInterval(d: DeploymentState): number {
    return retryIntervalOf(this.deps.config, d.spec);
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

  /** The suspension of a deployment (`mooring suspend`), if it is suspended. */
  suspended(deployment: string): { since?: string | undefined } | undefined {
    return this.control.suspended(deployment);
  }

  /**
   * Takes over a new configuration without a restart (the caller keeps what only a restart changes; see
   * reload.ts). Deployments whose spec and source are unchanged are left alone, their syncs running on. Removed
   * deployments and sources stop (a running sync is cancelled; nothing in the cluster is deleted); added ones are
   * built and polled at once; changed ones are rebuilt and polled, and a changed spec is synced again.
   * `handover`: the deployments removed went to another replica (replicas sharing the work): a sync of theirs
   * that runs ends as it would (the other replica waits for it), only what waits is dropped.
   */
  async reconfigure(
    next: MooringConfig,
    reporters?: readonly SyncReporter[],
    options: { handover?: boolean } = {},
  ): Promise<ReloadPlan> {
    const plan = planReload(this.deps.config, next);
    if (this.stopped) return plan;
    const previous = this.deps.config;
    this.deps.config = next;
    this.state.config = next;
    if (reporters) this.deps.reporters = reporters;
    const log = this.deps.log;
    for (const name of plan.deployments.removed) {
      const d = this.state.deployments.get(name);
      this.state.deployments.delete(name);
      this.resync.delete(name);
      this.queue.forget(name, new Withdrawn(name), { keepRunning: options.handover === true });
      // A commit it held (suspended) or waited to be promoted has a pending status no sync will end: it ends now.
      // Handed to another replica, it is that replica's to say (it holds the same commit).
      const open = options.handover
        ? new Set<string>()
        : new Set([this.control.heldCommit(name), d?.promotionPending]);
      for (const commit of open)
        if (d && commit !== undefined)
          await endHold(
            { ledger: this.ledger, log, reporters: this.deps.reporters ?? [] },
            heldSync(previous, d.spec, commit, { signal: AbortSignal.abort(new Withdrawn(name)) }),
            'cancelled',
            'the deployment was removed from the configuration',
          );
      this.control.forgetHeld(name);
    }
    for (const name of [...plan.sources.removed, ...plan.sources.changed]) {
      await this.polls.stopSource(name);
      this.state.repos.delete(name);
      this.state.registries.delete(name);
      if (plan.sources.removed.includes(name)) this.state.knownDigests.delete(name);
    }
    this.queue.setConcurrency(next.concurrency);
    this.followServer(next);
    if (next.ledger.historyLimit !== previous.ledger.historyLimit)
      this.ledger = new Ledger(this.deps.api, next.cluster.namespace, next.ledger.historyLimit);
    if (next.drift.interval !== previous.drift.interval) this.scheduleDrift();

    for (const change of plan.deployments.changed) {
      const d = this.state.deployments.get(change.name);
      const spec = next.deployments.find((s) => s.name === change.name);
      if (!d || !spec) continue;
      d.spec = spec;
      d.generation = (d.generation ?? 0) + 1;
      // Its paths may have changed: whether a kustomization lies among them is asked again.
      d.kustomized = undefined;
      d.linked = undefined;
      // Judged anew: a changed spec may read other files, or fix what failed.
      d.attempted = undefined;
      // Another repository (or another URL of it) may not hold the commit the deployment was at.
      if (change.source) {
        d.commit = undefined;
        d.sameAs = undefined;
      }
      if (change.spec) this.resync.add(change.name);
    }
    for (const name of plan.deployments.added) {
      const spec = next.deployments.find((s) => s.name === name);
      if (spec) await this.addDeployment(spec);
    }
    const rebuilt = [...plan.sources.added, ...plan.sources.changed];
    for (const source of this.sources().filter((s) => rebuilt.includes(s.name))) {
      try {
        await this.polls.build(source);
      } catch (error) {
        log.error({ source: source.name, err: errorMessage(error) }, 'cannot build the source');
      }
    }
    // Polled now: the new and rebuilt sources, and the sources of new and changed deployments (registries first,
    // so that a first sync binds their images). The schedules of unchanged sources run on.
    const touched = new Set(rebuilt);
    for (const name of [...plan.deployments.added, ...plan.deployments.changed.map((c) => c.name)]) {
      const spec = next.deployments.find((s) => s.name === name);
      for (const source of spec ? [spec.source, ...followedArtifacts(next, spec)] : []) touched.add(source);
    }
    const polled = this.sources().filter((s) => touched.has(s.name));
    const isRegistry = (s: { name: string }) => this.state.registries.has(s.name);
    await Promise.all(polled.filter(isRegistry).map((s) => this.poll(s.name)));
    await Promise.all(polled.filter((s) => !isRegistry(s)).map((s) => this.poll(s.name)));
    for (const source of this.sources()) if (rebuilt.includes(source.name)) this.polls.schedule(source);
    // A changed spec whose poll found no new commit for it is synced at the commit it is at.
    for (const name of [...this.resync]) {
      const d = this.state.deployments.get(name);
      if (d && (d.commit !== undefined || isLocal(this.state, d) || isOci(this.state, d)))
        await this.reconcileDeployment(d, d.commit).catch((error: unknown) =>
          log.error({ deployment: name, err: errorMessage(error) }, 'cannot sync the changed deployment'),
        );
    }
    this.control.refresh();
    return plan;
  }

  /** What a deployment last deployed, from its ledger: an unfinished sync ended, saved drift marks taken back. */
  private async learn(spec: MooringConfig['deployments'][number], data: LedgerData, added: boolean) {
    // A sync held by another replica is that replica's to end while it lives. The list of live members may lag
    // (a member that joined or renewed since it was read), so a holder missing from it is asked of its own Lease.
    const shard = this.deps.shard;
    const holder = data.holder?.identity;
    const foreign = shard !== undefined && holder !== undefined && holder !== shard.identity;
    const attempt = await unfinishedAttempt(
      this.deps.api,
      this.deps.config.cluster.namespace,
      spec.name,
      data,
      this.deps.cache,
    ).catch((error: unknown) => {
      this.deps.log.warn({ deployment: spec.name, err: errorMessage(error) }, 'cannot read the inventory');
      return undefined;
    });
    // Nor is a sync this process still runs (handed over, then taken back before its end) anyone's to end.
    if (attempt && !runsHere(attempt) && (!foreign || (!shard.live(holder) && (await shard.gone(holder)))))
      await endInterrupted(this.syncDeps(), this.deps.config, spec, attempt);
    restoreMarks(this.deps.cache, spec.name, data.marks);
    const now = current(data);
    this.state.deployments.set(spec.name, { spec, commit: now?.commit, deployed: now?.revision });
    // verify.mode all checks every commit back to the last verified one: the commit a signed release deployed.
    if (now?.signedBy && now.commit) this.signedReleases.push({ source: spec.source, commit: now.commit });
    this.trustSignedReleases();
    for (const [source, image] of Object.entries(now?.images ?? {}))
      if (!added || !this.state.knownDigests.has(source)) this.state.knownDigests.set(source, image.digest);
  }

  /** The commits of signed releases told to their sources' repositories (verify.mode all), once these are built. */
  private trustSignedReleases(): void {
    this.signedReleases = this.signedReleases.filter(({ source, commit }) => {
      const repo = this.state.repos.get(source);
      repo?.trustVerified(commit);
      return repo === undefined;
    });
  }

  /** A deployment added by a reload: what it last deployed is read from its ledger, as at start. */
  private async addDeployment(spec: MooringConfig['deployments'][number]): Promise<void> {
    await this.learnFromLedger(spec, true);
  }

  /**
   * learn() from the deployment's ledger. A ledger that cannot be read is said, and the deployment starts knowing
   * nothing deployed: its first poll reads the ledger again before anything is synced (a broken ledger then fails
   * that deployment's syncs, by name). At start, only a ledger that can never be read (CorruptLedgerError: one
   * ConfigMap written by hand stopped every deployment of the agent) is passed over; any other failure fails the
   * start, which is tried again.
   */
  private async learnFromLedger(spec: MooringConfig['deployments'][number], added: boolean): Promise<void> {
    try {
      await this.learn(spec, await this.ledger.read(spec.name), added);
    } catch (error) {
      if (!added && !(error instanceof CorruptLedgerError)) throw error;
      this.deps.log.error({ deployment: spec.name, err: errorMessage(error) }, 'cannot read the ledger');
      this.state.deployments.set(spec.name, { spec, commit: undefined, deployed: undefined });
    }
  }

  /** The deployments this agent syncs (all of the configuration's, or a replica's share). */
  deploymentNames(): string[] {
    return [...this.state.deployments.keys()];
  }

  /** Sources whose names are given (a webhook) are polled now. */
  pollNow(names: readonly string[], trigger: PollTrigger = {}): void {
    for (const name of names) this.polls.pollSafely(name, trigger);
  }

  /**
   * Whether this agent previews the source's pull requests: previews are on for it and, with replicas sharing the
   * work, this replica syncs the source's first deployment (one replica comments, not each).
   */
  private previewsOn(source: string): boolean {
    if (!this.deps.config.sources.git.some((g) => g.name === source && g.preview.enabled)) return false;
    const first = this.deps.config.deployments.find((d) => d.source === source);
    return !this.deps.shard || (first !== undefined && !this.deps.shard.elsewhere(first.name));
  }

  private previews(): Promise<PreviewRunner> {
    this.previewRunner ??= import('./previews.ts').then(
      ({ PreviewRunner }) =>
        new PreviewRunner({
          config: () => this.deps.config,
          ledger: this.ledger,
          log: this.deps.log,
          cacheDir: this.deps.cacheDir,
          capabilities: this.state.capabilities,
          api: this.deps.api,
          discovery: this.deps.discovery,
        }),
    );
    return this.previewRunner;
  }

  /**
   * Previews the pull requests webhooks named (Git source and number), for the sources that preview them, and asks
   * the forge about them again for the pull-request deployment sets of those sources.
   */
  previewNow(pulls: readonly { source: string; number: number }[]): void {
    for (const pull of pulls) {
      if (this.previewsOn(pull.source)) void this.previews().then((p) => p.request(pull.source, pull.number));
      this.polls.pullRequestNow(pull.source, pull.number);
    }
  }

  /** Resolves when no sync runs or waits (for tests and one-shot runs). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /**
   * The syncs in flight follow the API server (adaptive-concurrency.ts) from `concurrency` up to `concurrencyMax`,
   * twice `concurrency` when it is not set; `concurrencyMax` equal to `concurrency` keeps it fixed.
   */
  private followServer(config: MooringConfig): void {
    this.unfollow?.();
    this.unfollow = undefined;
    const { concurrency } = config;
    const concurrencyMax = config.concurrencyMax ?? concurrency * 2;
    if (concurrencyMax <= concurrency) return;
    this.unfollow = adaptConcurrency(this.deps.api, this.queue, { concurrency, concurrencyMax }, (slots) =>
      this.deps.log.debug({ slots }, 'syncs in flight'),
    );
  }

  /** Stops polling, cancels stability waits, lets the write in progress finish, gives up the preview under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    // At once: a sync queued just before the stop does not start after it.
    const queue = this.queue.stop();
    this.unfollow?.();
    // The preview under way is given up; its statuses get their end before the agent says it stopped.
    const previews = this.previewRunner?.then((p) => p.stop()).catch(() => undefined);
    for (const stop of this.stops.splice(0)) await stop();
    await this.polls.stopAll();
    this.scheduleDrift();
    await Promise.all([queue, previews]);
  }
}
