// The pull-request comment and pull-request info clients of every forge, through fetch, against the forge receiver
// on loopback (test/testbed/forge-receiver.ts), whose every request is checked against the forge's published API
// description (GitHub's OpenAPI from @octokit/openapi; the documented shapes of the others): one comment per PR,
// updated in place, found on a later page, nobody else's comment touched; forks told apart; refusals in the error
// taxonomy, each naming the PR.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type MooringError, StalledError, TransientError, WaitingError } from '../../../src/errors.ts';
import { gitOrigins } from '../../../src/report/forges/forge-hosts.ts';
import {
  commentProviderFor,
  type PreviewCommentProvider,
  providerFor,
} from '../../../src/report/forges/select.ts';
import type { ProviderName } from '../../../src/report/forges/types.ts';
import {
  type ForgeReceiver,
  type ForgeReceiverOptions,
  startForgeReceiver,
} from '../../testbed/forge-receiver.ts';

// These tests run real work (processes, Git repositories, whole pages): a busy 2-core machine needs more than 5 s.
vi.setConfig({ testTimeout: 30_000 });

/** The origin of `url` as a configured Git source's: where a forge client for it may be built. */
const own = (url: string) => gitOrigins({ sources: { git: [{ url }] } });

const MARKER = '<!-- mooring-preview -->';
const TOKEN = 'token-7Qx9-never-shown';
const ME = 'mooring-bot';

interface Case {
  flavour: ProviderName;
  repoUrl: string;
  /** How errors name the repository. */
  repo: string;
  /** List requests to read 151 comments: each forge pages differently. */
  pagesFor151: number;
  /** The listing starts with the newest comment (Bitbucket Server's activities). */
  newestFirst?: boolean;
}

const CASES: Case[] = [
  { flavour: 'github', repoUrl: 'https://github.com/acme/web.git', repo: 'acme/web', pagesFor151: 2 },
  {
    flavour: 'gitlab',
    repoUrl: 'git@gitlab.example.com:acme/platform/web.git',
    repo: 'acme/platform/web',
    pagesFor151: 2,
  },
  // Gitea's issueGetComments is not paged: one answer holds them all.
  { flavour: 'gitea', repoUrl: 'https://gitea.example.com/acme/web.git', repo: 'acme/web', pagesFor151: 1 },
  // 50 a page (the pull-request resources' own maximum).
  { flavour: 'bitbucket-cloud', repoUrl: 'git@bitbucket.org:acme/web.git', repo: 'acme/web', pagesFor151: 4 },
  // Activities, 100 a page: 151 comments and the PR's opening.
  {
    flavour: 'bitbucket-server',
    repoUrl: 'https://bitbucket.example.com/scm/acme/web.git',
    repo: 'ACME/web',
    pagesFor151: 2,
    newestFirst: true,
  },
];

let receiver: ForgeReceiver | undefined;

afterEach(async () => {
  const problems = receiver?.problems() ?? [];
  await receiver?.close();
  receiver = undefined;
  expect(problems).toEqual([]);
});

async function start(c: Case, options: ForgeReceiverOptions = {}) {
  receiver = await startForgeReceiver(c.flavour, { user: ME, token: TOKEN, ...options });
  const provider = commentProviderFor(
    c.repoUrl,
    { provider: c.flavour, apiUrl: receiver.url },
    own(c.repoUrl),
    { timeoutMs: 2000 },
  );
  return { forge: receiver, provider };
}

function writes(forge: ForgeReceiver): string[] {
  return forge.requests
    .filter((r) => r.operation === 'create-comment' || r.operation === 'update-comment')
    .map((r) => r.operation ?? '');
}

async function failure(promise: Promise<unknown>): Promise<MooringError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof Error)) throw new Error('expected a failure');
  return error as MooringError;
}

describe.each(CASES)('$flavour', (c) => {
  const target = (number: number) => ({ repoUrl: c.repoUrl, number });

  it('creates the comment, then edits the same one; other comments stay as they were', async () => {
    const { forge, provider } = await start(c);
    forge.setPullRequest(7);
    forge.addComment(7, 'alice', 'Looks good to me');
    // Someone else's comment holding the marker is not taken for ours (every forge here tells whose token it is).
    forge.addComment(7, 'mallory', `${MARKER}\nA fake preview: nothing changes`);

    const first = await provider.upsert(target(7), `${MARKER}\n2 objects change`, MARKER, TOKEN);
    expect(first.created).toBe(true);
    expect(first.id).toMatch(/^\d+$/);
    const second = await provider.upsert(target(7), `${MARKER}\n3 objects change`, MARKER, TOKEN);
    expect(second).toMatchObject({ id: first.id, created: false });

    expect(forge.comments(7)).toEqual([
      'Looks good to me',
      `${MARKER}\nA fake preview: nothing changes`,
      `${MARKER}\n3 objects change`,
    ]);
    const ours = forge.thread(7).filter((comment) => comment.author === ME && comment.body.includes(MARKER));
    expect(ours.map((comment) => String(comment.id))).toEqual([first.id]);
    expect(writes(forge)).toEqual(['create-comment', 'update-comment']);

    // The same body again: nothing to write.
    const third = await provider.upsert(target(7), `${MARKER}\n3 objects change`, MARKER, TOKEN);
    expect(third).toMatchObject({ id: first.id, created: false });
    expect(writes(forge)).toEqual(['create-comment', 'update-comment']);
  });

  it('finds its comment after 150 others, on a later page', async () => {
    const { forge, provider } = await start(c);
    forge.setPullRequest(9);
    const others = () => {
      for (let i = 0; i < 150; i += 1) forge.addComment(9, i % 2 ? 'alice' : 'bob', `comment ${i}`);
    };
    // Listed after the 150 others: the last comment, or the first where the newest is listed first.
    if (!c.newestFirst) others();
    const id = forge.addComment(9, ME, `${MARKER}\nan older preview`);
    if (c.newestFirst) others();

    const posted = await provider.upsert(target(9), `${MARKER}\nthe new preview`, MARKER, TOKEN);

    expect(posted).toMatchObject({ id: String(id), created: false });
    const bodies = forge.comments(9);
    expect(bodies).toHaveLength(151);
    expect(bodies.filter((body) => body.includes(MARKER))).toEqual([`${MARKER}\nthe new preview`]);
    expect(bodies.filter((body) => body.startsWith('comment ')).length).toBe(150);
    expect(forge.requests.filter((r) => r.operation === 'list-comments')).toHaveLength(c.pagesFor151);
    expect(writes(forge)).toEqual(['update-comment']);
  });

  it('describes a pull request from a fork and one from the repository itself', async () => {
    const { forge, provider } = await start(c);
    const sha = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';
    forge.setPullRequest(11, {
      fromFork: true,
      author: 'eve',
      labels: ['preview', 'team/web'],
      headSha: sha,
      baseRef: 'release-2',
      headRef: 'feature/web-color',
    });
    forge.setPullRequest(12, { state: 'merged', author: 'alice', headSha: 'f'.repeat(40) });

    const fork = await provider.pullRequest(target(11), TOKEN);
    const own = await provider.pullRequest(target(12), TOKEN);

    const labelled = !c.flavour.startsWith('bitbucket');
    // When it was updated, where the forge says: a pull-request set's ttl reads it.
    const { updatedAt, ...described } = fork;
    expect(updatedAt === undefined || !Number.isNaN(Date.parse(updatedAt))).toBe(true);
    expect(described).toEqual({
      number: 11,
      state: 'open',
      headSha: c.flavour === 'bitbucket-cloud' ? sha.slice(0, 12) : sha,
      baseRef: 'release-2',
      headRef: 'feature/web-color',
      fromFork: true,
      author: 'eve',
      labels: labelled ? ['preview', 'team/web'] : [],
    });
    expect(own).toMatchObject({
      number: 12,
      state: 'merged',
      fromFork: false,
      author: 'alice',
      baseRef: 'main',
    });
  });

  it('waits as long as a 429 asks, naming the pull request', async () => {
    const { forge, provider } = await start(c);
    forge.setPullRequest(7);
    forge.fail({ status: 429, retryAfter: 7 });

    const error = await failure(provider.upsert(target(7), `${MARKER}\nx`, MARKER, TOKEN));

    expect(error).toBeInstanceOf(WaitingError);
    expect((error as WaitingError).retryAfterMs).toBe(7000);
    expect(error.subject?.describe).toBe(`${c.repo}#7`);
    expect(error.message).toContain('rate limited');
    expect(forge.comments(7)).toEqual([]);
  });

  it('backs off from a 500', async () => {
    const { forge, provider } = await start(c);
    forge.setPullRequest(7);
    forge.fail({ status: 500 });

    const error = await failure(provider.pullRequest(target(7), TOKEN));

    expect(error).toBeInstanceOf(TransientError);
    expect(error.message).toMatch(new RegExp(`^${c.repo}#7: .*HTTP 500`));
  });

  it('stops at a 404 with the server message and a hint, naming the pull request', async () => {
    const { provider } = await start(c);

    const upsert = await failure(provider.upsert(target(404), `${MARKER}\nx`, MARKER, TOKEN));
    const info = await failure(provider.pullRequest(target(404), TOKEN));

    for (const error of [upsert, info]) {
      expect(error).toBeInstanceOf(StalledError);
      expect(error.subject?.describe).toBe(`${c.repo}#404`);
      expect(error.message).toContain('HTTP 404');
      expect(error.message).toContain('does not exist, or the token cannot see it');
      expect(error.message).not.toContain(TOKEN);
    }
  });

  it('stops at a refused token without retrying', async () => {
    const { forge, provider } = await start(c);
    forge.setPullRequest(7);

    const error = await failure(provider.upsert(target(7), `${MARKER}\nx`, MARKER, 'another-token'));

    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toContain('HTTP 401');
    expect(error.message).toContain('check the token');
    expect(error.message).not.toContain('another-token');
  });

  it('posts commit statuses the receiver records, in the shape the forge documents', async () => {
    receiver = await startForgeReceiver(c.flavour, { user: ME });
    const provider = providerFor(c.repoUrl, { provider: c.flavour, apiUrl: receiver.url }, own(c.repoUrl));
    const commit = '3f2a1c9d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39';

    await provider.post(
      { repoUrl: c.repoUrl, commit },
      { state: 'success', description: 'synced to prod', context: 'mooring/prod' },
      TOKEN,
    );

    expect(receiver.statuses()).toEqual([
      expect.objectContaining({ commit, description: 'synced to prod', context: 'mooring/prod' }),
    ]);
  });
});

describe('what a comment may be', () => {
  const c = CASES[0] as Case;

  it('refuses a body without its marker or longer than the API takes, before any request', async () => {
    const { forge, provider } = await start(c);
    forge.setPullRequest(7);

    const unmarked = await failure(
      provider.upsert({ repoUrl: c.repoUrl, number: 7 }, 'no marker', MARKER, TOKEN),
    );
    const long = await failure(
      provider.upsert(
        { repoUrl: c.repoUrl, number: 7 },
        MARKER + 'x'.repeat(provider.maxBody),
        MARKER,
        TOKEN,
      ),
    );
    const number = await failure(provider.upsert({ repoUrl: c.repoUrl, number: 1.5 }, MARKER, MARKER, TOKEN));

    expect(unmarked).toBeInstanceOf(StalledError);
    expect(unmarked.message).toContain('does not hold its marker');
    expect(long).toBeInstanceOf(StalledError);
    expect(long.message).toContain(`more than the ${provider.maxBody}`);
    expect(number).toBeInstanceOf(StalledError);
    expect(number.subject?.describe).toBe('github.com/acme/web#1.5');
    expect(forge.requests).toEqual([]);
  });

  it('takes only Bot comments for ours when GitHub will not say whose token it is (an app)', async () => {
    const { forge, provider } = await start(c, { app: true });
    forge.setPullRequest(7);
    forge.addComment(7, 'mallory', `${MARKER}\nfake`);

    const first = await provider.upsert({ repoUrl: c.repoUrl, number: 7 }, `${MARKER}\none`, MARKER, TOKEN);
    const second = await provider.upsert({ repoUrl: c.repoUrl, number: 7 }, `${MARKER}\ntwo`, MARKER, TOKEN);

    expect(first.created).toBe(true);
    expect(second).toMatchObject({ id: first.id, created: false });
    expect(forge.thread(7).map((comment) => [comment.author, comment.body])).toEqual([
      ['mallory', `${MARKER}\nfake`],
      [`${ME}[bot]`, `${MARKER}\ntwo`],
    ]);
  });

  it('gives up past 20 pages rather than adding a comment it would never find again', async () => {
    const { forge, provider } = await start(c);
    forge.setPullRequest(7);
    for (let i = 0; i < 2001; i += 1) forge.addComment(7, 'alice', `comment ${i}`);

    const error = await failure(
      provider.upsert({ repoUrl: c.repoUrl, number: 7 }, `${MARKER}\nx`, MARKER, TOKEN),
    );

    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toContain('more than 20 pages of comments');
    expect(forge.requests.filter((r) => r.operation === 'list-comments')).toHaveLength(20);
    expect(writes(forge)).toEqual([]);
  });

  it('reports no answer as transient', async () => {
    receiver = await startForgeReceiver('github', { user: ME });
    receiver.setPullRequest(7);
    receiver.fail('hang');
    const provider = commentProviderFor(
      c.repoUrl,
      { provider: 'github', apiUrl: receiver.url },
      own(c.repoUrl),
      { timeoutMs: 200 },
    );

    const error = await failure(provider.pullRequest({ repoUrl: c.repoUrl, number: 7 }, TOKEN));

    expect(error).toBeInstanceOf(TransientError);
    expect(error.message).toContain('no answer in 200 ms');
  });

  it("gives a request up at the abort of the caller's signal, well before its timeout", async () => {
    receiver = await startForgeReceiver('github', { user: ME });
    receiver.setPullRequest(7);
    receiver.fail('hang');
    const abandoned = new AbortController();
    const provider = commentProviderFor(
      c.repoUrl,
      { provider: 'github', apiUrl: receiver.url },
      own(c.repoUrl),
      { timeoutMs: 60_000, signal: abandoned.signal },
    );
    const started = Date.now();
    setTimeout(() => abandoned.abort(), 100);

    const error = await failure(provider.pullRequest({ repoUrl: c.repoUrl, number: 7 }, TOKEN));

    expect(error).toBeDefined();
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('treats a GitHub 403 with the rate limit spent as a wait', async () => {
    const { forge, provider } = await start(c);
    forge.setPullRequest(7);
    forge.fail({ status: 403, headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '30' } });

    const error = await failure(provider.pullRequest({ repoUrl: c.repoUrl, number: 7 }, TOKEN));

    expect(error).toBeInstanceOf(WaitingError);
    expect((error as WaitingError).retryAfterMs).toBe(30_000);
  });
});

// A Bitbucket Server personal repository (project ~user): its REST path keeps the project key `~alice`, its pages
// live under users/alice, as the server serves them.
describe('a Bitbucket Server personal repository', () => {
  it('asks the REST API under projects/~alice and links the comment under users/alice', async () => {
    const seen: string[] = [];
    const repoUrl = 'https://bitbucket.example.com/scm/~alice/web.git';
    const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input);
      seen.push(`${init?.method ?? 'GET'} ${url}`);
      const body = url.includes('/activities')
        ? { values: [], isLastPage: true }
        : { id: 7, version: 0, text: MARKER, author: { name: 'me' } };
      return new Response(JSON.stringify(body), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    }) as typeof globalThis.fetch;
    const provider = commentProviderFor(
      repoUrl,
      { provider: 'bitbucket-server', apiUrl: 'https://bitbucket.example.com' },
      own(repoUrl),
      { fetch },
    );
    const posted = await provider.upsert({ repoUrl, number: 3 }, MARKER, MARKER, TOKEN);
    expect(seen).toEqual([
      'GET https://bitbucket.example.com/rest/api/1.0/projects/~alice/repos/web/pull-requests/3/activities?start=0&limit=100',
      'POST https://bitbucket.example.com/rest/api/1.0/projects/~alice/repos/web/pull-requests/3/comments',
    ]);
    expect(posted.url).toBe(
      'https://bitbucket.example.com/users/alice/repos/web/pull-requests/3/overview?commentId=7',
    );
  });
});

// Answers no forge should give, from a stand-in fetch: each is refused with a clear StalledError.
describe('answers that are not the API', () => {
  function stub(answer: (url: string) => Response): { seen: string[]; provider: PreviewCommentProvider } {
    const seen: string[] = [];
    const fetch = (async (input: string | URL | Request) => {
      const url = String(input);
      seen.push(url);
      return answer(url);
    }) as typeof globalThis.fetch;
    return {
      seen,
      provider: commentProviderFor(
        'git@bitbucket.org:acme/web.git',
        { provider: 'auto' },
        own('git@bitbucket.org:acme/web.git'),
        { fetch },
      ),
    };
  }
  const json = (body: unknown, status = 200) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const target = { repoUrl: 'git@bitbucket.org:acme/web.git', number: 3 };

  it('refuses a list that is not a list', async () => {
    const { provider } = stub((url) =>
      url.endsWith('/user') ? json({ uuid: '{me}' }) : json({ values: 'none' }),
    );

    const error = await failure(provider.upsert(target, MARKER, MARKER, TOKEN));

    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toContain('with a string where its API gives a list of comments');
    expect(error.subject?.describe).toBe('acme/web#3');
  });

  it('does not follow a next page off the API with the token', async () => {
    const { provider, seen } = stub((url) =>
      url.endsWith('/user')
        ? json({ uuid: '{me}' })
        : json({ values: [], next: 'https://elsewhere.example/steal' }),
    );

    const error = await failure(provider.upsert(target, MARKER, MARKER, TOKEN));

    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toContain('next page outside apiUrl');
    expect(seen.every((url) => url.startsWith('https://api.bitbucket.org/2.0/'))).toBe(true);
  });

  it('refuses an answer of the wrong shape and a redirect', async () => {
    const wrong = stub(() => json({ id: 3, state: 'WEIRD' }));
    const moved = stub(
      () => new Response(null, { status: 301, headers: { location: 'https://elsewhere.example/x' } }),
    );

    const shape = await failure(wrong.provider.pullRequest(target, TOKEN));
    const redirect = await failure(moved.provider.pullRequest(target, TOKEN));

    expect(shape).toBeInstanceOf(StalledError);
    expect(shape.message).toContain('does not have the shape its API documents (state:');
    expect(redirect).toBeInstanceOf(StalledError);
    expect(redirect.message).toContain('was redirected to https://elsewhere.example/x');
  });
});

describe('commentProviderFor', () => {
  it.each([
    ['https://github.com/acme/web.git', 'auto', 'https://api.github.com/repos/acme/web/pulls/5'],
    ['git@ghe.example.com:acme/web.git', 'github', 'https://ghe.example.com/api/v3/repos/acme/web/pulls/5'],
    [
      'https://gitlab.com/acme/platform/web.git',
      'auto',
      'https://gitlab.com/api/v4/projects/acme%2Fplatform%2Fweb/merge_requests/5',
    ],
    [
      'https://git.example.com/acme/web.git',
      'gitea',
      'https://git.example.com/api/v1/repos/acme/web/pulls/5',
    ],
    [
      'git@bitbucket.org:acme/web.git',
      'auto',
      'https://api.bitbucket.org/2.0/repositories/acme/web/pullrequests/5',
    ],
    [
      'https://bb.example.com/bitbucket/scm/ACME/web.git',
      'bitbucket-server',
      'https://bb.example.com/bitbucket/rest/api/1.0/projects/ACME/repos/web/pull-requests/5',
    ],
  ] as const)('%s (%s) asks %s', async (repoUrl, provider, expected) => {
    const seen: string[] = [];
    const fetch = (async (input: string | URL | Request) => {
      seen.push(String(input));
      return new Response('{"message":"Not Found"}', { status: 404 });
    }) as typeof globalThis.fetch;

    const error = await failure(
      commentProviderFor(repoUrl, { provider }, own(repoUrl), { fetch }).pullRequest(
        { repoUrl, number: 5 },
        TOKEN,
      ),
    );

    expect(error).toBeInstanceOf(StalledError);
    expect(seen).toEqual([expected]);
  });

  it('will not guess the API of an unknown host', () => {
    expect(() =>
      commentProviderFor(
        'https://git.example.com/acme/web.git',
        { provider: 'auto' },
        own('https://git.example.com/acme/web.git'),
      ),
    ).toThrow(/cannot tell which pull-request API git\.example\.com has.*set preview.provider to github/);
  });
});
