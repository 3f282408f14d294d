// Checks captured requests of the forge clients (pull-request comments, pull-request information, who the token
// belongs to, commit statuses) against each forge's published API description. GitHub's operations are compiled from
// its OpenAPI description (@octokit/openapi, api.github.com.deref.json): path templates, path and query parameters
// and request bodies as GitHub publishes them. No npm package ships a machine-readable description of GitLab, Gitea,
// Bitbucket Cloud or Bitbucket Server (gitea-js and forgejo clients ship generated code, not the swagger), so their
// operations are written below as JSON Schemas from their documentation, each naming the page it follows.
// A validator answers which documented operation a request is (with its path parameters), and its problems.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { CapturedRequest } from './github-openapi.ts';

export type { CapturedRequest } from './github-openapi.ts';

export type ForgeFlavour = 'github' | 'gitlab' | 'gitea' | 'bitbucket-cloud' | 'bitbucket-server';

/** The operations the forge clients use, by the names the receiver dispatches on. */
export type ForgeOperationName =
  | 'list-comments'
  | 'create-comment'
  | 'update-comment'
  | 'get-comment'
  | 'get-pull-request'
  | 'current-user'
  | 'create-status';

export interface MatchedRequest {
  /** The documented operation the request is, when one matches its method and path. */
  operation: ForgeOperationName | undefined;
  /** Path parameters, decoded once. */
  params: Record<string, string>;
  query: URLSearchParams;
  problems: string[];
}

export type ForgeValidator = (request: CapturedRequest, basePath?: string) => MatchedRequest;

interface Operation {
  name: ForgeOperationName;
  /** The forge's own name for it (operationId, or the documentation's heading). */
  id: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** Relative to the API base, `{name}` for a path parameter. */
  template: string;
  params: Record<string, object>;
  query: Record<string, object>;
  requiredQuery?: string[] | undefined;
  body?: object | undefined;
}

type Compiled = Operation & {
  pattern: RegExp;
  names: string[];
  validateBody: ValidateFunction | undefined;
  validateParam: Record<string, ValidateFunction>;
};

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats.default(ajv);

const integer = { type: 'integer', minimum: 1 };
const text = { type: 'string', minLength: 1 };

// --- GitHub: compiled from @octokit/openapi ---------------------------------------------------------------------

const GITHUB_OPERATIONS: Record<string, ForgeOperationName> = {
  'issues/list-comments': 'list-comments',
  'issues/create-comment': 'create-comment',
  'issues/update-comment': 'update-comment',
  'pulls/get': 'get-pull-request',
  'users/get-authenticated': 'current-user',
  'repos/create-commit-status': 'create-status',
};

interface OpenApiOperation {
  operationId: string;
  parameters?: { name: string; in: string; required?: boolean; schema: object }[];
  requestBody?: { content: Record<string, { schema: object }> };
}

let githubDocument: Record<string, Record<string, OpenApiOperation>> | undefined;

function githubOperations(): Operation[] {
  if (githubDocument === undefined) {
    const require = createRequire(import.meta.url);
    const dir = join(dirname(require.resolve('@octokit/openapi/package.json')), 'generated');
    githubDocument = (
      JSON.parse(readFileSync(join(dir, 'api.github.com.deref.json'), 'utf8')) as {
        paths: Record<string, Record<string, OpenApiOperation>>;
      }
    ).paths;
  }
  const found: Operation[] = [];
  for (const [template, methods] of Object.entries(githubDocument)) {
    for (const [method, operation] of Object.entries(methods)) {
      const name = GITHUB_OPERATIONS[operation.operationId];
      if (name === undefined) continue;
      const parameters = operation.parameters ?? [];
      const schema = operation.requestBody?.content['application/json']?.schema;
      found.push({
        name,
        id: operation.operationId,
        method: method.toUpperCase() as Operation['method'],
        template,
        params: Object.fromEntries(parameters.filter((p) => p.in === 'path').map((p) => [p.name, p.schema])),
        query: Object.fromEntries(parameters.filter((p) => p.in === 'query').map((p) => [p.name, p.schema])),
        requiredQuery: parameters.filter((p) => p.in === 'query' && p.required).map((p) => p.name),
        // As github-openapi.ts does: a property GitHub does not document is a mistake of ours.
        body: schema ? { ...schema, additionalProperties: false } : undefined,
      });
    }
  }
  if (found.length !== Object.keys(GITHUB_OPERATIONS).length) {
    throw new Error('@octokit/openapi no longer describes every operation the GitHub clients use');
  }
  return found;
}

function githubHeaders(headers: CapturedRequest['headers']): string[] {
  const problems: string[] = [];
  if (headers.accept !== 'application/vnd.github+json') problems.push('accept header');
  if (headers['x-github-api-version'] !== '2022-11-28') problems.push('api version header');
  if (!/^Bearer \S+$/.test(String(headers.authorization ?? ''))) problems.push('authorization header');
  return problems;
}

// --- GitLab: docs.gitlab.com/api/notes ("Merge requests"), docs.gitlab.com/api/merge_requests ("Get single MR"),
// docs.gitlab.com/api/users ("Get the current user"), docs.gitlab.com/api/commits ("Set the pipeline status of a
// commit"), docs.gitlab.com/api/rest ("Pagination": page, per_page up to 100). :id is a number or the project's
// URL-encoded path.

const gitlabProject = { type: 'string', pattern: '^(?:\\d+|[^/]+(?:/[^/]+)+)$' };
const gitlabNoteBody = {
  type: 'object',
  required: ['body'],
  additionalProperties: false,
  properties: {
    body: { type: 'string', minLength: 1, maxLength: 1_000_000 },
    internal: { type: 'boolean' },
    created_at: { type: 'string' },
    merge_request_diff_head_sha: { type: 'string' },
  },
};
const gitlabPaging = {
  page: integer,
  per_page: { type: 'integer', minimum: 1, maximum: 100 },
  sort: { enum: ['asc', 'desc'] },
  order_by: { enum: ['created_at', 'updated_at'] },
};
const mr = { id: gitlabProject, merge_request_iid: integer };
const GITLAB: Operation[] = [
  {
    name: 'list-comments',
    id: 'List all merge request notes',
    method: 'GET',
    template: '/projects/{id}/merge_requests/{merge_request_iid}/notes',
    params: mr,
    query: gitlabPaging,
  },
  {
    name: 'create-comment',
    id: 'Create new merge request note',
    method: 'POST',
    template: '/projects/{id}/merge_requests/{merge_request_iid}/notes',
    params: mr,
    query: {},
    body: gitlabNoteBody,
  },
  {
    name: 'update-comment',
    id: 'Modify existing merge request note',
    method: 'PUT',
    template: '/projects/{id}/merge_requests/{merge_request_iid}/notes/{note_id}',
    params: { ...mr, note_id: integer },
    query: {},
    body: { ...gitlabNoteBody, properties: { body: gitlabNoteBody.properties.body } },
  },
  {
    name: 'get-pull-request',
    id: 'Get single MR',
    method: 'GET',
    template: '/projects/{id}/merge_requests/{merge_request_iid}',
    params: mr,
    query: {
      render_html: { type: 'boolean' },
      include_diverged_commits_count: { type: 'boolean' },
      include_rebase_in_progress: { type: 'boolean' },
    },
  },
  {
    name: 'current-user',
    id: 'Get the current user',
    method: 'GET',
    template: '/user',
    params: {},
    query: {},
  },
  {
    name: 'create-status',
    id: 'Set the pipeline status of a commit',
    method: 'POST',
    template: '/projects/{id}/statuses/{sha}',
    params: { id: gitlabProject, sha: { type: 'string', pattern: '^[0-9a-f]{7,64}$' } },
    query: {},
    body: {
      type: 'object',
      required: ['state'],
      additionalProperties: false,
      properties: {
        state: { enum: ['pending', 'running', 'success', 'failed', 'canceled', 'skipped'] },
        ref: { type: 'string' },
        name: { type: 'string' },
        context: { type: 'string' },
        target_url: { type: 'string' },
        description: { type: 'string', maxLength: 255 },
        coverage: { type: 'number' },
        pipeline_id: { type: 'integer' },
      },
    },
  },
];

function gitlabHeaders(headers: CapturedRequest['headers']): string[] {
  const token = headers['private-token'];
  const bearer = /^Bearer \S+$/.test(String(headers.authorization ?? ''));
  return (typeof token === 'string' && token !== '') || bearer ? [] : ['PRIVATE-TOKEN header'];
}

// --- Gitea (and Forgejo): the swagger of its API (templates/swagger/v1_json.tmpl, served at /api/swagger;
// docs.gitea.com/api): issueGetComments (query since, before: not paged), issueCreateComment
// (CreateIssueCommentOption), issueEditComment (EditIssueCommentOption), repoGetPullRequest, userGetCurrent,
// repoCreateStatus (CreateStatusOption).

const giteaRepo = { owner: text, repo: text };
const giteaCommentBody = {
  type: 'object',
  required: ['body'],
  additionalProperties: false,
  properties: { body: { type: 'string', minLength: 1 } },
};
const GITEA: Operation[] = [
  {
    name: 'list-comments',
    id: 'issueGetComments',
    method: 'GET',
    template: '/repos/{owner}/{repo}/issues/{index}/comments',
    params: { ...giteaRepo, index: integer },
    query: {
      since: { type: 'string', format: 'date-time' },
      before: { type: 'string', format: 'date-time' },
    },
  },
  {
    name: 'create-comment',
    id: 'issueCreateComment',
    method: 'POST',
    template: '/repos/{owner}/{repo}/issues/{index}/comments',
    params: { ...giteaRepo, index: integer },
    query: {},
    body: giteaCommentBody,
  },
  {
    name: 'update-comment',
    id: 'issueEditComment',
    method: 'PATCH',
    template: '/repos/{owner}/{repo}/issues/comments/{id}',
    params: { ...giteaRepo, id: integer },
    query: {},
    body: giteaCommentBody,
  },
  {
    name: 'get-pull-request',
    id: 'repoGetPullRequest',
    method: 'GET',
    template: '/repos/{owner}/{repo}/pulls/{index}',
    params: { ...giteaRepo, index: integer },
    query: {},
  },
  { name: 'current-user', id: 'userGetCurrent', method: 'GET', template: '/user', params: {}, query: {} },
  {
    name: 'create-status',
    id: 'repoCreateStatus',
    method: 'POST',
    template: '/repos/{owner}/{repo}/statuses/{sha}',
    params: { ...giteaRepo, sha: { type: 'string', pattern: '^[0-9a-f]{7,64}$' } },
    query: {},
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        state: { enum: ['pending', 'success', 'error', 'failure', 'warning'] },
        target_url: { type: 'string' },
        description: { type: 'string' },
        context: { type: 'string' },
      },
    },
  },
];

function giteaHeaders(headers: CapturedRequest['headers']): string[] {
  // Gitea takes `token X` (its own form) and `Bearer X`.
  return /^(?:token|Bearer) \S+$/.test(String(headers.authorization ?? '')) ? [] : ['authorization header'];
}

// --- Bitbucket Cloud: developer.atlassian.com/cloud/bitbucket/rest/api-group-pullrequests ("List comments on a
// pull request", "Create a comment on a pull request", "Update a comment on a pull request", "Get a pull request"),
// api-group-users ("Get current user"), api-group-commit-statuses ("Create a build status for a commit"); paging:
// /rest/intro/#pagination (page, pagelen up to 100).

const bbRepo = { workspace: text, repo_slug: text };
const bbComment = {
  type: 'object',
  required: ['content'],
  additionalProperties: false,
  properties: {
    type: { const: 'pullrequest_comment' },
    content: {
      type: 'object',
      required: ['raw'],
      additionalProperties: false,
      properties: {
        raw: { type: 'string', minLength: 1 },
        markup: { enum: ['markdown', 'creole', 'plaintext'] },
      },
    },
    inline: { type: 'object' },
    parent: { type: 'object', properties: { id: { type: 'integer' } } },
  },
};
const BITBUCKET_CLOUD: Operation[] = [
  {
    name: 'list-comments',
    id: 'List comments on a pull request',
    method: 'GET',
    template: '/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/comments',
    params: { ...bbRepo, pull_request_id: integer },
    query: {
      page: integer,
      pagelen: { type: 'integer', minimum: 1, maximum: 100 },
      q: { type: 'string' },
      sort: { type: 'string' },
    },
  },
  {
    name: 'create-comment',
    id: 'Create a comment on a pull request',
    method: 'POST',
    template: '/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/comments',
    params: { ...bbRepo, pull_request_id: integer },
    query: {},
    body: bbComment,
  },
  {
    name: 'update-comment',
    id: 'Update a comment on a pull request',
    method: 'PUT',
    template: '/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/comments/{comment_id}',
    params: { ...bbRepo, pull_request_id: integer, comment_id: integer },
    query: {},
    body: bbComment,
  },
  {
    name: 'get-pull-request',
    id: 'Get a pull request',
    method: 'GET',
    template: '/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}',
    params: { ...bbRepo, pull_request_id: integer },
    query: {},
  },
  { name: 'current-user', id: 'Get current user', method: 'GET', template: '/user', params: {}, query: {} },
  {
    name: 'create-status',
    id: 'Create a build status for a commit',
    method: 'POST',
    template: '/repositories/{workspace}/{repo_slug}/commit/{commit}/statuses/build',
    params: { ...bbRepo, commit: { type: 'string', pattern: '^[0-9a-f]{7,64}$' } },
    query: {},
    body: {
      type: 'object',
      required: ['key', 'state', 'url'],
      additionalProperties: false,
      properties: {
        key: { type: 'string', minLength: 1, maxLength: 40 },
        state: { enum: ['SUCCESSFUL', 'FAILED', 'INPROGRESS', 'STOPPED'] },
        name: { type: 'string' },
        description: { type: 'string' },
        url: { type: 'string', minLength: 1 },
        refname: { type: 'string' },
      },
    },
  },
];

// --- Bitbucket Server / Data Center: developer.atlassian.com/server/bitbucket/rest ("Pull requests": "Get pull
// request activity", "Add pull request comment", "Update pull request comment" (version required), "Get pull request
// comment", "Get pull request"; "Builds and deployments": "Store a build status"); paging: start, limit.

const bbsPr = {
  projectKey: { type: 'string', pattern: '^(?:~[^/]+|[A-Z][A-Z0-9_]*)$' },
  repositorySlug: text,
  pullRequestId: integer,
};
const bbsPrefix = '/rest/api/1.0/projects/{projectKey}/repos/{repositorySlug}/pull-requests/{pullRequestId}';
const BITBUCKET_SERVER: Operation[] = [
  {
    name: 'list-comments',
    id: 'Get pull request activity',
    method: 'GET',
    template: `${bbsPrefix}/activities`,
    params: bbsPr,
    query: {
      start: { type: 'integer', minimum: 0 },
      limit: { type: 'integer', minimum: 1, maximum: 1000 },
      fromId: { type: 'integer' },
      fromType: { enum: ['COMMENT', 'ACTIVITY'] },
    },
  },
  {
    name: 'create-comment',
    id: 'Add pull request comment',
    method: 'POST',
    template: `${bbsPrefix}/comments`,
    params: bbsPr,
    query: {},
    body: {
      type: 'object',
      required: ['text'],
      additionalProperties: false,
      properties: {
        text: { type: 'string', minLength: 1 },
        parent: { type: 'object' },
        anchor: { type: 'object' },
        severity: { enum: ['NORMAL', 'BLOCKER'] },
        state: { enum: ['OPEN', 'PENDING', 'RESOLVED'] },
      },
    },
  },
  {
    name: 'update-comment',
    id: 'Update pull request comment',
    method: 'PUT',
    template: `${bbsPrefix}/comments/{commentId}`,
    params: { ...bbsPr, commentId: integer },
    query: {},
    body: {
      type: 'object',
      required: ['text', 'version'],
      additionalProperties: false,
      properties: {
        text: { type: 'string', minLength: 1 },
        version: { type: 'integer', minimum: 0 },
        severity: { enum: ['NORMAL', 'BLOCKER'] },
        state: { enum: ['OPEN', 'PENDING', 'RESOLVED'] },
      },
    },
  },
  {
    name: 'get-comment',
    id: 'Get pull request comment',
    method: 'GET',
    template: `${bbsPrefix}/comments/{commentId}`,
    params: { ...bbsPr, commentId: integer },
    query: {},
  },
  {
    name: 'get-pull-request',
    id: 'Get pull request',
    method: 'GET',
    template: bbsPrefix,
    params: bbsPr,
    query: {},
  },
  {
    name: 'create-status',
    id: 'Store a build status',
    method: 'POST',
    template: '/rest/build-status/1.0/commits/{commitId}',
    params: { commitId: { type: 'string', pattern: '^[0-9a-f]{7,64}$' } },
    query: {},
    body: {
      type: 'object',
      required: ['state', 'key', 'url'],
      additionalProperties: false,
      properties: {
        state: { enum: ['INPROGRESS', 'SUCCESSFUL', 'FAILED'] },
        key: { type: 'string', minLength: 1, maxLength: 255 },
        name: { type: 'string', maxLength: 255 },
        url: { type: 'string', minLength: 1 },
        description: { type: 'string' },
      },
    },
  },
];

function bearerOrBasic(headers: CapturedRequest['headers']): string[] {
  return /^(?:Bearer|Basic) \S+$/.test(String(headers.authorization ?? '')) ? [] : ['authorization header'];
}

// --- the validator ----------------------------------------------------------------------------------------------

function compile(operations: Operation[]): Compiled[] {
  return operations.map((operation) => {
    const names: string[] = [];
    const source = operation.template
      .split(/(\{\w+\})/)
      .map((part) => {
        const name = /^\{(\w+)\}$/.exec(part)?.[1];
        if (name === undefined) return part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
        names.push(name);
        return '([^/]+)';
      })
      .join('');
    return {
      ...operation,
      pattern: new RegExp(`^${source}$`),
      names,
      validateBody: operation.body ? ajv.compile(operation.body) : undefined,
      validateParam: Object.fromEntries(
        Object.entries({ ...operation.params, ...operation.query }).map(([name, schema]) => [
          name,
          ajv.compile(schema),
        ]),
      ),
    };
  });
}

/** A parameter's text as the JSON value its schema describes (`12` an integer, `true` a boolean). */
function typed(value: string, schema: object): unknown {
  const type = (schema as { type?: unknown }).type;
  if ((type === 'integer' || type === 'number') && /^-?\d+(?:\.\d+)?$/.test(value)) return Number(value);
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

export function forgeValidator(flavour: ForgeFlavour): ForgeValidator {
  const table: Record<ForgeFlavour, () => Operation[]> = {
    github: githubOperations,
    gitlab: () => GITLAB,
    gitea: () => GITEA,
    'bitbucket-cloud': () => BITBUCKET_CLOUD,
    'bitbucket-server': () => BITBUCKET_SERVER,
  };
  const headers: Record<ForgeFlavour, (h: CapturedRequest['headers']) => string[]> = {
    github: githubHeaders,
    gitlab: gitlabHeaders,
    gitea: giteaHeaders,
    'bitbucket-cloud': bearerOrBasic,
    'bitbucket-server': bearerOrBasic,
  };
  const operations = compile(table[flavour]());
  return (request, basePath = '') => {
    const url = new URL(request.path, 'http://receiver.invalid');
    const problems: string[] = [];
    if (!url.pathname.startsWith(basePath)) problems.push(`path ${url.pathname} is not under ${basePath}`);
    const path = url.pathname.slice(basePath.length);
    const matches = operations.filter((o) => o.pattern.test(path));
    const operation = matches.find((o) => o.method === request.method);
    const matched: MatchedRequest = { operation: undefined, params: {}, query: url.searchParams, problems };
    if (operation === undefined) {
      problems.push(
        matches.length > 0
          ? `${request.method} is not documented for ${path} (${matches.map((o) => o.method).join(', ')} are)`
          : `no documented operation has the path ${path}`,
      );
      return matched;
    }
    matched.operation = operation.name;
    const values = operation.pattern.exec(path)?.slice(1) ?? [];
    operation.names.forEach((name, i) => {
      let value: string;
      try {
        value = decodeURIComponent(values[i] ?? '');
      } catch {
        problems.push(`${operation.id}: path parameter ${name} is not URL-encoded text`);
        return;
      }
      matched.params[name] = value;
      const schema = operation.params[name];
      const validate = operation.validateParam[name];
      if (schema && validate && !validate(typed(value, schema))) {
        problems.push(`${operation.id}: path parameter ${name}=${value}: ${ajv.errorsText(validate.errors)}`);
      }
    });
    for (const [name, value] of url.searchParams) {
      const schema = operation.query[name];
      const validate = operation.validateParam[name];
      if (!schema || !validate) problems.push(`${operation.id}: query parameter ${name} is not documented`);
      else if (!validate(typed(value, schema))) {
        problems.push(
          `${operation.id}: query parameter ${name}=${value}: ${ajv.errorsText(validate.errors)}`,
        );
      }
    }
    for (const name of operation.requiredQuery ?? []) {
      if (!url.searchParams.has(name)) problems.push(`${operation.id}: query parameter ${name} is required`);
    }
    if (operation.validateBody) {
      if (!operation.validateBody(request.body)) {
        problems.push(`${operation.id}: body: ${ajv.errorsText(operation.validateBody.errors)}`);
      }
      if (!String(request.headers['content-type'] ?? '').startsWith('application/json')) {
        problems.push(`${operation.id}: content-type header`);
      }
    } else if (request.body !== undefined) {
      problems.push(`${operation.id}: a body where the operation takes none`);
    }
    problems.push(...headers[flavour](request.headers).map((p) => `${operation.id}: ${p}`));
    if (!request.headers['user-agent']) problems.push(`${operation.id}: user-agent header`);
    return matched;
  };
}
