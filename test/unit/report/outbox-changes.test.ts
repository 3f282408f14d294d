// How an outbox's own changes apply to what another agent stored meanwhile (src/report/outbox.ts applyChanges):
// statuses kept by either stay, a delivered one leaves without taking a newer one of its key with it.
import { describe, expect, it } from 'vitest';
import { applyChanges } from '../../../src/report/outbox.ts';
import { outboxEntries } from './outbox-entries.ts';

const status = outboxEntries('mooring/web', 1000);

describe('outbox changes applied to the stored statuses', () => {
  it('keeps what another agent stored and adds this one’s', () => {
    const theirs = status('b', 2);
    const mine = status('a', 1);
    expect(applyChanges([theirs], [{ put: mine }]).map((e) => e.commit)).toEqual(['a', 'b']);
  });

  it('a delivered status leaves; a newer one of the same commit and context stays', () => {
    const old = status('a', 1);
    const newer = status('a', 5, { description: 'newer' });
    expect(applyChanges([old, status('b', 2)], [{ drop: old }]).map((e) => e.commit)).toEqual(['b']);
    expect(applyChanges([newer], [{ drop: old }])).toEqual([newer]);
  });

  it('applies changes in order: kept, retried, then delivered is gone', () => {
    const kept = status('a', 1);
    const retried = { ...kept, attempts: 1 };
    expect(applyChanges([], [{ put: kept }, { put: retried }])).toEqual([retried]);
    expect(applyChanges([], [{ put: kept }, { put: retried }, { drop: retried }])).toEqual([]);
  });
});
