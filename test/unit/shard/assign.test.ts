import { describe, expect, it } from 'vitest';
import { assign, capacity, moved } from '../../../src/shard/assign.ts';

const deployments = (n: number) => Array.from({ length: n }, (_, i) => `app-${String(i).padStart(4, '0')}`);
const members = (n: number) => Array.from({ length: n }, (_, i) => `mooring-${i}`);

function loads(owners: Map<string, string>): number[] {
  const count = new Map<string, number>();
  for (const m of owners.values()) count.set(m, (count.get(m) ?? 0) + 1);
  return [...count.values()];
}

describe('assign (consistent hashing with bounded loads)', () => {
  it('gives every deployment exactly one live member, none above the bound', () => {
    for (const [d, m] of [
      [60, 3],
      [1000, 4],
      [7, 5],
      [1, 3],
      [300, 7],
    ] as const) {
      const owners = assign(deployments(d), members(m));
      expect(owners.size).toBe(d);
      for (const owner of owners.values()) expect(members(m)).toContain(owner);
      expect(Math.max(...loads(owners))).toBeLessThanOrEqual(capacity(d, m));
    }
  });

  it('is the same whatever order the inputs come in', () => {
    const a = assign(deployments(200), members(4));
    const b = assign([...deployments(200)].reverse(), [...members(4)].reverse());
    expect([...b.entries()].sort()).toEqual([...a.entries()].sort());
  });

  it('moves few deployments when a member comes or goes', () => {
    const names = deployments(1000);
    const three = assign(names, members(3));
    const four = assign(names, members(4));
    // Ideal: a quarter moves to the new member. Bounded loads cascade a little past that.
    const joined = moved(three, four);
    expect(joined).toBeGreaterThanOrEqual(200);
    expect(joined).toBeLessThan(400);
    // A member that goes: only its deployments move (and a few its load pushes on).
    const gone = assign(
      names,
      members(4).filter((m) => m !== 'mooring-2'),
    );
    const held = [...four.values()].filter((m) => m === 'mooring-2').length;
    expect(moved(four, gone)).toBeLessThan(held * 1.6);
    // A plain modulo split would move about three quarters.
    const modulo = (m: number) => new Map(names.map((n, i) => [n, `mooring-${i % m}`]));
    expect(moved(modulo(3), modulo(4))).toBeGreaterThan(700);
  });

  it('assigns nothing without members', () => {
    expect(assign(deployments(5), []).size).toBe(0);
  });
});
