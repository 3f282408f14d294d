// The secrets of the agent's HTTP server, read when it starts and on each reload: the webhooks' (each forge's
// secret or token, the registry's token) and the status page's bearer token.
import type { MooringConfig } from '../config/schema.ts';
import { readSecret } from '../config/secret.ts';
import type { WebhookSecrets } from '../server/http.ts';

/** The secrets webhooks are checked with, read from their environment variables or files. */
export async function webhookSecrets(config: MooringConfig): Promise<WebhookSecrets> {
  const hooks = config.server.webhooks;
  const read = async (ref: { env?: string | undefined; file?: string | undefined } | undefined) =>
    ref ? readSecret(ref) : undefined;
  return {
    github: await read(hooks.github?.secret),
    gitlab: await read(hooks.gitlab?.token),
    gitea: await read(hooks.gitea?.secret),
    bitbucket: await read(hooks.bitbucket?.secret),
    generic: await read(hooks.generic?.secret),
    registry: await read(hooks.registry?.token),
  };
}

/** The status page's bearer token; undefined when the page is anonymous (or off). */
export async function pageToken(config: MooringConfig): Promise<string | undefined> {
  const page = config.server.statusPage;
  return page.enabled && page.token ? readSecret(page.token) : undefined;
}
