// Webhook handlers: (headers, raw body, secret) in, a status with its reason and the sources to poll out.
// The payload is trusted only after authentication, and then only to pick sources: what gets deployed is
// decided by polling those sources, so a forged or replayed hook can at worst cause an extra poll.
// Pure apart from hashing: the HTTP plumbing is in http.ts.
import { z } from 'zod';
import { type ConfiguredSources, ociRepositories, targetOf } from './source-match.ts';
import {
  accepted,
  badRequest,
  checkSignature,
  type PollTarget,
  parsePayload,
  quote,
  type WebhookRequest,
  type WebhookResult,
} from './webhook-request.ts';
import { handleBitbucket, handleGitea, handleGithub, handleGitlab } from './webhooks-git.ts';
import { handleRegistry } from './webhooks-registry.ts';

export type { ConfiguredSources } from './source-match.ts';
export { normaliseImage, normaliseRepoUrl, selectSources } from './source-match.ts';
export type { PollTarget, WebhookRequest, WebhookResult } from './webhook-request.ts';

export const WEBHOOK_PROVIDERS = ['github', 'gitlab', 'gitea', 'bitbucket', 'generic', 'registry'] as const;
export type WebhookProvider = (typeof WEBHOOK_PROVIDERS)[number];

export function isWebhookProvider(name: string): name is WebhookProvider {
  return (WEBHOOK_PROVIDERS as readonly string[]).includes(name);
}

export interface WebhookContext {
  /** The provider's secret (github, gitea, bitbucket, generic) or token (gitlab, registry), resolved from its secretRef. */
  secret: string;
  /** What the generic hook's names refer to. */
  sources?: ConfiguredSources;
  /** Checked again here so that the handlers are safe to call without the HTTP layer's limit. */
  maxBodyBytes?: number;
}

export function handleWebhook(
  provider: WebhookProvider,
  request: WebhookRequest,
  context: WebhookContext,
): WebhookResult {
  if (context.maxBodyBytes !== undefined && request.body.length > context.maxBodyBytes) {
    return { status: 413, reason: `body is over the limit of ${context.maxBodyBytes} bytes` };
  }
  // An empty secret would make every signature computable by anyone; such a provider is not enabled.
  if (context.secret === '') return { status: 401, reason: `${provider} webhook has no secret configured` };
  switch (provider) {
    case 'github':
      return handleGithub(request, context.secret);
    case 'gitlab':
      return handleGitlab(request, context.secret);
    case 'gitea':
      return handleGitea(request, context.secret);
    case 'bitbucket':
      return handleBitbucket(request, context.secret);
    case 'generic':
      return handleGeneric(request, context.secret, context.sources ?? { git: [], registry: [] });
    case 'registry':
      return handleRegistry(request, context.secret);
  }
}

const MAX_NAMES = 1000;
const genericBody = z.object({ sources: z.array(z.string().min(1).max(253)).max(MAX_NAMES).optional() });
// Unknown names are listed in the reason, but only a few: the list is for a human reading a delivery log.
const MAX_LISTED = 5;

/**
 * For CI systems and scripts: `X-Mooring-Signature: sha256=<hex HMAC-SHA256 of the body>` and
 * `{"sources": ["name", …]}` naming configured git and registry sources; no list, or an empty one, means all.
 */
export function handleGeneric(
  request: WebhookRequest,
  secret: string,
  sources: ConfiguredSources,
): WebhookResult {
  const denied = checkSignature(request, { headers: ['X-Mooring-Signature'], prefix: 'sha256=', secret });
  if (denied) return denied;
  const parsed = parsePayload(request, genericBody);
  if (!parsed.ok) return parsed.result;
  const wanted = parsed.value.sources ?? [];
  const all = [
    ...sources.git.map((s) => ({ name: s.name, target: targetOf({ kind: 'git', url: s.url }) })),
    ...[...sources.registry, ...ociRepositories(sources)].map((s) => ({
      name: s.name,
      target: targetOf({ kind: 'registry', image: s.image }),
    })),
  ];
  const byName = new Map(all.map((entry) => [entry.name, entry.target]));
  const unknown = [...new Set(wanted.filter((name) => !byName.has(name)))];
  if (unknown.length > 0) {
    const listed = unknown.slice(0, MAX_LISTED).map(quote).join(', ');
    const more = unknown.length > MAX_LISTED ? ` and ${unknown.length - MAX_LISTED} more` : '';
    return badRequest(`no git, registry, chart or oci source is named ${listed}${more}`);
  }
  const chosen =
    wanted.length === 0 ? all.map((entry) => entry.target) : wanted.map((name) => byName.get(name));
  const targets = new Map<string, PollTarget>();
  for (const target of chosen) {
    if (target !== undefined)
      targets.set(
        target.kind === 'registry' ? `registry ${target.image}` : `${target.kind} ${target.url}`,
        target,
      );
  }
  return accepted(wanted.length === 0 ? 'all sources' : 'named sources', [...targets.values()]);
}
