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
          : t.step === 'sync-hooks'
            ? `sync hooks ${t.wave}`
            : t.step,
  );

describe('a deploy task list', () => {
  it('runs the pre hooks after the inventory and before any write, the post hooks after the wait', () => {
    expect(names(taskList([0], { dryRun: false, waits: true }, [0]))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'wave 0',
      'sync hooks 0',
      'wait',
      'hooks post',
    ]);
    expect(names(taskList([0], { dryRun: false, waits: true }))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'wave 0',
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
      'wait',
      'hooks post',
    ]);
  });

  // Argo CD's sync-waves example: a maintenance page up (a Sync hook of wave 1) after the backend (wave 0) is
  // stable and before the frontend (wave 2) is written, and down (wave 3) once the frontend is stable.
  it("runs each wave's Sync hooks with that wave, after the objects of the waves before it are stable", () => {
    expect(names(taskList([0, 2], { dryRun: false, waits: true }, [1, 3]))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'wave 0',
      'wait 0',
      'sync hooks 1',
      'wave 2',
      'wait 2',
      'sync hooks 3',
      'wait',
      'hooks post',
    ]);
    // Objects and hooks of one wave together: the objects written first, the hooks run while they roll out.
    expect(names(taskList([0, 1], { dryRun: false, waits: true }, [0, 1]))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'wave 0',
      'sync hooks 0',
      'wait 0',
      'wave 1',
      'sync hooks 1',
      'wait',
      'hooks post',
    ]);
  });

  it('without waits neither waits for a wave nor runs post hooks', () => {
    expect(names(taskList([0, 1], { dryRun: false, waits: false }, [0]))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'wave 0',
      'sync hooks 0',
      'wave 1',
    ]);
  });

  it('in a dry run only validates the waves: no inventory, no hook, no wait', () => {
    expect(names(taskList([0, 1], { dryRun: true, waits: true }, [0]))).toEqual(['wave 0', 'wave 1']);
  });

  it('a set with no objects still records its inventory and runs its hooks', () => {
    expect(names(taskList([], { dryRun: false, waits: true }, [0]))).toEqual([
      'inventory',
      'hooks pre',
      'prerequisites',
      'sync hooks 0',
      'wait',
      'hooks post',
    ]);
  });
});
