// A promoted deployment (docs/clusters.md): what it deploys is what its upstream has had stable long enough, or
// approved (fleet.ts), never its own tip. Its wait is said once per reason, in the ledger and as a pending status on
// the commit it waits to deploy, and that status ends, superseded, when the upstream moves on first.
import { type Logger, Superseded } from '../contract.ts';
import type { JobContext } from './agent-context.ts';
import type { DeploymentState } from './agent-sources.ts';
import type { Promotion } from './fleet.ts';
import { clearHold, endHold, type HoldDeps, heldSync, sayHold } from './holds.ts';

/** What promotion uses of the agent. */
export type PromotionContext = Pick<JobContext, 'deps' | 'control' | 'ledger'>;

/**
 * A promoted deployment deploys what its upstream has had stable long enough (fleet.ts), never its own tip:
 * undefined when it is not promoted, what it waits for when it waits (a hold: gates.ts, said by promotionWait),
 * else what it deploys.
 */
export async function promotedInput(
  ctx: PromotionContext,
  d: DeploymentState,
): Promise<Promotion | undefined> {
  if (!d.spec.promote || !ctx.deps.fleet) return undefined;
  const promotion = await ctx.deps.fleet.promotion(d.spec, ctx.control.approval(d.spec.name));
  if (promotion.state === 'waiting') return promotion;
  const commit = promotion.commit;
  // Its pending status is ended by the sync of that commit; one of an older commit ends now.
  if (commit !== undefined) await passOver(ctx, d, commit);
  if (d.promotionPending === commit) d.promotionPending = undefined;
  await clearHold(holdDeps(ctx, ctx.deps.log), d);
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
  const log = ctx.deps.log.child({ deployment: d.spec.name, revision: wait.commit?.slice(0, 12) });
  // A pending status on the commit it waits to deploy, unless it is already there.
  const pending = wait.commit !== undefined && wait.commit !== d.commit ? wait.commit : undefined;
  const sync =
    pending === undefined
      ? undefined
      : { request: heldSync(ctx.deps.config, d.spec, pending), reason: 'promotion' as const };
  if (d.waiting === wait.message) return;
  log.info({ from: d.spec.promote?.from }, wait.message);
  if (pending !== undefined) d.promotionPending = pending;
  await sayHold(holdDeps(ctx, log), d, wait.message, wait.commit, sync);
}

/**
 * The upstream moved to `next` before the commit a promoted deployment waited on was promoted: that commit's
 * pending status ends, superseded, so that every status gets its end.
 */
export async function passOver(ctx: PromotionContext, d: DeploymentState, next: string): Promise<void> {
  const pending = d.promotionPending;
  if (pending === undefined || pending === next) return;
  d.promotionPending = undefined;
  await endHold(
    holdDeps(ctx, ctx.deps.log),
    heldSync(ctx.deps.config, d.spec, pending, {
      signal: AbortSignal.abort(new Superseded({ by: 'commit', commit: next })),
    }),
    'cancelled',
    'passed over by a newer revision of its upstream before it was promoted',
  );
}

function holdDeps(ctx: PromotionContext, log: Logger): HoldDeps {
  return { ledger: ctx.ledger(), reporters: ctx.deps.reporters ?? [], log };
}
