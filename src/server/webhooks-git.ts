// Webhooks of git forges: GitHub, GitLab and Gitea/Forgejo. Each one is authenticated before its body is
// parsed, and a push only yields the repository's URLs: the sync loop polls the sources at those URLs and
// reads the revision from git itself, never from the payload.
import { z } from 'zod';
import { gitTargets } from './source-match.ts';
import {
  accepted,
  badRequest,
  checkSignature,
  header,
  nothingToDo,
  type PollTarget,
  parsePayload,
  quote,
  tokensEqual,
  unauthorized,
  type WebhookRequest,
  type WebhookResult,
} from './webhook-request.ts';

const url = z.string().max(2048).optional();

// Only the fields read below; everything else in these large payloads is ignored, not validated.
const githubPush = z.object({
  repository: z.object({ clone_url: url, html_url: url, ssh_url: url, git_url: url }),
});
const gitlabPush = z.object({ project: z.object({ git_http_url: url, web_url: url }) });
const giteaPush = z.object({ repository: z.object({ clone_url: url, html_url: url }) });

const GITLAB_PUSH_EVENTS = new Set(['Push Hook', 'Tag Push Hook']);

// A pull request's number and repository only: what it is (head, fork, author) is asked of the forge's API.
const number = z.number().int().min(1).max(9_999_999_999);
const githubPull = z.object({
  action: z.string().max(64).optional(),
  number,
  repository: z.object({ clone_url: url, html_url: url, ssh_url: url }),
});
const gitlabMerge = z.object({
  object_attributes: z.object({ iid: number, action: z.string().max(64).optional() }),
  project: z.object({ git_http_url: url, web_url: url }),
});
const giteaPull = z.object({
  action: z.string().max(64).optional(),
  number,
  repository: z.object({ clone_url: url, html_url: url }),
});

/**
 * Pull-request actions that change what a preview shows, or which pull requests a deployment set deploys (a closed
 * or unlabelled one's environment goes at once).
 */
const PULL_ACTIONS = new Set([
  'opened',
  'reopened',
  'synchronize',
  'synchronized',
  'edited',
  'labeled',
  'unlabeled',
  'ready_for_review',
  'closed',
]);

function pullTargets(urls: readonly (string | undefined)[], n: number): PollTarget[] {
  return gitTargets(urls).map((t) => ({ kind: 'pull', url: (t as { url: string }).url, number: n }));
}

export function handleGithub(request: WebhookRequest, secret: string): WebhookResult {
  const denied = checkSignature(request, { headers: ['X-Hub-Signature-256'], prefix: 'sha256=', secret });
  if (denied) return denied;
  const event = header(request.headers, 'X-GitHub-Event');
  if (event === undefined) return badRequest('X-GitHub-Event header is missing');
  if (event === 'ping') return nothingToDo('ping');
  if (event === 'pull_request') {
    const pull = parsePayload(request, githubPull);
    if (!pull.ok) return pull.result;
    const act = pull.value.action;
    if (act !== undefined && !PULL_ACTIONS.has(act)) return nothingToDo(`pull_request ${quote(act)} ignored`);
    const repo = pull.value.repository;
    return accepted(
      'pull request',
      pullTargets([repo.clone_url, repo.html_url, repo.ssh_url], pull.value.number),
    );
  }
  if (event !== 'push') return nothingToDo(`event ${quote(event)} ignored`);
  const parsed = parsePayload(request, githubPush);
  if (!parsed.ok) return parsed.result;
  const repo = parsed.value.repository;
  return accepted('push', gitTargets([repo.clone_url, repo.html_url, repo.ssh_url, repo.git_url]));
}

export function handleGitlab(request: WebhookRequest, token: string): WebhookResult {
  const given = header(request.headers, 'X-Gitlab-Token');
  if (given === undefined) return unauthorized('X-Gitlab-Token header is missing');
  if (!tokensEqual(given, token)) return unauthorized('X-Gitlab-Token does not match');
  const event = header(request.headers, 'X-Gitlab-Event');
  if (event === undefined) return badRequest('X-Gitlab-Event header is missing');
  if (event === 'Merge Request Hook') {
    const merge = parsePayload(request, gitlabMerge);
    if (!merge.ok) return merge.result;
    const act = merge.value.object_attributes.action;
    if (act !== undefined && !['open', 'reopen', 'update', 'close', 'merge'].includes(act))
      return nothingToDo(`merge request ${quote(act)} ignored`);
    const project = merge.value.project;
    return accepted(
      'merge request',
      pullTargets([project.git_http_url, project.web_url], merge.value.object_attributes.iid),
    );
  }
  if (!GITLAB_PUSH_EVENTS.has(event)) return nothingToDo(`event ${quote(event)} ignored`);
  const parsed = parsePayload(request, gitlabPush);
  if (!parsed.ok) return parsed.result;
  const project = parsed.value.project;
  return accepted(
    event === 'Push Hook' ? 'push' : 'tag push',
    gitTargets([project.git_http_url, project.web_url]),
  );
}

/** Gitea, and Forgejo (which sends the same headers, and its own X-Forgejo-* copies of them). */
export function handleGitea(request: WebhookRequest, secret: string): WebhookResult {
  const denied = checkSignature(request, {
    headers: ['X-Gitea-Signature', 'X-Forgejo-Signature'],
    prefix: '',
    secret,
  });
  if (denied) return denied;
  const event = header(request.headers, 'X-Gitea-Event') ?? header(request.headers, 'X-Forgejo-Event');
  if (event === undefined) return badRequest('X-Gitea-Event header is missing');
  if (event === 'pull_request' || event === 'pull_request_sync' || event === 'pull_request_label') {
    const pull = parsePayload(request, giteaPull);
    if (!pull.ok) return pull.result;
    const act = pull.value.action;
    if (act !== undefined && !PULL_ACTIONS.has(act) && act !== 'label_updated')
      return nothingToDo(`pull_request ${quote(act)} ignored`);
    const repo = pull.value.repository;
    return accepted('pull request', pullTargets([repo.clone_url, repo.html_url], pull.value.number));
  }
  if (event !== 'push') return nothingToDo(`event ${quote(event)} ignored`);
  const parsed = parsePayload(request, giteaPush);
  if (!parsed.ok) return parsed.result;
  const repo = parsed.value.repository;
  return accepted('push', gitTargets([repo.clone_url, repo.html_url]));
}

// Bitbucket Cloud (`X-Event-Key: repo:push`, `pullrequest:created|updated|fulfilled|rejected`) and Bitbucket Data
// Center (`repo:refs_changed`, `pr:opened|pr:from_ref_updated|pr:modified|pr:merged|pr:declined`), both signing the body with the webhook's secret
// as `X-Hub-Signature: sha256=<hex HMAC-SHA256>`.
const bitbucketLinks = z.object({
  html: z.object({ href: url }).optional(),
  clone: z
    .array(z.object({ href: url, name: z.string().max(32).optional() }))
    .max(16)
    .optional(),
  self: z
    .array(z.object({ href: url }))
    .max(16)
    .optional(),
});
const bitbucketRepo = z.object({
  full_name: z.string().max(512).optional(),
  links: bitbucketLinks.optional(),
});
const bitbucketCloud = z.object({
  repository: bitbucketRepo,
  pullrequest: z.object({ id: number }).optional(),
});
const bitbucketServer = z.object({
  repository: bitbucketRepo.optional(),
  pullRequest: z.object({ id: number, toRef: z.object({ repository: bitbucketRepo }) }).optional(),
});

const BITBUCKET_PUSH = new Set(['repo:push', 'repo:refs_changed']);
// Merged and declined too: a pull-request deployment set removes that pull request's environment at once.
const BITBUCKET_PULL = new Set([
  'pullrequest:created',
  'pullrequest:updated',
  'pullrequest:fulfilled',
  'pullrequest:rejected',
  'pr:opened',
  'pr:from_ref_updated',
  'pr:modified',
  'pr:merged',
  'pr:declined',
]);

/** A Bitbucket repository's URLs: Cloud's page, Data Center's clone and browse links. */
function bitbucketUrls(repo: z.infer<typeof bitbucketRepo> | undefined): (string | undefined)[] {
  const links = repo?.links;
  const urls = [links?.html?.href, ...(links?.clone ?? []).map((c) => c.href)];
  // Data Center's browse link is HOST/projects/KEY/repos/SLUG/browse; its clone URL is HOST/scm/KEY/SLUG.git.
  for (const self of links?.self ?? []) {
    const m = /^(https?:\/\/[^?#]+?)\/projects\/([^/]+)\/repos\/([^/]+)\/browse\/?$/.exec(self.href ?? '');
    if (m) urls.push(`${m[1]}/scm/${m[2]}/${m[3]}.git`);
  }
  return urls;
}

export function handleBitbucket(request: WebhookRequest, secret: string): WebhookResult {
  const denied = checkSignature(request, { headers: ['X-Hub-Signature'], prefix: 'sha256=', secret });
  if (denied) return denied;
  const event = header(request.headers, 'X-Event-Key');
  if (event === undefined) return badRequest('X-Event-Key header is missing');
  if (event === 'diagnostics:ping') return nothingToDo('ping');
  if (BITBUCKET_PUSH.has(event)) {
    const parsed = parsePayload(request, z.object({ repository: bitbucketRepo }));
    if (!parsed.ok) return parsed.result;
    return accepted('push', gitTargets(bitbucketUrls(parsed.value.repository)));
  }
  if (BITBUCKET_PULL.has(event)) {
    if (event.startsWith('pr:')) {
      const parsed = parsePayload(request, bitbucketServer);
      if (!parsed.ok) return parsed.result;
      const pull = parsed.value.pullRequest;
      if (!pull) return badRequest('payload pullRequest is missing');
      return accepted('pull request', pullTargets(bitbucketUrls(pull.toRef.repository), pull.id));
    }
    const parsed = parsePayload(request, bitbucketCloud);
    if (!parsed.ok) return parsed.result;
    const pull = parsed.value.pullrequest;
    if (!pull) return badRequest('payload pullrequest is missing');
    return accepted('pull request', pullTargets(bitbucketUrls(parsed.value.repository), pull.id));
  }
  return nothingToDo(`event ${quote(event)} ignored`);
}
