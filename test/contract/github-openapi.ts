// Checks a captured commit-status request against GitHub's published OpenAPI description (@octokit/openapi):
// the operation `repos/create-commit-status`, its path template, its request body schema and GitHub's required
// headers. Returns the problems found (empty when the request is valid).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';

const STATUS_PATH = '/repos/{owner}/{repo}/statuses/{sha}';

export interface CapturedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export function githubStatusValidator(): (request: CapturedRequest, basePath?: string) => string[] {
  const require = createRequire(import.meta.url);
  const dir = join(dirname(require.resolve('@octokit/openapi/package.json')), 'generated');
  const document = JSON.parse(readFileSync(join(dir, 'api.github.com.deref.json'), 'utf8')) as {
    paths: Record<
      string,
      { post?: { operationId: string; requestBody: { content: Record<string, { schema: object }> } } }
    >;
  };
  const operation = document.paths[STATUS_PATH]?.post;
  if (operation?.operationId !== 'repos/create-commit-status') throw new Error('operation not found');
  const schema = operation.requestBody.content['application/json']?.schema;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const validate = ajv.compile({ ...schema, additionalProperties: false });
  const pattern = new RegExp(`^${STATUS_PATH.replace(/\{\w+\}/g, '[^/]+')}$`);
  return (request, basePath = '') => {
    const problems: string[] = [];
    if (request.method !== 'POST') problems.push(`method ${request.method}`);
    if (!pattern.test(request.path.slice(basePath.length))) problems.push(`path ${request.path}`);
    if (!validate(request.body)) problems.push(`body: ${JSON.stringify(validate.errors)}`);
    if (request.headers.accept !== 'application/vnd.github+json') problems.push('accept header');
    if (request.headers['x-github-api-version'] !== '2022-11-28') problems.push('api version header');
    if (!String(request.headers.authorization ?? '').startsWith('Bearer '))
      problems.push('authorization header');
    if (!request.headers['user-agent']) problems.push('user-agent header');
    return problems;
  };
}

/**
 * A GitHub-shaped status endpoint on loopback: records every request (to be checked with githubStatusValidator)
 * and answers 201, as GitHub does.
 */
export async function statusReceiver(): Promise<{
  url: string;
  captured: CapturedRequest[];
  close: () => void;
}> {
  const captured: CapturedRequest[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      captured.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: JSON.parse(body || '{}'),
      });
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    captured,
    close: () => server.close(),
  };
}
