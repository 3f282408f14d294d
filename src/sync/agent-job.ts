// One decided sync of the agent (agent-decide.ts decides it, queue.ts runs it): its holds (gates.ts, judged before
// the queue and again as it runs: suspend, promotion, the replica's claim, the rollback fence, the rollout step, the
// deployments it depends on) and what each tells the world (`held`, the one place), the manifests read, then the
// sync itself (sync-deployment.ts), and the `mooring reconcile` requests it answers. Each stage is a named function;
// the job's state (the requests it answers, the commit whose pending status a hold left) is in one place.
import { append } from '../arrays.ts';
import type { Deployment } from '../config/schema.ts';
import { type Logger, Superseded, Withdrawn } from '../contract.ts';
import { classify, errorMessage } from '../errors.ts';
import { deleteCreatedNamespace } from '../kube/namespace.ts';
import type { ManifestFile } from '../render/parse.ts';
import { current, recordedDependencies } from '../report/ledger.ts';
import { filesRevision } from '../sources/local/watch.ts';
import type { JobContext, Planned } from './agent-context.ts';
import { promotionWait } from './agent-promotion.ts';
import { type DeploymentState, isLocal, manifestFiles } from './agent-sources.ts';
import type { ReconcileRequest } from './control.ts';
import { forced, type Hold, judge } from './gates.ts';
import { capitalized, clearHold, endHold, type HoldDeps, heldSync, sayHold, tellHold } from './holds.ts';
import { outcomeOf } from './outcome.ts';
import type { SyncJob, SyncOutcome } from './queue.ts';
import { cappedRetry } from './retry.ts';
import { safely, syncDeployment } from './sync-deployment.ts';

/**
 * A pull request's environment leaving its set: its objects are pruned, then the namespace it created goes, unless
 * another deployment of the cluster deploys there, it is the agent's own, or its last sync kept an object there that
 * an annotation asks to keep (deleting the namespace would delete it). False: not deleted now (tried again).
 */
async function removeNamespace(
  ctx: JobContext,
  spec: Deployment,
  kept: readonly { object: string; markedIn?: string | undefined }[],
  log: Logger,
): Promise<boolean> {
  const { config } = ctx.deps;
  const shared = config.deployments.some(
    (o) => o.name !== spec.name && !o.removing && o.namespace === spec.namespace,
  );
  if (shared || spec.namespace === config.cluster.namespace) {
    log.info({ namespace: spec.namespace }, 'its namespace stays: another deployment deploys there');
    return true;
  }
  const stays = (marked: readonly string[]) =>
    log.info(
      { namespace: spec.namespace, kept: marked },
      `its namespace stays: ${marked.length === 1 ? 'an object in it is' : `${marked.length} objects in it are`} marked to be kept (${marked[0]}${marked.length > 1 ? ', ...' : ''})`,
    );
  const marked = kept.filter((k) => k.markedIn === spec.namespace).map((k) => k.object);
  if (marked.length > 0) {
    stays(marked);
    return true;
  }
  try {
    // Looked through live too: what an earlier sync kept (it left the manifests) is in no inventory any more.
    const done = await deleteCreatedNamespace(ctx.deps.api, spec.namespace, {
      discovery: ctx.deps.discovery,
      fieldManager: config.apply.fieldManager,
    });
    if (done.done === 'kept') stays(done.marked.map((m) => m.object));
    else
      log.info(
        { namespace: spec.namespace },
        done.done === 'deleted'
          ? 'its namespace is deleted'
          : 'its namespace stays: mooring did not create it',
      );
    return true;
  } catch (error) {
    log.error({ namespace: spec.namespace, err: errorMessage(error) }, 'cannot delete its namespace');
    return false;
  }
}

export interface AgentSync extends SyncJob<AgentSync> {
  /** `mooring reconcile` requests this sync answers when it ends: its own and those joined to it. */
  requests: ReconcileRequest[];
  /** False once the sync has answered its requests: a request that comes later runs a sync of its own. */
  open: boolean;
  /**
   * Its gates judged before the queue (gates.ts): `go`, `stop` (held until what it waits for changes: said, not
   * queued), or how long it waits before the queue runs it.
   */
  look(): Promise<'go' | 'stop' | number>;
}

/** The queue's job for one decided sync of `d`; `look` judges its gates before the queue. */
export function agentJob(ctx: JobContext, d: DeploymentState, planned: Planned): AgentSync {
  const { commit, images, request, promotedFrom, log, trigger, decision } = planned;
  const revision = decision.revision;
  const now = decision.action === 'sync' ? decision.release : undefined;
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
   * Held by a dependency or the rollout: said once per reason (ledger and pending status), looked at again after
   * the hold's delay. A rollout step stopped by a failure before it ends the commit's status as failed.
   */
  const waitFor = async (hold: Hold): Promise<SyncOutcome> => {
    await answerAll((r) => ctx.control.answer(r, 'held', hold.message));
    const rollout = hold.gate === 'rollout';
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
    return { result: 'retry', delayMs: hold.againMs, maxDelayMs: 10_000 };
  };

  /**
   * What a hold tells the world, for every gate (gates.ts): the answer to the requests this sync took, the log, the
   * ledger's `waiting`, a pending or ended commit status (holds.ts); and what the queue does with the job.
   */
  const held = async (hold: Hold): Promise<SyncOutcome> => {
    switch (hold.gate) {
      case 'suspended': {
        // d.commit stays where it was deployed: after the resume, the poll compares from there.
        log.debug('suspended: not synced');
        await answerAll((r) => ctx.control.answer(r, 'suspended', `deployment ${d.spec.name} is suspended`));
        const before = ctx.control.heldCommit(d.spec.name);
        const said = ctx.control.held(d.spec.name, commit, current(planned.ledger)?.commit);
        const reporters = ctx.deps.reporters ?? [];
        // The commit held before this one will not be deployed (the resume deploys the newest): its pending ends.
        if (said !== undefined && before !== undefined && commit !== undefined && before !== commit)
          await endHold(
            holds(),
            heldSync(ctx.deps.config, d.spec, before, {
              signal: AbortSignal.abort(new Superseded({ by: 'commit', commit })),
            }),
            'cancelled',
            'superseded by a newer commit while the deployment was suspended',
          );
        if (said !== undefined)
          await tellHold(
            { reporters, log },
            heldSync(ctx.deps.config, d.spec, commit, { images }),
            said,
            'suspended',
          );
        return { result: 'cancelled' };
      }
      case 'promotion': {
        const wait = planned.promotion;
        const at = planned.ledger.releases[0];
        // Already at what it would wait for: nothing to say.
        if (wait && (wait.commit === undefined || at?.commit !== wait.commit || at.result !== 'stable'))
          await promotionWait(ctx, d, wait);
        return { result: 'cancelled' };
      }
      case 'rolling-back':
        // Not d.commit: when the rollback ends, the poll compares from where the deployment was.
        await answerAll((r) => ctx.control.answer(r, 'held', hold.message));
        log.debug(hold.message);
        return { result: 'cancelled' };
      case 'fence':
        await answerAll((r) => ctx.control.answer(r, 'held', hold.message));
        d.commit = commit;
        log.debug('held at a rolled-back release until a new commit or image');
        return { result: 'cancelled' };
      case 'set':
        // Its set's change is being taken: looked at again then (it may be gone by then).
        if (hold.againMs !== undefined) {
          log.debug(hold.message);
          return { result: 'retry', delayMs: hold.againMs, maxDelayMs: hold.againMs };
        }
        // Held by its set's budget: the set logs it once (deployment-sets.ts), the ledger's `waiting` says it (and
        // how to release it) to `mooring status`; no commit status, as the hold may end with the deployment gone.
        await answerAll((r) => ctx.control.answer(r, 'held', hold.message));
        await sayHold(holds(), d, hold.message, commit);
        d.commit = commit;
        log.debug(hold.message);
        return { result: 'cancelled' };
      case 'claim':
        if (hold.done) {
          await answerAll((r) => ctx.control.answer(r, 'stable', hold.message));
          return { result: 'done' };
        }
        log.info(`${hold.message}; tried again`);
        return { result: 'retry', delayMs: hold.againMs, maxDelayMs: hold.maxMs };
      case 'rollout':
      case 'dependency':
        return waitFor(hold);
    }
  };

  /** The manifests at this commit, or the error that fails the commit (a retry for one that may pass). */
  const readFiles = async (
    signal: AbortSignal,
  ): Promise<{ files: ManifestFile[]; filesError?: unknown } | SyncOutcome> => {
    // A sync stopped while it reads (the agent's stop, its lease lost, the deployment removed) gives up the tools and
    // downloads under way, rather than waiting out a render of a minute; a newer commit does not (this one is still
    // read and reported).
    const stopped = new AbortController();
    const stop = () => {
      if (!(signal.reason instanceof Superseded)) stopped.abort(signal.reason);
    };
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
    try {
      // A chart's dependencies fetched again must be what the releases recorded (charts/dependencies.ts).
      const pinned = d.spec.helm
        ? recordedDependencies((await ctx.ledger().read(d.spec.name)).releases)
        : undefined;
      return { files: await manifestFiles(ctx.state, d, commit, images, pinned, stopped.signal) };
    } catch (error) {
      // The agent stopped meanwhile, and gave up the source's requests with it: no failure of the commit (run()
      // ends the sync as cancelled).
      if (signal.aborted && !(signal.reason instanceof Superseded)) return { files: [] };
      log.error({ err: errorMessage(error) }, 'cannot read the manifests');
      // Manifests the user must fix (a chart that does not render, a file that cannot be decrypted) fail the
      // commit like a bad manifest does, with its status; a source that failed for now is retried.
      if (classify(error).action !== 'stop' || trigger === 'drift' || trigger === 'config') {
        const message = `cannot read the manifests: ${errorMessage(error)}`;
        await answerAll((r) => ctx.control.answer(r, 'error', message));
        return cappedRetry(outcomeOf({ outcome: 'error', error } as never), ctx.retryInterval(d));
      }
      return { files: [], filesError: error };
    } finally {
      signal.removeEventListener('abort', stop);
    }
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
      // Its namespace not deleted yet (the server failed): it stays, and the next sync tries again.
      if (
        d.spec.removing &&
        (d.spec.removing !== 'namespace' ||
          (await removeNamespace(ctx, d.spec, report.prune?.kept ?? [], log)))
      )
        ctx.deps.sets?.removed(d.spec.name);
    } else if (d.deployed === undefined && commit) d.attempted = commit;
    await answerAll((r) => ctx.control.finished(r, report, release));
    return cappedRetry(outcomeOf(report), ctx.retryInterval(d));
  };

  const job: AgentSync = {
    revision: decision.action === 'sync' ? decision.key : `${decision.action}|${revision}`,
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
    force: forced(trigger),
    requests: request ? [request] : [],
    open: true,
    join: (other) => {
      if (!job.open && other.requests.length > 0) return false;
      append(job.requests, other.requests.splice(0));
      return true;
    },
    look: async () => {
      const judged = await judge(ctx, d, planned, 'look');
      if ('give' in judged) return 'go';
      // Held until what it waits for changes (a resume, a new commit, the promotion timer): said now, not queued.
      if (judged.hold.againMs === undefined) {
        await held(judged.hold);
        return 'stop';
      }
      // Waits outside the queue's turns; when it runs, the gates say why it still waits (or let it through).
      return judged.hold.againMs;
    },
    run: async (signal, releaseSlot) => {
      // While it runs, a commit that changes none of its files since this one does not replace it (the poll).
      d.syncing = commit;
      /** Gives back what the gates took: the claim, a place in a rollout step. */
      let give: (() => Promise<void>) | undefined;
      try {
        // A retry runs the same job again: it answers the requests that joined it since.
        job.open = true;
        // Removed by a reload while this sync was being decided.
        if (ctx.state.deployments.get(d.spec.name) !== d) {
          await answerAll((r) => ctx.control.answer(r, 'cancelled', 'removed before it ran'));
          return { result: 'cancelled' };
        }
        // The gates again, taking what they hand out: before the manifests are read, so that a held sync is not
        // rendered each time it is looked at.
        const judged = await judge(ctx, d, planned, 'take');
        if ('hold' in judged) {
          // Suspended since it was queued: it ends, cancelled, as a sync that never ran. One whose pending status
          // said it waited for a dependency or the rollout is held instead: its status then says so, and the
          // resume (or a newer commit) ends it.
          if (judged.hold.gate === 'suspended' && waitedOn !== undefined) {
            waitedOn = undefined;
            return await held(judged.hold);
          }
          if (judged.hold.gate === 'suspended') {
            await answerAll((r) => ctx.control.answer(r, 'cancelled', 'suspended before it ran'));
            return { result: 'cancelled' };
          }
          return await held(judged.hold);
        }
        give = judged.give;
        const read = await readFiles(signal);
        if (!('files' in read)) return read;
        // The agent stopped (SIGTERM, the lease lost, the deployment removed) while the sync was read: it ends
        // before its first write and its first status, and the next agent syncs that revision. (A newer commit's
        // abort goes on: the sync says it was superseded.)
        if (signal.aborted && !(signal.reason instanceof Superseded)) {
          const why =
            signal.reason instanceof Withdrawn ? 'removed before it ran' : 'the agent stopped before it ran';
          await answerAll((r) => ctx.control.answer(r, 'cancelled', why));
          return { result: 'cancelled' };
        }
        await clearHold(holds(), d);
        waitedOn = undefined;
        return await sync(read.files, read.filesError, signal, releaseSlot);
      } finally {
        if (give) await safely(log, 'give back what the sync took', give);
        if (d.syncing === commit) d.syncing = undefined;
      }
    },
  };
  return job;
}
