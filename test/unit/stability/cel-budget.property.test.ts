// Properties of the CEL budget, over random expressions (fast-check, fixed seed, bounded runs): any composition of
// the functions that grow strings and lists (concatenation, replace, join, split, format, quote, map and filter,
// each step able to read the one before twice) either evaluates to a value within the size limit or is refused
// with the budget's message; and the sizes the budget measures before making a value are those the library's own
// functions make (replace exactly, format at most).

import * as cel from '@bufbuild/cel';
import { type CelValue, celEnv, celList } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileExpression, evaluateExpression } from '../../../src/stability/cel.ts';
import { formatBound, planReplace } from '../../../src/stability/cel-strings.ts';
import { weightOf } from '../../../src/stability/cel-values.ts';

const SEED = 20_261_128;
const SIZE = 2000;
const COST = 50_000;
/** What the budget says when it refuses: a value past the size limit, the cost, or the iterations. */
const REFUSAL = new RegExp(
  `^(\\S+ would make a (string of \\d+ characters|list of \\d+ elements|bytes of \\d+ bytes), more than ${SIZE}|more than ${COST} cost units \\(the budget of one evaluation\\)|more than \\d+ macro iterations)`,
);

/** Expressions of strings (`s`) and lists of strings (`l`) over the variables bound so far. */
function expressions(
  depth: number,
  vars: readonly string[],
): { s: fc.Arbitrary<string>; l: fc.Arbitrary<string> } {
  const literal = fc.constantFrom("''", "'a'", "'ab'", "'abc'", "'a,b'");
  const variable = vars.length > 0 ? fc.constantFrom(...vars) : literal;
  if (depth === 0) return { s: fc.oneof(literal, variable), l: literal.map((s) => `[${s}]`) };
  const inner = expressions(depth - 1, vars);
  const v = `v${vars.length}`;
  const bound = expressions(depth - 1, [...vars, v]);
  const s = fc.oneof(
    { arbitrary: fc.oneof(literal, variable), weight: 2 },
    fc.tuple(inner.s, inner.s).map(([a, b]) => `(${a} + ${b})`),
    fc
      .tuple(inner.s, fc.constantFrom("'a'", "'b'", "''"), inner.s)
      .map(([t, x, r]) => `${t}.replace(${x}, ${r})`),
    fc.tuple(inner.l, inner.s).map(([l, sep]) => `${l}.join(${sep})`),
    fc.tuple(inner.s, inner.s).map(([a, b]) => `'%s-%s'.format([${a}, ${b}])`),
    inner.s.map((a) => `strings.quote(${a})`),
    inner.s.map((a) => `${a}.upperAscii()`),
    // A binding: the step reads the value before it as often as it likes.
    fc.tuple(inner.s, bound.s).map(([a, body]) => `[${a}].map(${v}, ${body})[0]`),
  );
  const l = fc.oneof(
    inner.s.map((a) => `[${a}]`),
    fc.tuple(inner.l, inner.l).map(([a, b]) => `(${a} + ${b})`),
    fc.tuple(inner.s, fc.constantFrom("','", "''", "'a'")).map(([a, sep]) => `${a}.split(${sep})`),
    fc.tuple(inner.l, bound.s).map(([a, body]) => `${a}.map(${v}, ${body})`),
    fc.tuple(inner.l, bound.s).map(([a, body]) => `${a}.filter(${v}, ${body} != '')`),
    fc.tuple(inner.s, bound.l).map(([a, body]) => `[${a}].map(${v}, ${body})[0]`),
  );
  return { s, l };
}

const { s: stringExpr, l: listExpr } = expressions(4, []);

/** Steps that grow a string `v` (read twice or more), and a list `v`. */
const STRING_STEPS = [
  (v: string) => `${v} + ${v}`,
  (v: string) => `${v}.replace('a', ${v})`,
  (v: string) => `${v}.replace('', 'xy', ${v}.size())`,
  (v: string) => `[${v}, ${v}, ${v}].join(${v})`,
  (v: string) => `'%s%s'.format([${v}, ${v}])`,
  (v: string) => `strings.quote(${v}) + ${v}`,
  (v: string) => `${v}.split('').join(${v})`,
];
const LIST_STEPS = [
  (v: string) => `${v} + ${v}`,
  (v: string) => `${v}.map(x, x + x)`,
  (v: string) => `${v}.map(x, ${v}.join(x))`,
  (v: string) => `${v}.filter(x, x != 'z') + ${v}`,
  (v: string) => `${v}.join(',').split('')`,
  (v: string) => `${v}.map(x, x.replace('a', x + x))`,
];

/** A chain of steps, each binding the value before: `[[seed].map(v0, step(v0))[0]].map(v1, step(v1))[0]`. */
function chain(seed: fc.Arbitrary<string>, steps: readonly ((v: string) => string)[]): fc.Arbitrary<string> {
  return fc
    .tuple(seed, fc.array(fc.constantFrom(...steps), { minLength: 1, maxLength: 16 }))
    .map(([start, chosen]) =>
      chosen.reduce((expr, step, i) => `[${expr}].map(v${i}, ${step(`v${i}`)})[0]`, start),
    );
}

const stringChain = chain(fc.constantFrom("'a'", "'ab'", "'aaaaaaaaaa'"), STRING_STEPS);
const listChain = chain(fc.constantFrom("['a']", "['a', 'b']"), LIST_STEPS);

describe('CEL budget, over random compositions of growing functions', () => {
  it('evaluates within the size limit, or refuses with the budget message', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          stringExpr,
          listExpr,
          { arbitrary: stringChain, weight: 2 },
          { arbitrary: listChain, weight: 2 },
        ),
        (text) => {
          const result = evaluateExpression(compileExpression(text), {}, { valueSize: SIZE, cost: COST });
          if (!result.ok) {
            expect(result.error).toMatch(REFUSAL);
            expect(result.budget).toBe(true);
            return;
          }
          const value = result.value;
          const size = typeof value === 'string' ? value.length : cel.isCelList(value) ? value.size : -1;
          expect(size).toBeGreaterThanOrEqual(0);
          expect(size).toBeLessThanOrEqual(SIZE);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  }, 60_000);
});

const library = celEnv({ funcs: strings }).funcs;

function libraryCall(name: string, target: CelValue, args: CelValue[]): CelValue {
  const result = library.find(name)?.call(0, target, args);
  if (result === undefined || cel.isCelError(result)) throw new Error(`${name}: ${String(result)}`);
  return result;
}

describe('sizes measured before values are made', () => {
  const text = (max: number) => fc.string({ unit: fc.constantFrom('a', 'b'), maxLength: max });

  it('replace makes what the library makes, of the length planned', () => {
    fc.assert(
      fc.property(
        text(12),
        text(3),
        text(3),
        fc.option(fc.integer({ min: -2, max: 6 })),
        (t, search, repl, n) => {
          const num = n === null ? undefined : BigInt(n);
          const plan = planReplace(t, search, repl, num);
          const expected = libraryCall(
            'replace',
            t,
            num === undefined ? [search, repl] : [search, repl, num],
          );
          expect(plan.build()).toBe(expected);
          expect(plan.length).toBe((expected as string).length);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  }, 60_000);

  it('format writes at most the bound read from its clauses', () => {
    const clause = fc.oneof(
      fc.constant<[string, CelValue[]]>(['lit', []]),
      fc.constant<[string, CelValue[]]>(['%%', []]),
      text(20).map((s): [string, CelValue[]] => ['%s', [s]]),
      fc.array(text(5), { maxLength: 4 }).map((l): [string, CelValue[]] => ['%s', [celList(l)]]),
      fc
        .bigInt(-(2n ** 63n), 2n ** 63n - 1n)
        .chain((i) =>
          fc.constantFrom<[string, CelValue[]]>(
            ['%d', [i]],
            ['%x', [i]],
            ['%X', [i]],
            ['%b', [i]],
            ['%o', [i]],
            ['%s', [i]],
          ),
        ),
      fc
        .double({ noNaN: true })
        .chain((d) =>
          fc.constantFrom<[string, CelValue[]]>(
            ['%f', [d]],
            ['%.3f', [d]],
            ['%e', [d]],
            ['%.2e', [d]],
            ['%s', [d]],
          ),
        ),
      text(8).map((s): [string, CelValue[]] => ['%x', [s]]),
      fc.boolean().map((b): [string, CelValue[]] => ['%b', [b]]),
    );
    fc.assert(
      fc.property(fc.array(clause, { maxLength: 6 }), (clauses) => {
        const format = clauses.map(([c]) => c).join('');
        const args = celList(clauses.flatMap(([, a]) => a));
        const written = libraryCall('format', format, [args]) as string;
        expect(written.length).toBeLessThanOrEqual(
          formatBound(format, args, (v) => weightOf(cel, v as CelValue)),
        );
      }),
      { seed: SEED, numRuns: 500 },
    );
  }, 60_000);
});
