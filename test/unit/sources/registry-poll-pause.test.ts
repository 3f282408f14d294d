// A registry source whose registry asked for a pause is not polled until then: pollRegistrySource sends nothing
// and logs one line saying until when. The client points at a closed port, so a poll that did send would fail.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { TransientError } from '../../../src/errors.ts';
import { RegistryClient } from '../../../src/sources/registry/client.ts';
import { pollRegistry, type RegistryPollState } from '../../../src/sources/registry/poll.ts';
import { type Clock, RegistryPause } from '../../../src/sources/registry/rate-limit.ts';
import { pollRegistrySource, type RegistryState, type SourceState } from '../../../src/sync/agent-sources.ts';
import { createLogger } from '../../../src/sync/logger.ts';

const START = Date.parse('2026-11-22T00:00:00Z');

function setup() {
  let now = START;
  const clock: Clock & { advance(ms: number): void } = {
    now: () => now,
    sleep: async (ms) => {
      now += ms;
    },
    advance: (ms) => {
      now += ms;
    },
  };
  const lines: { msg: string; until?: string; reason?: string; source?: string }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const config = parseConfig(`sources:
  registry:
    - {name: web-image, image: 127.0.0.1:9/app, insecure: true, interval: 1m}
`);
  const source = config.sources.registry[0];
  if (!source) throw new Error('no source');
  const pause = new RegistryPause(clock);
  // Port 9 (discard) is closed on loopback: any request the poll sends is refused.
  const client = new RegistryClient({ host: '127.0.0.1:9', insecure: true, clock, pause, timeoutMs: 2000 });
  const poller = {
    kind: 'image' as const,
    name: source.name,
    reference: source.image,
    client,
    poll: (last: RegistryPollState) => pollRegistry(client, source, last),
  };
  const registry: RegistryState = { source, kind: 'image', poller, client, current: undefined };
  const state: SourceState = {
    config,
    log: createLogger({ destination, level: 'debug' }),
    deployments: new Map(),
    repos: new Map(),
    registries: new Map([['web-image', registry]]),
    knownDigests: new Map(),
  };
  return { clock, pause, client, registry, state, lines };
}

describe('registry polls during a rate-limit pause', () => {
  it('skips polls until the time the registry gave, with one log line each, then polls again', async () => {
    const { clock, pause, client, registry, state, lines } = setup();
    pause.observe(429, (name) => (name === 'retry-after' ? '300' : undefined));
    const reconcile = async () => {
      throw new Error('nothing should be reconciled');
    };

    await pollRegistrySource(state, registry, reconcile);
    clock.advance(60_000);
    await pollRegistrySource(state, registry, reconcile);
    const skipped = lines.filter((l) => l.msg === 'registry poll skipped: rate limited');
    expect(skipped).toHaveLength(2);
    expect(skipped[0]).toMatchObject({
      source: 'web-image',
      until: '2026-11-22T00:05:00.000Z',
      reason: 'HTTP 429, Retry-After: 300',
    });
    expect(client.stats).toEqual({ head: 0, get: 0, token: 0 });

    // At the time given, the poll runs again (and meets the closed port).
    clock.advance(240_000);
    await expect(pollRegistrySource(state, registry, reconcile)).rejects.toThrow(TransientError);
    expect(client.stats.head).toBe(1);
    client.close();
  });
});
