// What the agents of one process share of their sources (docs/clusters.md): the agent of each cluster reads the
// same Git sources and registries, and without this each polled its own copy, so that a repository read by ten
// clusters was fetched ten times and held ten times. Here a source's client is built once for every agent that has
// it with the same settings (one Git cache and repository object, one registry client with one rate-limit pause),
// one schedule per source polls it in every agent at once, and the polls of one trigger (a tick of that schedule,
// a webhook) share one request: one ref advertisement and one artifact poll per trigger, one fetch per commit. An
// agent of one cluster uses the same code with nobody to share with.
//
// A poll shares a request only with polls of the same trigger, never with one already under way for an earlier
// trigger: a request that started before a push may not see it, and a webhook's poll must.
import cron from 'node-cron';
import type { GitSource } from '../config/schema.ts';
import type { ArtifactPoller, ArtifactSourceConfig } from '../sources/artifact-poller.ts';
import { createArtifactPoller } from '../sources/create-poller.ts';
import { GitRepository, type ResolvedRef } from '../sources/git/repository.ts';
import type { RegistryPollResult, RegistryPollState } from '../sources/registry/poll.ts';

/** One cause of polls: every poll it starts, in any agent, may share one request per source. */
export type PollTrigger = object;

/** A shared client, and the call that gives it back (the last one out closes it). */
export interface Lease<T> {
  value: T;
  release(): void;
}

interface Entry<T> {
  value: T;
  users: number;
  close?: () => void;
}

interface Clock {
  subscribers: Set<(trigger: PollTrigger) => void>;
  stop: () => void;
}

/** The settings that make two sources the same to poll: every field (a different credential is another client). */
function keyOf(kind: string, source: object): string {
  return `${kind}:${JSON.stringify(source)}`;
}

/**
 * A Git repository whose ref reads are shared by the polls of one trigger. The newest trigger's read is kept until
 * another trigger's starts: an agent busy when the trigger came polls later under it (SourcePolls' next round) and
 * takes the same read, which started after the trigger too.
 */
export class SharedRepository extends GitRepository {
  #shared: { trigger: PollTrigger; resolved: Promise<ResolvedRef> } | undefined;

  /** Where the source's ref points; polls of the same trigger share one read of the server's refs. */
  resolveFor(trigger: PollTrigger | undefined): Promise<ResolvedRef> {
    if (trigger === undefined) return this.resolve();
    const shared = this.#shared;
    if (shared?.trigger === trigger) return shared.resolved;
    const resolved = this.resolve();
    this.#shared = { trigger, resolved };
    return resolved;
  }
}

/** An artifact poller whose polls of one trigger, from the same last state, share one request. */
export class SharedPoller implements ArtifactPoller {
  readonly #inner: ArtifactPoller;
  #shared: { trigger: PollTrigger; state: string; result: Promise<RegistryPollResult> } | undefined;

  constructor(inner: ArtifactPoller) {
    this.#inner = inner;
    if (inner.fetch) this.fetch = inner.fetch.bind(inner);
    this.verifier = inner.verifier;
  }
  get kind() {
    return this.#inner.kind;
  }
  get name() {
    return this.#inner.name;
  }
  get reference() {
    return this.#inner.reference;
  }
  get client() {
    return this.#inner.client;
  }
  fetch?: ArtifactPoller['fetch'];
  /** One verdict cache for every agent that shares the source (the keys are the source's). */
  readonly verifier: ArtifactPoller['verifier'];

  poll(state: RegistryPollState, trigger?: PollTrigger): Promise<RegistryPollResult> {
    if (trigger === undefined) return this.#inner.poll(state);
    const key = JSON.stringify(state);
    const shared = this.#shared;
    if (shared?.trigger === trigger && shared.state === key) return shared.result;
    const result = this.#inner.poll(state);
    // Kept until another trigger's poll starts, as SharedRepository keeps its read.
    this.#shared = { trigger, state: key, result };
    return result;
  }
}

export class SharedSources {
  readonly #cacheDir: string;
  readonly #entries = new Map<string, Entry<unknown>>();
  readonly #building = new Map<string, Promise<Entry<unknown>>>();
  readonly #clocks = new Map<string, Clock>();
  /** Aborted by stop(): every client built here gives up its requests under way and sends no more. */
  readonly #stopping = new AbortController();

  /** `cacheDir`: where the Git sources keep their caches (one per repository URL). */
  constructor(cacheDir: string) {
    this.#cacheDir = cacheDir;
  }

  /**
   * The process stops: every request of every source under way (a poll, a sync's fetch of a commit or a chart)
   * is given up at once instead of waiting out its timeout on a server that does not answer, and none is sent
   * after. Only for the end of the process: the clients are shared by the agents of every cluster.
   */
  stop(): void {
    this.#stopping.abort(new Error('the agent is stopping'));
  }

  /** Aborted by stop(): for the downloads made beside the shared clients (a chart's dependencies, a rollback's). */
  get signal(): AbortSignal {
    return this.#stopping.signal;
  }

  /** The repository of a Git source, shared with every agent that has the same source. */
  git(source: GitSource): Lease<SharedRepository> {
    const key = keyOf('git', source);
    let entry = this.#entries.get(key) as Entry<SharedRepository> | undefined;
    if (!entry) {
      entry = {
        value: new SharedRepository(source, { cacheDir: this.#cacheDir, signal: this.#stopping.signal }),
        users: 0,
      };
      this.#entries.set(key, entry);
    }
    return this.#lease(key, entry);
  }

  /** The poller of an artifact source (image, chart, OCI manifests), shared likewise. */
  async artifact(found: ArtifactSourceConfig): Promise<Lease<SharedPoller>> {
    const key = keyOf(found.kind, found.source);
    let entry = this.#entries.get(key) as Entry<SharedPoller> | undefined;
    if (!entry) {
      let building = this.#building.get(key) as Promise<Entry<SharedPoller>> | undefined;
      if (!building) {
        building = createArtifactPoller(found, { signal: this.#stopping.signal }).then((poller) => ({
          value: new SharedPoller(poller),
          users: 0,
          close: () => poller.client.close(),
        }));
        this.#building.set(key, building);
        const done = () => this.#building.delete(key);
        building.then(done, done);
      }
      entry = await building;
      if (!this.#entries.has(key)) this.#entries.set(key, entry);
      entry = this.#entries.get(key) as Entry<SharedPoller>;
    }
    return this.#lease(key, entry);
  }

  #lease<T>(key: string, entry: Entry<T>): Lease<T> {
    entry.users++;
    let released = false;
    return {
      value: entry.value,
      release: () => {
        if (released) return;
        released = true;
        if (--entry.users > 0 || this.#entries.get(key) !== entry) return;
        this.#entries.delete(key);
        entry.close?.();
      },
    };
  }

  /**
   * Polls a source on its schedule (cron or interval, 60 s when neither is set): one timer per source and
   * schedule, whose every tick polls the source in each agent that has it, under one trigger. Returns the stop.
   */
  schedule(
    source: { name: string; cron?: string | undefined; interval?: number | undefined },
    poll: (trigger: PollTrigger) => void,
  ): () => void {
    // Every setting counts (the schedule and all that makes the source's client): one timer per such source.
    const key = keyOf('schedule', source);
    let clock = this.#clocks.get(key);
    if (!clock) {
      const subscribers = new Set<(trigger: PollTrigger) => void>();
      const tick = () => {
        const trigger: PollTrigger = {};
        for (const subscriber of [...subscribers]) subscriber(trigger);
      };
      let stop: () => void;
      if (source.cron !== undefined) {
        const task = cron.schedule(source.cron, tick, { name: `poll-${source.name}` });
        stop = () => void task.stop();
      } else {
        const timer = setInterval(tick, source.interval ?? 60_000);
        stop = () => clearInterval(timer);
      }
      clock = { subscribers, stop };
      this.#clocks.set(key, clock);
    }
    const own = clock;
    const subscriber = (trigger: PollTrigger) => poll(trigger);
    own.subscribers.add(subscriber);
    return () => {
      own.subscribers.delete(subscriber);
      if (own.subscribers.size === 0 && this.#clocks.get(key) === own) {
        this.#clocks.delete(key);
        own.stop();
      }
    };
  }
}
