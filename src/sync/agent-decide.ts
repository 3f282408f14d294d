// Whether a deployment needs a sync, decided before the queue (agent.ts): what a promoted deployment deploys
// (agent-promotion.ts), the quiet check (found current at this very input, its ledger not written since), then
// reconcile.ts's decision on the ledger: suspended, held by a rollback's fence, current, or a sync to plan.
import { current, ledgerName } from '../report/ledger.ts';
import type { JobContext, Planned } from './agent-job.ts';
import { promotedInput } from './agent-promotion.ts';
import { type DeploymentState, digestsOf, imagesOf, isLocal, isOci, quietInput } from './agent-sources.ts';
import { CONFIGMAPS } from './control.ts';
import type { PromotedFrom } from './fleet.ts';
import { heldSync, tellHold } from './holds.ts';
import { reconcile } from './reconcile.ts';

/** What the decision uses of the agent: the jobs' context, and the deployments a reload changed. */
export interface DecideContext extends JobContext {
  /** Deployments whose spec a reload changed: synced again once, even at the same revision. */
  resync: Set<string>;
}

/** The sync `d` needs at `commit`, or undefined when it needs none now (said and recorded where it must be). */
export async function decide(
  ctx: DecideContext,
  d: DeploymentState,
  commit: string | undefined,
  reason: 'drift' | undefined,
): Promise<Planned | undefined> {
  const promotion = await promotedInput(ctx, d);
  if (promotion === 'waiting') return undefined;
  const promotedFrom: PromotedFrom | undefined = promotion?.from;
  if (promotion) commit = promotion.commit;
  const images = promotion ? promotion.images : imagesOf(ctx.state, d);
  const digests = promotion
    ? Object.fromEntries(Object.entries(images).map(([k, v]) => [k, v.digest]))
    : digestsOf(ctx.state, d);
  // Found current at this very input before, and its ledger not written since (the watch of the agent's
  // ConfigMaps says): nothing to decide, no ledger to read. A request, a reload, a drift pass decide anew.
  const quietAt = quietInput(ctx.state, d, commit);
  const ledgerVersion = ctx.deps.cache?.resourceVersion(
    CONFIGMAPS,
    ctx.deps.config.cluster.namespace,
    ledgerName(d.spec.name),
  );
  const quiet = d.quiet;
  d.quiet = undefined;
  if (
    reason === undefined &&
    commit !== undefined &&
    promotedFrom === undefined &&
    !isLocal(ctx.state, d) &&
    !ctx.control.pending(d.spec.name) &&
    !ctx.resync.has(d.spec.name) &&
    ledgerVersion !== undefined &&
    quiet?.input === quietAt &&
    quiet.ledger === ledgerVersion
  ) {
    d.quiet = quiet;
    return;
  }
  // An OCI artifact's deployment has no commit: its revision is the artifact's digest.
  const artifact = isOci(ctx.state, d) ? images[d.spec.source]?.digest.slice(7, 19) : undefined;
  const log = ctx.deps.log.child({
    deployment: d.spec.name,
    revision: commit?.slice(0, 12) ?? artifact ?? 'local',
  });
  const data = await ctx.ledger().read(d.spec.name);
  // A `mooring reconcile` that waits is answered by this sync, which then syncs even a current deployment.
  const request = reason === 'drift' ? undefined : ctx.control.take(d.spec.name);
  const input = {
    ledger: data,
    commit,
    digests,
    reason: request ? ('manual' as const) : reason,
    suspended: ctx.control.suspended(d.spec.name) !== undefined,
    local: isLocal(ctx.state, d),
    sameAs: d.sameAs,
    spec: d.generation ?? 0,
    change: isLocal(ctx.state, d) ? (d.changes ?? 0) : undefined,
  };
  let decision = reconcile(input);
  // A spec changed by a reload is applied even at the same revision, as a drift pass applies it: only what
  // renders differently is written, and nothing is recorded when nothing is.
  if (ctx.resync.delete(d.spec.name) && !input.reason && (decision.action === 'current' || input.local))
    decision = reconcile({ ...input, reason: 'config' });
  // A rollback's hold, for the alert on deployments held too long (charts/mooring: prometheusRule).
  ctx.deps.metrics?.held(d.spec.name, decision.action === 'held' ? decision.fence.since : undefined);
  if (decision.action === 'suspended') {
    // d.commit stays where it was deployed: after the resume, the poll compares from there.
    log.debug('suspended: not synced');
    if (request) await ctx.control.answer(request, 'suspended', `deployment ${d.spec.name} is suspended`);
    const held = ctx.control.held(d.spec.name, commit, current(data)?.commit);
    if (held !== undefined)
      await tellHold(
        { reporters: ctx.deps.reporters ?? [], log },
        heldSync(ctx.deps.config, d.spec, commit, { images: imagesOf(ctx.state, d) }),
        held,
        'suspended',
      );
    return;
  }
  if (decision.action === 'held') {
    if (request) {
      const fence = `held at release ${decision.fence.release} by a rollback`;
      await ctx.control.answer(request, 'held', `${fence}; mooring resume ${d.spec.name} lifts it`);
    }
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
    if (ledgerVersion !== undefined && reason === undefined && !request)
      d.quiet = { input: quietAt, ledger: ledgerVersion };
    log.debug('deployment is current');
    return;
  }
  return {
    decision,
    commit,
    images,
    request,
    change: input.change,
    promotedFrom,
    log,
  };
}
