// Webhook handlers against payloads shaped like the providers' own (test/fixtures/webhooks), signed the way
// each provider signs: what is authenticated, what is refused, and which sources each delivery names.
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type ConfiguredSources,
  handleWebhook,
  normaliseRepoUrl,
  type PollTarget,
  selectSources,
  type WebhookProvider,
} from '../../../src/server/webhooks.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'webhooks');
const fixture = (name: string): Buffer => readFileSync(join(FIXTURES, `${name}.json`));

const SECRET = 'correct horse battery staple';
const OTHER = 'not the secret';
const hmac = (body: Buffer | string, secret = SECRET) =>
  createHmac('sha256', secret).update(body).digest('hex');

const GITHUB_PUSH = fixture('github-push');
const GITHUB_PING = fixture('github-ping');
const GITLAB_PUSH = fixture('gitlab-push');
const GITLAB_TAG_PUSH = fixture('gitlab-tag-push');
const GITEA_PUSH = fixture('gitea-push');
const REGISTRY_PUSH = fixture('registry-push');
const NOT_JSON = Buffer.from('<html>not json</html>');

const SOURCES: ConfiguredSources = {
  git: [
    { name: 'web-manifests', url: 'https://github.com/mooring-demo/web-app' },
    { name: 'platform', url: 'https://gitlab.example.com/platform/deploy-config.git' },
  ],
  registry: [
    { name: 'web-image', image: 'registry.example.com:5000/team/web' },
    { name: 'nginx', image: 'nginx' },
  ],
};

const git = (url: string): PollTarget => ({ kind: 'git', url });
const image = (name: string): PollTarget => ({ kind: 'registry', image: name });
const GITHUB_TARGETS = [
  git('https://github.com/mooring-demo/web-app'),
  git('ssh://github.com/mooring-demo/web-app'),
  git('git://github.com/mooring-demo/web-app'),
];

interface Case {
  name: string;
  provider: WebhookProvider;
  headers: Record<string, string>;
  body: Buffer;
  status: 202 | 204 | 400 | 401 | 413;
  targets?: PollTarget[];
}

const github = (event: string, body: Buffer, signature = `sha256=${hmac(body)}`) => ({
  'x-github-event': event,
  'x-hub-signature-256': signature,
  'content-type': 'application/json',
});
const gitea = (event: string, body: Buffer, signature = hmac(body)) => ({
  'x-gitea-event': event,
  'x-gitea-signature': signature,
  'content-type': 'application/json',
});
const generic = (body: Buffer, signature = `sha256=${hmac(body)}`) => ({ 'x-mooring-signature': signature });
const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const FORM_PUSH = Buffer.from(`payload=${encodeURIComponent(GITHUB_PUSH.toString('utf8'))}`);

const GITHUB_PULL = json({
  action: 'synchronize',
  number: 12,
  pull_request: { head: { sha: 'a'.repeat(40) } },
  repository: {
    clone_url: 'https://github.com/mooring-demo/web-app.git',
    html_url: 'https://github.com/mooring-demo/web-app',
  },
});
const GITHUB_PULL_CLOSED = json({ ...JSON.parse(GITHUB_PULL.toString()), action: 'closed' });
const GITLAB_MERGE = json({
  object_kind: 'merge_request',
  object_attributes: { iid: 4, action: 'update' },
  project: { git_http_url: 'https://gitlab.example.com/platform/deploy-config.git' },
});
const GITEA_PULL = json({
  action: 'opened',
  number: 3,
  repository: { clone_url: 'https://github.com/mooring-demo/web-app.git' },
});
const pull = (url: string, number: number): PollTarget => ({ kind: 'pull', url, number });

const BITBUCKET_CLOUD_PULL = json({
  pullrequest: { id: 9 },
  repository: { full_name: 'ws/app', links: { html: { href: 'https://bitbucket.org/ws/app' } } },
});
const BITBUCKET_DC_PULL = json({
  pullRequest: {
    id: 5,
    toRef: {
      repository: {
        links: {
          clone: [
            { href: 'https://bitbucket.example.com/scm/plat/app.git', name: 'http' },
            { href: 'ssh://git@bitbucket.example.com:7999/plat/app.git', name: 'ssh' },
          ],
          self: [{ href: 'https://bitbucket.example.com/projects/PLAT/repos/app/browse' }],
        },
      },
    },
  },
});
const BITBUCKET_DC_PUSH = json({
  repository: { links: { self: [{ href: 'https://bitbucket.example.com/projects/PLAT/repos/app/browse' }] } },
});
const bitbucket = (event: string, body: Buffer, signature = `sha256=${hmac(body)}`) => ({
  'x-event-key': event,
  'x-hub-signature': signature,
  'content-type': 'application/json',
});

const cases: Case[] = [
  // GitHub
  {
    name: 'github push',
    provider: 'github',
    headers: github('push', GITHUB_PUSH),
    body: GITHUB_PUSH,
    status: 202,
    targets: GITHUB_TARGETS,
  },
  {
    name: 'github push, form-encoded',
    provider: 'github',
    headers: {
      ...github('push', FORM_PUSH),
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: FORM_PUSH,
    status: 202,
    targets: GITHUB_TARGETS,
  },
  {
    name: 'github pull request pushed to',
    provider: 'github',
    headers: github('pull_request', GITHUB_PULL),
    body: GITHUB_PULL,
    status: 202,
    targets: [pull('https://github.com/mooring-demo/web-app', 12)],
  },
  {
    // A pull-request deployment set removes the pull request's environment at once.
    name: 'github pull request closed',
    provider: 'github',
    headers: github('pull_request', GITHUB_PULL_CLOSED),
    body: GITHUB_PULL_CLOSED,
    status: 202,
    targets: [pull('https://github.com/mooring-demo/web-app', 12)],
  },
  {
    name: 'github pull request assigned',
    provider: 'github',
    headers: github('pull_request', json({ ...JSON.parse(GITHUB_PULL.toString()), action: 'assigned' })),
    body: json({ ...JSON.parse(GITHUB_PULL.toString()), action: 'assigned' }),
    status: 204,
  },
  {
    name: 'gitlab merge request updated',
    provider: 'gitlab',
    headers: { 'x-gitlab-token': SECRET, 'x-gitlab-event': 'Merge Request Hook' },
    body: GITLAB_MERGE,
    status: 202,
    targets: [pull('https://gitlab.example.com/platform/deploy-config', 4)],
  },
  {
    name: 'gitea pull request opened',
    provider: 'gitea',
    headers: gitea('pull_request', GITEA_PULL),
    body: GITEA_PULL,
    status: 202,
    targets: [pull('https://github.com/mooring-demo/web-app', 3)],
  },
  {
    name: 'bitbucket cloud pull request updated',
    provider: 'bitbucket',
    headers: bitbucket('pullrequest:updated', BITBUCKET_CLOUD_PULL),
    body: BITBUCKET_CLOUD_PULL,
    status: 202,
    targets: [pull('https://bitbucket.org/ws/app', 9)],
  },
  {
    name: 'bitbucket data center pull request opened',
    provider: 'bitbucket',
    headers: bitbucket('pr:opened', BITBUCKET_DC_PULL),
    body: BITBUCKET_DC_PULL,
    status: 202,
    targets: [
      pull('https://bitbucket.example.com/scm/plat/app', 5),
      pull('ssh://bitbucket.example.com:7999/plat/app', 5),
    ],
  },
  {
    name: 'bitbucket cloud pull request merged',
    provider: 'bitbucket',
    headers: bitbucket('pullrequest:fulfilled', BITBUCKET_CLOUD_PULL),
    body: BITBUCKET_CLOUD_PULL,
    status: 202,
    targets: [pull('https://bitbucket.org/ws/app', 9)],
  },
  {
    name: 'bitbucket data center pull request declined',
    provider: 'bitbucket',
    headers: bitbucket('pr:declined', BITBUCKET_DC_PULL),
    body: BITBUCKET_DC_PULL,
    status: 202,
    targets: [
      pull('https://bitbucket.example.com/scm/plat/app', 5),
      pull('ssh://bitbucket.example.com:7999/plat/app', 5),
    ],
  },
  {
    name: 'bitbucket data center push',
    provider: 'bitbucket',
    headers: bitbucket('repo:refs_changed', BITBUCKET_DC_PUSH),
    body: BITBUCKET_DC_PUSH,
    status: 202,
    targets: [git('https://bitbucket.example.com/scm/plat/app')],
  },
  {
    name: 'bitbucket signed with another secret',
    provider: 'bitbucket',
    headers: bitbucket('repo:push', BITBUCKET_DC_PUSH, `sha256=${hmac(BITBUCKET_DC_PUSH, OTHER)}`),
    body: BITBUCKET_DC_PUSH,
    status: 401,
  },
  {
    name: 'bitbucket comment event',
    provider: 'bitbucket',
    headers: bitbucket('pullrequest:comment_created', BITBUCKET_CLOUD_PULL),
    body: BITBUCKET_CLOUD_PULL,
    status: 204,
  },
  {
    name: 'github ping',
    provider: 'github',
    headers: github('ping', GITHUB_PING),
    body: GITHUB_PING,
    status: 204,
  },
  {
    name: 'github event other than push',
    provider: 'github',
    headers: github('issues', GITHUB_PING),
    body: GITHUB_PING,
    status: 204,
  },
  {
    name: 'github signed with another secret',
    provider: 'github',
    headers: github('push', GITHUB_PUSH, `sha256=${hmac(GITHUB_PUSH, OTHER)}`),
    body: GITHUB_PUSH,
    status: 401,
  },
  {
    name: 'github body changed after signing',
    provider: 'github',
    headers: github('push', GITHUB_PUSH),
    body: Buffer.from(GITHUB_PUSH.toString('utf8').replace('web-app', 'evil-app')),
    status: 401,
  },
  {
    name: 'github without signature',
    provider: 'github',
    headers: { 'x-github-event': 'push' },
    body: GITHUB_PUSH,
    status: 401,
  },
  {
    name: 'github signature one hex digit short',
    provider: 'github',
    headers: github('push', GITHUB_PUSH, `sha256=${hmac(GITHUB_PUSH).slice(0, 63)}`),
    body: GITHUB_PUSH,
    status: 401,
  },
  {
    name: 'github signature with extra bytes',
    provider: 'github',
    headers: github('push', GITHUB_PUSH, `sha256=${hmac(GITHUB_PUSH)}00`),
    body: GITHUB_PUSH,
    status: 401,
  },
  {
    name: 'github signature of the right length but not hex',
    provider: 'github',
    headers: github('push', GITHUB_PUSH, `sha256=${'z'.repeat(64)}`),
    body: GITHUB_PUSH,
    status: 401,
  },
  {
    name: 'github legacy sha1 signature only',
    provider: 'github',
    headers: github(
      'push',
      GITHUB_PUSH,
      `sha1=${createHmac('sha1', SECRET).update(GITHUB_PUSH).digest('hex')}`,
    ),
    body: GITHUB_PUSH,
    status: 401,
  },
  {
    name: 'github signed non-JSON',
    provider: 'github',
    headers: github('push', NOT_JSON),
    body: NOT_JSON,
    status: 400,
  },
  {
    name: 'github push without repository',
    provider: 'github',
    headers: github('push', json({ ref: 'refs/heads/main' })),
    body: json({ ref: 'refs/heads/main' }),
    status: 400,
  },
  {
    name: 'github without event header',
    provider: 'github',
    headers: { 'x-hub-signature-256': `sha256=${hmac(GITHUB_PUSH)}` },
    body: GITHUB_PUSH,
    status: 400,
  },
  // GitLab
  {
    name: 'gitlab push',
    provider: 'gitlab',
    headers: { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': SECRET },
    body: GITLAB_PUSH,
    status: 202,
    targets: [git('https://gitlab.example.com/platform/deploy-config')],
  },
  {
    name: 'gitlab tag push on a self-managed port',
    provider: 'gitlab',
    headers: { 'x-gitlab-event': 'Tag Push Hook', 'x-gitlab-token': SECRET },
    body: GITLAB_TAG_PUSH,
    status: 202,
    targets: [git('http://gitlab.internal:8929/platform/release-manifests')],
  },
  {
    name: 'gitlab merge request closed',
    provider: 'gitlab',
    headers: { 'x-gitlab-event': 'Merge Request Hook', 'x-gitlab-token': SECRET },
    body: json({ ...JSON.parse(GITLAB_MERGE.toString()), object_attributes: { iid: 4, action: 'close' } }),
    status: 202,
    targets: [pull('https://gitlab.example.com/platform/deploy-config', 4)],
  },
  {
    name: 'gitlab merge request approved',
    provider: 'gitlab',
    headers: { 'x-gitlab-event': 'Merge Request Hook', 'x-gitlab-token': SECRET },
    body: json({ ...JSON.parse(GITLAB_MERGE.toString()), object_attributes: { iid: 4, action: 'approved' } }),
    status: 204,
  },
  {
    name: 'gitlab wrong token',
    provider: 'gitlab',
    headers: { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': OTHER },
    body: GITLAB_PUSH,
    status: 401,
  },
  {
    name: 'gitlab token with one character more',
    provider: 'gitlab',
    headers: { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': `${SECRET}x` },
    body: GITLAB_PUSH,
    status: 401,
  },
  {
    name: 'gitlab without token',
    provider: 'gitlab',
    headers: { 'x-gitlab-event': 'Push Hook' },
    body: GITLAB_PUSH,
    status: 401,
  },
  {
    name: 'gitlab non-JSON',
    provider: 'gitlab',
    headers: { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': SECRET },
    body: NOT_JSON,
    status: 400,
  },
  // Gitea / Forgejo
  {
    name: 'gitea push',
    provider: 'gitea',
    headers: gitea('push', GITEA_PUSH),
    body: GITEA_PUSH,
    status: 202,
    targets: [git('http://gitea.local:3000/team/app')],
  },
  {
    name: 'forgejo push (X-Forgejo-* headers only)',
    provider: 'gitea',
    headers: { 'x-forgejo-event': 'push', 'x-forgejo-signature': hmac(GITEA_PUSH) },
    body: GITEA_PUSH,
    status: 202,
    targets: [git('http://gitea.local:3000/team/app')],
  },
  {
    name: 'gitea create event',
    provider: 'gitea',
    headers: gitea('create', GITEA_PUSH),
    body: GITEA_PUSH,
    status: 204,
  },
  {
    name: 'gitea wrong signature',
    provider: 'gitea',
    headers: gitea('push', GITEA_PUSH, hmac(GITEA_PUSH, OTHER)),
    body: GITEA_PUSH,
    status: 401,
  },
  {
    name: 'gitea signature with a GitHub-style prefix',
    provider: 'gitea',
    headers: gitea('push', GITEA_PUSH, `sha256=${hmac(GITEA_PUSH)}`),
    body: GITEA_PUSH,
    status: 401,
  },
  {
    name: 'gitea signature of the wrong length',
    provider: 'gitea',
    headers: gitea('push', GITEA_PUSH, hmac(GITEA_PUSH).slice(0, 40)),
    body: GITEA_PUSH,
    status: 401,
  },
  {
    name: 'gitea without signature',
    provider: 'gitea',
    headers: { 'x-gitea-event': 'push' },
    body: GITEA_PUSH,
    status: 401,
  },
  {
    name: 'gitea signed non-JSON',
    provider: 'gitea',
    headers: gitea('push', NOT_JSON),
    body: NOT_JSON,
    status: 400,
  },
  // Generic
  {
    name: 'generic naming sources',
    provider: 'generic',
    headers: generic(json({ sources: ['platform', 'web-image'] })),
    body: json({ sources: ['platform', 'web-image'] }),
    status: 202,
    targets: [
      git('https://gitlab.example.com/platform/deploy-config'),
      image('registry.example.com:5000/team/web'),
    ],
  },
  {
    name: 'generic with an empty list means every source',
    provider: 'generic',
    headers: generic(json({ sources: [] })),
    body: json({ sources: [] }),
    status: 202,
    targets: [
      git('https://github.com/mooring-demo/web-app'),
      git('https://gitlab.example.com/platform/deploy-config'),
      image('registry.example.com:5000/team/web'),
      image('docker.io/library/nginx'),
    ],
  },
  {
    name: 'generic naming an unknown source',
    provider: 'generic',
    headers: generic(json({ sources: ['platform', 'nope'] })),
    body: json({ sources: ['platform', 'nope'] }),
    status: 400,
  },
  {
    name: 'generic with sources that are not names',
    provider: 'generic',
    headers: generic(json({ sources: 'platform' })),
    body: json({ sources: 'platform' }),
    status: 400,
  },
  {
    name: 'generic wrong signature',
    provider: 'generic',
    headers: generic(json({}), `sha256=${hmac(json({}), OTHER)}`),
    body: json({}),
    status: 401,
  },
  { name: 'generic without signature', provider: 'generic', headers: {}, body: json({}), status: 401 },
  {
    name: 'generic signed non-JSON',
    provider: 'generic',
    headers: generic(NOT_JSON),
    body: NOT_JSON,
    status: 400,
  },
  // Registry notifications
  {
    name: 'registry envelope: blob push, manifest push, manifest pull',
    provider: 'registry',
    headers: { authorization: `Bearer ${SECRET.replaceAll(' ', '-')}` },
    body: REGISTRY_PUSH,
    status: 202,
    targets: [image('registry.example.com:5000/team/web')],
  },
  {
    name: 'registry envelope with blob pushes only',
    provider: 'registry',
    headers: { authorization: `Bearer ${SECRET.replaceAll(' ', '-')}` },
    body: json({
      events: JSON.parse(REGISTRY_PUSH.toString('utf8')).events.filter(
        (e: { target: { mediaType: string } }) => e.target.mediaType === 'application/octet-stream',
      ),
    }),
    status: 204,
  },
  {
    name: 'registry wrong token',
    provider: 'registry',
    headers: { authorization: 'Bearer not-the-token' },
    body: REGISTRY_PUSH,
    status: 401,
  },
  {
    name: 'registry basic auth instead of a bearer token',
    provider: 'registry',
    headers: { authorization: `Basic ${Buffer.from(`u:${SECRET}`).toString('base64')}` },
    body: REGISTRY_PUSH,
    status: 401,
  },
  {
    name: 'registry without Authorization',
    provider: 'registry',
    headers: {},
    body: REGISTRY_PUSH,
    status: 401,
  },
  {
    name: 'registry non-JSON',
    provider: 'registry',
    headers: { authorization: `Bearer ${SECRET.replaceAll(' ', '-')}` },
    body: NOT_JSON,
    status: 400,
  },
  {
    name: 'registry JSON that is not an envelope',
    provider: 'registry',
    headers: { authorization: `Bearer ${SECRET.replaceAll(' ', '-')}` },
    body: json({ action: 'push' }),
    status: 400,
  },
];

// A bearer token cannot hold spaces; the registry's token is the same secret with dashes.
const secretOf = (provider: WebhookProvider) =>
  provider === 'registry' ? SECRET.replaceAll(' ', '-') : SECRET;

describe('handleWebhook', () => {
  it.each(cases)('$name -> $status', (c) => {
    const result = handleWebhook(
      c.provider,
      { headers: c.headers, body: c.body },
      { secret: secretOf(c.provider), sources: SOURCES, maxBodyBytes: 1024 * 1024 },
    );
    expect(result.status, result.reason).toBe(c.status);
    if (c.status === 202) {
      expect(result.status === 202 && result.targets).toEqual(c.targets);
    } else {
      expect(result).not.toHaveProperty('targets');
    }
    // Reasons end up in logs and delivery pages: never a secret, a token or a signature.
    expect(result.reason).not.toContain(SECRET);
    expect(result.reason).not.toContain(secretOf(c.provider));
    for (const value of Object.values(c.headers)) {
      if (value.length >= 32)
        expect(result.reason).not.toContain(value.replace(/^(sha256=|Bearer |Basic )/, ''));
    }
  });

  it("accepts GitHub's published test vector", () => {
    // From GitHub's "Validating webhook deliveries": the signature is valid, the body is not JSON.
    const result = handleWebhook(
      'github',
      {
        headers: {
          'x-github-event': 'push',
          'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
        },
        body: Buffer.from('Hello, World!'),
      },
      { secret: "It's a Secret to Everybody" },
    );
    expect(result).toEqual({ status: 400, reason: 'body is not JSON' });
  });

  it('refuses a body over the limit before checking anything', () => {
    const result = handleWebhook(
      'github',
      { headers: github('push', GITHUB_PUSH), body: GITHUB_PUSH },
      { secret: SECRET, maxBodyBytes: GITHUB_PUSH.length - 1 },
    );
    expect(result.status).toBe(413);
  });

  it('refuses every delivery when the secret is empty', () => {
    const body = Buffer.from('{}');
    const headers = github('push', body, `sha256=${hmac(body, '')}`);
    expect(handleWebhook('github', { headers, body }, { secret: '' }).status).toBe(401);
  });

  it('treats a repeated signature header as missing', () => {
    const headers = { 'x-github-event': 'push', 'x-hub-signature-256': [`sha256=${hmac(GITHUB_PUSH)}`] };
    expect(handleWebhook('github', { headers, body: GITHUB_PUSH }, { secret: SECRET }).status).toBe(401);
  });
});

describe('normaliseRepoUrl', () => {
  it.each([
    ['https://git.example.com/team/app.git', 'https://git.example.com/team/app'],
    ['https://git.example.com/team/app', 'https://git.example.com/team/app'],
    ['https://git.example.com/team/app/', 'https://git.example.com/team/app'],
    ['https://git.example.com/team/app.git/', 'https://git.example.com/team/app'],
    ['https://user:p%40ss@Git.Example.COM/Team/App.git', 'https://git.example.com/team/app'],
    ['https://git.example.com:443/team/app?ref=main#readme', 'https://git.example.com/team/app'],
    ['http://git.example.com:8080/team/app.git', 'http://git.example.com:8080/team/app'],
    ['  https://git.example.com/team/app  ', 'https://git.example.com/team/app'],
    ['git@GitHub.com:Org/Repo.git', 'ssh://github.com/org/repo'],
    ['ssh://git@github.com:22/org/repo.git', 'ssh://github.com/org/repo'],
    ['ssh://git@gitea.local:2222/team/app.git', 'ssh://gitea.local:2222/team/app'],
    ['git://github.com/org/repo.git', 'git://github.com/org/repo'],
  ])('%s -> %s', (input, expected) => {
    expect(normaliseRepoUrl(input)).toBe(expected);
  });

  it.each(['', 'not a url', '/just/a/path', 'https://'])('%j is not a repository URL', (input) => {
    expect(normaliseRepoUrl(input)).toBeUndefined();
  });

  it('keeps http and https apart', () => {
    expect(normaliseRepoUrl('http://git.example.com/a')).not.toBe(
      normaliseRepoUrl('https://git.example.com/a'),
    );
  });
});

describe('selectSources', () => {
  it('maps the targets of real deliveries to configured source names', () => {
    const push = handleWebhook(
      'github',
      { headers: github('push', GITHUB_PUSH), body: GITHUB_PUSH },
      { secret: SECRET },
    );
    const registry = handleWebhook(
      'registry',
      { headers: { authorization: 'Bearer t' }, body: REGISTRY_PUSH },
      { secret: 't' },
    );
    if (push.status !== 202 || registry.status !== 202) throw new Error('expected two accepted deliveries');
    expect(selectSources([...push.targets, ...registry.targets], SOURCES)).toEqual([
      'web-manifests',
      'web-image',
    ]);
    expect(selectSources([image('docker.io/library/nginx')], SOURCES)).toEqual(['nginx']);
    expect(selectSources([git('https://github.com/someone/else')], SOURCES)).toEqual([]);
  });

  it('matches an SSH source by the https URL of a push that carries no SSH URL (Gitea, GitLab)', () => {
    const sources: ConfiguredSources = {
      git: [
        { name: 'scp', url: 'git@gitea.example.com:team/app.git' },
        { name: 'ssh', url: 'ssh://git@gitlab.example.com:2222/group/infra.git' },
        { name: 'https', url: 'http://gitea.example.com/team/app' },
      ],
      registry: [],
    };
    expect(selectSources([git('https://gitea.example.com/team/app')], sources)).toEqual(['scp']);
    expect(selectSources([git('https://gitlab.example.com/group/infra')], sources)).toEqual(['ssh']);
    // An https source stays exact: http and https are two servers.
    expect(selectSources([git('https://gitea.example.com/team/other')], sources)).toEqual([]);
  });
});
