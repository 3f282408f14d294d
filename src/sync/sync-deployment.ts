// One sync of one deployment, as the agent and `mooring rollback` run it: the deploy pipeline, then ONE finalizer
// that records the release in the ledger, writes the audit log and posts the commit status, whatever happened.
// Reporting never fails the sync: a reporter that cannot report logs why.

import { renderOptionsFor } from '../config/render-options.ts';
import type { Deployment, MooringConfig } from '../config/schema.ts';
import { errorMessage } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { ClusterCache } from '../kube/cache.ts';
import type { Discovery } from '../kube/discovery.ts';
import type { ManifestFile } from '../render/parse.ts';
import type { Ledger, Release, ReleaseImage, Trigger } from '../report/ledger.ts';
import { type DeployReport, deploy } from './deploy.ts';
import type { Logger } from './logger.ts';

/** What a sync tells the outside world; the agent wires commit statuses and the audit log in here. */
export interface SyncReporter {
  started?(sync: SyncRequest): Promise<void> | void;
  finished?(sync: SyncRequest, report: DeployReport, release: Release | undefined): Promise<void> | void;
}

export interface SyncRequest {
  config: MooringConfig;
  deployment: Deployment;
  commit: string | undefined;
  files: readonly ManifestFile[];
  images: Record<string, ReleaseImage>;
  revision: string;
  trigger: Trigger;
  signal?: AbortSignal;
}

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
  const { deployment, config } = sync;
  const log = deps.log.child({ deployment: deployment.name, revision: sync.commit?.slice(0, 12) ?? 'local' });
  for (const r of deps.reporters ?? []) await safely(log, 'report the start', () => r.started?.(sync));
  log.info(
    { files: sync.files.length, images: Object.keys(sync.images).length, trigger: sync.trigger },
    'sync started',
  );
  const report = await deploy(
    {
      api: deps.api,
      discovery: deps.discovery,
      ...(deps.cache ? { cache: deps.cache } : {}),
      onEvent: (e) => {
        if (e.type === 'applied' && e.result.action !== 'unchanged') {
          log.info({ object: e.result.target.plan.object, action: e.result.action }, 'applied');
        }
      },
    },
    {
      files: sync.files,
      namespace: deployment.namespace,
      application: deployment.application ?? deployment.name,
      images: Object.values(sync.images).map((i) => ({ name: i.image, tag: i.tag, digest: i.digest })),
      timeoutMs: deployment.stability.timeout,
      dryRun: false,
      renderOptions: renderOptionsFor(config, deployment),
      hashKeyNamespace: config.cluster.namespace,
      fieldManager: config.apply.fieldManager,
      concurrency: config.apply.concurrency,
      signal: sync.signal,
    },
  );
  // The finalizer: the ledger, then the outside world.
  let release: Release | undefined;
  if (report.outcome !== 'cancelled') {
    release = await safely(log, 'record the release', () =>
      deps.ledger.append({
        deployment: deployment.name,
        time: new Date(Date.now() - report.elapsedMs).toISOString(),
        trigger: sync.trigger,
        commit: sync.commit,
        images: sync.images,
        revision: sync.revision,
        versions: report.applied
          .filter((a) => a.target.plan.version)
          .map((a) => `${a.target.object.kind} ${a.target.object.metadata.name}`),
        objects: report.applied.map((a) => ({ object: a.target.plan.object, action: a.action })),
        result: report.outcome === 'dry-run' ? 'applied' : report.outcome,
        durationMs: report.elapsedMs,
        messages: [report.summary],
      }),
    );
  }
  for (const r of deps.reporters ?? [])
    await safely(log, 'report the end', () => r.finished?.(sync, report, release));
  const level = report.outcome === 'stable' || report.outcome === 'cancelled' ? 'info' : 'error';
  log[level]({ outcome: report.outcome, elapsedMs: report.elapsedMs, release: release?.id }, report.summary);
  return { report, release };
}

async function safely<T>(log: Logger, what: string, fn: () => Promise<T> | T): Promise<T | undefined> {
  try {
    return await fn();
  } catch (error) {
    log.warn({ err: errorMessage(error) }, `cannot ${what}`);
    return undefined;
  }
}
