// `mooring run --config FILE`: the agent and its HTTP server (health, readiness, webhooks) until SIGTERM.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { MooringConfig } from '../config/schema.ts';
import { KubeApi } from '../kube/api.ts';
import { type ClusterAccess, loadKubeConfig } from '../kube/client.ts';
import { Discovery } from '../kube/discovery.ts';
import { AuditLog } from '../report/audit.ts';
import { CommitStatusSync } from '../report/commit-status-sync.ts';
import { createServer, type WebhookSecrets } from '../server/http.ts';
import { selectSources } from '../server/source-match.ts';
import { readSecret } from '../sources/secret.ts';
import { Agent } from './agent.ts';
import type { Logger } from './logger.ts';

export interface RunAgentOptions {
  /** Flags override the config's cluster section, as kubectl's do. */
  access: ClusterAccess;
  cacheDir?: string;
  /** Called with the server's port once it listens (the config may say 0: any free port). */
  onListening?: (port: number) => void;
}

async function webhookSecrets(config: MooringConfig): Promise<WebhookSecrets> {
  const hooks = config.server.webhooks;
  const read = async (ref: { env?: string | undefined; file?: string | undefined } | undefined) =>
    ref ? readSecret(ref) : undefined;
  return {
    github: await read(hooks.github?.secret),
    gitlab: await read(hooks.gitlab?.token),
    gitea: await read(hooks.gitea?.secret),
    generic: await read(hooks.generic?.secret),
    registry: await read(hooks.registry?.token),
  };
}

export async function runAgent(
  config: MooringConfig,
  log: Logger,
  options: RunAgentOptions,
  stop: AbortSignal,
) {
  const access: ClusterAccess = {
    inCluster: options.access.kubeconfig || options.access.context ? false : config.cluster.inCluster,
    kubeconfig: options.access.kubeconfig ?? config.cluster.kubeconfig,
    context: options.access.context ?? config.cluster.context,
  };
  const api = new KubeApi(loadKubeConfig(access), { maxSockets: config.apply.concurrency * 2 });
  const agent = new Agent({
    config,
    api,
    discovery: new Discovery(api),
    log,
    cacheDir:
      options.cacheDir ?? process.env.MOORING_CACHE_DIR ?? join(homedir(), '.cache', 'mooring', 'sources'),
    reporters: [new CommitStatusSync(config, log), new AuditLog(config, log)],
  });
  let started = false;
  const server = createServer({
    maxBodyBytes: config.server.maxBodyBytes,
    secrets: await webhookSecrets(config),
    // A webhook only says which sources to poll now; what to deploy comes from the poll.
    onTrigger: (targets) => agent.pollNow(selectSources(targets, config.sources)),
    health: () => ({ ok: true }),
    ready: () => ({ ok: started, detail: started ? undefined : 'starting' }),
    sources: () => config.sources,
    log,
  });
  server.listen(config.server.port, config.server.address);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  log.info({ port }, 'http server listening');
  options.onListening?.(port);
  try {
    await agent.start();
    started = true;
    await new Promise<void>((resolve) => {
      if (stop.aborted) resolve();
      stop.addEventListener('abort', () => resolve(), { once: true });
    });
    log.info('stopping: polling ends, the write in progress finishes');
  } finally {
    await agent.stop();
    server.close();
    api.close();
    log.info('stopped');
  }
}
