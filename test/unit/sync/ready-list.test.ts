// The ready list's fair queueing (src/sync/ready-list.ts) against the rule written plainly: a list in the order
// syncs became ready, and at each start the rotation of groups made again from it. Random sequences of adds,
// regroups, removals and starts give the same starts; and a poll of thousands of groups drains.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SyncQueue } from '../../../src/sync/queue.ts';
import { ReadyList } from '../../../src/sync/ready-list.ts';

/** The rule as the queue first wrote it: every start scans the whole ready list and the rotation. */
class PlainRule {
  ready: { deployment: string; group: string }[] = [];
  groups: string[] = [];
  last: string | undefined;

  add(deployment: string, group: string) {
    if (!this.ready.some((r) => r.deployment === deployment)) this.ready.push({ deployment, group });
  }
  delete(deployment: string) {
    this.ready = this.ready.filter((r) => r.deployment !== deployment);
  }
  regroup(deployment: string, group: string) {
    for (const r of this.ready) if (r.deployment === deployment) r.group = group;
  }
  next(): string | undefined {
    if (this.ready.length === 0) return undefined;
    const present = new Set(this.ready.map((r) => r.group));
    for (const g of present) if (!this.groups.includes(g)) this.groups.push(g);
    this.groups = this.groups.filter((g) => present.has(g) || g === this.last);
    const at = this.last === undefined ? -1 : this.groups.indexOf(this.last);
    let group = '';
    for (let k = 1; k <= this.groups.length; k++) {
      const candidate = this.groups[(at + k) % this.groups.length] as string;
      if (present.has(candidate)) {
        group = candidate;
        break;
      }
    }
    this.last = group;
    const index = this.ready.findIndex((r) => r.group === group);
    return this.ready.splice(index, 1)[0]?.deployment;
  }
}

const deployment = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h');
const group = fc.constantFrom('', 'g1', 'g2', 'g3', 'g4');
const op = fc.oneof(
  fc.tuple(fc.constant('add' as const), deployment, group),
  fc.tuple(fc.constant('regroup' as const), deployment, group),
  fc.tuple(fc.constant('delete' as const), deployment, group),
  fc.tuple(fc.constant('next' as const), deployment, group),
  fc.tuple(fc.constant('next' as const), deployment, group),
);

describe('the ready list', () => {
  it('starts what the plain rule starts, whatever the adds, regroups, removals and starts', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const list = new ReadyList();
        const rule = new PlainRule();
        for (const [kind, d, g] of ops) {
          if (kind === 'next') expect(list.next()).toBe(rule.next());
          else {
            list[kind](d, g);
            rule[kind](d, g);
          }
          expect(list.size).toBe(rule.ready.length);
        }
        // Drained to the end, the same order.
        while (rule.ready.length > 0) expect(list.next()).toBe(rule.next());
        expect(list.next()).toBeUndefined();
      }),
      { numRuns: 2_000 },
    );
  });

  it('sends a group that emptied and left to the end of the rotation when it has syncs again', () => {
    const list = new ReadyList();
    const rule = new PlainRule();
    for (const [d, g] of [
      ['a1', 'A'],
      ['a2', 'A'],
      ['b1', 'B'],
      ['c1', 'C'],
      ['c2', 'C'],
      ['d1', 'D'],
      ['d2', 'D'],
    ] as const) {
      list.add(d, g);
      rule.add(d, g);
    }
    const starts = (from: { next(): string | undefined }) => [
      from.next(),
      from.next(),
      from.next(),
      from.next(),
    ];
    expect(starts(list)).toEqual(['a1', 'b1', 'c1', 'd1']);
    expect(starts(rule)).toEqual(['a1', 'b1', 'c1', 'd1']);
    // B served second, empty since: it left the rotation, and comes back after D, not between A and C.
    list.add('b2', 'B');
    rule.add('b2', 'B');
    expect(starts(list)).toEqual(['b2', 'a2', 'c2', 'd2']);
    expect(starts(rule)).toEqual(['b2', 'a2', 'c2', 'd2']);
  });

  it('drains a poll of 5,000 deployments in 2,500 groups, every group served once before any twice', async () => {
    const queue = new SyncQueue({ concurrency: 4 });
    const started: number[] = [];
    for (let i = 0; i < 5_000; i++)
      queue.request(`app-${i}`, {
        revision: 'c1',
        group: `commit:${i % 2_500}`,
        run: async () => {
          started.push(i);
          return { result: 'done' };
        },
      });
    await queue.idle();
    expect(new Set(started).size).toBe(5_000);
    expect(new Set(started.slice(0, 2_500).map((i) => i % 2_500)).size).toBe(2_500);
  });
});
