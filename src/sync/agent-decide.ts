// Whether a deployment needs a sync, decided before the queue (agent.ts): what a promoted deployment deploys
// (agent-promotion.ts), the quiet check (found current at this very input, its ledger not written since), then
// reconcile.ts's decision on the ledger: current, held by a rollback's fence, or a sync to plan. What holds a
// planned sync (suspend, a promotion that waits, the fence, ...) is judged next, by the gates (gates.ts).
import { errorMessage } from '../errors.ts';
import { CorruptLedgerError, type LedgerData, ledgerName } from '../report/ledger.ts';
import type { JobContext, Planned } from './agent-context.ts';
import { promotedInput } from './agent-promotion.ts';
import { type DeploymentState, digestsOf, imagesOf, isLocal, isOci, quietInput } from './agent-sources.ts';
import { CONFIGMAPS } from './control.ts';
import type { PromotedFrom } from './fleet.ts';
import { reconcile } from './reconcile.ts';

/** What the decision uses of the agent: the jobs' context, and the deployments a reload changed. */
export interface DecideContext extends JobContext {
  /** Deployments whose spec a reload changed: synced again once, even at the same revision. */
  resync: Set<string>;
}

/**
 * The sync `d` needs at `commit` (which the gates may still hold), or undefined when it needs none: current, or
 * found quiet.
 */
export async function decide(
  ctx: DecideContext,
  d: DeploymentState,
  commit: string | undefined,
  reason: 'drift' | undefined,
): Promise<Planned | undefined> {
  const promoted = await promotedInput(ctx, d);
  // A promotion that waits is a hold (gates.ts): planned at the input the deployment is at, never its own tip.
  const waiting = promoted?.state === 'waiting' ? promoted : undefined;
  const promotion = promoted?.state === 'ready' ? promoted : undefined;
  const promotedFrom: PromotedFrom | undefined = promotion?.from;
  if (promotion) commit = promotion.commit;
  if (waiting) commit = d.commit;
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
  if (!waiting) d.quiet = undefined;
  if (
    !waiting &&
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
  let data: LedgerData;
  try {
    data = await ctx.ledger().read(d.spec.name);
    d.corruptLedger = undefined;
  } catch (error) {
    if (!(error instanceof CorruptLedgerError)) throw error;
    // A ledger that can never be read: the sync goes on to fail by name (sync-deployment.ts), once for each revision
    // and problem, so that its commit status says why; the polls after it decide nothing until one changes.
    const seen = `${commit ?? artifact ?? 'local'} ${errorMessage(error)}`;
    if (d.corruptLedger === seen) return;
    d.corruptLedger = seen;
    log.error({ err: errorMessage(error) }, 'cannot read the ledger');
    data = { releases: [], fence: undefined };
  }
  // A `mooring reconcile` that waits is answered by this sync, which then syncs even a current deployment (not
  // while a promotion waits: the promotion answers it once it deploys).
  const request = reason === 'drift' || waiting ? undefined : ctx.control.take(d.spec.name);
  const input = {
    ledger: data,
    commit,
    digests,
    reason: request ? ('manual' as const) : reason,
    local: isLocal(ctx.state, d),
    sameAs: d.sameAs,
    spec: d.generation ?? 0,
    change: isLocal(ctx.state, d) ? (d.changes ?? 0) : undefined,
    removing: d.spec.removing !== undefined,
  };
  let decision = reconcile(input);
  // A spec changed by a reload is applied even at the same revision, as a drift pass applies it: only what
  // renders differently is written, and nothing is recorded when nothing is.
  if (
    !waiting &&
    ctx.resync.delete(d.spec.name) &&
    !input.reason &&
    (decision.action === 'current' || input.local)
  )
    decision = reconcile({ ...input, reason: 'config' });
  // A rollback's hold, for the alert on deployments held too long (charts/mooring: prometheusRule).
  ctx.deps.metrics?.held(d.spec.name, decision.action === 'held' ? decision.fence.since : undefined);
  if (decision.action === 'current' && !waiting) {
    d.commit = commit;
    d.deployed = decision.revision;
    if (ledgerVersion !== undefined && reason === undefined && !request)
      d.quiet = { input: quietAt, ledger: ledgerVersion };
    log.debug('deployment is current');
    return;
  }
  return {
    decision,
    trigger: decision.action === 'sync' ? decision.trigger : (reason ?? 'commit'),
    promotion: waiting,
    ledger: data,
    // The poll rounds under way as the sync is planned: a dependency is waited for until those have decided it.
    rounds: new Map(d.spec.dependsOn.map((name) => [name, ctx.pollRound(name)])),
    commit,
    images,
    request,
    change: input.change,
    promotedFrom,
    log,
  };
}
