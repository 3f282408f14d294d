// A watch stream's lines as its chunks come (src/kube/watch-stream.ts, StreamLines): the same lines whatever the
// chunks' boundaries, an event past the bound refused, and a large event assembled once.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StreamLines } from '../../../src/kube/watch-stream.ts';

function cut(text: string, at: readonly number[]): string[] {
  const points = [...new Set(at.map((p) => p % (text.length + 1)))].sort((a, b) => a - b);
  const chunks: string[] = [];
  let from = 0;
  for (const p of points) {
    chunks.push(text.slice(from, p));
    from = p;
  }
  chunks.push(text.slice(from));
  return chunks;
}

describe('the lines of a watch stream', () => {
  it('are the same lines whatever the chunks, empty ones and multi-line chunks included', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => s.replaceAll('\n', ' '))),
        fc.array(fc.nat(2000), { maxLength: 30 }),
        (lines, at) => {
          const text = lines.map((l) => `${l}\n`).join('');
          const stream = new StreamLines(1000);
          const got: string[] = [];
          for (const chunk of cut(text, at)) got.push(...(stream.push(chunk) ?? ['REFUSED']));
          expect(got).toEqual(lines);
        },
      ),
      { seed: 74, numRuns: 300 },
    );
  });

  it('refuses a line past its bound, in one chunk or many, and not many short lines in one chunk', () => {
    expect(new StreamLines(10).push(`${'x'.repeat(11)}\n`)).toBeUndefined();
    const slow = new StreamLines(10);
    expect(slow.push('x'.repeat(6))).toEqual([]);
    expect(slow.push('x'.repeat(6))).toBeUndefined();
    expect(new StreamLines(10).push('abc\n'.repeat(100))).toEqual(Array(100).fill('abc'));
  });

  it('assembles a 1.5 MB event sent in 16 KiB records, with the next event begun in its last record', () => {
    const event = JSON.stringify({ type: 'MODIFIED', object: { data: 'x'.repeat(1_500_000) } });
    const text = `${event}\n{"type":"ADDED"`;
    const stream = new StreamLines(4 * 1024 * 1024);
    const got: string[] = [];
    for (let i = 0; i < text.length; i += 16_384) got.push(...(stream.push(text.slice(i, i + 16_384)) ?? []));
    expect(got).toHaveLength(1);
    expect(got[0]).toBe(event);
    expect(stream.push('}\n')).toEqual(['{"type":"ADDED"}']);
  });
});
