// The polling of the agent's sources (agent.ts): each source's client built (a Git repository, an artifact poller,
// a local folder's watcher), polled on its schedule or when asked, one poll of a source at a time (a poll asked
// for meanwhile runs once more after it), and each change handed to the agent's decision.
import type { GitSource, LocalSource, MooringConfig } from '../config/schema.ts';
import { gitGenerator } from '../config/sets.ts';
import type { Logger } from '../contract.ts';
import { errorMessage } from '../errors.ts';
import { artifactSource } from '../sources/artifact-poller.ts';
import type { GitRepository, ResolvedRef } from '../sources/git/repository.ts';
import { watchFolder } from '../sources/local/watch.ts';
import type { AgentDeps } from './agent-context.ts';
import {
  type DeploymentState,
  pollGitSource,
  pollRegistrySource,
  type SourceState,
  syncLocalSource,
} from './agent-sources.ts';
import { PullRequestSets } from './pull-request-sets.ts';
import { readSetInputs } from './set-inputs.ts';
import {
  type Lease,
  type PollTrigger,
  type SharedPoller,
  type SharedRepository,
  SharedSources,
} from './shared-sources.ts';

export type AnySource = MooringConfig['sources'][keyof MooringConfig['sources']][number];

/** What the polls use of the agent. */
export interface PollingContext {
  deps: AgentDeps;
  state: SourceState;
  /** Once true, no poll starts and none runs again. */
  stopped(): boolean;
  /** A deployment of a polled source, at the commit (or artifacts) the poll found: the agent decides. */
  decide(d: DeploymentState, commit: string | undefined): Promise<void>;
  /** After a Git source's poll: the pull requests to preview found by their refs. */
  previewRefs(source: string, log: Logger): void;
}

export class SourcePolls {
  private readonly ctx: PollingContext;
  /** The poll under way of each source, and whether it must run once more. */
  private readonly running = new Map<
    string,
    { again: boolean; trigger: PollTrigger | undefined; done: Promise<void> }
  >();
  /** What stops each source's schedule or watcher. */
  private readonly stops = new Map<string, () => void | Promise<void>>();
  /** The rounds of each source's polls started and ended (one round decides each of its deployments once). */
  private readonly rounds = new Map<string, { started: number; ended: number }>();
  /** The clients of the sources, shared with the agents of other clusters that have the same (shared-sources.ts). */
  private readonly shared: SharedSources;
  private readonly leases = new Map<string, Lease<unknown>>();
  private readonly gitRepos = new Map<string, SharedRepository>();
  private readonly pollers = new Map<string, SharedPoller>();
  /** The commit (and generator) at which each Git-directories deployment set's folders were last read. */
  private readonly setsRead = new Map<string, string>();
  /** The pull requests each pull-request deployment set deploys, asked of the forge at each poll of its source. */
  private readonly pullRequestSets: PullRequestSets;

  constructor(ctx: PollingContext) {
    this.ctx = ctx;
    this.shared = ctx.deps.sources ?? new SharedSources(ctx.deps.cacheDir);
    this.pullRequestSets = new PullRequestSets({ config: () => ctx.deps.config, log: ctx.deps.log });
  }

  /** The poll rounds of deployment `name`'s source started so far, the one under way included (0: none). */
  roundOf(name: string): number {
    const source = this.ctx.state.deployments.get(name)?.spec.source;
    return source === undefined ? 0 : (this.rounds.get(source)?.started ?? 0);
  }

  /** Whether round `round` of deployment `name`'s source (as roundOf counts) and every one before it has ended. */
  decided(name: string, round: number): boolean {
    const source = this.ctx.state.deployments.get(name)?.spec.source;
    return source === undefined || (this.rounds.get(source)?.ended ?? 0) >= round;
  }

  /** Stops a source's schedule or watcher (a reload removed or rebuilt it). */
  async stopSource(name: string): Promise<void> {
    await this.stops.get(name)?.();
    this.stops.delete(name);
    this.leases.get(name)?.release();
    this.leases.delete(name);
    this.gitRepos.delete(name);
    this.pollers.delete(name);
  }

  /** Stops every schedule and watcher, and gives the sources' clients back. */
  async stopAll(): Promise<void> {
    for (const stop of this.stops.values()) await stop();
    this.stops.clear();
    for (const lease of this.leases.values()) lease.release();
    this.leases.clear();
    this.gitRepos.clear();
    this.pollers.clear();
  }

  /** Builds a source's client, or starts watching a local source's folder (nothing once the agent has stopped). */
  async build(source: AnySource): Promise<void> {
    if (this.ctx.stopped()) return;
    const { sources } = this.ctx.deps.config;
    const artifact = artifactSource(this.ctx.deps.config, source.name);
    if (sources.git.includes(source as GitSource)) {
      const lease = this.shared.git(source as GitSource);
      this.leases.get(source.name)?.release();
      this.leases.set(source.name, lease);
      this.gitRepos.set(source.name, lease.value);
      this.ctx.state.repos.set(source.name, lease.value);
    } else if (artifact) {
      const lease = await this.shared.artifact(artifact);
      // The agent stopped meanwhile: its sources' clients were given back, this one with them.
      if (this.ctx.stopped()) {
        lease.release();
        return;
      }
      this.leases.get(source.name)?.release();
      this.leases.set(source.name, lease);
      const poller = lease.value;
      this.pollers.set(source.name, poller);
      this.ctx.state.registries.set(source.name, {
        source: artifact.source,
        kind: artifact.kind,
        poller,
        client: poller.client,
        current: undefined,
      });
    } else {
      const local = source as LocalSource;
      const watcher = watchFolder(local.path, {
        debounceMs: local.debounce,
        onChange: () => this.pollSafely(local.name),
      });
      this.stops.set(local.name, () => watcher.close());
    }
  }

  /** Whether the source is a local folder of the configuration. */
  isLocal(source: AnySource): boolean {
    return this.ctx.deps.config.sources.local.includes(source as LocalSource);
  }

  /**
   * Polls a source on its schedule (cron or interval), one schedule for every agent that has the same source; a
   * local source is polled by its watcher instead.
   */
  schedule(any: AnySource): void {
    if (this.isLocal(any) || this.ctx.stopped()) return;
    const source = any as GitSource;
    this.stops.set(
      source.name,
      this.shared.schedule(source, (trigger) => this.pollSafely(source.name, trigger)),
    );
  }

  /**
   * A poll started by a timer, a watcher or a webhook: nothing it throws may end the process. The polls of one
   * `trigger` (in this agent and the other clusters') share their requests.
   */
  pollSafely(name: string, trigger?: PollTrigger): void {
    this.poll(name, trigger).catch((error: unknown) =>
      this.ctx.deps.log.error({ source: name, err: errorMessage(error) }, 'poll failed'),
    );
  }

  /**
   * Polls a source now (a webhook, the schedule); a poll already under way runs once more when it ends, and the
   * caller waits for that round too (a reconcile request then knows whether a poll took it).
   */
  poll(name: string, trigger?: PollTrigger): Promise<void> {
    if (this.ctx.stopped()) return Promise.resolve();
    const running = this.running.get(name);
    if (running) {
      // The round after: its requests start after this trigger, so they may be shared with its other polls.
      running.again = true;
      running.trigger = trigger;
      return running.done;
    }
    const flag: { again: boolean; trigger: PollTrigger | undefined; done: Promise<void> } = {
      again: false,
      trigger,
      done: Promise.resolve(),
    };
    this.running.set(name, flag);
    flag.done = (async () => {
      try {
        do {
          flag.again = false;
          const roundTrigger = flag.trigger;
          flag.trigger = undefined;
          const rounds = this.rounds.get(name) ?? { started: 0, ended: 0 };
          this.rounds.set(name, rounds);
          rounds.started++;
          try {
            await this.pollOnce(name, roundTrigger);
          } finally {
            rounds.ended++;
          }
        } while (flag.again && !this.ctx.stopped());
      } finally {
        this.running.delete(name);
      }
    })();
    return flag.done;
  }

  private async pollOnce(name: string, trigger: PollTrigger | undefined): Promise<void> {
    const log = this.ctx.deps.log.child({ source: name });
    const { repos, registries } = this.ctx.state;
    const kind = repos.has(name) ? 'git' : registries.has(name) ? 'registry' : 'local';
    let result: 'unchanged' | 'refused' = 'unchanged';
    const decide = (d: DeploymentState, commit: string | undefined) => this.ctx.decide(d, commit);
    try {
      const repo = repos.get(name);
      const shared = this.gitRepos.get(name);
      const registry = registries.get(name);
      const local = this.ctx.deps.config.sources.local.find((s) => s.name === name);
      if (repo) {
        const resolved = await (shared?.resolveFor(trigger) ?? repo.resolve());
        // The sets first: a commit that deletes a folder holds the folder's deployment (the set gate, gates.ts)
        // before the commit is decided for it, so that it is removed rather than failed.
        await this.readSets(name, repo, resolved, log);
        await pollGitSource(this.ctx.state, repo, decide, () => Promise.resolve(resolved));
        this.ctx.previewRefs(name, log);
        // Pull requests are asked of the forge beside the poll: a slow forge never holds up a sync.
        const keeper = this.ctx.deps.sets;
        if (keeper && this.pullRequestSets.wanted(name))
          void this.pullRequestSets
            .poll(name, repo, keeper)
            .catch((error: unknown) =>
              log.warn({ err: errorMessage(error) }, 'deployment sets: cannot read the pull requests'),
            );
      } else if (registry) {
        const poller = this.pollers.get(name);
        result =
          (await pollRegistrySource(this.ctx.state, registry, decide, (state) =>
            poller ? poller.poll(state, trigger) : registry.poller.poll(state),
          )) ?? 'unchanged';
      } else if (local) await syncLocalSource(this.ctx.state, local, decide);
      this.ctx.deps.metrics?.poll(name, kind, result);
    } catch (error) {
      // A poll given up because the agent stops (its requests are aborted: shared-sources.ts) is no failure.
      if (this.ctx.stopped()) {
        log.info({ err: errorMessage(error) }, 'poll given up: the agent is stopping');
        return;
      }
      this.ctx.deps.metrics?.poll(name, kind, 'error');
      log.error({ err: errorMessage(error) }, 'poll failed');
    }
  }

  /**
   * The folders each Git-directories deployment set of this source matches at the commit just polled, told to the
   * keeper of sets (which adds and removes their deployments). A commit that cannot be read tells nothing: a set
   * whose source fails removes nothing.
   */
  private async readSets(
    name: string,
    repo: GitRepository,
    resolved: ResolvedRef,
    log: Logger,
  ): Promise<void> {
    const keeper = this.ctx.deps.sets;
    // Read once per commit and set (the folders of a commit do not change); a changed set is read again.
    const sets = this.ctx.deps.config.deploymentSets.filter(
      (s) =>
        gitGenerator(s)?.source === name &&
        this.setsRead.get(s.name) !== `${resolved.commit} ${JSON.stringify(s.generator)}`,
    );
    if (!keeper || sets.length === 0) return;
    try {
      await repo.fetch(resolved);
    } catch (error) {
      log.error(
        { err: errorMessage(error), commit: resolved.commit },
        'deployment sets: cannot fetch the commit',
      );
      return;
    }
    for (const set of sets) {
      const generator = gitGenerator(set);
      if (!generator) continue;
      try {
        const { found, refused } = await readSetInputs(set, repo, resolved.commit);
        keeper.found(set.name, resolved.commit, found, refused);
        this.setsRead.set(set.name, `${resolved.commit} ${JSON.stringify(set.generator)}`);
      } catch (error) {
        log.error(
          { set: set.name, commit: resolved.commit, err: errorMessage(error) },
          'deployment set: cannot read its source; its deployments stay as they are',
        );
      }
    }
  }

  /**
   * A webhook named pull request `number` of Git source `source`: the pull-request sets of that source ask the forge
   * about it now (its head, state and labels), without waiting for the next poll or recheck.
   */
  pullRequestNow(source: string, number: number): void {
    const keeper = this.ctx.deps.sets;
    const repo = this.ctx.state.repos.get(source);
    if (!keeper || !repo || !this.pullRequestSets.wanted(source)) return;
    this.pullRequestSets.forget(source, number);
    void this.pullRequestSets
      .poll(source, repo, keeper)
      .catch((error: unknown) =>
        this.ctx.deps.log.warn(
          { source, err: errorMessage(error) },
          'deployment sets: cannot read the pull requests',
        ),
      );
  }

  /** Request counts and rate-limit headroom of each registry, for the metrics. */
  registryStats(): {
    registry: string;
    token: number;
    byStatus: ReadonlyMap<string, number>;
    remaining: number | undefined;
    pausedUntil: number | undefined;
  }[] {
    return [...this.ctx.state.registries.values()].map((r) => ({
      registry: r.source.name,
      token: r.client.stats.token,
      byStatus: r.client.requestsByStatus,
      remaining: r.client.rateLimitRemaining,
      pausedUntil: r.client.notBefore?.until,
    }));
  }
}
