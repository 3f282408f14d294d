// `mooring run --watch DIR`: the development loop. The folder is deployed at start and again after every change
// (debounced), through the same reader, queue and deploy pipeline as the agent: a change during a rollout cancels
// its wait and deploys the newest files; an unchanged folder is not redeployed. With prune (the default, as the
// agent's), what an earlier deploy of the loop applied and the folder no longer holds is deleted, through the
// CLI's inventory of the namespace and application (as `mooring deploy --prune`).

import type { Logger } from '../contract.ts';
import type { KubeApi } from '../kube/api.ts';
import type { ClusterCache } from '../kube/cache.ts';
import type { Discovery } from '../kube/discovery.ts';
import { cliOwner } from '../kube/inventory.ts';
import type { ImageArtifact } from '../render/images.ts';
import type { NamespaceBoundary } from '../render/namespace-boundary.ts';
import type { ManifestFile } from '../render/parse.ts';
import { filesRedactor } from '../render/redact.ts';
import type { RenderOptions } from '../render/render.ts';
import type { LocalPaths, ManifestContext } from '../sources/deployment-manifests.ts';
import { pathManifests } from '../sources/deployment-manifests.ts';
import { filesRevision, watchFolder } from '../sources/local/watch.ts';
import { deploy } from './deploy.ts';
import { outcomeOf } from './outcome.ts';
import { SyncQueue } from './queue.ts';
import { redactReport } from './redact-report.ts';

export interface WatchLoopOptions {
  dir: string;
  namespace: string;
  application: string;
  images: readonly ImageArtifact[];
  timeoutMs: number;
  debounceMs: number;
  /** The namespaces the folder's objects may go to (with an explicit -n), as for `mooring deploy`. */
  boundary?: NamespaceBoundary | undefined;
  /** How the folder is read (the CLI's flags: -R, chart values, SOPS key, render settings). */
  read: { ctx: ManifestContext; recursive: boolean; chart?: Omit<LocalPaths['chart'], 'namespace'> };
  renderOptions?: Partial<RenderOptions> | undefined;
  /** Delete what an earlier deploy of the loop applied and the folder no longer holds. */
  prune: boolean;
  /** Where the CLI's inventories are kept (--agent-namespace). */
  inventoryNamespace: string;
  createNamespace?: boolean | undefined;
}

export async function runWatchLoop(
  deps: { api: KubeApi; discovery: Discovery; cache?: ClusterCache; log: Logger },
  options: WatchLoopOptions,
  stop: AbortSignal,
): Promise<void> {
  const { log } = deps;
  const queue = new SyncQueue({ concurrency: 1 });
  const trigger = async () => {
    let files: ManifestFile[];
    try {
      // As `mooring deploy DIR` reads it: kustomizations built, a chart rendered, SOPS files decrypted (keys from
      // SOPS_AGE_KEY_FILE / SOPS_AGE_KEY).
      files = await pathManifests(options.read.ctx, {
        paths: [options.dir],
        recursive: options.read.recursive,
        chart: { ...options.read.chart, namespace: options.namespace },
      });
    } catch (error) {
      // Given up at the stop: nothing to say.
      if (stop.aborted) return;
      log.error({ err: (error as Error).message, dir: options.dir }, 'cannot read the folder');
      return;
    }
    for (const warning of files.flatMap((f) => f.warnings ?? []))
      log.warn({ warning, dir: options.dir }, 'build warning');
    const revision = filesRevision(files);
    const sync = log.child({ deployment: options.dir, revision: revision.slice(7, 19) });
    // As the agent's finalizer: no value decrypted from the folder's SOPS files in what is logged.
    const redact = filesRedactor(files);
    queue.trigger('local', revision, async (signal) => {
      sync.info({ files: files.length }, 'sync started');
      const deployed = await deploy(
        {
          api: deps.api,
          discovery: deps.discovery,
          ...(deps.cache ? { cache: deps.cache } : {}),
          onEvent: (e) => {
            if (e.type === 'applied' && e.result.action !== 'unchanged') {
              sync.info({ object: e.result.target.plan.object, action: e.result.action }, 'applied');
            } else if (e.type === 'pruned') sync.info({ object: e.object }, 'pruned');
            else if (e.type === 'warning') sync.warn(redact(e.message));
            else if (e.type === 'progress')
              sync.info({ object: e.object, state: e.state }, redact(e.message));
          },
        },
        {
          files,
          namespace: options.namespace,
          application: options.application,
          images: options.images,
          timeoutMs: options.timeoutMs,
          dryRun: false,
          renderOptions: { ...options.renderOptions, boundary: options.boundary },
          hashKeyNamespace: options.inventoryNamespace,
          signal,
          // The CLI's inventory of the namespace and application, as `mooring deploy` keeps it.
          inventory: {
            owner: cliOwner(options.namespace, options.application),
            namespace: options.inventoryNamespace,
            prune: options.prune,
            allowEmpty: false,
            emptyAdvice: 'The folder must hold at least one object.',
            bestEffort: true,
          },
          createNamespace: options.createNamespace ?? false,
          namespaceAdvice: 'create it, or give --create-namespace',
        },
      );
      const report = redactReport(deployed, redact);
      const outcome = outcomeOf(report);
      const level = outcome.result === 'done' || outcome.result === 'cancelled' ? 'info' : 'error';
      sync[level]({ outcome: report.outcome, elapsedMs: report.elapsedMs }, report.summary);
      return outcome;
    });
  };
  await trigger();
  const watcher = watchFolder(options.dir, {
    debounceMs: options.debounceMs,
    onChange: () => void trigger(),
  });
  log.info({ dir: options.dir, namespace: options.namespace }, 'watching for changes');
  await new Promise<void>((resolve) => {
    if (stop.aborted) resolve();
    stop.addEventListener('abort', () => resolve(), { once: true });
  });
  log.info('stopping: no more changes are taken; the sync in progress finishes its writes');
  await watcher.close();
  await queue.stop();
}
