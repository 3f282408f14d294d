// A forge's API on loopback, for the clients that no real server can be run for here (GitHub, GitLab, Gitea,
// Bitbucket Cloud, Bitbucket Server): pull-request comments held in memory per PR (listed with each forge's own
// paging, created with 201 and an id, updated), pull requests answered from a table the test sets, the token's user,
// and commit statuses recorded, so that one receiver stands in for the whole forge. EVERY request is checked against
// the forge's published API description (test/contract/forge-comments.ts) and recorded with its problems; a test
// asserts problems() is empty. Faults can be injected: a refusal with a status (and Retry-After), or no answer.
// Comments and pull requests are keyed by number alone: one receiver serves one repository's PRs.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { PullRequestInfo } from '../../src/report/forges/select.ts';
import {
  type CapturedRequest,
  type ForgeFlavour,
  forgeValidator,
  type MatchedRequest,
} from '../contract/forge-comments.ts';

export type { ForgeFlavour } from '../contract/forge-comments.ts';

export type ForgeFault =
  | {
      status: number;
      /** Seconds, or an HTTP date, sent as Retry-After. */
      retryAfter?: number | string | undefined;
      headers?: Record<string, string> | undefined;
      /** How many requests fail; every one until fail(undefined) when not given. */
      times?: number | undefined;
    }
  | 'hang'
  | undefined;

export interface ForgeReceiverOptions {
  /** The user every token belongs to: the author of the comments made through the API. */
  user?: string | undefined;
  /** GitHub: the token is an app's installation token (GET /user refused, comments by `${user}[bot]`, a Bot). */
  app?: boolean | undefined;
  /** Only this token is accepted (401 otherwise); any token when not given. */
  token?: string | undefined;
}

export interface RecordedRequest extends CapturedRequest {
  operation: string | undefined;
  problems: string[];
}

export interface StoredComment {
  id: number;
  author: string;
  body: string;
  /** Bitbucket Server's lock: raised by every update. */
  version: number;
}

export interface ReceivedStatus {
  /** The repository path as the request named it (GitLab: the project's path; Bitbucket Server: none). */
  repo: string;
  commit: string;
  /** The forge's own state (`success`, `SUCCESSFUL`, …). */
  state: string;
  /** context, name or key: what tells statuses of one commit apart. */
  context: string;
  description: string | undefined;
  targetUrl: string | undefined;
  body: unknown;
}

export type PullRequestSetting = Partial<Omit<PullRequestInfo, 'number'>> & { headRef?: string | undefined };

export interface ForgeReceiver {
  flavour: ForgeFlavour;
  /** The apiUrl to configure. */
  url: string;
  requests: RecordedRequest[];
  /** The bodies of a PR's comments, oldest first. */
  comments(number: number): string[];
  /** A PR's comments with their ids and authors, oldest first. */
  thread(number: number): StoredComment[];
  /** A comment by someone (another user, or the token's user before a restart); returns its id. */
  addComment(number: number, author: string, body: string): number;
  setPullRequest(number: number, info?: PullRequestSetting): void;
  statuses(): ReceivedStatus[];
  /** Every request's problems against the forge's API description, each prefixed with its method and path. */
  problems(): string[];
  fail(fault: ForgeFault): void;
  close(): Promise<void>;
}

const BASE_PATHS: Record<ForgeFlavour, string> = {
  github: '',
  gitlab: '/api/v4',
  gitea: '/api/v1',
  'bitbucket-cloud': '/2.0',
  'bitbucket-server': '',
};
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
const BASE_REPO = 1;
const FORK_REPO = 2;

interface Reply {
  status: number;
  headers?: Record<string, string> | undefined;
  body?: unknown;
}

interface PullRequest extends PullRequestInfo {
  headRef: string;
}

export async function startForgeReceiver(
  flavour: ForgeFlavour,
  options: ForgeReceiverOptions = {},
): Promise<ForgeReceiver> {
  const validate = forgeValidator(flavour);
  const basePath = BASE_PATHS[flavour];
  const me = options.user ?? 'mooring-bot';
  const requests: RecordedRequest[] = [];
  const threads = new Map<number, StoredComment[]>();
  const pulls = new Map<number, PullRequest>();
  const statuses: ReceivedStatus[] = [];
  const sockets = new Set<Socket>();
  let fault: ForgeFault;
  let nextId = 1001;
  let origin = '';

  const thread = (number: number): StoredComment[] => {
    let list = threads.get(number);
    if (!list) {
      list = [];
      threads.set(number, list);
    }
    return list;
  };
  const author = () => (flavour === 'github' && options.app ? `${me}[bot]` : me);
  const forge = forgeShapes(flavour, () => origin + basePath, options);

  function handle(request: RecordedRequest, matched: MatchedRequest): Reply {
    const token = tokenOf(flavour, request.headers);
    if (options.token !== undefined && token !== options.token) return forge.error(401, 'Bad credentials');
    const number = Number(
      matched.params.issue_number ??
        matched.params.pull_number ??
        matched.params.merge_request_iid ??
        matched.params.index ??
        matched.params.pull_request_id ??
        matched.params.pullRequestId,
    );
    const pr = pulls.get(number);
    switch (matched.operation) {
      case 'current-user':
        if (flavour === 'github' && options.app)
          return forge.error(403, 'Resource not accessible by integration');
        return { status: 200, body: forge.user(me) };
      case 'create-status':
        statuses.push(forge.status(matched, request.body));
        return flavour === 'bitbucket-server' ? { status: 204 } : { status: 201, body: { id: nextId++ } };
      case 'get-pull-request':
        return pr ? { status: 200, body: forge.pull(pr) } : forge.error(404, 'Not Found');
      case 'list-comments':
        if (!pr) return forge.error(404, 'Not Found');
        return forge.list(thread(number), matched, number);
      case 'create-comment': {
        if (!pr) return forge.error(404, 'Not Found');
        const comment = { id: nextId++, author: author(), body: forge.text(request.body), version: 0 };
        thread(number).push(comment);
        return { status: 201, body: forge.comment(comment, number) };
      }
      case 'update-comment':
      case 'get-comment': {
        const id = Number(
          matched.params.comment_id ??
            matched.params.note_id ??
            matched.params.id ??
            matched.params.commentId,
        );
        const found = [...threads.entries()].find(([, list]) => list.some((c) => c.id === id));
        const comment = found?.[1].find((c) => c.id === id);
        // GitHub and Gitea address a comment by its id alone; the others under its PR.
        if (!found || !comment || (!Number.isNaN(number) && found[0] !== number))
          return forge.error(404, 'Not Found');
        if (matched.operation === 'update-comment') {
          const version = (request.body as { version?: unknown } | undefined)?.version;
          if (flavour === 'bitbucket-server' && version !== comment.version) {
            return forge.error(
              409,
              'You are attempting to modify a comment based on out-of-date information.',
            );
          }
          comment.body = forge.text(request.body);
          comment.version += 1;
        }
        return { status: 200, body: forge.comment(comment, found[0]) };
      }
      default:
        return forge.error(404, 'Not Found');
    }
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_REQUEST_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      const problems: string[] = [];
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        problems.push('the body is not JSON');
      }
      const captured: CapturedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
      };
      const matched = validate(captured, basePath);
      problems.push(...matched.problems);
      const recorded: RecordedRequest = { ...captured, operation: matched.operation, problems };
      requests.push(recorded);
      if (size > MAX_REQUEST_BYTES) return send(res, forge.error(413, 'Request Entity Too Large'));
      const injected = fault;
      if (injected === 'hang') return;
      if (injected !== undefined) {
        if (injected.times !== undefined && --injected.times <= 0) fault = undefined;
        const reply = forge.error(injected.status, 'injected fault');
        const retry: Record<string, string> =
          injected.retryAfter === undefined ? {} : { 'retry-after': String(injected.retryAfter) };
        return send(res, { ...reply, headers: { ...reply.headers, ...retry, ...injected.headers } });
      }
      const reply = handle(recorded, matched);
      // Bitbucket Server names the token's user on every authenticated answer.
      const who: Record<string, string> = flavour === 'bitbucket-server' ? { 'x-ausername': me } : {};
      send(res, { ...reply, headers: { ...who, ...reply.headers } });
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    flavour,
    url: origin + basePath,
    requests,
    comments: (number) => thread(number).map((c) => c.body),
    thread: (number) => thread(number).map((c) => ({ ...c })),
    addComment(number, by, body) {
      const id = nextId++;
      thread(number).push({ id, author: by, body, version: 0 });
      return id;
    },
    setPullRequest(number, info = {}) {
      pulls.set(number, {
        number,
        state: info.state ?? 'open',
        headSha: info.headSha ?? createHash('sha1').update(`pr-${number}`).digest('hex'),
        baseRef: info.baseRef ?? 'main',
        fromFork: info.fromFork ?? false,
        author: info.author ?? 'octocat',
        labels: info.labels ?? [],
        headRef: info.headRef ?? `pr-${number}`,
        updatedAt: info.updatedAt,
      });
    },
    statuses: () => [...statuses],
    problems: () => requests.flatMap((r) => r.problems.map((p) => `${r.method} ${r.path}: ${p}`)),
    fail(next) {
      fault = next === undefined || next === 'hang' ? next : { ...next };
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function send(res: ServerResponse, reply: Reply): void {
  const body = reply.body === undefined ? '' : JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    ...(body ? { 'content-type': 'application/json; charset=utf-8' } : {}),
    ...reply.headers,
  });
  res.end(body);
}

function tokenOf(flavour: ForgeFlavour, headers: CapturedRequest['headers']): string | undefined {
  if (flavour === 'gitlab' && typeof headers['private-token'] === 'string') return headers['private-token'];
  const match = /^(?:Bearer|token) (\S+)$/.exec(String(headers.authorization ?? ''));
  return match?.[1];
}

// --- each forge's answers ---------------------------------------------------------------------------------------

interface ForgeShapes {
  error(status: number, message: string): Reply;
  user(login: string): unknown;
  comment(comment: StoredComment, number: number): unknown;
  /** The comment text of a create or update request's body. */
  text(body: unknown): string;
  list(comments: StoredComment[], matched: MatchedRequest, number: number): Reply;
  pull(pr: PullRequest): unknown;
  status(matched: MatchedRequest, body: unknown): ReceivedStatus;
}

const WEB = 'https://forge.invalid';

function userId(login: string): number {
  return createHash('sha256').update(login).digest().readUInt32BE(0);
}

function uuid(login: string): string {
  const hex = createHash('sha256').update(login).digest('hex');
  return `{${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}}`;
}

/** Items of page `page` (1-based) of `size`. */
function slice<T>(items: T[], page: number, size: number): T[] {
  return items.slice((page - 1) * size, page * size);
}

function pageOf(
  query: URLSearchParams,
  name: string,
  fallback: number,
  max = Number.POSITIVE_INFINITY,
): number {
  const value = Number(query.get(name) ?? fallback);
  return Number.isInteger(value) && value >= 1 ? Math.min(value, max) : fallback;
}

function linkHeader(url: (page: number) => string, page: number, last: number): string {
  const links: string[] = [];
  if (page < last) links.push(`<${url(page + 1)}>; rel="next"`, `<${url(last)}>; rel="last"`);
  if (page > 1) links.push(`<${url(1)}>; rel="first"`, `<${url(page - 1)}>; rel="prev"`);
  return links.join(', ');
}

function forgeShapes(flavour: ForgeFlavour, api: () => string, options: ForgeReceiverOptions): ForgeShapes {
  const stamp = '2026-01-01T00:00:00Z';
  switch (flavour) {
    case 'github': {
      const user = (login: string) => ({
        login,
        id: userId(login),
        type: login.endsWith('[bot]') || (options.app && login === options.user) ? 'Bot' : 'User',
      });
      const repo = (id: number) => ({ id, full_name: id === BASE_REPO ? 'acme/web' : 'fork/web' });
      return {
        error: (status, message) => ({
          status,
          body: { message, documentation_url: 'https://docs.github.com/rest' },
        }),
        user,
        comment: (c, number) => ({
          id: c.id,
          node_id: `IC_${c.id}`,
          html_url: `${WEB}/acme/web/pull/${number}#issuecomment-${c.id}`,
          body: c.body,
          user: user(c.author),
          created_at: stamp,
          updated_at: stamp,
          author_association: 'MEMBER',
        }),
        text: (body) => String((body as { body?: unknown } | undefined)?.body ?? ''),
        list(comments, matched, number) {
          const size = pageOf(matched.query, 'per_page', 30, 100);
          const page = pageOf(matched.query, 'page', 1);
          const last = Math.max(1, Math.ceil(comments.length / size));
          const repoPath = `${encodeURIComponent(matched.params.owner ?? '')}/${encodeURIComponent(matched.params.repo ?? '')}`;
          const url = (p: number) =>
            `${api()}/repos/${repoPath}/issues/${number}/comments?per_page=${size}&page=${p}`;
          const link = linkHeader(url, page, last);
          return {
            status: 200,
            headers: link ? { link } : undefined,
            body: slice(comments, page, size).map((c) => this.comment(c, number)),
          };
        },
        pull: (pr) => ({
          number: pr.number,
          state: pr.state === 'open' ? 'open' : 'closed',
          merged: pr.state === 'merged',
          merged_at: pr.state === 'merged' ? stamp : null,
          user: user(pr.author),
          labels: pr.labels.map((name, i) => ({ id: i + 1, name })),
          head: { ref: pr.headRef, sha: pr.headSha, repo: repo(pr.fromFork ? FORK_REPO : BASE_REPO) },
          base: { ref: pr.baseRef, sha: '0'.repeat(40), repo: repo(BASE_REPO) },
          ...(pr.updatedAt ? { updated_at: pr.updatedAt } : {}),
        }),
        status: (matched, body) =>
          posted(`${matched.params.owner}/${matched.params.repo}`, matched.params.sha, body, {
            context: ['context'],
            otherwise: 'default',
            url: 'target_url',
          }),
      };
    }
    case 'gitlab': {
      const user = (username: string) => ({ id: userId(username), username, name: username });
      return {
        error: (status, message) => ({ status, body: { message: `${status} ${message}` } }),
        user,
        comment: (c, number) => ({
          id: c.id,
          type: null,
          body: c.body,
          author: user(c.author),
          created_at: stamp,
          updated_at: stamp,
          system: false,
          noteable_type: 'MergeRequest',
          noteable_iid: number,
        }),
        text: (body) => String((body as { body?: unknown } | undefined)?.body ?? ''),
        list(comments, matched, number) {
          const size = pageOf(matched.query, 'per_page', 20, 100);
          const page = pageOf(matched.query, 'page', 1);
          const last = Math.max(1, Math.ceil(comments.length / size));
          // Notes are listed newest first unless sort=asc.
          const ordered = matched.query.get('sort') === 'asc' ? comments : [...comments].reverse();
          const url = (p: number) =>
            `${api()}/projects/${encodeURIComponent(matched.params.id ?? '')}/merge_requests/${number}/notes?per_page=${size}&page=${p}`;
          const link = linkHeader(url, page, last);
          return {
            status: 200,
            headers: {
              'x-page': String(page),
              'x-per-page': String(size),
              'x-total': String(comments.length),
              'x-total-pages': String(last),
              'x-next-page': page < last ? String(page + 1) : '',
              'x-prev-page': page > 1 ? String(page - 1) : '',
              ...(link ? { link } : {}),
            },
            body: slice(ordered, page, size).map((c) => this.comment(c, number)),
          };
        },
        pull: (pr) => ({
          id: 5000 + pr.number,
          iid: pr.number,
          project_id: BASE_REPO,
          state: pr.state === 'open' ? 'opened' : pr.state,
          sha: pr.headSha,
          source_branch: pr.headRef,
          target_branch: pr.baseRef,
          source_project_id: pr.fromFork ? FORK_REPO : BASE_REPO,
          target_project_id: BASE_REPO,
          author: user(pr.author),
          labels: pr.labels,
          web_url: `${WEB}/acme/web/-/merge_requests/${pr.number}`,
        }),
        status: (matched, body) =>
          posted(matched.params.id ?? '', matched.params.sha, body, {
            context: ['name', 'context'],
            otherwise: 'default',
            url: 'target_url',
          }),
      };
    }
    case 'gitea': {
      const user = (login: string) => ({ id: userId(login), login, username: login });
      return {
        error: (status, message) => ({ status, body: { message, url: `${WEB}/api/swagger` } }),
        user,
        comment: (c, number) => ({
          id: c.id,
          html_url: `${WEB}/acme/web/pulls/${number}#issuecomment-${c.id}`,
          pull_request_url: `${WEB}/acme/web/pulls/${number}`,
          issue_url: '',
          user: user(c.author),
          original_author: '',
          original_author_id: 0,
          body: c.body,
          created_at: stamp,
          updated_at: stamp,
        }),
        text: (body) => String((body as { body?: unknown } | undefined)?.body ?? ''),
        // issueGetComments is not paged: every comment, and their count in X-Total-Count.
        list(comments, _matched, number) {
          return {
            status: 200,
            headers: { 'x-total-count': String(comments.length) },
            body: comments.map((c) => this.comment(c, number)),
          };
        },
        pull: (pr) => ({
          id: 5000 + pr.number,
          number: pr.number,
          state: pr.state === 'open' ? 'open' : 'closed',
          merged: pr.state === 'merged',
          user: user(pr.author),
          labels: pr.labels.map((name, i) => ({ id: i + 1, name })),
          head: {
            label: pr.headRef,
            ref: pr.headRef,
            sha: pr.headSha,
            repo_id: pr.fromFork ? FORK_REPO : BASE_REPO,
            repo: { id: pr.fromFork ? FORK_REPO : BASE_REPO },
          },
          base: {
            label: pr.baseRef,
            ref: pr.baseRef,
            sha: '0'.repeat(40),
            repo_id: BASE_REPO,
            repo: { id: BASE_REPO },
          },
        }),
        status: (matched, body) =>
          posted(`${matched.params.owner}/${matched.params.repo}`, matched.params.sha, body, {
            context: ['context'],
            otherwise: '',
            url: 'target_url',
          }),
      };
    }
    case 'bitbucket-cloud': {
      const user = (nickname: string) => ({
        type: 'user',
        uuid: uuid(nickname),
        account_id: `557058:${userId(nickname)}`,
        nickname,
        display_name: nickname,
      });
      const repo = (id: number) => ({
        type: 'repository',
        uuid: uuid(`repo-${id}`),
        full_name: id === BASE_REPO ? 'acme/web' : 'fork/web',
      });
      return {
        error: (status, message) => ({ status, body: { type: 'error', error: { message } } }),
        user,
        comment: (c, number) => ({
          id: c.id,
          type: 'pullrequest_comment',
          content: { type: 'rendered', raw: c.body, markup: 'markdown', html: '' },
          user: user(c.author),
          deleted: false,
          created_on: stamp,
          updated_on: stamp,
          links: { html: { href: `${WEB}/acme/web/pull-requests/${number}#comment-${c.id}` } },
        }),
        text: (body) => String((body as { content?: { raw?: unknown } } | undefined)?.content?.raw ?? ''),
        list(comments, matched, number) {
          const size = pageOf(matched.query, 'pagelen', 10, 100);
          const page = pageOf(matched.query, 'page', 1);
          const last = Math.max(1, Math.ceil(comments.length / size));
          const path = `${api()}/repositories/${matched.params.workspace}/${matched.params.repo_slug}/pullrequests/${number}/comments`;
          return {
            status: 200,
            body: {
              pagelen: size,
              size: comments.length,
              page,
              values: slice(comments, page, size).map((c) => this.comment(c, number)),
              ...(page < last ? { next: `${path}?pagelen=${size}&page=${page + 1}` } : {}),
            },
          };
        },
        pull: (pr) => ({
          type: 'pullrequest',
          id: pr.number,
          state: pr.state === 'open' ? 'OPEN' : pr.state === 'merged' ? 'MERGED' : 'DECLINED',
          author: user(pr.author),
          source: {
            branch: { name: pr.headRef },
            // Bitbucket Cloud gives the head commit abbreviated.
            commit: { type: 'commit', hash: pr.headSha.slice(0, 12) },
            repository: repo(pr.fromFork ? FORK_REPO : BASE_REPO),
          },
          destination: {
            branch: { name: pr.baseRef },
            commit: { type: 'commit', hash: '000000000000' },
            repository: repo(BASE_REPO),
          },
        }),
        status: (matched, body) =>
          posted(`${matched.params.workspace}/${matched.params.repo_slug}`, matched.params.commit, body, {
            context: ['key'],
            otherwise: '',
            url: 'url',
          }),
      };
    }
    case 'bitbucket-server': {
      const user = (name: string) => ({
        name,
        slug: name,
        id: userId(name),
        displayName: name,
        type: 'NORMAL',
      });
      const repo = (id: number) => ({
        id,
        slug: 'web',
        project: { key: id === BASE_REPO ? 'ACME' : '~FORK' },
      });
      return {
        error: (status, message) => ({
          status,
          body: { errors: [{ context: null, message, exceptionName: null }] },
        }),
        user,
        comment: (c) => ({
          id: c.id,
          version: c.version,
          text: c.body,
          author: user(c.author),
          createdDate: 0,
          updatedDate: 0,
        }),
        text: (body) => String((body as { text?: unknown } | undefined)?.text ?? ''),
        // Activities, newest first: one COMMENTED activity per comment, then the PR's OPENED.
        list(comments, matched, number) {
          const activities = [
            ...[...comments].reverse().map((c) => ({
              id: c.id * 10,
              createdDate: 0,
              user: user(c.author),
              action: 'COMMENTED',
              commentAction: 'ADDED',
              comment: this.comment(c, number),
            })),
            { id: 1, createdDate: 0, user: user('octocat'), action: 'OPENED' },
          ];
          const start = Number(matched.query.get('start') ?? 0);
          const limit = Math.min(Number(matched.query.get('limit') ?? 25), 1000);
          const values = activities.slice(start, start + limit);
          const isLastPage = start + limit >= activities.length;
          return {
            status: 200,
            body: {
              size: values.length,
              limit,
              start,
              isLastPage,
              values,
              ...(isLastPage ? {} : { nextPageStart: start + limit }),
            },
          };
        },
        pull: (pr) => ({
          id: pr.number,
          version: 0,
          state: pr.state === 'open' ? 'OPEN' : pr.state === 'merged' ? 'MERGED' : 'DECLINED',
          author: { user: user(pr.author), role: 'AUTHOR' },
          fromRef: {
            id: `refs/heads/${pr.headRef}`,
            displayId: pr.headRef,
            latestCommit: pr.headSha,
            repository: repo(pr.fromFork ? FORK_REPO : BASE_REPO),
          },
          toRef: {
            id: `refs/heads/${pr.baseRef}`,
            displayId: pr.baseRef,
            latestCommit: '0'.repeat(40),
            repository: repo(BASE_REPO),
          },
        }),
        status: (matched, body) =>
          posted('', matched.params.commitId, body, {
            context: ['key'],
            otherwise: '',
            url: 'url',
          }),
      };
    }
  }
}

/** A status as a forge took it: the fields of its request body, named as that forge names them. */
function posted(
  repo: string,
  commit: string | undefined,
  body: unknown,
  names: { context: readonly string[]; otherwise: string; url: 'target_url' | 'url' },
) {
  const b = body as Record<string, string | undefined>;
  const context = names.context.map((key) => b[key]).find((v) => v !== undefined);
  return {
    repo,
    commit: commit ?? '',
    state: b.state ?? '',
    context: context ?? names.otherwise,
    description: b.description,
    targetUrl: b[names.url],
    body,
  };
}
