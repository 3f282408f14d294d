// The holds of a sync, as data. Each gate looks at a deployment and the sync planned for it and answers the Hold
// that stops it, or lets it through; `judge` goes through GATES in order, one loop. It runs before the queue (agent.ts:
// a held deployment is not queued, or waits outside the queue's ready list until the hold's delay has passed) and
// again as the queue runs the job (agent-job.ts), where a gate takes what it hands out (the replica's claim, a place
// in a rollout step, the lifting of a rollback fence) and sees what changed since. What a hold tells the world
// (the ledger's `waiting`, pending commit statuses, Events, answers to `mooring reconcile`) is said in one place,
// the job's `held`, through holds.ts. A new hold (a maintenance window, an analysis gate) is a row of GATES.
import { errorMessage } from '../errors.ts';
import { ROLLBACK_HOLD_MARGIN_MS } from '../kube/control-map.ts';
import type { LedgerData } from '../report/ledger.ts';
import type { JobContext, Planned } from './agent-context.ts';
import type { DeploymentState } from './agent-sources.ts';
import { runsHere, unfinishedAttempt } from './attempts.ts';
import { endInterrupted } from './sync-deployment.ts';

/** The gates, by name: what a hold's report (holds.ts) and its log line call it. */
export type GateName =
  | 'suspended'
  | 'rolling-back'
  | 'set'
  | 'promotion'
  | 'fence'
  | 'claim'
  | 'rollout'
  | 'dependency';

/** What stops a sync now. */
export interface Hold {
  gate: GateName;
  message: string;
  /** Stopped by a failure (a dependency's, a rollout step's) rather than waiting for something under way. */
  failed: boolean;
  /**
   * Looked at again after this long (the queue's retry, capped at `maxMs`). Undefined: the deployment is not queued
   * at all; what ends the hold decides it again (a resume, a new commit or image, the promotion timer, an approval).
   */
  againMs: number | undefined;
  maxMs?: number;
  /** Nothing to sync: another replica synced this very revision. */
  done?: boolean;
}

/** `look`: judged before the queue, nothing taken. `take`: judged as the queue runs the job, places taken. */
export type GateMode = 'look' | 'take';

/** A gate that let the sync through, with what to give back when the sync ends (a place it took). */
export interface Passed {
  give: () => void | Promise<void>;
}

export interface Gate {
  name: GateName;
  /** Whether a drift pass meets it: a pass only restores what runs, so it waits for no dependency or step. */
  drift: boolean;
  judge(
    ctx: JobContext,
    d: DeploymentState,
    planned: Planned,
    mode: GateMode,
  ): Promise<Hold | Passed | undefined>;
}

function hold(gate: GateName, message: string, againMs: number | undefined, failed = false): Hold {
  return { gate, message, failed, againMs };
}

/** `mooring suspend`: nothing is synced, not even a drift correction or a requested sync, until `resume`. */
const suspended: Gate = {
  name: 'suspended',
  drift: true,
  judge: async (ctx, d) =>
    ctx.control.suspended(d.spec.name)
      ? hold('suspended', `suspended: not deployed until mooring resume ${d.spec.name}`, undefined)
      : undefined,
};

/**
 * `mooring rollback` under way from the CLI: nothing is synced until it ends (its fence then holds the deployment)
 * or its time has passed; the end of the rollback decides the deployment again (control.ts).
 */
const rollingBack: Gate = {
  name: 'rolling-back',
  drift: true,
  judge: async (ctx, d) => {
    // At most as long as the CLI asks for: the deployment's stability timeout and the margin.
    const rollback = ctx.control.rollingBack(d.spec.name, d.spec.stability.timeout + ROLLBACK_HOLD_MARGIN_MS);
    return rollback
      ? hold('rolling-back', `held while ${rollback.by} rolls it back (since ${rollback.since})`, undefined)
      : undefined;
  },
};

/**
 * Its deployment set (docs/deployment-sets.md) read a change of its folders, files or pull requests that the agents
 * have not taken yet: looked at again shortly, as the change may remove it (a commit that deletes a folder does not
 * fail the folder's deployment). Or the set is held by its removal budget and the change would remove it: it stays
 * at its last release, not synced, until the budget is raised or its folder comes back.
 */
const setHold: Gate = {
  name: 'set',
  drift: true,
  judge: async (ctx, d) => {
    const why = ctx.deps.sets?.holding?.(d.spec.name, d.spec.set);
    return why === undefined ? undefined : hold('set', why.message, why.waitMs);
  },
};

/** A promoted deployment deploys what its upstream has had stable long enough, or approved (fleet.ts). */
const promotion: Gate = {
  name: 'promotion',
  drift: true,
  judge: async (_ctx, _d, planned) =>
    planned.promotion ? hold('promotion', planned.promotion.message, undefined) : undefined,
};

/**
 * Another live replica syncs the deployment (replicas sharing the work): looked at again soon. Taken, the claim
 * says whether the release this sync would make is there already (another replica synced this revision).
 */
const claim: Gate = {
  name: 'claim',
  drift: true,
  judge: async (ctx, d, planned, mode) => {
    const shard = ctx.deps.shard;
    if (!shard) return undefined;
    if (mode === 'look') {
      const holder = otherHolder(planned.ledger, shard);
      return holder ? claimHold(`replica ${holder} syncs it`) : undefined;
    }
    const name = d.spec.name;
    const ledger = ctx.ledger();
    // A holder missing from the list of live members is asked of its own Lease before its claim is taken: the
    // list lags a replica that joined since. One the ledger names only now counts as live until looked at again.
    const seen = planned.ledger.holder?.identity;
    const gone =
      seen !== undefined && seen !== shard.identity && !shard.live(seen) && (await shard.gone(seen))
        ? seen
        : undefined;
    let taken: Awaited<ReturnType<typeof ledger.claim>>;
    try {
      taken = await ledger.claim(name, shard.identity, (id) => shard.live(id) || id !== gone);
    } catch (error) {
      return claimHold(`cannot take it: ${errorMessage(error)}`);
    }
    if (!taken.taken) return claimHold(`replica ${taken.holder.identity} syncs it`);
    const give = () => ledger.unclaim(name, shard.identity);
    // Taken from a replica whose Lease expired in the middle of a sync: that sync gets its end here (the one place
    // that knows its holder is gone), and this revision is synced whatever the releases say.
    const attempt = taken.from
      ? await unfinishedAttempt(ctx.deps.api, ctx.deps.config.cluster.namespace, name, taken.data).catch(
          () => undefined,
        )
      : undefined;
    // A sync this process still runs (it handed the deployment over and takes it back) is not interrupted.
    const interrupted = attempt && !runsHere(attempt) ? attempt : undefined;
    if (interrupted) {
      planned.log.warn({ holder: taken.from?.identity }, 'taken from a replica whose Lease expired mid-sync');
      await endInterrupted(ctx.syncDeps(), ctx.deps.config, d.spec, interrupted);
    }
    const newest = taken.data.releases[0];
    const revision = planned.decision.revision;
    if (
      !interrupted &&
      !forced(planned.trigger) &&
      newest?.result === 'stable' &&
      newest.revision === revision
    ) {
      await give();
      d.deployed = revision;
      return { ...hold('claim', 'synced at this revision by another replica', undefined), done: true };
    }
    return { give };
  },
};

/** Asked for (a reconcile request, a drift correction, a changed spec): synced even at a revision that ended. */
export function forced(trigger: Planned['trigger']): boolean {
  return trigger === 'manual' || trigger === 'drift' || trigger === 'config';
}

function claimHold(why: string): Hold {
  return { ...hold('claim', `not synced now: ${why}`, 2_000), maxMs: 5_000 };
}

/** Another live replica that holds the deployment's claim (replicas sharing the work), if one does. */
export function otherHolder(
  data: LedgerData,
  shard: { identity: string; live: (identity: string) => boolean },
): string | undefined {
  const holder = data.holder?.identity;
  return holder !== undefined && holder !== shard.identity && shard.live(holder) ? holder : undefined;
}

/**
 * A rollback's fence holds the deployment at the rolled-back release until a new commit or image (or `mooring
 * resume`); a sync of a revision that moved past it lifts it, once it has the claim.
 */
const fence: Gate = {
  name: 'fence',
  drift: true,
  judge: async (ctx, d, planned, mode) => {
    const decision = planned.decision;
    if (decision.action === 'held')
      return hold(
        'fence',
        `held at release ${decision.fence.release} by a rollback; mooring resume ${d.spec.name} lifts it`,
        undefined,
      );
    if (mode === 'take' && decision.action === 'sync' && decision.fence) {
      planned.log.info({ release: decision.fence.release }, 'a new commit or image lifts the rollback fence');
      await ctx.ledger().setFence(d.spec.name, undefined, decision.fence.release);
    }
    return undefined;
  },
};

/** A rollout step starts once the step before is stable at this revision (fleet.ts); taken, it holds a place. */
const rolloutStep: Gate = {
  name: 'rollout',
  drift: false,
  judge: async (ctx, d, planned, mode) => {
    const fleet = ctx.deps.fleet;
    if (!d.spec.rollout || !fleet) return undefined;
    const revision = planned.decision.revision;
    const entered = await fleet.enter(ctx.deps.config.cluster.name, d.spec, revision, mode === 'take');
    if ('hold' in entered)
      return hold('rollout', entered.hold.message, entered.hold.failed ? 10_000 : 2_000, entered.hold.failed);
    return { give: entered.release };
  },
};

/**
 * dependsOn: the deployments this one needs are stable first, at their newest release. A dependency is waited for
 * while it syncs, and while the poll round that planned this sync has not yet decided it (a commit that changes
 * both queues the dependency in that round).
 */
const dependencies: Gate = {
  name: 'dependency',
  drift: false,
  judge: async (ctx, d, planned) => {
    for (const name of d.spec.dependsOn) {
      if (!ctx.state.deployments.has(name)) continue;
      if (ctx.busy(name, planned.rounds.get(name) ?? 0))
        return hold('dependency', `waiting for ${name}`, 2_000);
      const last = (await ctx.ledger().read(name)).releases[0];
      if (!last) return hold('dependency', `waiting for ${name}: it has no release yet`, 2_000);
      if (last.result !== 'stable') {
        const why = last.messages[0] ? `: ${last.messages[0]}` : '';
        return hold(
          'dependency',
          `held: dependency ${name} ${last.result} (release ${last.id})${why}`,
          10_000,
          true,
        );
      }
    }
    return undefined;
  },
};

/** The holds of a sync, in the order they are met. */
export const GATES: readonly Gate[] = [
  suspended,
  rollingBack,
  setHold,
  promotion,
  claim,
  fence,
  rolloutStep,
  dependencies,
];

/**
 * The first hold `planned` meets, or (passed every gate) what to give back when the sync ends. Judged in `take`
 * mode, a hold gives back at once what the gates before it took.
 */
export async function judge(
  ctx: JobContext,
  d: DeploymentState,
  planned: Planned,
  mode: GateMode,
  gates: readonly Gate[] = GATES,
): Promise<{ hold: Hold } | { give: () => Promise<void> }> {
  const taken: Passed[] = [];
  /** Gives back every place taken, the last first; the first failure is thrown once all are given back. */
  const give = async () => {
    let failure: { error: unknown } | undefined;
    for (const p of taken.splice(0).reverse())
      try {
        await p.give();
      } catch (error) {
        failure ??= { error };
      }
    if (failure) throw failure.error;
  };
  for (const gate of gates) {
    if (planned.trigger === 'drift' && !gate.drift) continue;
    let met: Hold | Passed | undefined;
    try {
      met = await gate.judge(ctx, d, planned, mode);
    } catch (error) {
      await give();
      throw error;
    }
    if (met && 'gate' in met) {
      await give();
      return { hold: met };
    }
    if (met) taken.push(met);
  }
  return { give };
}
