// Contract tests of the commit-status providers: REAL requests from the providers' code, through fetch, to a
// capturing HTTP server on loopback. GitHub's are checked against GitHub's published OpenAPI description
// (@octokit/openapi, for api.github.com and for GitHub Enterprise Server); for GitLab, Gitea/Forgejo and Bitbucket
// no npm package ships a machine-readable description, so their documented request shapes are written below as
// zod schemas, each naming the documentation page it follows.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { type MooringError, StalledError, TransientError } from '../../../src/errors.ts';
import { gitOrigins } from '../../../src/report/forges/forge-hosts.ts';
import { providerFor } from '../../../src/report/forges/select.ts';
import type {
  CommitState,
  CommitStatusProvider,
  HttpOptions,
  ProviderName,
} from '../../../src/report/forges/types.ts';
import {
  CommitStatusReporter,
  type CommitStatusReporterOptions,
} from '../../../src/report/status-reporter.ts';

// These tests run real work (processes, Git repositories, whole pages): a busy 2-core machine needs more than 5 s.
vi.setConfig({ testTimeout: 30_000 });

/** The origin of `url` as a configured Git source's: where a forge client for it may be built. */
const own = (url: string) => gitOrigins({ sources: { git: [{ url }] } });

const SHA = '3f2a1c9d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39';
const CANARY = 'canary-7Qx9-token-never-shown';
const TOKEN_ENV = 'MOORING_TEST_COMMIT_STATUS_TOKEN';
const STATES: CommitState[] = ['pending', 'success', 'failure', 'error', 'cancelled'];

// --- the capturing server ---------------------------------------------------------------------------------

interface Captured {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}
interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

let server: Server;
let base: string;
const captured: Captured[] = [];
const replies: Reply[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      captured.push({
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: text ? JSON.parse(text) : undefined,
      });
      const reply = replies.shift() ?? { status: 201, body: {} };
      response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      response.end(JSON.stringify(reply.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  captured.length = 0;
  replies.length = 0;
  process.env[TOKEN_ENV] = CANARY;
});
afterEach(() => {
  delete process.env[TOKEN_ENV];
});

// --- the providers under test, each pointed at the capturing server ---------------------------------------

interface Case {
  provider: ProviderName;
  repoUrl: string;
  apiPath: string;
  path: string;
  max: number;
}
const CASES: Case[] = [
  {
    provider: 'github',
    repoUrl: 'https://github.com/acme/web.git',
    apiPath: '',
    path: `/repos/acme/web/statuses/${SHA}`,
    max: 140,
  },
  {
    provider: 'gitlab',
    repoUrl: 'git@gitlab.com:acme/platform/web.git',
    apiPath: '/api/v4',
    path: `/api/v4/projects/acme%2Fplatform%2Fweb/statuses/${SHA}`,
    max: 255,
  },
  {
    provider: 'gitea',
    repoUrl: 'https://gitea.example.com/acme/web.git',
    apiPath: '/api/v1',
    path: `/api/v1/repos/acme/web/statuses/${SHA}`,
    max: 255,
  },
  {
    provider: 'bitbucket-cloud',
    repoUrl: 'git@bitbucket.org:acme/web.git',
    apiPath: '/2.0',
    path: `/2.0/repositories/acme/web/commit/${SHA}/statuses/build`,
    max: 255,
  },
  {
    provider: 'bitbucket-server',
    repoUrl: 'https://bitbucket.example.com/scm/ACME/web.git',
    apiPath: '',
    path: `/rest/build-status/1.0/commits/${SHA}`,
    max: 255,
  },
];

function caseFor(name: ProviderName): Case {
  const found = CASES.find((c) => c.provider === name);
  if (!found) throw new Error(`no case for ${name}`);
  return found;
}

interface Harness {
  reporter: CommitStatusReporter;
  logs: string[];
  errors: MooringError[];
  sleeps: number[];
}

function harness(
  c: Case,
  options: {
    config?: Partial<CommitStatusReporterOptions['config']>;
    http?: HttpOptions;
    provider?: CommitStatusProvider;
    /** The back-off's draw: 1 (the ceiling of full jitter) unless a test says otherwise. */
    random?: () => number;
  } = {},
): Harness {
  const logs: string[] = [];
  const errors: MooringError[] = [];
  const sleeps: number[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  const provider =
    options.provider ??
    providerFor(
      c.repoUrl,
      { provider: c.provider, apiUrl: `${base}${c.apiPath}` },
      own(c.repoUrl),
      options.http,
    );
  const reporter = new CommitStatusReporter({
    provider,
    config: {
      enabled: true,
      token: { env: TOKEN_ENV },
      context: 'mooring/{cluster}/{deployment}',
      ...options.config,
    },
    cluster: 'prod',
    deployment: 'web',
    namespace: 'apps',
    logger: pino({ level: 'debug' }, stream),
    onError: (error) => errors.push(error),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: options.random ?? (() => 1),
  });
  return { reporter, logs, errors, sleeps };
}

function only(): Captured {
  expect(captured).toHaveLength(1);
  const [request] = captured;
  if (!request) throw new Error('no request');
  return request;
}

function bodyOf(request: Captured): Record<string, unknown> {
  return request.body as Record<string, unknown>;
}

// --- GitHub against its OpenAPI description ---------------------------------------------------------------

const OPENAPI_DIR = 'node_modules/@octokit/openapi/generated';
const STATUS_PATH = '/repos/{owner}/{repo}/statuses/{sha}';

interface Operation {
  operationId: string;
  parameters: Array<{ name: string; in: string }>;
  requestBody: { content: Record<string, { schema: Record<string, unknown> }> };
}
interface Description {
  servers: Array<{ url: string }>;
  operation: Operation;
}

function loadDescription(file: string): Description {
  const document = JSON.parse(readFileSync(`${OPENAPI_DIR}/${file}`, 'utf8')) as {
    servers: Array<{ url: string }>;
    paths: Record<string, { post?: Operation }>;
  };
  const operation = document.paths[STATUS_PATH]?.post;
  if (!operation) throw new Error(`${file} has no POST ${STATUS_PATH}`);
  return { servers: document.servers, operation };
}

function newestGhes(): string {
  const versions = readdirSync(OPENAPI_DIR)
    .map((file) => /^ghes-(\d+)\.(\d+)\.deref\.json$/.exec(file))
    .filter((match) => match !== null)
    .sort((a, b) => Number(b[1]) - Number(a[1]) || Number(b[2]) - Number(a[2]));
  if (!versions[0]) throw new Error('no GHES description in @octokit/openapi');
  return versions[0][0];
}

function checkAgainst(description: Description, request: Captured, basePath: string) {
  const { operation } = description;
  expect(operation.operationId).toBe('repos/create-commit-status');
  expect(request.method).toBe('POST');
  // The path template, its parameters filled in, under the server's base path.
  expect(request.path.startsWith(basePath)).toBe(true);
  const names = [...STATUS_PATH.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
  expect(operation.parameters.filter((p) => p.in === 'path').map((p) => p.name)).toEqual(names);
  const pattern = new RegExp(`^${STATUS_PATH.replace(/\{\w+\}/g, '([^/]+)')}$`);
  const values = pattern.exec(request.path.slice(basePath.length));
  expect(values?.slice(1)).toEqual(['acme', 'web', SHA]);
  // The body, against the requestBody schema, and with no property the schema does not describe.
  const media = operation.requestBody.content['application/json'];
  if (!media) throw new Error('no application/json request body');
  expect(request.headers['content-type']).toBe('application/json');
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const validate = ajv.compile({ ...media.schema, additionalProperties: false });
  expect(validate(request.body), JSON.stringify(validate.errors)).toBe(true);
  // Headers GitHub's REST documentation requires ("Authenticating", "API Versions", "User agent required").
  expect(request.headers.authorization).toBe(`Bearer ${CANARY}`);
  expect(request.headers.accept).toBe('application/vnd.github+json');
  expect(request.headers['x-github-api-version']).toBe('2022-11-28');
  expect(request.headers['user-agent']).toBe('mooring');
}

describe('GitHub requests match the published OpenAPI description', () => {
  let dotcom: Description;
  let ghes: Description;
  beforeAll(() => {
    dotcom = loadDescription('api.github.com.deref.json');
    ghes = loadDescription(newestGhes());
  });

  it('api.github.com: every state, with and without a target URL', async () => {
    expect(dotcom.servers[0]?.url).toBe('https://api.github.com');
    for (const state of STATES) {
      const { reporter } = harness(caseFor('github'));
      const result = await reporter.report(
        { repoUrl: 'https://github.com/acme/web.git', commit: SHA },
        {
          state,
          description: `deploy ${state}`,
          ...(state === 'error' ? {} : { targetUrl: 'https://ci.example.com/1' }),
        },
      );
      expect(result).toBe('posted');
      checkAgainst(dotcom, only(), '');
      expect(bodyOf(only())).toMatchObject({
        state: state === 'cancelled' ? 'error' : state,
        context: 'mooring/prod/web',
        description: `deploy ${state}`,
      });
      captured.length = 0;
    }
  });

  it('GitHub Enterprise Server: the API under /api/v3, as the description says', async () => {
    const basePath = new URL(
      ghes.servers[0]?.url.replace('{protocol}', 'https').replace('{hostname}', 'h') ?? '',
    ).pathname;
    expect(basePath).toBe('/api/v3');
    const c: Case = { ...caseFor('github'), repoUrl: 'git@ghe.example.com:acme/web.git', apiPath: basePath };
    const { reporter } = harness(c);
    expect(
      await reporter.report({ repoUrl: c.repoUrl, commit: SHA }, { state: 'success', description: 'ok' }),
    ).toBe('posted');
    checkAgainst(ghes, only(), basePath);
  });
});

// --- the other providers, against their documented request shapes ----------------------------------------

const url = z.string().regex(/^https?:\/\/[^\s]+$/);
const SHAPES: Record<
  Exclude<ProviderName, 'github'>,
  { body: z.ZodType; auth: (h: IncomingHttpHeaders) => unknown }
> = {
  // docs.gitlab.com, "Commits API", section "Set the pipeline status of a commit" (POST /projects/:id/statuses/:sha).
  gitlab: {
    body: z.strictObject({
      state: z.enum(['pending', 'running', 'success', 'failed', 'canceled', 'skipped']),
      ref: z.string().optional(),
      name: z.string().optional(),
      context: z.string().optional(),
      target_url: url.optional(),
      description: z.string().max(255).optional(),
      coverage: z.number().optional(),
      pipeline_id: z.number().int().optional(),
    }),
    auth: (h) => h['private-token'],
  },
  // Gitea API (swagger v1), operation repoCreateStatus, body CreateStatusOption.
  gitea: {
    body: z.strictObject({
      state: z.enum(['pending', 'success', 'error', 'failure', 'warning']).optional(),
      target_url: z.string().optional(),
      description: z.string().optional(),
      context: z.string().optional(),
    }),
    auth: (h) => h.authorization?.replace(/^token /, ''),
  },
  // "The Bitbucket Cloud REST API", group "Commit statuses", "Create a build status for a commit" (commitstatus).
  'bitbucket-cloud': {
    body: z.strictObject({
      key: z.string().min(1).max(40),
      state: z.enum(['SUCCESSFUL', 'FAILED', 'INPROGRESS', 'STOPPED']),
      name: z.string().optional(),
      description: z.string().optional(),
      url,
      refname: z.string().optional(),
    }),
    auth: (h) => h.authorization?.replace(/^Bearer /, ''),
  },
  // Bitbucket Server docs, "Updating build status for commits": state, key and url are required.
  'bitbucket-server': {
    body: z.strictObject({
      state: z.enum(['INPROGRESS', 'SUCCESSFUL', 'FAILED']),
      key: z.string().min(1).max(255),
      name: z.string().max(255).optional(),
      url,
      description: z.string().optional(),
    }),
    auth: (h) => h.authorization?.replace(/^Bearer /, ''),
  },
};

describe.each(Object.entries(SHAPES))('%s requests match the documented shape', (name, shape) => {
  it('path, headers and body for every state', async () => {
    const c = caseFor(name as ProviderName);
    for (const state of STATES) {
      const { reporter } = harness(c);
      expect(
        await reporter.report({ repoUrl: c.repoUrl, commit: SHA }, { state, description: 'rolled out' }),
      ).toBe('posted');
      const request = only();
      expect(request.method).toBe('POST');
      expect(request.path).toBe(c.path);
      expect(request.headers['content-type']).toBe('application/json');
      expect(shape.auth(request.headers)).toBe(CANARY);
      const parsed = shape.body.safeParse(request.body);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
      captured.length = 0;
    }
  });
});

describe('state mapping', () => {
  const expected: Record<ProviderName, string[]> = {
    github: ['pending', 'success', 'failure', 'error', 'error'],
    gitea: ['pending', 'success', 'failure', 'error', 'error'],
    gitlab: ['pending', 'success', 'failed', 'failed', 'canceled'],
    'bitbucket-cloud': ['INPROGRESS', 'SUCCESSFUL', 'FAILED', 'FAILED', 'STOPPED'],
    'bitbucket-server': ['INPROGRESS', 'SUCCESSFUL', 'FAILED', 'FAILED', 'FAILED'],
  };
  it.each(CASES)('$provider', async (c) => {
    const { reporter } = harness(c);
    for (const state of STATES) {
      await reporter.report({ repoUrl: c.repoUrl, commit: SHA }, { state, description: 'x' });
    }
    expect(captured.map((r) => bodyOf(r).state)).toEqual(expected[c.provider]);
  });
});

describe('descriptions fit the provider limit', () => {
  it.each(CASES)('$provider: cut at $max with an ellipsis, whole when it fits', async (c) => {
    const { reporter } = harness(c);
    const target = { repoUrl: c.repoUrl, commit: SHA };
    await reporter.report(target, { state: 'failure', description: 'x'.repeat(c.max + 50) });
    await reporter.report(target, { state: 'failure', description: 'y'.repeat(c.max) });
    // A cut that would fall inside an emoji (two UTF-16 units) drops the whole emoji.
    await reporter.report(target, { state: 'failure', description: `${'z'.repeat(c.max - 2)}😀😀` });
    const [long, exact, emoji] = captured.map((r) => String(bodyOf(r).description));
    expect(long).toBe(`${'x'.repeat(c.max - 1)}…`);
    expect(exact).toBe('y'.repeat(c.max));
    expect(emoji).toBe(`${'z'.repeat(c.max - 2)}…`);
    expect(emoji?.isWellFormed()).toBe(true);
  });
});

describe('what a status carries is plain text and a web address', () => {
  it.each(CASES)(
    '$provider: control and direction characters become spaces; a target URL that is no http(s) address is left out',
    async (c) => {
      const { reporter } = harness(c);
      const target = { repoUrl: c.repoUrl, commit: SHA };
      // What a kept status (the outbox) or a rollback's `by` may carry, written by hand in the agent's namespace.
      await reporter.report(target, {
        state: 'failure',
        description: 'Superseded by a rollback by x.\n\nDeploy OK\u001b[31m \u202eevil\u2066 ok',
        targetUrl: 'javascript:alert(1)',
      });
      await reporter.report(target, {
        state: 'success',
        description: 'fine',
        targetUrl: 'https://ci.example.com/run/1',
      });
      const [hostile, fine] = captured.map((r) => JSON.stringify(bodyOf(r)));
      expect(hostile).toContain('Superseded by a rollback by x. Deploy OK [31m evil ok');
      expect(hostile).not.toMatch(/\\n|\\u001b|\u202e|\u2066|javascript/);
      expect(fine).toContain('https://ci.example.com/run/1');
    },
  );
});

describe('context', () => {
  it('renders {cluster}, {deployment} and {namespace}', async () => {
    const { reporter } = harness(caseFor('github'), {
      config: { context: 'deploy/{cluster}/{namespace}/{deployment}' },
    });
    expect(reporter.context).toBe('deploy/prod/apps/web');
    await reporter.report(
      { repoUrl: 'https://github.com/acme/web', commit: SHA },
      { state: 'success', description: 'ok' },
    );
    expect(bodyOf(only()).context).toBe('deploy/prod/apps/web');
  });

  it('Bitbucket Cloud keys over 40 characters are shortened the same way every time, and stay distinct', async () => {
    const c = caseFor('bitbucket-cloud');
    const long = `mooring/${'very-long-cluster-name-'.repeat(3)}{deployment}`;
    for (const deployment of ['web', 'web', 'api']) {
      const { reporter } = harness(c, { config: { context: long.replace('{deployment}', deployment) } });
      await reporter.report({ repoUrl: c.repoUrl, commit: SHA }, { state: 'success', description: 'ok' });
    }
    const keys = captured.map((r) => String(bodyOf(r).key));
    expect(keys.map((k) => k.length)).toEqual([40, 40, 40]);
    expect(keys[0]).toBe(keys[1]);
    expect(keys[2]).not.toBe(keys[0]);
    expect(bodyOf(captured[0] as Captured).name).toBe(long.replace('{deployment}', 'web'));
  });
});

describe('the reporter', () => {
  const c = caseFor('github');
  const target = { repoUrl: c.repoUrl, commit: SHA };

  it('does not post a status identical to the last one for the same repository, commit and context', async () => {
    const { reporter } = harness(c);
    expect(await reporter.report(target, { state: 'pending', description: 'applying' })).toBe('posted');
    expect(await reporter.report(target, { state: 'pending', description: 'applying' })).toBe('skipped');
    expect(await reporter.report(target, { state: 'pending', description: 'waiting' })).toBe('posted');
    expect(
      await reporter.report(
        { ...target, commit: SHA.replace('3f', '4f') },
        { state: 'pending', description: 'waiting' },
      ),
    ).toBe('posted');
    expect(captured).toHaveLength(3);
  });

  it('waits as Retry-After says after a 429, then posts', async () => {
    replies.push({ status: 429, headers: { 'retry-after': '7' }, body: { message: 'slow down' } });
    const h = harness(c);
    expect(await h.reporter.report(target, { state: 'success', description: 'ok' })).toBe('posted');
    expect(captured).toHaveLength(2);
    expect(h.sleeps).toEqual([7000]);
    expect(h.errors).toEqual([]);
  });

  it('backs off after a 429 that says nothing of when to come back', async () => {
    replies.push({ status: 429 }, { status: 429 });
    const h = harness(c);
    expect(await h.reporter.report(target, { state: 'success', description: 'ok' })).toBe('posted');
    expect(h.sleeps).toEqual([1000, 2000]);
    expect(captured).toHaveLength(3);
  });

  it('waits for X-RateLimit-Reset after a primary rate limit, at most 30 s a wait', async () => {
    const now = 1_700_000_000_000;
    replies.push(
      {
        status: 403,
        headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 12) },
      },
      { status: 429, headers: { 'retry-after': '600' } },
    );
    const h = harness(c, { http: { now: () => now } });
    expect(await h.reporter.report(target, { state: 'success', description: 'ok' })).toBe('posted');
    expect(h.sleeps).toEqual([12_000, 30_000]);
    expect(captured).toHaveLength(3);
  });

  it('backs off with full jitter: a random share of the doubling delay', async () => {
    for (let i = 0; i < 3; i++) replies.push({ status: 503 });
    const h = harness(c, { random: () => 0.25 });
    expect(await h.reporter.report(target, { state: 'success', description: 'ok' })).toBe('posted');
    expect(h.sleeps).toEqual([250, 500, 1000]);
  });

  it('gives up after 4 answers of 500, without throwing, and reports a transient error', async () => {
    for (let i = 0; i < 4; i++) replies.push({ status: 500, body: { message: 'boom' } });
    const h = harness(c);
    expect(await h.reporter.report(target, { state: 'failure', description: 'failed' })).toBe('failed');
    expect(captured).toHaveLength(4);
    expect(h.sleeps).toEqual([1000, 2000, 4000]);
    expect(h.errors).toHaveLength(1);
    expect(h.errors[0]).toBeInstanceOf(TransientError);
    expect(h.errors[0]?.message).toContain('HTTP 500');
    // A failed status is not remembered: the next report tries again.
    expect(await h.reporter.report(target, { state: 'failure', description: 'failed' })).toBe('posted');
  });

  it('does not retry a refusal that a retry cannot fix', async () => {
    replies.push({ status: 404, body: { message: 'Not Found' } });
    const h = harness(c);
    expect(await h.reporter.report(target, { state: 'success', description: 'ok' })).toBe('failed');
    expect(captured).toHaveLength(1);
    expect(h.errors[0]).toBeInstanceOf(StalledError);
    expect(h.errors[0]?.message).toMatch(/HTTP 404 \(Not Found\).*repository or commit does not exist/);
  });

  it('never lets the token into a log line or an error, even when a server echoes it', async () => {
    replies.push(
      { status: 502, body: { message: `upstream rejected Bearer ${CANARY}` } },
      { status: 401, body: { message: `Bad credentials: ${encodeURIComponent(CANARY)}` } },
    );
    const h = harness(c);
    expect(await h.reporter.report(target, { state: 'success', description: 'ok' })).toBe('failed');
    expect(captured.map((r) => r.headers.authorization)).toEqual([`Bearer ${CANARY}`, `Bearer ${CANARY}`]);
    const everything = [...h.logs, ...h.errors.map((e) => `${e.message} ${String(e.cause)}`)].join('\n');
    expect(h.logs.some((line) => line.includes('commit status not posted'))).toBe(true);
    expect(everything).toContain('<redacted>');
    expect(everything).not.toContain(CANARY);
    expect(everything).not.toContain(encodeURIComponent(CANARY));
  });

  it('reads the token for every post, so a rotated Secret is used', async () => {
    const h = harness(c);
    await h.reporter.report(target, { state: 'pending', description: 'applying' });
    process.env[TOKEN_ENV] = `${CANARY}-rotated`;
    await h.reporter.report(target, { state: 'success', description: 'done' });
    expect(captured.map((r) => r.headers.authorization)).toEqual([
      `Bearer ${CANARY}`,
      `Bearer ${CANARY}-rotated`,
    ]);
  });

  it('fails clearly, without a request, when no token is configured or the Secret is missing', async () => {
    const noToken = harness(c, { config: { token: undefined } });
    expect(await noToken.reporter.report(target, { state: 'success', description: 'ok' })).toBe('failed');
    expect(noToken.errors[0]?.message).toContain('commitStatus.token is not set');
    expect(noToken.errors[0]?.subject?.describe).toBe(`github.com/acme/web@${SHA.slice(0, 12)}`);
    delete process.env[TOKEN_ENV];
    const missing = harness(c);
    expect(await missing.reporter.report(target, { state: 'success', description: 'ok' })).toBe('failed');
    expect(missing.errors[0]?.message).toContain(`environment variable ${TOKEN_ENV} is not set`);
    expect(captured).toHaveLength(0);
  });

  it('posts nothing when commit statuses are disabled', async () => {
    const h = harness(c, { config: { enabled: false } });
    expect(await h.reporter.report(target, { state: 'success', description: 'ok' })).toBe('skipped');
    expect(captured).toHaveLength(0);
  });

  it('retries a server that cannot be reached, then fails', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const provider = providerFor(
      c.repoUrl,
      { provider: 'github', apiUrl: `http://127.0.0.1:${port}` },
      own(c.repoUrl),
    );
    const h = harness(c, { provider });
    expect(await h.reporter.report(target, { state: 'success', description: 'ok' })).toBe('failed');
    expect(h.sleeps).toHaveLength(3);
    expect(h.errors[0]?.message).toContain('ECONNREFUSED');
  });

  it('does not follow a redirect, which could carry the token elsewhere', async () => {
    replies.push({ status: 307, headers: { location: 'https://elsewhere.example.com/x?sig=secret' } });
    const h = harness(c);
    expect(await h.reporter.report(target, { state: 'success', description: 'ok' })).toBe('failed');
    expect(captured).toHaveLength(1);
    expect(h.errors[0]?.message).toContain('redirected to https://elsewhere.example.com/x');
    expect(h.errors[0]?.message).not.toContain('sig=secret');
  });

  it('GitLab: a status already in the requested state counts as posted', async () => {
    const gitlab = caseFor('gitlab');
    replies.push({
      status: 400,
      body: { message: 'Cannot transition status via :enqueue from :pending (Reason(s): …)' },
    });
    const h = harness(gitlab);
    expect(
      await h.reporter.report(
        { repoUrl: gitlab.repoUrl, commit: SHA },
        { state: 'pending', description: 'x' },
      ),
    ).toBe('posted');
    replies.push({ status: 400, body: { message: 'Cannot transition status via :run from :running' } });
    expect(
      await h.reporter.report(
        { repoUrl: gitlab.repoUrl, commit: SHA },
        { state: 'pending', description: 'y' },
      ),
    ).toBe('failed');
  });
});

// --- which provider, and where its API is ------------------------------------------------------------------

describe('providerFor', () => {
  // Sends the request the provider built for its real host to the capturing server instead, and notes the URL.
  function rerouted(seen: string[]): HttpOptions {
    return {
      fetch: (input: string | URL, init: RequestInit) => {
        const target = new URL(String(input));
        seen.push(target.href);
        return fetch(`${base}${target.pathname}${target.search}`, init);
      },
    };
  }

  it.each([
    ['https://github.com/acme/web.git', 'auto', `https://api.github.com/repos/acme/web/statuses/${SHA}`],
    ['git@github.com:acme/web.git', 'auto', `https://api.github.com/repos/acme/web/statuses/${SHA}`],
    [
      'https://user:pw@ghe.example.com/acme/web',
      'github',
      `https://ghe.example.com/api/v3/repos/acme/web/statuses/${SHA}`,
    ],
    [
      'ssh://git@gitlab.com/acme/platform/team/web.git',
      'auto',
      `https://gitlab.com/api/v4/projects/acme%2Fplatform%2Fteam%2Fweb/statuses/${SHA}`,
    ],
    [
      'https://git.example.com:8443/acme/web.git',
      'gitlab',
      `https://git.example.com:8443/api/v4/projects/acme%2Fweb/statuses/${SHA}`,
    ],
    [
      'ssh://git@gitea.example.com:2222/acme/web.git',
      'gitea',
      `https://gitea.example.com/api/v1/repos/acme/web/statuses/${SHA}`,
    ],
    [
      'https://bitbucket.org/acme/web.git',
      'auto',
      `https://api.bitbucket.org/2.0/repositories/acme/web/commit/${SHA}/statuses/build`,
    ],
    [
      'https://bb.example.com/bitbucket/scm/ACME/web.git',
      'bitbucket-server',
      `https://bb.example.com/bitbucket/rest/build-status/1.0/commits/${SHA}`,
    ],
  ] as const)('%s (%s) posts to %s', async (repoUrl, provider, expected) => {
    const seen: string[] = [];
    const { reporter } = harness(caseFor('github'), {
      provider: providerFor(repoUrl, { provider }, own(repoUrl), rerouted(seen)),
    });
    expect(await reporter.report({ repoUrl, commit: SHA }, { state: 'success', description: 'ok' })).toBe(
      'posted',
    );
    expect(seen).toEqual([expected]);
  });

  it('a self-managed GitLab under a relative root keeps subgroups whole', async () => {
    const seen: string[] = [];
    const provider = providerFor(
      'https://example.com/gitlab/acme/sub/web.git',
      { provider: 'gitlab', apiUrl: 'https://example.com/gitlab/api/v4' },
      own('https://example.com/gitlab/acme/sub/web.git'),
      rerouted(seen),
    );
    await provider.post(
      { repoUrl: 'https://example.com/gitlab/acme/sub/web.git', commit: SHA },
      { state: 'success', description: 'ok', context: 'c' },
      't',
    );
    expect(seen).toEqual([`https://example.com/gitlab/api/v4/projects/acme%2Fsub%2Fweb/statuses/${SHA}`]);
  });

  it('Bitbucket links to the commit when no target URL is configured', async () => {
    for (const name of ['bitbucket-cloud', 'bitbucket-server'] as const) {
      const { reporter } = harness(caseFor(name));
      await reporter.report(
        { repoUrl: caseFor(name).repoUrl, commit: SHA },
        { state: 'success', description: 'ok' },
      );
    }
    // A personal repository (project ~user) is under users/ in the web interface.
    const { reporter } = harness(caseFor('bitbucket-server'));
    await reporter.report(
      { repoUrl: 'https://bitbucket.example.com/scm/~alice/web.git', commit: SHA },
      { state: 'success', description: 'ok' },
    );
    expect(captured.map((r) => bodyOf(r).url)).toEqual([
      `https://bitbucket.org/acme/web/commits/${SHA}`,
      `${base}/projects/ACME/repos/web/commits/${SHA}`,
      `${base}/users/alice/repos/web/commits/${SHA}`,
    ]);
  });

  it('asks for the provider when the host is not one it knows', () => {
    expect(() =>
      providerFor(
        'https://git.example.com/acme/web.git',
        { provider: 'auto' },
        own('https://git.example.com/acme/web.git'),
      ),
    ).toThrow(StalledError);
    expect(() =>
      providerFor(
        'https://git.example.com/acme/web.git',
        { provider: 'auto' },
        own('https://git.example.com/acme/web.git'),
      ),
    ).toThrow(/git\.example\.com.*set commitStatus\.provider/);
  });

  it('refuses an apiUrl with credentials and a repository path of the wrong shape, naming no secret', async () => {
    expect(() =>
      providerFor(
        'https://github.com/a/b',
        { provider: 'github', apiUrl: 'https://u:secret@h/api' },
        own('https://github.com/a/b'),
      ),
    ).toThrow(/must not hold credentials/);
    const provider = providerFor(
      'https://github.com/a/b',
      { provider: 'auto' },
      own('https://github.com/a/b'),
    );
    await expect(
      provider.post(
        { repoUrl: 'https://u:secret@github.com/a/b/c', commit: SHA },
        { state: 'success', description: '', context: 'c' },
        't',
      ),
    ).rejects.toThrow(/^repository github\.com\/a\/b\/c does not have the form owner\/repo$/);
    await expect(
      provider.post(
        { repoUrl: 'https://github.com/a/b', commit: 'main' },
        { state: 'success', description: '', context: 'c' },
        't',
      ),
    ).rejects.toThrow(/is not a commit hash/);
  });
});
