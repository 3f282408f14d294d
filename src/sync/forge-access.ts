// The forge a Git source's pull requests are asked of (previews and pull-request deployment sets): its comment and
// status APIs and the token for them. The API and token are the configuration's (the caller's own settings, then
// the source's first deployment's commitStatus), never a payload's: a token goes only where the operator sent it.
import type { GitSource, MooringConfig } from '../config/schema.ts';
import type { SecretRef } from '../config/schema-fields.ts';
import { readSecret } from '../config/secret.ts';
import { gitOrigins } from '../report/forges/forge-hosts.ts';
import { commentProviderFor, type PreviewCommentProvider, providerFor } from '../report/forges/select.ts';
import type { CommitStatusProvider, HttpOptions } from '../report/forges/types.ts';

export interface ForgeAccess {
  comments: PreviewCommentProvider;
  statuses: CommitStatusProvider;
  token: string;
}

/** The API settings a caller may give: each one absent is the source's first deployment's commitStatus's. */
export interface ForgeSettings {
  provider?: 'auto' | 'github' | 'gitlab' | 'gitea' | 'bitbucket-cloud' | 'bitbucket-server' | undefined;
  apiUrl?: string | undefined;
  token?: SecretRef | undefined;
}

/** The forge of `git`'s repository, or none without a token for it. */
export async function forgeAccess(
  config: MooringConfig,
  git: GitSource,
  settings: ForgeSettings,
  http: HttpOptions | undefined,
): Promise<ForgeAccess | undefined> {
  const fallback = config.deployments.find(
    (d) => d.source === git.name && d.commitStatus.token,
  )?.commitStatus;
  const token = settings.token ?? fallback?.token;
  if (!token) return undefined;
  const api = {
    provider: settings.provider ?? fallback?.provider ?? 'auto',
    apiUrl: settings.apiUrl ?? fallback?.apiUrl,
  };
  return {
    comments: commentProviderFor(git.url, api, gitOrigins(config), http),
    statuses: providerFor(git.url, api, gitOrigins(config), http),
    token: await readSecret(token),
  };
}
