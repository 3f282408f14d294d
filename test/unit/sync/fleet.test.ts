// The decisions the agents of several clusters take together (sync/fleet.ts), from release histories: a rollout
// step waits for the steps before, stops at a failure, keeps to maxParallel; a promotion takes only what its
// upstream has had stable for `after` in every cluster, and with manual approval only the approved revision.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import type { Release } from '../../../src/contract.ts';
import { Fleet, type FleetMember } from '../../../src/sync/fleet.ts';

const config = parseConfig(`
cluster: {name: one}
clusters:
  - {name: two, kubeconfig: /k/2, labels: {tier: main}}
  - {name: three, kubeconfig: /k/3, labels: {tier: main}}
sources: {git: [{name: fleet, url: https://git.example.com/fleet.git}]}
deployments:
  - name: web
    namespace: a
    source: fleet
    clusters: {selector: {}}
    rollout: [{clusters: one}, {clusters: {selector: {tier: main}}, maxParallel: 1}]
  - {name: staging, namespace: a, source: fleet, clusters: [one, two]}
  - {name: prod, namespace: a, source: fleet, clusters: three, promote: {from: staging, after: 10m}}
  - {name: gated, namespace: a, source: fleet, clusters: three, promote: {from: staging, approval: manual}}
`);
const spec = (name: string) =>
  config.deployments.find((d) => d.name === name) as (typeof config.deployments)[0];
const T0 = Date.parse('2026-11-26T10:00:00Z');

function release(revision: string, result: Release['result'], at = T0, id = 1): Release {
  return {
    id,
    deployment: 'x',
    time: new Date(at).toISOString(),
    trigger: 'commit',
    commit: revision,
    images: { app: { image: 'app', digest: `sha256:${'a'.repeat(64)}` } },
    revision,
    versions: [],
    objects: [],
    result,
    durationMs: 5_000,
    messages: result === 'stable' ? [] : ['Deployment a/web: 0 of 1 ready'],
  };
}

/** The ledgers of each cluster: by cluster, by deployment, newest first. */
function fleetOf(ledgers: Record<string, Record<string, Release[]>>, now = T0) {
  let clock = now;
  const fleet = new Fleet(
    () => config,
    () => clock,
  );
  for (const [cluster, byName] of Object.entries(ledgers)) {
    const member: FleetMember = { releases: async (name) => byName[name] ?? [] };
    fleet.join(cluster, member);
  }
  return { fleet, at: (t: number) => (clock = t) };
}

describe('rollout steps', () => {
  it('lets the first step through, holds the next until the first is stable at the revision', async () => {
    const { fleet } = fleetOf({ one: { web: [] }, two: {}, three: {} });
    expect('release' in (await fleet.enter('one', spec('web'), 'r1'))).toBe(true);
    expect(await fleet.enter('two', spec('web'), 'r1')).toEqual({
      hold: { message: 'waiting for rollout step 1: one is not stable at this revision yet', failed: false },
    });
  });

  it('stops the steps after a failure, saying where', async () => {
    const { fleet } = fleetOf({ one: { web: [release('r2', 'timed-out', T0, 2)] }, two: {}, three: {} });
    expect(await fleet.enter('three', spec('web'), 'r2')).toEqual({
      hold: {
        message:
          'rollout stopped: step 1 timed-out in cluster one (release 2): Deployment a/web: 0 of 1 ready',
        failed: true,
      },
    });
  });

  it('keeps to maxParallel within a step, and gives the place back', async () => {
    const { fleet } = fleetOf({ one: { web: [release('r1', 'stable')] }, two: {}, three: {} });
    const first = await fleet.enter('two', spec('web'), 'r1');
    expect('release' in first).toBe(true);
    const second = await fleet.enter('three', spec('web'), 'r1');
    expect(second).toMatchObject({ hold: { message: expect.stringMatching(/two syncing; maxParallel 1/) } });
    if ('release' in first) first.release();
    expect('release' in (await fleet.enter('three', spec('web'), 'r1'))).toBe(true);
  });

  it('waits, without failing, while a cluster of an earlier step is not connected', async () => {
    const { fleet } = fleetOf({ two: {}, three: {} });
    expect(await fleet.enter('two', spec('web'), 'r1')).toEqual({
      hold: { message: 'waiting for rollout step 1 (one): cluster one is not connected', failed: false },
    });
  });
});

describe('promotion', () => {
  const stableBoth = (revision: string, at = T0) => ({
    one: { staging: [release(revision, 'stable', at)] },
    two: { staging: [release(revision, 'stable', at + 60_000)] },
    three: {},
  });

  it('waits until the upstream has been stable in every cluster for `after`, then takes exactly its revision', async () => {
    const { fleet, at } = fleetOf(stableBoth('c1'));
    const since = new Date(T0 + 65_000).toISOString();
    expect(await fleet.promotion(spec('prod'), undefined)).toEqual({
      state: 'waiting',
      message: `waiting until staging has been stable for 10m (stable since ${since})`,
      commit: 'c1',
    });
    at(T0 + 65_000 + 600_000);
    expect(await fleet.promotion(spec('prod'), undefined)).toMatchObject({
      state: 'ready',
      commit: 'c1',
      images: { app: { digest: `sha256:${'a'.repeat(64)}` } },
      from: { deployment: 'staging', cluster: 'one', release: 1, revision: 'c1' },
    });
  });

  it('takes nothing while the upstream is not stable, or not at one revision everywhere', async () => {
    const failing = fleetOf({ one: { staging: [release('c2', 'failed', T0, 2)] }, two: {}, three: {} }).fleet;
    expect(await failing.promotion(spec('prod'), undefined)).toMatchObject({
      state: 'waiting',
      message: 'waiting for staging to be stable in one (release 2 failed)',
    });
    const split = fleetOf({
      one: { staging: [release('c2', 'stable')] },
      two: { staging: [release('c1', 'stable')] },
      three: {},
    }).fleet;
    expect(await split.promotion(spec('prod'), undefined)).toMatchObject({
      state: 'waiting',
      message: 'waiting for staging to be at one revision in all its clusters',
    });
  });

  it('with manual approval, takes only the approved revision', async () => {
    const { fleet } = fleetOf(stableBoth('c3abcdef'));
    expect(await fleet.promotion(spec('gated'), undefined)).toMatchObject({
      state: 'waiting',
      message: 'waiting for approval: mooring promote gated --revision c3abcdef',
    });
    expect(await fleet.promotion(spec('gated'), { revision: 'c1', by: 'alice' })).toMatchObject({
      state: 'waiting',
    });
    expect(await fleet.promotion(spec('gated'), { revision: 'c3ab', by: 'alice' })).toMatchObject({
      state: 'ready',
      commit: 'c3abcdef',
    });
  });
});
