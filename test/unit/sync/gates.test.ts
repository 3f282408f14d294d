import { describe, expect, it } from 'vitest';
import type { Logger, Release } from '../../../src/contract.ts';
import type { LedgerData } from '../../../src/report/ledger.ts';
import type { JobContext, Planned } from '../../../src/sync/agent-context.ts';
import type { DeploymentState } from '../../../src/sync/agent-sources.ts';
import { GATES, judge } from '../../../src/sync/gates.ts';
import type { Decision } from '../../../src/sync/reconcile.ts';

const log: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => log,
} as unknown as Logger;

function stable(id: number, revision: string, result: Release['result'] = 'stable'): Release {
  return {
    id,
    deployment: 'db',
    time: '2024-01-01T00:00:00Z',
    trigger: 'commit',
    commit: revision,
    images: {},
    revision,
    versions: [],
    objects: [],
    result,
    durationMs: 1,
    messages: [],
  };
}

/** A world for the gates: what is suspended, who holds claims, what each ledger says; every call recorded. */
function world(
  over: {
    suspended?: string[];
    /** Deployments a rollback from the CLI holds, and by whom. */
    rollingBack?: Record<string, string>;
    busy?: string[];
    releases?: Record<string, Release[]>;
    holder?: string;
    shard?: boolean;
    stepFull?: boolean;
    /** What the keeper of deployment sets says of a deployment. */
    sets?: (deployment: string, set?: string) => { message: string; waitMs?: number } | undefined;
  } = {},
) {
  const calls: string[] = [];
  /** The longest hold each question about a rollback allowed. */
  const holdBounds: (number | undefined)[] = [];
  const releases = over.releases ?? {};
  const ledger = {
    read: async (name: string): Promise<LedgerData> => ({ releases: releases[name] ?? [], fence: undefined }),
    claim: async (name: string) => {
      calls.push(`claim ${name}`);
      return over.holder
        ? { taken: false, holder: { identity: over.holder } }
        : { taken: true, data: { releases: [], fence: undefined } };
    },
    unclaim: async (name: string) => {
      calls.push(`unclaim ${name}`);
    },
    setFence: async (name: string) => {
      calls.push(`lift fence ${name}`);
    },
  };
  const fleet = {
    enter: async (_cluster: string, _spec: unknown, _revision: string, take = true) => {
      calls.push(`enter step ${take ? 'take' : 'look'}`);
      if (over.stepFull) return { hold: { message: 'waiting for a place in rollout step 2', failed: false } };
      return { release: () => calls.push('leave step') };
    },
  };
  const ctx = {
    deps: {
      config: { cluster: { name: 'one' } },
      shard: over.shard
        ? { identity: 'me', live: (id: string) => id !== 'gone', elsewhere: () => false }
        : undefined,
      fleet,
      sets: over.sets ? { holding: over.sets } : undefined,
    },
    state: { deployments: new Map([['db', {}]]) },
    control: {
      suspended: (name: string) => (over.suspended?.includes(name) ? {} : undefined),
      rollingBack: (name: string, maxMs?: number) => {
        holdBounds.push(maxMs);
        const by = over.rollingBack?.[name];
        return by
          ? { token: 't', by, since: '2026-12-04T10:00:00.000Z', until: '2026-12-04T11:00:00.000Z' }
          : undefined;
      },
    },
    ledger: () => ledger,
    pollRound: () => 0,
    busy: (name: string) => over.busy?.includes(name) === true,
  } as unknown as JobContext;
  return { ctx, calls, holdBounds };
}

const web = {
  spec: {
    name: 'web',
    dependsOn: ['db'],
    rollout: [{ clusters: ['one'] }],
    stability: { timeout: 1_800_000 },
  },
} as unknown as DeploymentState;

function planned(decision: Decision, over: Partial<Planned> = {}): Planned {
  return {
    decision,
    trigger: decision.action === 'sync' ? decision.trigger : 'commit',
    promotion: undefined,
    ledger: { releases: [], fence: undefined },
    rounds: new Map(),
    commit: 'c2',
    images: {},
    request: undefined,
    change: undefined,
    promotedFrom: undefined,
    log,
    ...over,
  };
}

const sync = (over: Partial<Extract<Decision, { action: 'sync' }>> = {}): Decision => ({
  action: 'sync',
  revision: 'c2',
  trigger: 'commit',
  key: 'c2|release 1|fence 0|spec 0',
  release: undefined,
  fence: undefined,
  ...over,
});
const fenced: Decision = {
  action: 'held',
  revision: 'c1',
  fence: { release: 3, since: '2024-01-02T00:00:00Z', heads: { commit: 'c1', images: {} } },
};
const dbStable = { db: [stable(1, 'c1')] };

describe('the gates of a sync', () => {
  it('are one table, met in order: suspend, a rollback under way, set, promotion, claim, fence, rollout step, dependencies', () => {
    expect(GATES.map((g) => g.name)).toEqual([
      'suspended',
      'rolling-back',
      'set',
      'promotion',
      'claim',
      'fence',
      'rollout',
      'dependency',
    ]);
  });

  it("hold a deployment of a set while the set's change is taken (looked at again), or at its last release while the set is held", async () => {
    const ofSet = { spec: { ...web.spec, set: 'apps' } } as unknown as DeploymentState;
    const asked: string[] = [];
    const taking = world({
      sets: (name, set) => {
        asked.push(`${name} ${set}`);
        return {
          message: 'deployment set apps changed: waiting for its deployments to be taken',
          waitMs: 1000,
        };
      },
    });
    expect(await judge(taking.ctx, ofSet, planned(sync()), 'take')).toMatchObject({
      hold: { gate: 'set', againMs: 1000 },
    });
    expect(asked).toEqual(['web apps']);
    const held = world({ sets: () => ({ message: 'held by deployment set apps: ...' }) });
    expect(await judge(held.ctx, ofSet, planned(sync({ trigger: 'drift' })), 'look')).toMatchObject({
      hold: { gate: 'set', againMs: undefined, message: 'held by deployment set apps: ...' },
    });
    // Nothing taken before it: no claim, no place in a step.
    expect([...taking.calls, ...held.calls]).toEqual([]);
  });

  it.each([
    { what: 'a new commit', p: planned(sync()) },
    { what: 'a drift correction', p: planned(sync({ trigger: 'drift' })) },
    { what: 'a requested sync', p: planned(sync({ trigger: 'manual' })) },
    { what: 'a sync held by a rollback fence', p: planned(fenced) },
  ])('hold a suspended deployment first, not even $what syncs', async ({ p }) => {
    const { ctx, calls } = world({ suspended: ['web'], shard: true, releases: dbStable });
    const judged = await judge(ctx, web, p, 'take');
    expect(judged).toMatchObject({ hold: { gate: 'suspended', againMs: undefined } });
    expect(calls).toEqual([]);
  });

  it.each([
    { what: 'a new commit', p: planned(sync()) },
    { what: 'a drift correction', p: planned(sync({ trigger: 'drift' })) },
    { what: 'a requested sync', p: planned(sync({ trigger: 'manual' })) },
  ])(
    'hold a deployment a rollback from the CLI holds, before taking anything: not even $what syncs',
    async ({ p }) => {
      const { ctx, calls, holdBounds } = world({
        rollingBack: { web: 'alice' },
        shard: true,
        releases: dbStable,
      });
      expect(await judge(ctx, web, p, 'take')).toMatchObject({
        hold: {
          gate: 'rolling-back',
          againMs: undefined,
          message: 'held while alice rolls it back (since 2026-12-04T10:00:00.000Z)',
        },
      });
      expect(calls).toEqual([]);
      // For no longer than the CLI asks: the stability timeout (30 minutes) and the margin (10).
      expect(holdBounds).toEqual([40 * 60_000]);
      // Another deployment goes on.
      const other = world({ rollingBack: { api: 'alice' }, releases: dbStable });
      expect('give' in (await judge(other.ctx, web, planned(sync()), 'look'))).toBe(true);
    },
  );

  it('hold a fenced deployment until what it deploys moves past the fence, which the sync lifts once it holds the claim', async () => {
    const held = world({ shard: true, releases: dbStable });
    expect(await judge(held.ctx, web, planned(fenced), 'look')).toMatchObject({
      hold: { gate: 'fence', message: 'held at release 3 by a rollback; mooring resume web lifts it' },
    });
    const moved = world({ shard: true, releases: dbStable });
    const p = planned(sync({ fence: fenced.action === 'held' ? fenced.fence : undefined }));
    // Looked at before the queue, nothing is taken or lifted.
    expect('give' in (await judge(moved.ctx, web, p, 'look'))).toBe(true);
    expect(moved.calls).toEqual(['enter step look']);
    const taken = await judge(moved.ctx, web, p, 'take');
    expect(moved.calls).toEqual(['enter step look', 'claim web', 'lift fence web', 'enter step take']);
    if ('give' in taken) await taken.give();
    expect(moved.calls.slice(4)).toEqual(['leave step', 'unclaim web']);
  });

  it('look at a claim another live replica holds without taking it, and try again soon', async () => {
    const { ctx, calls } = world({ shard: true });
    const p = planned(sync(), {
      ledger: { releases: [], fence: undefined, holder: { identity: 'other' } } as never,
    });
    expect(await judge(ctx, web, p, 'look')).toMatchObject({
      hold: { gate: 'claim', message: 'not synced now: replica other syncs it', againMs: 2_000 },
    });
    expect(calls).toEqual([]);
  });

  it('give back what earlier gates took when a later one holds', async () => {
    const { ctx, calls } = world({ shard: true, busy: ['db'] });
    const judged = await judge(ctx, web, planned(sync()), 'take');
    expect(judged).toMatchObject({ hold: { gate: 'dependency', message: 'waiting for db', againMs: 2_000 } });
    expect(calls).toEqual(['claim web', 'enter step take', 'leave step', 'unclaim web']);
  });

  it('hold on a failed dependency as a failure, looked at again less often', async () => {
    const { ctx } = world({ releases: { db: [stable(2, 'c1', 'failed')] } });
    expect(await judge(ctx, web, planned(sync()), 'look')).toMatchObject({
      hold: {
        gate: 'dependency',
        failed: true,
        againMs: 10_000,
        message: 'held: dependency db failed (release 2)',
      },
    });
  });

  it('let a drift pass through the rollout step and dependencies: it only restores what runs', async () => {
    const { ctx, calls } = world({ busy: ['db'], stepFull: true });
    expect('give' in (await judge(ctx, web, planned(sync({ trigger: 'drift' })), 'take'))).toBe(true);
    expect(calls).toEqual([]);
    expect(await judge(ctx, web, planned(sync()), 'take')).toMatchObject({ hold: { gate: 'rollout' } });
  });

  it('hold a promoted deployment while its promotion waits', async () => {
    const { ctx } = world();
    const promotion = {
      state: 'waiting' as const,
      message: 'waiting for approval: mooring promote web --revision c2',
    };
    expect(await judge(ctx, web, planned(sync(), { promotion }), 'look')).toMatchObject({
      hold: { gate: 'promotion', message: promotion.message, againMs: undefined },
    });
  });

  it('end without a sync when another replica synced this very revision, the claim given back', async () => {
    const { ctx, calls } = world({ shard: true });
    const ledger = ctx.ledger();
    (ledger as unknown as { claim: unknown }).claim = async () => {
      calls.push('claim web');
      return { taken: true, data: { releases: [stable(4, 'c2')], fence: undefined } };
    };
    const d = {
      ...web,
      spec: { ...web.spec, dependsOn: [], rollout: undefined },
    } as unknown as DeploymentState;
    expect(await judge(ctx, d, planned(sync()), 'take')).toMatchObject({
      hold: { gate: 'claim', done: true },
    });
    expect(calls).toEqual(['claim web', 'unclaim web']);
    // Asked for (a reconcile request): synced even so.
    calls.length = 0;
    expect('give' in (await judge(ctx, d, planned(sync({ trigger: 'manual' })), 'take'))).toBe(true);
  });

  it('ask a holder the live list lacks of its own Lease before taking its claim, and end the sync a gone one left', async () => {
    const { ctx, calls } = world({ shard: true });
    let goneNow = false;
    const asked: string[] = [];
    const shard = (ctx.deps as unknown as { shard: Record<string, unknown> }).shard;
    shard.live = (id: string) => id === 'me';
    shard.gone = async (id: string) => {
      asked.push(id);
      return goneNow;
    };
    const attempt = {
      commit: 'c2',
      revision: 'c2',
      trigger: 'commit',
      images: {},
      since: '2024-01-03T00:00:00Z',
      versions: [],
    };
    (ctx.ledger() as unknown as { claim: unknown }).claim = async (
      name: string,
      identity: string,
      live: (id: string) => boolean,
    ) => {
      calls.push(`claim ${name}`);
      if (live('late')) return { taken: false, holder: { identity: 'late' } };
      return {
        taken: true,
        from: { identity: 'late' },
        data: { releases: [stable(4, 'c2')], fence: undefined, holder: { identity }, attempt },
      };
    };
    (ctx as unknown as { syncDeps: unknown }).syncDeps = () => ({
      log,
      ledger: {
        append: async (r: Release) => {
          calls.push(`append ${r.result} ${r.revision}`);
          return { ...r, id: 5 };
        },
      },
      reporters: [
        { finished: async (_s: unknown, report: { outcome: string }) => calls.push(`end ${report.outcome}`) },
      ],
    });
    const d = {
      ...web,
      spec: { ...web.spec, dependsOn: [], rollout: undefined },
    } as unknown as DeploymentState;
    const p = planned(sync(), {
      ledger: { releases: [], fence: undefined, holder: { identity: 'late', since: '' } } as never,
    });
    // A replica that joined after the list was read: its Lease says it lives, so its claim stands.
    expect(await judge(ctx, d, p, 'take')).toMatchObject({
      hold: { gate: 'claim', message: 'not synced now: replica late syncs it', againMs: 2_000 },
    });
    expect(asked).toEqual(['late']);
    expect(calls).toEqual(['claim web']);
    // Its Lease expired: the claim is taken, the sync it left ends as interrupted, and this revision is synced
    // again although a stable release of it is the newest.
    goneNow = true;
    calls.length = 0;
    expect('give' in (await judge(ctx, d, p, 'take'))).toBe(true);
    expect(calls).toEqual(['claim web', 'append error c2', 'end error']);
  });
});
