// The command line names an unreachable API server; the agent's messages (commit statuses, which every reader of
// the repository sees) do not: the address travels beside the message, on the error, never in it.
import { describe, expect, it } from 'vitest';
import { TransientError } from '../../../src/errors.ts';
import { namingServer, UnreachableError } from '../../../src/kube/api-errors.ts';

const since = Date.UTC(2026, 0, 1, 10, 20, 30);

describe('naming the API server', () => {
  it("keeps the server out of the error's message and names it for the command line", () => {
    const error = new UnreachableError(
      'GET',
      '/api/v1/namespaces/prod',
      since,
      new Error('request timed out'),
      'https://10.0.0.7:6443',
    );
    expect(error.message).not.toContain('10.0.0.7');
    expect(namingServer(error.message, error)).toBe(
      'GET /api/v1/namespaces/prod: API server unreachable since 10:20:30 UTC (request timed out) (API server https://10.0.0.7:6443)',
    );
  });

  it('finds it through the causes of a described error', () => {
    const cause = new UnreachableError(
      'PATCH',
      '/apis/apps/v1/x',
      since,
      new Error('socket hang up'),
      'https://api.example:443',
    );
    const wrapped = new TransientError(`apply Deployment prod/web: ${cause.message}`, { cause });
    expect(namingServer(wrapped.message, wrapped)).toMatch(/\(API server https:\/\/api\.example:443\)$/);
  });

  it('names it once: not again when the message already holds its host and port', () => {
    const error = new UnreachableError(
      'GET',
      '/version',
      since,
      new Error('connect ECONNREFUSED 127.0.0.1:1'),
      'https://127.0.0.1:1',
    );
    expect(namingServer(error.message, error)).toBe(error.message);
  });

  it('leaves any other error as it is, unless the caller gives the server', () => {
    expect(namingServer('failed: Deployment prod/web: ProgressDeadlineExceeded', new Error('x'))).toBe(
      'failed: Deployment prod/web: ProgressDeadlineExceeded',
    );
    expect(
      namingServer(
        'failed (transient): API server unreachable since 10:20:30 UTC',
        undefined,
        'https://10.0.0.7:6443',
      ),
    ).toBe(
      'failed (transient): API server unreachable since 10:20:30 UTC (API server https://10.0.0.7:6443)',
    );
  });
});
