// `mooring run`: the agent. `--watch DIR` deploys a local folder on every change (development, no config file).
import type { Command } from 'commander';
import { runAgent } from '../../agent/run-agent.ts';
import { parseDuration } from '../../config/duration.ts';
import { loadConfigFile } from '../../config/load.ts';
import { commandKubeApi } from '../../kube/api.ts';
import { ClusterCache } from '../../kube/cache.ts';
import { loadKubeConfig } from '../../kube/client.ts';
import { Discovery } from '../../kube/discovery.ts';
import { chartLookup } from '../../kube/lookup-server.ts';
import { createLogger } from '../../sync/logger.ts';
import { runWatchLoop } from '../../sync/watch-loop.ts';
import { type ClusterFlags, clusterAccess, manifestBoundary } from '../cluster-flags.ts';
import { EXIT_USAGE, ExitError } from '../exit-codes.ts';
import { cliConfig, cliRenderOptions, type LocalInputFlags, withReadFlags } from '../local-input.ts';
import { checkedNames } from '../names.ts';
import { waitTimeout } from '../timeout.ts';
import { parseImageFlag } from './render.ts';

interface RunFlags extends ClusterFlags, LocalInputFlags {
  watch?: string;
  config?: string;
  application?: string;
  image: string[];
  timeout: string;
  debounce: string;
  prune: boolean;
  agentNamespace: string;
  createNamespace?: boolean;
}

/** Resolves on SIGTERM or SIGINT: the agent stops polling and lets the write in progress finish. */
function stopSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return controller.signal;
}

export function runCommand(program: Command): void {
  const command = program
    .command('run')
    .description(
      'run the agent: keep the cluster in sync with a folder (--watch DIR) or a configuration (--config FILE)',
    )
    .option('--watch <dir>', 'deploy this folder now and after every change (development)')
    .option('--config <file>', 'the agent configuration file')
    .option('--kubeconfig <file>', 'path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'the kubeconfig context to use')
    .option('-n, --namespace <namespace>', 'namespace for objects that name none (with --watch)')
    .option('--application <name>', 'the moniker application (with --watch; default: the namespace)')
    .option(
      '--image <ref@digest>',
      'an image artifact (with --watch; repeatable)',
      (v: string, p: string[]) => [...p, v],
      [],
    )
    .option('--timeout <duration>', 'how long each deploy waits for stability (with --watch)', '30m')
    .option('--debounce <duration>', 'quiet time after a change before deploying (with --watch)', '500ms')
    .option(
      '--no-prune',
      'with --watch: keep what an earlier deploy applied and the folder no longer holds (default: delete it)',
    )
    .option(
      '--agent-namespace <namespace>',
      "with --watch: the agent's namespace, where the inventory and the key of Secrets' content hash are kept",
      'mooring',
    )
    .option('--create-namespace', 'with --watch: create the namespace when it does not exist');
  withReadFlags(command).action(async (flags: RunFlags) => {
    if (flags.watch && flags.config)
      throw new ExitError('error: give --watch DIR or --config FILE, not both', EXIT_USAGE);
    if (!flags.watch && !flags.config)
      throw new ExitError('error: give --watch DIR or --config FILE', EXIT_USAGE);
    const timeoutMs = waitTimeout(flags.timeout);
    const debounceMs = parseDuration(flags.debounce);
    if (timeoutMs === undefined || debounceMs === undefined)
      throw new ExitError(
        'error: --timeout and --debounce take durations like 5m (--timeout 0s: no limit)',
        EXIT_USAGE,
      );
    const log = createLogger();
    if (flags.watch) {
      const clusterConfig = loadKubeConfig(clusterAccess(flags));
      const namespace = flags.namespace ?? clusterConfig.namespace ?? 'default';
      const api = commandKubeApi(clusterConfig);
      // Each save of the folder deploys again: its streams stay open between deploys.
      const cache = new ClusterCache(api, { lingerMs: 5 * 60_000 });
      const discovery = new Discovery(api);
      const stop = stopSignal();
      try {
        await runWatchLoop(
          { api, discovery, cache, log },
          {
            dir: flags.watch,
            namespace,
            application: checkedNames(namespace, flags.application).application,
            images: flags.image.map(parseImageFlag),
            timeoutMs,
            debounceMs,
            boundary: manifestBoundary({ namespace: flags.namespace }, namespace),
            read: {
              ctx: {
                config: cliConfig(flags),
                capabilities: () => discovery.capabilities(),
                lookup: chartLookup(api, { exclude: [flags.agentNamespace] }),
                // A render under way (helm, kustomize) is given up at the signal.
                signal: stop,
              },
              recursive: flags.recursive ?? false,
              chart: {
                releaseName: flags.releaseName,
                valuesFiles: flags.values,
                allowedRepositories: flags.allowedRepository,
              },
            },
            renderOptions: cliRenderOptions(flags),
            prune: flags.prune,
            inventoryNamespace: flags.agentNamespace,
            createNamespace: flags.createNamespace,
          },
          stop,
        );
      } finally {
        cache.close();
        api.close();
      }
      return;
    }
    const file = flags.config as string;
    const config = await loadConfigFile(file);
    await runAgent(config, log, { access: clusterAccess(flags), configFile: file }, stopSignal());
  });
}
