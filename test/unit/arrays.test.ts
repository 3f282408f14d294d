// Content-sized arrays never go through a spread into a call: with 150,000 backtick runs in a value or 200,000
// rows, each function that folds or appends them still answers (V8 throws a RangeError past ~100k arguments).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { append, byCodeUnit, longestRun, lowerBound, maxOf } from '../../src/arrays.ts';
import { formatTable } from '../../src/cli/output.ts';
import type { DeploymentPreview } from '../../src/contract.ts';
import { Versioner } from '../../src/render/versioning.ts';
import { code, previewMarkdown } from '../../src/report/preview-text.ts';

const RUNS = 150_000;
const ROWS = 200_000;
/** 150,000 runs of backticks, the longest of 7. */
const ticks = `${'` '.repeat(RUNS - 1)}\`\`\`\`\`\`\``;

describe('the helpers', () => {
  it('finds the lower bound of any sorted list in any range, as a scan does', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -20, max: 20 }), { maxLength: 200 }),
        fc.integer({ min: -25, max: 25 }),
        fc.nat(),
        fc.nat(),
        (values, wanted, a, b) => {
          const sorted = [...values].sort((x, y) => x - y);
          const from = sorted.length ? a % (sorted.length + 1) : 0;
          const to = from + (sorted.length - from ? b % (sorted.length - from + 1) : 0);
          let scan = from;
          while (scan < to && (sorted[scan] as number) < wanted) scan++;
          expect(lowerBound(from, to, (i) => (sorted[i] as number) < wanted)).toBe(scan);
        },
      ),
      { numRuns: 500 },
    );
    // Past every element, and in an empty range.
    expect(lowerBound(0, 3, () => true)).toBe(3);
    expect(lowerBound(2, 2, () => true)).toBe(2);
  });

  it('orders strings by code unit, as Go does and whatever the locale', () => {
    const names = ['b', 'B', 'a.b', 'ab', 'a', 'Z', 'é', 'a-b', 'a10', 'a9'];
    expect([...names].sort(byCodeUnit)).toEqual(['B', 'Z', 'a', 'a-b', 'a.b', 'a10', 'a9', 'ab', 'b', 'é']);
    // Not a collation: a locale's order puts letters of either case together.
    expect([...names].sort((x, y) => x.localeCompare(y, 'en'))).not.toEqual([...names].sort(byCodeUnit));
    expect(byCodeUnit('same', 'same')).toBe(0);
  });

  it.each([
    { values: [], floor: 0, max: 0 },
    { values: [3, 9, 2], floor: 0, max: 9 },
    { values: [-5, -2], floor: undefined, max: -2 },
    { values: [1], floor: 4, max: 4 },
  ])('maxOf($values, $floor) is $max', ({ values, floor, max }) => {
    expect(maxOf(values, floor)).toBe(max);
  });

  it('folds and appends 200,000 items', () => {
    const many = Array.from({ length: ROWS }, (_, i) => i);
    expect(maxOf(many)).toBe(ROWS - 1);
    const target = [-1];
    expect(append(target, many)).toBe(target);
    expect(target).toHaveLength(ROWS + 1);
    expect(target[ROWS]).toBe(ROWS - 1);
  }, 30_000);

  it.each([
    { text: '', run: 0 },
    { text: 'abc', run: 0 },
    { text: 'a`b``c`', run: 2 },
    { text: '```', run: 3 },
    { text: ticks, run: 7 },
  ])('longestRun of $run', ({ text, run }) => {
    expect(longestRun(text, '`')).toBe(run);
  });
});

describe('150,000 backtick runs in a preview', () => {
  const preview = (text: string): DeploymentPreview => ({
    deployment: 'shop',
    base: 'a'.repeat(40),
    head: 'b'.repeat(40),
    prune: false,
    notes: [`helm: ${ticks}`],
    diff: {
      added: [],
      changed: [{ object: 'ConfigMap shop/app', text }],
      removed: [],
      versions: [],
      images: [],
      unchanged: 0,
    },
  });

  it('quotes them as inline code', () => {
    expect(code(ticks).startsWith('```````` ')).toBe(true);
  });

  it('builds a comment within its size cap, the diff left out and its title kept', () => {
    const md = previewMarkdown([preview(`+  value: ${ticks}`)], { base: 'a', head: 'b' });
    expect(md.length).toBeLessThanOrEqual(65_536);
    expect(md).toContain('shop: 1 changed');
    expect(md).toContain('Diffs left out to fit the comment');
  });

  it('fences a diff that fits with more backticks than its longest run', () => {
    const small = preview(`+  value: ${'`'.repeat(20)}`);
    small.notes = [];
    expect(previewMarkdown([small], { base: 'a', head: 'b' })).toContain(`${'`'.repeat(21)}diff\n`);
  });
});

describe('200,000 rows', () => {
  it('formatTable lines them up', () => {
    const rows = Array.from({ length: ROWS }, (_, i) => ({ name: `app-${i}` }));
    const text = formatTable(rows, [
      { header: 'name', value: (r: { name: string }) => r.name },
      { header: 'x', value: () => 'y' },
    ]);
    const lines = text.split('\n');
    expect(lines).toHaveLength(ROWS + 1);
    expect(lines[1]).toBe(`app-0${' '.repeat('app-199999'.length - 'app-0'.length)}   y`);
  }, 30_000);

  it('the newest of 200,000 versions is found', () => {
    const versions = Array.from({ length: ROWS }, (_, i) => ({
      kind: 'ConfigMap',
      namespace: 'shop',
      name: 'app',
      version: i,
    }));
    expect(new Versioner(versions).newest('ConfigMap', 'shop', 'app')).toBe('app-v199999');
  }, 30_000);
});
