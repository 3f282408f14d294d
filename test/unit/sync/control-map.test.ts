import { describe, expect, it } from 'vitest';
import {
  describeSuspension,
  parseControl,
  RECONCILE_PREFIX,
  RECONCILED_PREFIX,
  requestToken,
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
