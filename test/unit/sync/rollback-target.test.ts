// Which release `mooring rollback` goes to, and how it refuses: a release the ledger does not have is not found
// (exit 1, as every command's), one that did not end stable is refused as input to change (exit 2).
import { describe, expect, it } from 'vitest';
import type { Release } from '../../../src/contract.ts';
import { NotFoundError, StalledError } from '../../../src/errors.ts';
import { rollbackTarget } from '../../../src/sync/rollback.ts';

function release(id: number, result: Release['result'], revision = `r${id}`): Release {
  return {
    id,
    deployment: 'web',
    time: `2026-12-04T10:0${id}:00Z`,
    trigger: 'commit',
    images: {},
    revision,
    versions: [],
    objects: [],
    result,
    durationMs: 1,
    messages: [],
  };
}

// Newest first, as the ledger keeps them.
const releases = [
  release(4, 'failed'),
  release(3, 'stable'),
  release(2, 'stable', 'r3'),
  release(1, 'stable'),
];

describe('the release a rollback goes to', () => {
  it('is the one asked for, or the newest stable one before the current stable revision', () => {
    expect(rollbackTarget(releases, 1, 'web').id).toBe(1);
    // Release 2 deployed the same revision as the current one: it is no step back.
    expect(rollbackTarget(releases, undefined, 'web').id).toBe(1);
  });

  it('a release the ledger does not have is not found, naming those it has', () => {
    const missing = () => rollbackTarget(releases, 9, 'web');
    expect(missing).toThrow(NotFoundError);
    expect(missing).toThrow('deployment web has no release 9 (releases: 4, 3, 2, 1)');
  });

  it('a release that did not end stable, or no earlier stable one, is refused (not a not-found)', () => {
    let caught: unknown;
    try {
      rollbackTarget(releases, 4, 'web');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(StalledError);
    expect(caught).not.toBeInstanceOf(NotFoundError);
    expect(() => rollbackTarget([release(1, 'stable')], undefined, 'web')).toThrow(
      'deployment web has no earlier stable release to roll back to',
    );
  });
});
