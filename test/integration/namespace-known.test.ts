// Whether a sync's namespaces exist (src/kube/namespace.ts, namespaceKnown): the agent's cluster cache answers from
// one watch of the Namespaces' metadata, so a fleet of syncs sends no GET per sync, and sees a namespace made or
// deleted since; without a cache (the CLI), or with a cache closed meanwhile, the API server is asked, as before.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RequestStats } from '../../src/http/request-counter.ts';
import { KubeApi } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import { namespaceKnown } from '../../src/kube/namespace.ts';
import { clusterConfig, eventually, kubectl, useNamespace } from './helpers.ts';

const count = (stats: RequestStats, verb: string) =>
  stats.requests.filter((r) => r.verb === verb).reduce((n, r) => n + r.count, 0);

describe('namespaceKnown', () => {
  const ns = useNamespace('ns-known');

  it('answers from the watch of Namespaces, for many syncs, with no GET, and follows changes', async () => {
    const api = new KubeApi(clusterConfig());
    const cache = new ClusterCache(api, { lingerMs: 60_000 });
    const made = `ns-known-made-${randomBytes(3).toString('hex')}`;
    try {
      expect(await namespaceKnown(api, cache, ns())).toBe(true);
      expect(await namespaceKnown(api, cache, made)).toBe(false);
      // Fifty syncs' questions: answered by the one list already made.
      const answers = await Promise.all(Array.from({ length: 50 }, () => namespaceKnown(api, cache, ns())));
      expect(answers.every(Boolean)).toBe(true);
      expect(count(api.requestStats, 'get')).toBe(0);
      // One listing of the Namespaces (paged, or streamed where the server serves it).
      expect(cache.lists).toBe(1);

      const created = await kubectl('create', 'namespace', made);
      expect(created.code, created.stderr).toBe(0);
      await eventually('the new namespace seen', async () =>
        (await namespaceKnown(api, cache, made)) ? true : undefined,
      );
      const deleted = await kubectl('delete', 'namespace', made, '--wait=true', '--timeout=60s');
      expect(deleted.code, deleted.stderr).toBe(0);
      await eventually('the deleted namespace gone', async () =>
        (await namespaceKnown(api, cache, made)) ? undefined : true,
      );
      expect(count(api.requestStats, 'get')).toBe(0);
    } finally {
      cache.close();
      api.close();
      await kubectl('delete', 'namespace', made, '--ignore-not-found', '--wait=false');
    }
  }, 120_000);

  it('asks the API server without a cache, or with one closed meanwhile (an agent stopping or reloading)', async () => {
    const api = new KubeApi(clusterConfig());
    const closed = new ClusterCache(api, { lingerMs: 60_000 });
    closed.close();
    try {
      expect(await namespaceKnown(api, closed, ns())).toBe(true);
      expect(count(api.requestStats, 'get')).toBe(1);
      expect(await namespaceKnown(api, undefined, ns())).toBe(true);
      expect(await namespaceKnown(api, undefined, `ns-known-none-${randomBytes(3).toString('hex')}`)).toBe(
        false,
      );
      expect(count(api.requestStats, 'get')).toBe(3);
    } finally {
      api.close();
    }
  });
});
