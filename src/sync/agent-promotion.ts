// A promoted deployment (docs/clusters.md): what it deploys is what its upstream has had stable long enough, or
// approved (fleet.ts), never its own tip. Its wait is said once per reason, in the ledger and as a pending status on
// the commit it waits to deploy, and that status ends, superseded, when the upstream moves on first.
import { Superseded } from '../contract.ts';
import { capitalized, type JobContext, nothingApplied } from './agent-job.ts';
import type { DeploymentState } from './agent-sources.ts';
import type { Promotion } from './fleet.ts';
import { safely } from './sync-deployment.ts';

/** What promotion uses of the agent. */
export type PromotionContext = Pick<JobContext, 'deps' | 'control' | 'ledger'>;

/**
 * A promoted deployment deploys what its upstream has had stable long enough (fleet.ts), never its own tip:
 * undefined when it is not promoted, `waiting` when it waits (said by promotionWait), else what it deploys.
 */
export async function promotedInput(
  ctx: PromotionContext,
  d: DeploymentState,
): Promise<undefined | 'waiting' | Extract<Promotion, { state: 'ready' }>> {
  if (!d.spec.promote || !ctx.deps.fleet) return undefined;
  const promotion = await ctx.deps.fleet.promotion(d.spec, ctx.control.approval(d.spec.name));
  if (promotion.state === 'waiting') {
    const at = (await ctx.ledger().read(d.spec.name)).releases[0];
    // Already at what it would wait for: nothing to say.
    if (promotion.commit === undefined || at?.commit !== promotion.commit || at.result !== 'stable')
      await promotionWait(ctx, d, promotion);
    return 'waiting';
  }
  const commit = promotion.commit;
  // Its pending status is ended by the sync of that commit; one of an older commit ends now.
  if (commit !== undefined) await passOver(ctx, d, commit);
  if (d.promotionPending === commit) d.promotionPending = undefined;
  if (d.waiting !== undefined) {
    d.waiting = undefined;
    await safely(ctx.deps.log, 'clear the wait', () => ctx.ledger().setWaiting(d.spec.name, undefined));
  }
  return promotion;
}

/**
 * A promoted deployment waits (for its upstream to be stable long enough, or for an approval): said once per
 * reason, in the ledger (where `mooring promote` finds what to approve) and as a pending status on the commit.
 */
export async function promotionWait(
  ctx: PromotionContext,
  d: DeploymentState,
  wait: Extract<Promotion, { state: 'waiting' }>,
): Promise<void> {
  if (wait.commit !== undefined) await passOver(ctx, d, wait.commit);
  if (d.waiting === wait.message) return;
  d.waiting = wait.message;
  const log = ctx.deps.log.child({ deployment: d.spec.name, revision: wait.commit?.slice(0, 12) });
  log.info({ from: d.spec.promote?.from }, wait.message);
  await safely(log, 'record the wait', () =>
    ctx.ledger().setWaiting(d.spec.name, {
      message: wait.message,
      commit: wait.commit,
      since: new Date().toISOString(),
    }),
  );
  if (wait.commit === undefined || wait.commit === d.commit) return;
  const request = {
    config: ctx.deps.config,
    deployment: d.spec,
    commit: wait.commit,
    files: [],
    images: {},
    revision: wait.commit,
    trigger: 'commit' as const,
  };
  d.promotionPending = wait.commit;
  for (const r of ctx.deps.reporters ?? [])
    await safely(log, 'report the wait', () => r.waiting?.(request, capitalized(wait.message)));
}

/**
 * The upstream moved to `next` before the commit a promoted deployment waited on was promoted: that commit's
 * pending status ends, superseded, so that every status gets its end.
 */
export async function passOver(ctx: PromotionContext, d: DeploymentState, next: string): Promise<void> {
  const pending = d.promotionPending;
  if (pending === undefined || pending === next) return;
  d.promotionPending = undefined;
  const request = {
    config: ctx.deps.config,
    deployment: d.spec,
    commit: pending,
    files: [],
    images: {},
    revision: pending,
    trigger: 'commit' as const,
    signal: AbortSignal.abort(new Superseded({ by: 'commit', commit: next })),
  };
  const report = nothingApplied(
    'cancelled',
    'passed over by a newer revision of its upstream before it was promoted',
  );
  for (const r of ctx.deps.reporters ?? [])
    await safely(ctx.deps.log, 'end the wait', () => r.finished?.(request, report, undefined));
}
