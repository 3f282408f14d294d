import { describe, expect, it } from 'vitest';
import { describeReason, type SyncTarget, supersedingReason } from '../../../src/contract.ts';

const C1 = '1'.repeat(40);
const C2 = '2'.repeat(40);
const web = (digit: string) => ({ image: 'example/web', digest: `sha256:${digit.repeat(64)}` });
const worker = (digit: string) => ({ image: 'example/worker', digest: `sha256:${digit.repeat(64)}` });

function target(over: Partial<SyncTarget>): SyncTarget {
  return { commit: C1, images: { web: web('a') }, spec: 0, trigger: 'commit', ...over };
}

describe('supersedingReason', () => {
  it.each([
    {
      what: 'a newer commit, even with a newer image',
      next: target({ commit: C2, images: { web: web('b') }, trigger: 'image' }),
      reason: { by: 'commit', commit: C2 },
      text: 'commit 2222222',
    },
    {
      what: 'a newer image of the same commit, naming only the image that changed',
      next: target({ images: { web: web('b') }, trigger: 'image' }),
      reason: { by: 'image', images: ['example/web@sha256:bbbbbbbbbbbb'] },
      text: 'a newer image example/web@sha256:bbbbbbbbbbbb',
    },
    {
      what: 'a changed spec',
      next: target({ spec: 1, trigger: 'config' }),
      reason: { by: 'config' },
      text: 'a configuration change',
    },
    {
      what: 'a reconcile request at the same commit and images',
      next: target({ trigger: 'manual' }),
      reason: { by: 'reconcile' },
      text: 'a reconcile request',
    },
    {
      what: 'a drift correction at the same commit and images',
      next: target({ trigger: 'drift' }),
      reason: { by: 'drift' },
      text: 'a drift correction',
    },
    {
      what: 'a start-up pass at the same commit (never "a newer image")',
      next: target({ trigger: 'start' }),
      reason: { by: 'revision' },
      text: 'a newer revision',
    },
  ])('names $what', ({ next, reason, text }) => {
    const replaced = target({ images: { web: web('a'), worker: worker('c') }, trigger: 'start' });
    expect(supersedingReason(replaced, { ...next, images: { ...next.images, worker: worker('c') } })).toEqual(
      reason,
    );
    expect(describeReason(supersedingReason(replaced, next))).toBe(text);
  });

  it('names a newer change of a local folder, which has no commit, and nothing without targets', () => {
    const local = target({ commit: undefined, images: {}, change: 3 });
    expect(supersedingReason(local, { ...local, change: 4 })).toEqual({ by: 'files' });
    expect(describeReason({ by: 'files' })).toBe('a newer change of its files');
    expect(supersedingReason(local, { ...local, trigger: 'manual' })).toEqual({ by: 'reconcile' });
    expect(supersedingReason(undefined, local)).toEqual({ by: 'revision' });
  });
});
