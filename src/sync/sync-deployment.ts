// One sync of one deployment, as the agent and `mooring rollback` run it: the deploy pipeline, then ONE finalizer
// that records the release in the ledger, writes the audit log and posts the commit status, whatever happened.
// The report it hands on has the values decrypted from the sync's SOPS files redacted (redact-report.ts).
// Reporting never fails the sync: a reporter that cannot report logs why.

import { renderOptionsFor } from '../config/render-options.ts';
import type { Deployment, MooringConfig } from '../config/schema.ts';
import type { DeployReport, Logger, Release, ReleaseImage, SyncReporter, SyncRequest } from '../contract.ts';
import { errorMessage, TransientError } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { ClusterCache } from '../kube/cache.ts';
import { describeTakeOver } from '../kube/client-side-takeover.ts';
import type { Discovery } from '../kube/discovery.ts';
import { describeFinding } from '../kube/drift.ts';
import { savedMarks } from '../kube/drift-pass.ts';
import { InventoryStore, inventoryVersions } from '../kube/inventory.ts';
import { describeWarning } from '../kube/warnings.ts';
import { filesRedactor } from '../render/redact.ts';
import { type Attempt, CorruptLedgerError, type Ledger, recordedVersions } from '../report/ledger.ts';
import { compileHealthRules } from '../stability/health.ts';
import { attemptNote, newAttempt, runningAttempt } from './attempts.ts';
import { deploy } from './deploy.ts';
import { redactReport } from './redact-report.ts';

export interface SyncDeps {
  api: KubeApi;
  discovery: Discovery;
  cache?: ClusterCache | undefined;
  ledger: Ledger;
  log: Logger;
  reporters?: readonly SyncReporter[];
}

export async function syncDeployment(
  deps: SyncDeps,
  sync: SyncRequest,
): Promise<{ report: DeployReport; release: Release | undefined }> {
  // Noted with the inventory before the first write (src/sync/attempts.ts): an agent that dies mid-sync leaves it,
  // and the next agent reports its end and records the versions it was writing. A drift pass and a re-sync after a
  // configuration reload note nothing (quiet, below).
  const attempt = sync.trigger === 'drift' || sync.trigger === 'config' ? undefined : newAttempt(sync);
  if (!attempt) return syncNoted(deps, sync, undefined);
  const done = runningAttempt(attempt.id);
  try {
    return await syncNoted(deps, sync, attempt);
  } finally {
    done();
  }
}

async function syncNoted(
  deps: SyncDeps,
  sync: SyncRequest,
  attempt: (Attempt & { id: string }) | undefined,
): Promise<{ report: DeployReport; release: Release | undefined }> {
  const { deployment, config } = sync;
  // An OCI-sourced deployment has no commit of its own: its artifact's digest names the revision.
  const artifact = sync.images[deployment.source];
  const revision =
    sync.commit?.slice(0, 12) ??
    (artifact?.kind === 'manifests' ? `${artifact.tag ?? ''}@${artifact.digest.slice(0, 19)}` : 'local');
  const log = deps.log.child({ deployment: deployment.name, revision });
  // A drift pass re-applies the release the deployment is at: it posts no pending status and records nothing
  // unless it finds something to put back (then one release of trigger `drift` names the objects).
  const drift = sync.trigger === 'drift';
  // A re-sync after a configuration reload is as quiet as a drift pass, but always applies.
  const quiet = drift || sync.trigger === 'config';
  // The pending status is posted once the attempt is noted.
  // Posted beside the writes (a slow status API takes nothing of the deploy's time), and done before the end is.
  let starting: Promise<void> | undefined;
  const started = async () => {
    starting = (async () => {
      for (const r of deps.reporters ?? []) await safely(log, 'report the start', () => r.started?.(sync));
    })();
  };
  log.info(
    { files: sync.files.length, images: Object.keys(sync.images).length, trigger: sync.trigger },
    'sync started',
  );
  // Versions that the releases inside the deployment's history name are kept, so that a rollback finds them; the
  // release this sync makes is the newest of that history. (The store's copy of what it last wrote or read
  // answers, usually without a request.)
  // A ledger that can never be read (not one mooring wrote) fails the sync before anything is applied, by name:
  // applied without it, the sync could record nothing and would apply again at every poll.
  let corrupt: CorruptLedgerError | undefined;
  const ledger = await safely(log, 'read the ledger', () =>
    deps.ledger.read(deployment.name).catch((error: unknown) => {
      if (error instanceof CorruptLedgerError) corrupt = error;
      throw error;
    }),
  );
  // Not read (the server failed): no version is collected this time, rather than one a rollback needs.
  const keepVersions = ledger
    ? new Set(ledger.releases.slice(0, deployment.versionHistory - 1).flatMap((r) => r.versions))
    : ('unknown' as const);
  // kustomize's and helm's warnings about the build (each names its kustomization or chart), once per sync.
  if (!quiet)
    for (const warning of (sync.files ?? []).flatMap((f) => f.warnings ?? []))
      log.warn({ warning }, 'build warning');
  const deployed =
    sync.filesError !== undefined || corrupt !== undefined
      ? failedBeforeDeploy(sync.filesError ?? (corrupt as CorruptLedgerError))
      : await deploy(
          {
            api: deps.api,
            discovery: deps.discovery,
            ...(deps.cache ? { cache: deps.cache } : {}),
            ...(sync.release ? { beforeWait: sync.release } : {}),
            onEvent: (e) => {
              if (e.type === 'applied' && e.result.action !== 'unchanged') {
                const { tookOver } = e.result;
                log.info(
                  {
                    object: e.result.target.plan.object,
                    action: e.result.action,
                    ...(tookOver ? { tookOver: describeTakeOver(tookOver) } : {}),
                  },
                  'applied',
                );
              } else if (e.type === 'pruned') log.info({ object: e.object }, 'pruned');
              else if (e.type === 'hook')
                log[e.run.outcome === 'failed' ? 'error' : 'info'](
                  { object: e.run.object, hook: e.run.hook, outcome: e.run.outcome, deleted: e.run.deleted },
                  `hook ${e.run.outcome}: ${e.run.message}`,
                );
              else if (e.type === 'hook-deleted')
                log.info({ object: e.run.object, hook: e.run.hook }, 'hook deleted at the sync end');
            },
          },
          {
            files: sync.files,
            namespace: deployment.namespace,
            // One rule with the CLI (src/cli/names.ts): the application given, else the namespace.
            application: deployment.application ?? deployment.namespace,
            // Charts and manifest artifacts are followed like images but never bound into manifests as one.
            images: Object.values(sync.images)
              .filter((i) => i.kind === undefined)
              .map((i) => ({ name: i.image, tag: i.tag, digest: i.digest })),
            timeoutMs: deployment.stability.timeout,
            dryRun: false,
            renderOptions: renderOptionsFor(config, deployment),
            health: compileHealthRules(config.health, 'config health'),
            hashKeyNamespace: config.cluster.namespace,
            fieldManager: config.apply.fieldManager,
            concurrency: config.apply.concurrency,
            signal: sync.signal,
            inventory: {
              owner: deployment.name,
              namespace: config.cluster.namespace,
              prune: deployment.prune,
              removal: deployment.removing !== undefined,
              allowEmpty: deployment.allowEmpty,
              emptyAdvice: 'Set allowEmpty: true if that is meant.',
              ...(attempt
                ? { attempt: { note: { id: attempt.id, text: attemptNote(attempt) }, started } }
                : {}),
            },
            versionHistory: deployment.versionHistory,
            ...(ledger ? { usedVersions: recordedVersions(ledger.releases) } : {}),
            ...(sync.restore ? { restoreVersions: sync.restore } : {}),
            keepVersions,
            createNamespace: deployment.createNamespace,
            namespaceAdvice: `create it, or set createNamespace: true on deployment ${deployment.name} (--create-namespace for mooring deploy)`,
            ...(drift ? { drift: config.drift.mode, dryRun: config.drift.mode === 'report' } : {}),
            // A drift pass puts the release back; it is no new release, and runs no hooks.
            ...(drift ? { hooks: false } : {}),
            ...(sync.trigger === 'rollback' ? { hookEvent: 'rollback' as const } : {}),
          },
        );
  // Whatever the report's messages quote, no value decrypted from the sync's SOPS files leaves the sync.
  const report = redactReport(deployed, filesRedactor(sync.files));
  // The API server's warnings (deprecations, PodSecurity, unknown fields): one line each, naming the object and
  // where it was written. A quiet pass repeats the last sync's, so it does not log them again.
  if (!quiet)
    for (const w of report.warnings ?? [])
      log.warn({ object: w.object, source: w.source, warning: w.text }, 'API server warning');
  // What prune left of the inventory, and why (shared with another deployment, annotated, outside the deployment's
  // namespaces, still referred to), as `mooring deploy` prints it.
  if (!quiet)
    for (const k of report.prune?.kept ?? []) log.info({ object: k.object, reason: k.reason }, 'not pruned');
  if (drift && config.drift.mode === 'report') {
    // Reported, not corrected: a log line per object, the metric; no release and no commit status.
    for (const f of report.drift ?? [])
      log.warn({ object: f.object, fields: f.fields, added: f.added, by: f.by }, 'drift found');
    if (report.outcome === 'error') log.error({ err: errorMessage(report.error) }, 'drift pass failed');
    for (const r of deps.reporters ?? [])
      await safely(log, 'report drift', () => r.drifted?.(sync, report.drift ?? []));
    return { report, release: undefined };
  }
  if (
    quiet &&
    report.outcome === 'stable' &&
    report.applied.every((a) => a.action === 'unchanged') &&
    !report.prune?.deleted.length
  ) {
    log.debug({ elapsedMs: report.elapsedMs }, 'drift pass: nothing to put back');
    return { report, release: undefined };
  }
  if (
    quiet &&
    report.outcome !== 'stable' &&
    // A cancelled pass (superseded, or the agent stopping) failed at nothing: it ends below, as any cancelled sync.
    report.outcome !== 'cancelled' &&
    report.applied.every((a) => a.action === 'unchanged') &&
    !report.prune?.deleted.length
  ) {
    // A quiet pass that failed before it wrote anything made no release: recording one would push the
    // deployment's real releases (and the versions they keep for a rollback) out of the ledger, one per pass while
    // the failure lasts. What it found is reported as found, not put back; the next pass tries again.
    log.error({ err: errorMessage(report.error), outcome: report.outcome }, `${sync.trigger} pass failed`);
    for (const f of report.drift ?? [])
      log.warn({ object: f.object, fields: f.fields, added: f.added, by: f.by }, 'drift found, not put back');
    if (drift && report.drift?.length)
      for (const r of deps.reporters ?? [])
        await safely(log, 'report drift', () => r.drifted?.(sync, report.drift ?? []));
    return { report, release: undefined };
  }
  // The finalizer: the ledger, then the outside world.
  let release: Release | undefined;
  if (report.outcome !== 'cancelled') {
    const fence = sync.fence ? { since: new Date().toISOString(), heads: sync.fence.heads } : undefined;
    release = await safely(log, 'record the release', () =>
      deps.ledger.append(
        {
          deployment: deployment.name,
          time: new Date(Date.now() - report.elapsedMs).toISOString(),
          trigger: sync.trigger,
          commit: sync.commit,
          images: withSigners(sync.images, sync.files?.[0]?.artifactsSignedBy),
          revision: sync.revision,
          ...dependenciesOf(sync.files),
          ...(sync.files?.[0]?.signedBy ? { signedBy: sync.files[0].signedBy } : {}),
          ...(sync.promotedFrom ? { promotedFrom: { ...sync.promotedFrom } } : {}),
          ...(deployment.set ? { set: deployment.set } : {}),
          ...(attempt ? { attempt: attempt.id } : {}),
          versions: report.applied
            .filter((a) => a.target.plan.version)
            .map((a) => `${a.target.object.kind} ${a.target.object.metadata.name}`),
          objects: [
            ...report.applied.map((a) => ({ object: a.target.plan.object, action: a.action })),
            ...(report.prune?.deleted ?? []).map((object) => ({ object, action: 'pruned' })),
          ],
          ...(report.drift?.length
            ? { drift: report.drift.map((f) => ({ object: f.object, fields: [...f.fields, ...f.added] })) }
            : {}),
          ...(report.hooks?.length ? { hooks: report.hooks } : {}),
          result: report.outcome === 'dry-run' ? 'applied' : report.outcome,
          durationMs: report.elapsedMs,
          messages: [
            report.summary,
            ...(report.drift ?? []).map((f) => `put back ${describeFinding(f)}`),
            ...(report.warnings ?? []).map((w) => `warning: ${describeWarning(w)}`),
          ],
        },
        fence,
        // What the agent wrote, for the agent that starts next (docs/drift.md): no request of its own.
        savedMarks(deps.cache, deployment.name),
      ),
    );
  }
  if (report.outcome === 'cancelled' && attempt)
    await safely(log, 'clear the attempt', () =>
      new InventoryStore(deps.api, config.cluster.namespace).clearNote(deployment.name, {
        id: attempt.id,
        text: attemptNote(attempt),
      }),
    );
  await starting;
  for (const r of deps.reporters ?? [])
    await safely(log, 'report the end', () => r.finished?.(sync, report, release));
  const level = report.outcome === 'stable' || report.outcome === 'cancelled' ? 'info' : 'error';
  log[level]({ outcome: report.outcome, elapsedMs: report.elapsedMs, release: release?.id }, report.summary);
  return { report, release };
}

/** The report of a sync whose manifests could not be read: nothing was asked of the cluster. */
function failedBeforeDeploy(error: unknown): DeployReport {
  return {
    outcome: 'error',
    summary: `failed: ${errorMessage(error)}`,
    applied: [],
    wait: undefined,
    history: undefined,
    prune: undefined,
    error,
    elapsedMs: 0,
  };
}

/** Runs a step whose failure is logged, never thrown: reporting must not end a sync. */
export async function safely<T>(log: Logger, what: string, fn: () => Promise<T> | T): Promise<T | undefined> {
  try {
    return await fn();
  } catch (error) {
    log.warn({ err: errorMessage(error) }, `cannot ${what}`);
    return undefined;
  }
}

/**
 * Ends a sync that a previous agent started and never finished (it was killed or crashed mid-sync): the ledger
 * records it as an error and every reporter hears its end, so its pending commit status does not stay pending.
 * The deployment itself is synced again by the next poll.
 */
export async function endInterrupted(
  deps: SyncDeps,
  config: MooringConfig,
  deployment: Deployment,
  attempt: Attempt,
): Promise<void> {
  const log = deps.log.child({
    deployment: deployment.name,
    revision: attempt.commit?.slice(0, 12) ?? 'local',
  });
  const elapsedMs = Math.max(0, Date.now() - Date.parse(attempt.since));
  // The versions it was writing: the inventory names them, written with them before the first write (an attempt
  // an earlier agent left may still name them itself).
  const versions =
    attempt.versions ??
    (await safely(log, 'read the inventory', () =>
      inventoryVersions(deps.api, config.cluster.namespace, deployment.name),
    )) ??
    [];
  const error = new TransientError(
    `Interrupted: the agent stopped (killed or crashed) during this sync, started ${attempt.since}; it is synced again`,
  );
  const report: DeployReport = {
    outcome: 'error',
    summary: error.message,
    applied: [],
    wait: undefined,
    history: undefined,
    prune: undefined,
    error,
    elapsedMs,
  };
  const release = await safely(log, 'record the interrupted sync', () =>
    deps.ledger.append({
      deployment: deployment.name,
      ...(attempt.id ? { attempt: attempt.id } : {}),
      time: attempt.since,
      trigger: attempt.trigger,
      commit: attempt.commit,
      images: attempt.images,
      revision: attempt.revision,
      versions,
      objects: [],
      result: 'error',
      durationMs: elapsedMs,
      messages: [error.message],
    }),
  );
  const sync: SyncRequest = {
    config,
    deployment,
    commit: attempt.commit,
    files: [],
    images: attempt.images,
    revision: attempt.revision,
    trigger: attempt.trigger,
  };
  for (const r of deps.reporters ?? [])
    await safely(log, 'report the end', () => r.finished?.(sync, report, release));
  log.warn({ since: attempt.since }, 'a sync the previous agent did not finish is recorded as interrupted');
}

/** The chart dependencies fetched for the sync's files (charts/dependencies.ts), for its release. */
function dependenciesOf(files: SyncRequest['files']): Pick<Release, 'dependencies'> {
  const dependencies = (files ?? []).flatMap((f) => f.dependencies ?? []).map((d) => ({ ...d }));
  return dependencies.length > 0 ? { dependencies } : {};
}

/** The release's artifacts, each with who signed its digest when its source verified it (docs/verification.md). */
function withSigners(
  images: Record<string, ReleaseImage>,
  signers: Readonly<Record<string, string>> | undefined,
): Record<string, ReleaseImage> {
  if (!signers) return images;
  return Object.fromEntries(
    Object.entries(images).map(([name, image]) => [
      name,
      signers[name] ? { ...image, signedBy: signers[name] } : image,
    ]),
  );
}
