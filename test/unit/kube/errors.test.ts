import { describe, expect, it } from 'vitest';
import { StalledError, TransientError, WaitingError } from '../../../src/errors.ts';
import { KubeRequestError } from '../../../src/kube/api.ts';
import { retriable, WRITE_500_RETRIES } from '../../../src/kube/api-errors.ts';
import { describeKubeError, serverMessage, statusCode } from '../../../src/kube/errors.ts';

const status = (code: number, message: string, details?: object) =>
  new KubeRequestError('GET', '/api/v1/namespaces/prod/pods', code, {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message,
    code,
    ...(details ? { details } : {}),
  });

describe('describeKubeError', () => {
  it.each([400, 401, 403, 404, 422])('stalls on %i: the user must act', (code) => {
    const error = describeKubeError(status(code, 'nope'), 'read Pod prod/web');
    expect(error).toBeInstanceOf(StalledError);
    expect(error.message).toBe(`read Pod prod/web: ${code} nope`);
  });

  it.each([409, 500, 503])('backs off on %i', (code) => {
    expect(describeKubeError(status(code, 'busy'), 'apply')).toBeInstanceOf(TransientError);
  });

  it('backs off on a network error, with its message', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    const error = describeKubeError(refused, 'list Pods');
    expect(error).toBeInstanceOf(TransientError);
    expect(error.message).toBe('list Pods: connect ECONNREFUSED 127.0.0.1:6443');
    expect(statusCode(refused)).toBeUndefined();
  });

  it('waits as long as a 429 asks, or a second when it does not say', () => {
    const limited = describeKubeError(status(429, 'too many requests', { retryAfterSeconds: 3 }), 'list');
    expect(limited).toBeInstanceOf(WaitingError);
    expect((limited as WaitingError).retryAfterMs).toBe(3000);
    const unsaid = describeKubeError(status(429, 'too many requests'), 'list');
    expect((unsaid as WaitingError).retryAfterMs).toBe(1000);
  });

  it("reads a 429's Retry-After header through the one parser, and bounds the body's seconds", () => {
    const header = new KubeRequestError('GET', '/x', 429, { message: 'slow' }, '4');
    expect((describeKubeError(header, 'list') as WaitingError).retryAfterMs).toBe(4000);
    const garbage = new KubeRequestError('GET', '/x', 429, { details: { retryAfterSeconds: 2 } }, 'soon');
    expect((describeKubeError(garbage, 'list') as WaitingError).retryAfterMs).toBe(2000);
    const huge = describeKubeError(status(429, 'slow', { retryAfterSeconds: 1e12 }), 'list');
    expect((huge as WaitingError).retryAfterMs).toBe(60 * 60_000);
    const negative = describeKubeError(status(429, 'slow', { retryAfterSeconds: -5 }), 'list');
    expect((negative as WaitingError).retryAfterMs).toBe(1000);
  });

  it('takes the message from a body that is text, JSON or not', () => {
    const json = new KubeRequestError('GET', '/x', 403, JSON.stringify({ message: 'forbidden: no' }));
    expect(serverMessage(json)).toBe('forbidden: no');
    const text = new KubeRequestError('GET', '/x', 502, '  Bad Gateway\n');
    expect(describeKubeError(text, 'read').message).toBe('read: 502 Bad Gateway');
    const empty = new KubeRequestError('GET', '/x', 500, undefined);
    expect(describeKubeError(empty, 'read').message).toBe('read: 500 GET /x: HTTP 500');
  });
});

describe('retriable', () => {
  const answer = (code: number, retryAfter?: string) =>
    new KubeRequestError(
      'PATCH',
      '/api/v1/namespaces/prod/configmaps/web',
      code,
      { message: 'x' },
      retryAfter,
    );

  it('tries a write answered 500 again after up to two 500s (other failures between do not count), then lets it stand', () => {
    for (const method of ['PATCH', 'PUT']) {
      for (let earlier = 0; earlier < WRITE_500_RETRIES; earlier++)
        expect(retriable(method, answer(500), earlier), `${method} after ${earlier}`).toBe(true);
      expect(retriable(method, answer(500), WRITE_500_RETRIES)).toBe(false);
      // For as long as the server's Retry-After asks.
      expect(retriable(method, answer(500, '1'), 10)).toBe(true);
    }
    // A POST may have created what it asked for: not repeated on a 500.
    expect(retriable('POST', answer(500), 0)).toBe(false);
    // Reads repeat it always.
    expect(retriable('GET', answer(500), 50)).toBe(true);
  });

  it('repeats 429 and 503 for every method, and never a refusal of the request itself', () => {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      expect(retriable(method, answer(429), 9)).toBe(true);
      expect(retriable(method, answer(503), 9)).toBe(true);
      for (const code of [400, 403, 404, 409, 422]) expect(retriable(method, answer(code), 0)).toBe(false);
    }
  });
});
