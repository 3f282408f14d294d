import { describe, expect, it } from 'vitest';
import type { Release, ReleaseImage } from '../../../src/contract.ts';
import type { Fence, LedgerData } from '../../../src/report/ledger.ts';
import { type ReconcileInput, reconcile } from '../../../src/sync/reconcile.ts';

const C1 = 'c1'.repeat(20);
const C2 = 'c2'.repeat(20);
const D1 = 'sha256:d1';
const D2 = 'sha256:d2';

function release(
  id: number,
  commit: string | undefined,
  digest: string | undefined,
  over: Partial<Release> = {},
): Release {
  const images: Record<string, ReleaseImage> = digest
    ? { app: { image: 'registry/app', tag: '1', digest } }
    : {};
  const digests: string[] = digest ? [`app=${digest}`] : [];
  return {
    id,
    deployment: 'web',
    time: '2024-01-01T00:00:00Z',
    trigger: 'commit',
    commit,
    images,
    revision: [commit ?? 'local', ...digests].join('|'),
    versions: [],
    objects: [],
    result: 'stable',
    durationMs: 1,
    messages: [],
    ...over,
  };
}

function fence(release: number, commit: string | undefined, digest: string | undefined): Fence {
  return { release, since: '2024-01-02T00:00:00Z', heads: { commit, images: digest ? { app: digest } : {} } };
}

function input(ledger: LedgerData, over: Partial<ReconcileInput> = {}): ReconcileInput {
  return { ledger, commit: C1, digests: { app: D1 }, local: false, ...over };
}

const atC1D1: LedgerData = { releases: [release(3, C1, D1)], fence: undefined };

describe('reconcile', () => {
  it('finds a deployment current when its last stable release has the revision', () => {
    expect(reconcile(input(atC1D1))).toEqual({ action: 'current', revision: `${C1}|app=${D1}` });
  });

  it('finds a deployment current at a later commit known to deploy the same as its release', () => {
    const sameAs = { ledger: `${C1}|app=${D1}`, revision: `${C2}|app=${D1}` };
    expect(reconcile(input(atC1D1, { commit: C2, sameAs }))).toEqual({
      action: 'current',
      revision: `${C2}|app=${D1}`,
    });
    // Not once the ledger has moved on, nor for another revision (a new image), nor for a drift correction.
    const moved: LedgerData = { releases: [release(4, C2, D2), ...atC1D1.releases], fence: undefined };
    expect(reconcile(input(moved, { commit: C2, sameAs })).action).toBe('sync');
    expect(reconcile(input(atC1D1, { commit: C2, digests: { app: D2 }, sameAs })).action).toBe('sync');
    expect(reconcile(input(atC1D1, { commit: C2, sameAs, reason: 'drift' })).action).toBe('sync');
  });

  it('judges by the newest stable release, not a newer failed one', () => {
    const ledger: LedgerData = {
      releases: [release(4, C2, D1, { result: 'failed' }), release(3, C1, D1)],
      fence: undefined,
    };
    expect(reconcile(input(ledger)).action).toBe('current');
    expect(reconcile(input(ledger, { commit: C2 }))).toMatchObject({ action: 'sync', trigger: 'commit' });
  });

  it('deploys a deployment with no stable release for the first time, triggered by the start', () => {
    const decision = reconcile(input({ releases: [], fence: undefined }));
    expect(decision).toEqual({
      action: 'sync',
      revision: `${C1}|app=${D1}`,
      trigger: 'start',
      key: `${C1}|app=${D1}|release 0|fence 0|spec 0`,
      release: undefined,
      fence: undefined,
    });
  });

  it.each([
    { change: 'a new commit', commit: C2, digest: D1, trigger: 'commit' },
    { change: 'a new image', commit: C1, digest: D2, trigger: 'image' },
    { change: 'a new commit and a new image', commit: C2, digest: D2, trigger: 'image' },
  ])('names $change as the trigger $trigger', ({ commit, digest, trigger }) => {
    const decision = reconcile(input(atC1D1, { commit, digests: { app: digest } }));
    expect(decision).toMatchObject({
      action: 'sync',
      trigger,
      revision: `${commit}|app=${digest}`,
      key: `${commit}|app=${digest}|release 3|fence 0|spec 0`,
    });
    if (decision.action === 'sync') expect(decision.release?.id).toBe(3);
  });

  it('corrects drift of a current deployment, with the key of its revision', () => {
    expect(reconcile(input(atC1D1, { reason: 'drift' }))).toMatchObject({
      action: 'sync',
      trigger: 'drift',
      key: `${C1}|app=${D1}|release 3|fence 0|spec 0`,
    });
  });

  it('keys a sync by what it deploys, never by why it was asked for', () => {
    // A start-up pass, a poll and a reconcile request of one revision name one sync: the queue joins them.
    const empty: LedgerData = { releases: [], fence: undefined };
    const keys = [undefined, 'manual', 'drift', 'config'].map((reason) => {
      const decision = reconcile(input(empty, { reason: reason as ReconcileInput['reason'] }));
      return decision.action === 'sync' ? decision.key : decision.action;
    });
    expect(new Set(keys)).toEqual(new Set([`${C1}|app=${D1}|release 0|fence 0|spec 0`]));
  });

  it('gives a changed spec a key of its own', () => {
    expect(reconcile(input(atC1D1, { reason: 'config', spec: 2 }))).toMatchObject({
      trigger: 'config',
      key: `${C1}|app=${D1}|release 3|fence 0|spec 2`,
    });
  });

  it('never finds a local source current by revision: its files are compared when the sync runs', () => {
    const ledger: LedgerData = { releases: [release(2, undefined, undefined)], fence: undefined };
    const decision = reconcile(input(ledger, { commit: undefined, digests: {}, local: true }));
    expect(decision).toMatchObject({
      action: 'sync',
      trigger: 'commit',
      key: 'local|release 2|fence 0|spec 0',
    });
    expect(reconcile(input(ledger, { commit: undefined, digests: {} })).action).toBe('current');
  });

  it("keys a local source's sync by the change of its folder, which has no commit", () => {
    const ledger: LedgerData = { releases: [release(2, undefined, undefined)], fence: undefined };
    const at = (change: number, reason?: ReconcileInput['reason']) =>
      reconcile(input(ledger, { commit: undefined, digests: {}, local: true, change, reason }));
    expect(at(4)).toMatchObject({ key: 'local|release 2|fence 0|spec 0|change 4' });
    // A reconcile request between two changes joins the sync of the change it finds.
    expect(at(4, 'manual')).toMatchObject({ key: 'local|release 2|fence 0|spec 0|change 4' });
    expect(at(5)).toMatchObject({ key: 'local|release 2|fence 0|spec 0|change 5' });
  });

  it('syncs a current deployment on request (mooring reconcile)', () => {
    expect(reconcile(input(atC1D1, { reason: 'manual' }))).toMatchObject({
      action: 'sync',
      trigger: 'manual',
      key: `${C1}|app=${D1}|release 3|fence 0|spec 0`,
    });
  });

  describe('with a rollback fence', () => {
    // Rolled back from release 3 (c2) to the content of release 1 (c1), recorded as release 4.
    const fenced: LedgerData = {
      releases: [release(4, C1, D1, { trigger: 'rollback' }), release(3, C2, D1)],
      fence: fence(4, C2, D1),
    };

    it('holds the deployment while its sources stand where they were when the fence was set', () => {
      expect(reconcile(input(fenced, { commit: C2 }))).toEqual({
        action: 'held',
        revision: `${C2}|app=${D1}`,
        fence: fenced.fence,
      });
    });

    it('holds it even against a drift correction', () => {
      expect(reconcile(input(fenced, { commit: C2, reason: 'drift' })).action).toBe('held');
    });

    it('lets a deployment leaving its set (a closed pull request) prune, fenced or current', () => {
      expect(reconcile(input(fenced, { commit: C2, removing: true }))).toMatchObject({
        action: 'sync',
        fence: fenced.fence,
      });
      expect(reconcile(input(atC1D1, { removing: true })).action).toBe('sync');
    });

    it('holds a local source while its images stand', () => {
      const local: LedgerData = { releases: fenced.releases, fence: fence(4, undefined, D1) };
      expect(reconcile(input(local, { commit: undefined, local: true })).action).toBe('held');
      // No commit is no move, whatever commit the fence recorded.
      expect(reconcile(input(fenced, { commit: undefined, local: true })).action).toBe('held');
    });

    it.each([
      { change: 'a new commit', commit: 'c3'.repeat(20), digest: D1, trigger: 'commit' },
      { change: 'a new image', commit: C2, digest: D2, trigger: 'image' },
    ])('is lifted by $change', ({ commit, digest, trigger }) => {
      const decision = reconcile(input(fenced, { commit, digests: { app: digest } }));
      expect(decision).toMatchObject({
        action: 'sync',
        trigger,
        key: `${commit}|app=${digest}|release 4|fence 4|spec 0`,
        fence: fenced.fence,
      });
    });

    it('syncs even to the revision the deployment is at, once lifted', () => {
      // The fence heads are c2; the current release is c1: a poll at c1 moved past the heads.
      const decision = reconcile(input(fenced, { commit: C1 }));
      expect(decision).toMatchObject({ action: 'sync', trigger: 'commit', fence: fenced.fence });
    });
  });
});
