// SOPS rules whose compiled program would be large are refused from their text, before re2js compiles them
// (compiling is what is slow in it: a 1,022-character pattern of `a{1000}` repeated made 146,002 instructions and
// took 2 s, per file and per sync). The patterns run in a worker the test ends after 3 s: before the bound, the
// twelve below took 6 s or more. The bound itself (src/re2-size.ts) is never below what RE2 compiles.
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { beforeAll, describe, expect, it } from 'vitest';
import { instructionBound } from '../../../src/re2-size.ts';
import { goRegExp, loadGoRegExp, MAX_PATTERN_SIZE } from '../../../src/sources/sops/go-regexp.ts';

beforeAll(loadGoRegExp);

/** Instructions of a compiled program (re2js keeps it on the RE2 object). */
function programSize(re: RE2JS): number {
  return (re.re2() as unknown as { prog: { numInst: () => number } }).prog.numInst();
}

type Outcome = { compiled: number } | { refused: string };

/** Compiles `patterns` in a worker, ended (failing the test) when they take more than `limitMs` once it is ready. */
function compileBounded(patterns: string[], limitMs: number): Promise<Outcome[]> {
  const worker = new Worker(new URL('./go-regexp-worker.ts', import.meta.url));
  return new Promise<Outcome[]>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    worker.on('message', (message: 'ready' | Outcome[]) => {
      if (message === 'ready') {
        timer = setTimeout(
          () => reject(new Error(`the rules were not refused within ${limitMs} ms`)),
          limitMs,
        );
        worker.postMessage(patterns);
        return;
      }
      clearTimeout(timer);
      resolve(message);
    });
    worker.once('error', reject);
  }).finally(() => worker.terminate());
}

/** Patterns of at most 1,024 characters whose programs have 90,000 instructions or more. */
const HUGE = [
  ...'abcdefgh'.split('').map((c) => `${c}{1000}`.repeat(146)),
  '[a-z]{1000}'.repeat(93),
  '(?:ab){1000}'.repeat(85),
  '(x|y){1000}'.repeat(93),
  '(?i)k{999}'.repeat(102),
];

describe('SOPS rules bounded before they are compiled', () => {
  it('refuses patterns whose programs would be huge from their text, naming the field', async () => {
    for (const pattern of HUGE) expect(pattern.length).toBeLessThanOrEqual(1024);
    // A bound for a hang, not a speed (a busy machine is slow): the outcomes say whether they were refused.
    const outcomes = await compileBounded(HUGE, 20_000);
    for (const [index, outcome] of outcomes.entries()) {
      const shown = JSON.stringify(`${(HUGE[index] as string).slice(0, 80)}…`);
      expect(outcome).toEqual({
        refused: `sops.encrypted_regex: ${shown} is too large (it may compile to ${instructionBound(HUGE[index] as string)} RE2 instructions, at most ${MAX_PATTERN_SIZE})`,
      });
    }
  }, 30_000);

  it.each([
    ['^(data|stringData)$', 21],
    ['(?i)^(password|token|key)$', 24],
    ['^[a-z]{1,63}\\.[a-z]{1,63}$', 255],
    ['a{1000}', 1002],
    ['((a{10}){10}){10}', 1222],
  ])('still compiles %s (%i instructions)', (pattern, size) => {
    expect(goRegExp('encrypted_regex', pattern).size).toBe(size);
  });

  it('bounds the program from above, whatever the pattern (fast-check)', () => {
    const atom = fc.constantFrom(
      'a',
      'b',
      '.',
      '[a-z]',
      '[^]x]',
      '\\d',
      '\\pL',
      '[[:alpha:]]',
      '\\Q{2}\\E',
      '^',
      '$',
    );
    const pattern: fc.Arbitrary<string> = fc.letrec<{ re: string }>((tie) => ({
      re: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        atom,
        fc.tuple(tie('re'), tie('re')).map(([l, r]) => l + r),
        fc.tuple(tie('re'), tie('re')).map(([l, r]) => `(${l}|${r})`),
        fc.tuple(tie('re'), fc.constantFrom('(?:', '(?i:', '(?P<n>')).map(([r, open]) => `${open}${r})`),
        fc.tuple(tie('re'), fc.constantFrom('*', '+', '?', '*?')).map(([r, op]) => `(?:${r})${op}`),
        fc
          .tuple(tie('re'), fc.nat(12), fc.option(fc.nat(12)), fc.boolean())
          .map(([r, n, m, open]) =>
            open
              ? `(?:${r}){${n},}`
              : m === null
                ? `(?:${r}){${n}}`
                : `(?:${r}){${Math.min(n, m)},${Math.max(n, m)}}`,
          ),
      ),
    })).re;
    fc.assert(
      fc.property(pattern, (source) => {
        let compiled: number;
        try {
          compiled = programSize(RE2JS.compile(source));
        } catch {
          return true; // refused by RE2 (a nested repetition past its limits): nothing to compare
        }
        return instructionBound(source) >= compiled;
      }),
      { seed: 35, numRuns: 300 },
    );
  });
});
