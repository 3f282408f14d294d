import { describe, expect, it } from 'vitest';
import {
  describeSuspension,
  parseControl,
  RECONCILE_PREFIX,
  RECONCILED_PREFIX,
  requestToken,
  rollbackHolds,
  SUSPEND_PREFIX,
} from '../../../src/kube/control-map.ts';

describe('the control ConfigMap annotations', () => {
  it('reads suspensions, requests and answers by deployment, ignoring other annotations', () => {
    const state = parseControl({
      [`${SUSPEND_PREFIX}web`]: JSON.stringify({
        since: '2026-11-23T10:00:00.000Z',
        by: 'alice',
        reason: 'x',
      }),
      [`${RECONCILE_PREFIX}api`]: '2026-11-23T10:01:00.000Z.0a1b2c3d',
      [`${RECONCILED_PREFIX}api`]: JSON.stringify({ token: 't', state: 'stable', release: 4, message: 'ok' }),
      'kubectl.kubernetes.io/last-applied-configuration': '{}',
    });
    expect([...state.suspended]).toEqual([
      ['web', { since: '2026-11-23T10:00:00.000Z', by: 'alice', reason: 'x' }],
    ]);
    expect([...state.requested]).toEqual([['api', '2026-11-23T10:01:00.000Z.0a1b2c3d']]);
    expect(state.answered.get('api')).toEqual({ token: 't', state: 'stable', release: 4, message: 'ok' });
  });

  it('keeps a deployment suspended when its record cannot be read: someone meant to hold it', () => {
    const state = parseControl({
      [`${SUSPEND_PREFIX}web`]: 'not json',
      [`${SUSPEND_PREFIX}api`]: '{"by": 3}',
    });
    expect(state.suspended.get('web')?.reason).toBe('unreadable suspension record');
    expect(state.suspended.get('api')?.by).toBe('unknown');
  });

  it('drops an answer it cannot read (the CLI goes on waiting for one it can)', () => {
    const state = parseControl({ [`${RECONCILED_PREFIX}web`]: JSON.stringify({ token: 't', state: 'odd' }) });
    expect(state.answered.size).toBe(0);
  });

  it('reads a rollback under way, which holds until its time has passed; one it cannot read holds nothing', () => {
    const rollback = {
      token: '2026-12-04T10:00:00.000Z.0a1b2c3d',
      by: 'alice',
      since: '2026-12-04T10:00:00.000Z',
      until: '2026-12-04T10:40:00.000Z',
    };
    const state = parseControl({
      'rollback.mooring.io/web': JSON.stringify(rollback),
      'rollback.mooring.io/api': '{"by": "mallory"}',
      'rollback.mooring.io/db': 'not json',
    });
    expect(Object.fromEntries(state.rollingBack)).toEqual({ web: rollback });
    // Its answer has a key of its own: a reconcile's answer is not replaced.
    const answered = parseControl({
      'rollback-answered.mooring.io/web': JSON.stringify({
        token: rollback.token,
        state: 'held',
        message: 'm',
      }),
      'reconciled.mooring.io/web': JSON.stringify({ token: 'r1', state: 'cancelled', message: 'superseded' }),
    });
    expect(answered.rollbackAnswered.get('web')?.token).toBe(rollback.token);
    expect(answered.answered.get('web')?.token).toBe('r1');
    expect(rollbackHolds(rollback, Date.parse('2026-12-04T10:39:59Z'))).toBe(true);
    expect(rollbackHolds(rollback, Date.parse('2026-12-04T10:40:00Z'))).toBe(false);
    expect(rollbackHolds({ ...rollback, until: 'never' }, Date.parse('2026-12-04T10:00:00Z'))).toBe(false);
    expect(rollbackHolds(undefined)).toBe(false);
  });

  it("holds a rollback no longer than the deployment's timeout and margin from its start, whatever its until says", () => {
    const at = (t: string) => Date.parse(`2026-12-04T${t}Z`);
    const hour = 3_600_000;
    // Written by someone who may write the agent's namespace: held for years by its until.
    const forever = {
      token: 't',
      by: 'x',
      since: '2026-12-04T10:00:00.000Z',
      until: '9999-12-31T00:00:00.000Z',
    };
    expect(rollbackHolds(forever, at('10:59:59'))).toBe(true);
    expect(rollbackHolds(forever, at('10:59:59'), hour)).toBe(true);
    expect(rollbackHolds(forever, at('11:00:00'), hour)).toBe(false);
    // A since ahead of the clock (a CLI's clock ahead) is taken up to the bound ahead, so nothing holds longer
    // than twice the bound from now; further ahead, no hold.
    const ahead = { ...forever, since: '2026-12-04T10:50:00.000Z' };
    expect(rollbackHolds(ahead, at('10:00:00'), hour)).toBe(true);
    expect(rollbackHolds(ahead, at('11:49:59'), hour)).toBe(true);
    expect(rollbackHolds(ahead, at('11:50:00'), hour)).toBe(false);
    expect(rollbackHolds({ ...forever, since: '2026-12-04T11:00:01.000Z' }, at('10:00:00'), hour)).toBe(
      false,
    );
    expect(rollbackHolds({ ...forever, since: 'then' }, at('10:00:00'), hour)).toBe(false);
    // The CLI's own hold ends at its until, before the bound.
    const own = { ...forever, until: '2026-12-04T10:40:00.000Z' };
    expect(rollbackHolds(own, at('10:40:00'), hour)).toBe(false);
  });

  it('describes a suspension to the minute', () => {
    expect(
      describeSuspension({ since: '2026-11-23T10:00:41.123Z', by: 'alice', reason: 'maintenance' }),
    ).toBe('suspended since 2026-11-23T10:00Z by alice: maintenance');
    expect(describeSuspension({ since: '2026-11-23T10:00:41Z', by: 'unknown' })).toBe(
      'suspended since 2026-11-23T10:00Z by unknown',
    );
  });

  it('makes request tokens that name their time and never repeat', () => {
    const at = new Date('2026-11-23T10:00:00Z');
    const a = requestToken(at);
    expect(a).toMatch(/^2026-11-23T10:00:00\.000Z\.[0-9a-f]{8}$/);
    expect(requestToken(at)).not.toBe(a);
  });
});
