// A registry that rate limits (HTTP 429 with Retry-After) pauses the agent's polls of that source until the time it
// gave: the real distribution registry behind the test bed's fault proxy, polled by the agent every second.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { FaultProxy, type RequestInfo } from '../testbed/fault-proxy.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { agentConfig, eventually, stableImageSource, startAgent, testbed } from './helpers.ts';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface LogLine {
  msg: string;
  source?: string;
  until?: string;
  reason?: string;
}

describe('registry rate limits', () => {
  it('a 429 with Retry-After skips the polls of that source until then, and the metrics show until when', async () => {
    const env = testbed();
    const run = randomBytes(3).toString('hex');
    const repository = `ratelimit-${run}/web`;
    await pushImage({ registry: env.registry.url, repository, tag: 'stable' });
    const proxy = await FaultProxy.start(env.registry.url);
    cleanups.push(() => proxy.close());
    const ofRepository = (r: RequestInfo) => r.path.startsWith(`/v2/${repository}/`);
    // The first request for the image's manifest is refused; the registry asks for 5 seconds.
    proxy.set({ kind: 'rate-limit', retryAfterSeconds: 5 }, { match: ofRepository, times: 1 });

    const agent = startAgent(
      await agentConfig({
        cluster: { namespace: `mooring-ratelimit-${run}` },
        extra: {
          sources: {
            registry: [stableImageSource(`${proxy.host}/${repository}`, '1s')],
          },
        },
      }),
    );
    await agent.listening();
    const metrics = async () => (await fetch(`http://127.0.0.1:${agent.port()}/metrics`)).text();
    const logs = () => agent.logs() as LogLine[];
    await eventually('the 429', async () => (proxy.count('rate-limit') === 1 ? true : undefined));
    const limited = proxy.requests.find((r) => r.fault === 'rate-limit');
    if (!limited) throw new Error('no request met the rate limit');

    // While paused, each scheduled poll is one log line saying until when, and the metric says the same.
    const skipped = await eventually('two skipped polls', async () => {
      const lines = logs().filter((l) => l.msg === 'registry poll skipped: rate limited');
      return lines.length >= 2 ? lines : undefined;
    });
    const until = Date.parse(skipped[0]?.until ?? '');
    expect(until - limited.at).toBeGreaterThanOrEqual(4_900);
    expect(until - limited.at).toBeLessThan(7_000);
    expect(skipped[0]).toMatchObject({ source: 'web-image', reason: 'HTTP 429, Retry-After: 5' });
    const paused = /mooring_registry_paused_until_seconds\{registry="web-image"\} (\d+)/.exec(
      await metrics(),
    );
    expect(Math.abs(Number(paused?.[1]) * 1000 - until)).toBeLessThanOrEqual(1000);

    // No request reached the registry before the time it gave; then polling goes on every second.
    await eventually('polls after the pause', async () =>
      proxy.count('pass', ofRepository) >= 2 ? true : undefined,
    );
    const firstAfter = proxy.requests.find((r) => r.fault === 'pass' && ofRepository(r));
    expect((firstAfter?.at ?? 0) - limited.at).toBeGreaterThanOrEqual(4_900);
    expect(proxy.count(undefined, (r) => ofRepository(r) && r.at < until)).toBe(1);
    expect(await metrics()).toMatch(/mooring_registry_paused_until_seconds\{registry="web-image"\} 0\b/);
  });
});
