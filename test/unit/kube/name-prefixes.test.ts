// The name test that ties an Event's Pod or ReplicaSet to a waited-on workload (src/kube/warning-events.ts): a
// lookup per prefix length answers as testing every prefix would.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NamePrefixes } from '../../../src/kube/warning-events.ts';

const name = fc.stringMatching(/^[a-c-]{0,8}$/);

describe('name prefixes', () => {
  it('answer as a test of every prefix, for prefixes of every length, the empty one included', () => {
    fc.assert(
      fc.property(fc.array(name, { maxLength: 12 }), fc.array(name, { maxLength: 20 }), (prefixes, names) => {
        const set = new NamePrefixes(prefixes);
        for (const n of names) expect(set.begins(n)).toBe(prefixes.some((p) => n.startsWith(p)));
      }),
      { numRuns: 2_000 },
    );
  });
});
