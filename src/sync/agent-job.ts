// One decided sync of the agent, as the queue runs it (agent.ts decides it, queue.ts runs it): the replica's claim,
// the holds met before anything is read or written (the rollout step, the deployments it depends on), the manifests
// read, then the sync itself (sync-deployment.ts), and the `mooring reconcile` requests it answers. Each stage is a
// named function; the job's state (the requests it answers, the commit whose pending status a hold left) is in one
// place.
import { append } from '../arrays.ts';
import type { Logger } from '../contract.ts';
import { classify, errorMessage } from '../errors.ts';
import type { ManifestFile } from '../render/parse.ts';
import { type Ledger, recordedDependencies } from '../report/ledger.ts';
import { filesRevision } from '../sources/local/watch.ts';
import type { AgentDeps } from './agent.ts';
import { type DeploymentState, isLocal, manifestFiles, type SourceState } from './agent-sources.ts';
import type { Control, ReconcileRequest } from './control.ts';
import type { PromotedFrom } from './fleet.ts';
import { capitalized, clearHold, endHold, type HoldDeps, heldSync, sayHold } from './holds.ts';
import { outcomeOf } from './outcome.ts';
import type { SyncJob, SyncOutcome } from './queue.ts';
import type { Decision } from './reconcile.ts';
import { cappedRetry } from './retry.ts';
import { type SyncDeps, safely, syncDeployment } from './sync-deployment.ts';

export interface AgentSync extends SyncJob<AgentSync> {
  /** `mooring reconcile` requests this sync answers when it ends: its own and those joined to it. */
  requests: ReconcileRequest[];
  /** False once the sync has answered its requests: a request that comes later runs a sync of its own. */
  open: boolean;
}

/** A hold met before anything is written: said once (ledger and pending status), looked at again soon. */
export interface Hold {
  message: string;
  /** Stopped by a failure (a dependency's, a rollout step's) rather than waiting for something under way. */
  failed: boolean;
}

/** What the agent lends a job: its dependencies, and the state and steps that stay the agent's. */
export interface JobContext {
  deps: AgentDeps;
  state: SourceState;
  control: Control;
  /** The agent's ledger now (a reload may replace it). */
  ledger(): Ledger;
  /** The poll round of the source of deployment `name` under way or last started (SourcePolls.started). */
  pollRound(name: string): number;
  /** Whether the deployment `name` is being synced now, or its source's poll round `round` has not ended. */
  busy(name: string, round: number): boolean;
  retryInterval(d: DeploymentState): number;
  syncDeps(): SyncDeps;
}

/** What the decision (agent.ts) hands the job. */
export interface Planned {
  decision: Extract<Decision, { action: 'sync' }>;
  commit: string | undefined;
  images: Parameters<typeof manifestFiles>[3];
  /** The `mooring reconcile` request this sync took, if any. */
  request: ReconcileRequest | undefined;
  /** How many changes of a local folder it follows (undefined for other sources). */
  change: number | undefined;
  promotedFrom: PromotedFrom | undefined;
  log: Logger;
}

/**
 * Takes the deployment for this replica (replicas sharing the work). Refused while another live replica syncs it:
 * the sync is tried again soon. Taken, it says whether the release this sync would make is already there (another
 * replica synced this revision), so that each revision is synced once.
 */
async function take(
  ctx: JobContext,
  d: DeploymentState,
  revision: string,
  force: boolean,
): Promise<'taken' | 'done' | { holder: string }> {
  const shard = ctx.deps.shard;
  if (!shard) return 'taken';
  const ledger = ctx.ledger();
  const claim = await ledger.claim(d.spec.name, shard.identity, shard.live);
  if (!claim.taken) return { holder: claim.holder.identity };
  const newest = claim.data.releases[0];
  if (!force && newest?.result === 'stable' && newest.revision === revision) {
    await ledger.unclaim(d.spec.name, shard.identity);
    d.deployed = revision;
    return 'done';
  }
  return 'taken';
}

/**
 * A hold a sync meets after its claim and before it writes anything: a hold, or (passed) what to give back when
 * the sync ends. A drift pass meets none: it only restores what runs.
 */
type Gate = (
  ctx: JobContext,
  d: DeploymentState,
  revision: string,
  /** The poll round of each dependency's source when the job was planned (JobContext.pollRound). */
  rounds: ReadonlyMap<string, number>,
) => Promise<{ hold: Hold; rollout: boolean } | { leave?: (() => void) | undefined } | undefined>;

/** A rollout step starts once the step before is stable at this revision (fleet.ts). */
const rolloutStep: Gate = async (ctx, d, revision) => {
  const fleet = ctx.deps.fleet;
  if (!d.spec.rollout || !fleet) return undefined;
  const entered = await fleet.enter(ctx.deps.config.cluster.name, d.spec, revision);
  return 'hold' in entered ? { hold: entered.hold, rollout: true } : { leave: entered.release };
};

/**
 * dependsOn: the deployments this one needs are stable first, at their newest release. A dependency is waited for
 * while it syncs, and while the poll round that planned this job has not yet decided it (a commit that changes
 * both queues the dependency in that round).
 */
const dependencies: Gate = async (ctx, d, _revision, rounds) => {
  for (const name of d.spec.dependsOn) {
    if (!ctx.state.deployments.has(name)) continue;
    if (ctx.busy(name, rounds.get(name) ?? 0))
      return { hold: { message: `waiting for ${name}`, failed: false }, rollout: false };
    const last = (await ctx.ledger().read(name)).releases[0];
    if (!last)
      return {
        hold: { message: `waiting for ${name}: it has no release yet`, failed: false },
        rollout: false,
      };
    if (last.result !== 'stable') {
      const why = last.messages[0] ? `: ${last.messages[0]}` : '';
      const message = `held: dependency ${name} ${last.result} (release ${last.id})${why}`;
      return { hold: { message, failed: true }, rollout: false };
    }
  }
  return undefined;
};

/** The holds of a sync, in the order they are met: a new one (a maintenance window, an analysis gate) goes here. */
const GATES: readonly Gate[] = [rolloutStep, dependencies];

/** The queue's job for one decided sync of `d`. */
export function agentJob(ctx: JobContext, d: DeploymentState, planned: Planned): AgentSync {
  const { commit, images, request, promotedFrom, log } = planned;
  const { revision, trigger, key, release: now, fence } = planned.decision;
  // The poll rounds under way as the job is planned: a dependency is waited for until those have decided it.
  const rounds = new Map(d.spec.dependsOn.map((name) => [name, ctx.pollRound(name)]));
  /** The commit whose pending status says it waits for a hold (ended if the job is dropped). */
  let waitedOn: string | undefined;
  const statusRequest = (signal?: AbortSignal) =>
    heldSync(ctx.deps.config, d.spec, commit, { images, revision, trigger, signal });
  const holds = (): HoldDeps => ({ ledger: ctx.ledger(), reporters: ctx.deps.reporters ?? [], log });

  /** Answers every request this sync took (its own and those joined to it), once. */
  const answerAll = async (answer: (r: ReconcileRequest) => Promise<void>) => {
    job.open = false;
    for (let r = job.requests.shift(); r; r = job.requests.shift()) await answer(r);
  };

  /**
   * Held by a dependency or the rollout: said once per reason (ledger and pending status), looked at again soon. A
   * rollout step stopped by a failure before it ends the commit's status as failed.
   */
  const holdFor = async (hold: Hold, rollout: boolean): Promise<SyncOutcome> => {
    await answerAll((r) => ctx.control.answer(r, 'held', hold.message));
    // A rollout step stopped by a failure fails the commit: its status ends rather than waits.
    const fails = rollout && hold.failed;
    const reason = rollout ? 'rollout' : 'dependency';
    if (
      await sayHold(
        holds(),
        d,
        hold.message,
        commit,
        fails ? undefined : { request: statusRequest(), reason },
      )
    ) {
      log.info({ dependsOn: d.spec.dependsOn, rollout }, hold.message);
      if (fails) await endHold(holds(), statusRequest(), 'failed', capitalized(hold.message));
      waitedOn = fails ? undefined : commit;
    }
    // Looked at again soon: when the dependency's sync ends, or (failed) when a new commit fixes it.
    return { result: 'retry', delayMs: hold.failed ? 10_000 : 2_000, maxDelayMs: 10_000 };
  };

  /** The manifests at this commit, or the error that fails the commit (a retry for one that may pass). */
  const readFiles = async (): Promise<{ files: ManifestFile[]; filesError?: unknown } | SyncOutcome> => {
    try {
      // A chart's dependencies fetched again must be what the releases recorded (charts/dependencies.ts).
      const pinned = d.spec.helm
        ? recordedDependencies((await ctx.ledger().read(d.spec.name)).releases)
        : undefined;
      return { files: await manifestFiles(ctx.state, d, commit, images, pinned) };
    } catch (error) {
      log.error({ err: errorMessage(error) }, 'cannot read the manifests');
      // Manifests the user must fix (a chart that does not render, a file that cannot be decrypted) fail the
      // commit like a bad manifest does, with its status; a source that failed for now is retried.
      if (classify(error).action !== 'stop' || trigger === 'drift' || trigger === 'config') {
        const message = `cannot read the manifests: ${errorMessage(error)}`;
        await answerAll((r) => ctx.control.answer(r, 'error', message));
        return cappedRetry(outcomeOf({ outcome: 'error', error } as never), ctx.retryInterval(d));
      }
      return { files: [], filesError: error };
    }
  };

  /** This replica's claim of the deployment: the outcome when the sync is not this replica's to run now. */
  const claim = async (): Promise<SyncOutcome | undefined> => {
    const taken = await take(ctx, d, revision, job.force === true).catch((error: unknown) => error);
    if (taken === 'done') {
      await answerAll((r) => ctx.control.answer(r, 'stable', 'synced at this revision by another replica'));
      return { result: 'done' };
    }
    if (taken === 'taken') return undefined;
    const holder = (taken as { holder?: string }).holder;
    const why = holder ? `replica ${holder} syncs it` : `cannot take it: ${errorMessage(taken)}`;
    log.info({ holder }, `not synced now: ${why}; tried again`);
    return { result: 'retry', delayMs: 2_000, maxDelayMs: 5_000 };
  };

  /** The sync itself, once nothing holds it: its report answers the requests. */
  const sync = async (
    files: ManifestFile[],
    filesError: unknown,
    signal: AbortSignal,
    releaseSlot: () => void,
  ): Promise<SyncOutcome> => {
    const local = isLocal(ctx.state, d) ? `${filesRevision(files)}|${revision}` : revision;
    if (
      isLocal(ctx.state, d) &&
      trigger !== 'drift' &&
      trigger !== 'config' &&
      job.requests.length === 0 &&
      local === now?.revision
    )
      return { result: 'done' };
    const { report, release } = await syncDeployment(ctx.syncDeps(), {
      config: ctx.deps.config,
      deployment: d.spec,
      commit,
      files,
      images,
      revision: local,
      trigger,
      signal,
      filesError,
      release: releaseSlot,
      promotedFrom,
    });
    if (report.outcome === 'stable') {
      d.commit = commit;
      d.deployed = local;
      d.sameAs = undefined;
      d.attempted = undefined;
    } else if (d.deployed === undefined && commit) d.attempted = commit;
    await answerAll((r) => ctx.control.finished(r, report, release));
    return cappedRetry(outcomeOf(report), ctx.retryInterval(d));
  };

  const job: AgentSync = {
    revision: key,
    // Replaced (by a newer revision) or dropped (removed, the agent stopping) while it waited: its status ends.
    dropped: async (reason) => {
      if (waitedOn === undefined) return;
      waitedOn = undefined;
      await endHold(
        holds(),
        statusRequest(AbortSignal.abort(reason)),
        'cancelled',
        'cancelled while waiting for its dependencies',
      );
    },
    target: { commit, images, spec: d.generation ?? 0, trigger, change: planned.change },
    // Fair queueing: the syncs one poll (or one drift pass) asks for take turns with those of another.
    group: `${trigger}:${commit ?? ''}`,
    // Asked for (a reconcile request, a drift correction, a changed spec): synced even at a revision that ended.
    force: trigger === 'manual' || trigger === 'drift' || trigger === 'config',
    requests: request ? [request] : [],
    open: true,
    join: (other) => {
      if (!job.open && other.requests.length > 0) return false;
      append(job.requests, other.requests.splice(0));
      return true;
    },
    run: async (signal, releaseSlot) => {
      // While it runs, a commit that changes none of its files since this one does not replace it (the poll).
      d.syncing = commit;
      let claimed = false;
      /** Gives back the place this sync holds in its rollout step. */
      let leave: (() => void) | undefined;
      try {
        // A retry runs the same job again: it answers the requests that joined it since.
        job.open = true;
        // Removed by a reload while this sync was being decided, or suspended since (a retry, a queued sync).
        if (ctx.state.deployments.get(d.spec.name) !== d || ctx.control.suspended(d.spec.name)) {
          await answerAll((r) => ctx.control.answer(r, 'cancelled', 'suspended or removed before it ran'));
          return { result: 'cancelled' };
        }
        const notOurs = await claim();
        if (notOurs) return notOurs;
        claimed = true;
        if (fence) {
          log.info({ release: fence.release }, 'a new commit or image lifts the rollback fence');
          await ctx.ledger().setFence(d.spec.name, undefined);
        }
        // The holds (GATES), unless a drift pass: it only restores what runs. Met before the manifests are read: a
        // held sync is looked at again every few seconds, and a chart is not rendered each time.
        for (const gate of trigger === 'drift' ? [] : GATES) {
          const met = await gate(ctx, d, revision, rounds);
          if (met && 'hold' in met) return await holdFor(met.hold, met.rollout);
          if (met?.leave) {
            const before = leave;
            const also = met.leave;
            leave = () => {
              before?.();
              also();
            };
          }
        }
        const read = await readFiles();
        if (!('files' in read)) return read;
        await clearHold(holds(), d);
        waitedOn = undefined;
        return await sync(read.files, read.filesError, signal, releaseSlot);
      } finally {
        leave?.();
        if (d.syncing === commit) d.syncing = undefined;
        const shard = ctx.deps.shard;
        if (claimed && shard)
          await safely(log, 'give the deployment back', () =>
            ctx.ledger().unclaim(d.spec.name, shard.identity),
          );
      }
    },
  };
  return job;
}
