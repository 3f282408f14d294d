// `mooring run --watch DIR`: the development loop. The folder is deployed at start and again after every change
// (debounced), through the same queue and deploy pipeline as the agent: a change during a rollout cancels its
// wait and deploys the newest files; an unchanged folder is not redeployed.
import type { KubeApi } from '../kube/api.ts';
import type { ClusterCache } from '../kube/cache.ts';
import type { Discovery } from '../kube/discovery.ts';
import type { ImageArtifact } from '../render/images.ts';
import type { NamespaceBoundary } from '../render/namespace-boundary.ts';
import type { ManifestFile } from '../render/parse.ts';
import { valueRedactor } from '../render/redact.ts';
import { localManifests } from '../sources/local/manifests.ts';
import { filesRevision, watchFolder } from '../sources/local/watch.ts';
import { decryptedValues } from '../sources/sops/decrypt.ts';
import { deploy } from './deploy.ts';
import type { Logger } from './logger.ts';
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
      files = await localManifests([options.dir], { chart: { namespace: options.namespace } });
    } catch (error) {
      log.error({ err: (error as Error).message, dir: options.dir }, 'cannot read the folder');
      return;
    }
    const revision = filesRevision(files);
    const sync = log.child({ deployment: options.dir, revision: revision.slice(7, 19) });
    // As the agent's finalizer: no value decrypted from the folder's SOPS files in what is logged.
    const redact = valueRedactor(decryptedValues(files));
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
            } else if (e.type === 'progress')
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
          renderOptions: { boundary: options.boundary },
          signal,
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
