// What the cluster cache decides about streaming lists and about when to ask the API server again: the end mark
// of a streaming list's initial events, which answers mean "this server does not serve them" (remembered per
// server and type), and the wait after a failure, which is never shorter than a 429's Retry-After.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { KubeApi, KubeRequestError } from '../../../src/kube/api.ts';
import type { ClusterConfig } from '../../../src/kube/kubeconfig.ts';
import {
  EARLY_ENDS_BEFORE_REFUSAL,
  endedWithoutMark,
  endsInitialEvents,
  InitialEventsCut,
  InitialEventsMissing,
  StreamingSupport,
  streamingRefusal,
  streamingSupportOf,
} from '../../../src/kube/watch-list.ts';

const config = { server: 'https://10.1.2.3:6443' } as ClusterConfig;
const END = { 'k8s.io/initial-events-end': 'true' };

describe('the end of a streaming list', () => {
  it.each([
    ['the annotated bookmark', { type: 'BOOKMARK', object: { metadata: { annotations: END } } }, true],
    ['a plain bookmark', { type: 'BOOKMARK', object: { metadata: { resourceVersion: '9' } } }, false],
    [
      'an ADDED event that carries the annotation',
      { type: 'ADDED', object: { metadata: { annotations: END } } },
      false,
    ],
    [
      'a bookmark annotated otherwise',
      { type: 'BOOKMARK', object: { metadata: { annotations: { 'k8s.io/initial-events-end': 'false' } } } },
      false,
    ],
    ['a bookmark without an object', { type: 'BOOKMARK', object: null }, false],
  ])('%s', (_, event, ends) => {
    expect(endsInitialEvents(event)).toBe(ends);
  });
});

describe('a streaming list that ended without its end mark', () => {
  // A server that ignores sendInitialEvents serves a plain watch and ends it at its timeout (here 300 s); one that
  // ended sooner was cut, and its partial state is asked again, unless streams keep ending so.
  it.each([
    ['ran to its timeout', 300_000, 1, 'ignored'],
    ['ended a second before its timeout', 299_000, 1, 'ignored'],
    ['cut after 2 s, the first time', 2_000, 1, 'cut'],
    ['cut at once, the second time in a row', 0, 2, 'cut'],
    ['ended early as often as the bound', 2_000, EARLY_ENDS_BEFORE_REFUSAL, 'ignored'],
    ['ended early more often', 2_000, EARLY_ENDS_BEFORE_REFUSAL + 4, 'ignored'],
  ] as const)('%s', (_, elapsedMs, earlyEnds, verdict) => {
    expect(endedWithoutMark(elapsedMs, 300, earlyEnds)).toBe(verdict);
  });

  it('is taken for a server that ignores the ask within a bounded number of early ends, however soon they come', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 599_999 }),
        fc.integer({ min: 300, max: 600 }),
        (elapsedMs, timeout) => {
          const verdicts = Array.from({ length: EARLY_ENDS_BEFORE_REFUSAL }, (_, i) =>
            endedWithoutMark(elapsedMs, timeout, i + 1),
          );
          expect(verdicts.at(-1)).toBe('ignored');
        },
      ),
    );
  });
});

describe('a refused streaming list', () => {
  const failure = (code: number, message = 'x') =>
    new KubeRequestError('WATCH', '/api/v1/pods', code, { message });
  it.each([
    [
      failure(422, 'sendInitialEvents is forbidden for watch'),
      '422 sendInitialEvents is forbidden for watch',
    ],
    [
      failure(400, 'resourceVersionMatch is forbidden for watch'),
      '400 resourceVersionMatch is forbidden for watch',
    ],
    [
      new InitialEventsMissing('the server ignored sendInitialEvents'),
      'the server ignored sendInitialEvents',
    ],
    // A stream cut before its end mark says nothing of the server: retried, streaming still.
    [new InitialEventsCut('the stream ended after 120 objects'), undefined],
    // Retried (429, 5xx, network) or permanent for the type whatever is asked (401, 403, 404): not a refusal.
    [failure(429), undefined],
    [failure(500), undefined],
    [failure(403), undefined],
    [failure(404), undefined],
    [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), undefined],
  ])('%s', (error, reason) => {
    expect(streamingRefusal(error)).toBe(reason);
  });

  it('is remembered per server and type, and a cache that asks for none asks none', () => {
    const api = new KubeApi(config);
    const other = new KubeApi(config);
    streamingSupportOf(api).refuse('v1/pods', '422 no');
    expect(streamingSupportOf(api).allowed('v1/pods')).toBe(false);
    expect(streamingSupportOf(api).allowed('v1/secrets')).toBe(true);
    expect(streamingSupportOf(other).allowed('v1/pods')).toBe(true);
    expect([...streamingSupportOf(api).refusals]).toEqual([['v1/pods', '422 no']]);
    expect(new StreamingSupport(false).allowed('v1/secrets')).toBe(false);
  });
});

describe('the wait before asking the API server again', () => {
  const backoff = { baseMs: 250, maxMs: 30_000, minMs: 250 };

  it('is never shorter than what a 429 asks, in Retry-After or in the Status body, at any attempt', () => {
    const api = new KubeApi(config, { random: () => 0 });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 40 }),
        fc.boolean(),
        (s, n, inBody) => {
          const error = inBody
            ? new KubeRequestError('GET', '/api', 429, { details: { retryAfterSeconds: s } })
            : new KubeRequestError('GET', '/api', 429, {}, String(s));
          expect(api.retryDelay(error, n, backoff)).toBeGreaterThanOrEqual(s * 1000);
        },
      ),
      { seed: 36, numRuns: 200 },
    );
  });

  it('spreads the 429s of a burst over the second after Retry-After, never more than a second past it', () => {
    const refused = new KubeRequestError('GET', '/api', 429, {}, '1');
    expect(new KubeApi(config, { random: () => 0 }).retryDelay(refused, 0, backoff)).toBe(1000);
    expect(new KubeApi(config, { random: () => 0.999 }).retryDelay(refused, 0, backoff)).toBe(1999);
    const slow = new KubeRequestError('GET', '/api', 429, {}, '30');
    expect(new KubeApi(config, { random: () => 0.999 }).retryDelay(slow, 0, backoff)).toBe(30_999);
    // Forty requests refused together ask again at forty moments of that second, not at one.
    const api = new KubeApi(config);
    const delays = Array.from({ length: 40 }, () => api.retryDelay(refused, 0, backoff));
    expect(new Set(delays).size).toBeGreaterThan(30);
    expect(Math.max(...delays) - Math.min(...delays)).toBeGreaterThan(500);
  });

  it('backs off with full jitter, within its floor and cap, after any other failure', () => {
    const api = new KubeApi(config, { random: () => 0.999 });
    expect(api.retryDelay(new KubeRequestError('GET', '/api', 503, {}), 0, backoff)).toBe(250);
    expect(api.retryDelay(new Error('socket hang up'), 20, backoff)).toBe(29_970);
    expect(new KubeApi(config, { random: () => 0 }).retryDelay(new Error('x'), 3, backoff)).toBe(250);
  });
});

describe('reads and their resourceVersion', () => {
  it('refuses a read that names a resourceVersion itself: only `stale` may ask for an old copy', async () => {
    const api = new KubeApi(config);
    await expect(
      api.request('GET', '/api/v1/namespaces/a/configmaps', { query: { resourceVersion: '0' } }),
    ).rejects.toThrow(StalledError);
    await expect(
      api.request('GET', '/api/v1/namespaces/a/configmaps', {
        query: { resourceVersionMatch: 'NotOlderThan' },
      }),
    ).rejects.toThrow(/a read names its resourceVersion only through `stale`/);
    api.close();
  });
});
