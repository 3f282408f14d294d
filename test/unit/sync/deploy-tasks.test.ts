// The one ordered task list of a deploy's writes (src/sync/deploy/tasks.ts).
import { describe, expect, it } from 'vitest';
import { taskList } from '../../../src/sync/deploy/tasks.ts';

const names = (tasks: ReturnType<typeof taskList>) =>
  tasks.map((t) =>
    t.step === 'hooks'
      ? `hooks ${t.phase}`
      : t.step === 'wave'
        ? `wave ${t.wave}`
        : t.step === 'wait'
          ? `wait${t.wave === undefined ? '' : ` ${t.wave}`}`
          : t.step,
  );

describe('a deploy task list', () => {
  it('runs the pre hooks after the inventory and before any write, the post hooks after the wait', () => {
    expect(names(taskList([0], { dryRun: false, waits: true }))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'wave 0',
      'hooks sync',
      'wait',
      'hooks post',
    ]);
  });

  it('waits for each wave but the last before writing the next, lowest first', () => {
    expect(names(taskList([-1, 0, 5], { dryRun: false, waits: true }))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'wave -1',
      'wait -1',
      'wave 0',
      'wait 0',
      'wave 5',
      'hooks sync',
      'wait',
      'hooks post',
    ]);
  });

  it('without waits neither waits for a wave nor runs post hooks', () => {
    expect(names(taskList([0, 1], { dryRun: false, waits: false }))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'wave 0',
      'wave 1',
      'hooks sync',
    ]);
  });

  it('in a dry run only validates the waves: no inventory, no hook, no wait', () => {
    expect(names(taskList([0, 1], { dryRun: true, waits: true }))).toEqual(['wave 0', 'wave 1']);
  });

  it('a set with no objects still records its inventory and runs its hooks', () => {
    expect(names(taskList([], { dryRun: false, waits: true }))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'hooks sync',
      'wait',
      'hooks post',
    ]);
  });
});
