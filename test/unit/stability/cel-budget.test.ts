// The cost budget of CEL health rules: values that grow (replace chains, concatenation doubled in macros, lists
// doubled, replacements of the empty string) are refused before they are made, naming the function and the size;
// work that makes nothing (equality of a value shared over and over, nested macros) stops at the cost limit; a
// bound broken where `||` would absorb the error still decides. The expressions that froze the evaluator before
// the budget run in a worker thread (cel-worker.ts) that the test ends after 20 s, so that they fail rather than
// freeze the run where the budget is missing.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/render/manifest.ts';
import {
  CEL_BUDGET,
  compileExpression,
  type Evaluation,
  type EvaluationLimits,
  evaluateExpression,
  objectBindings,
} from '../../../src/stability/cel.ts';
import { compileHealthRules, crdHealthRules } from '../../../src/stability/health.ts';
import { stabilityOf } from '../../../src/stability/rules.ts';

const NOW = new Date('2025-06-01T12:00:00Z');

/** `'aaaaaaaaaa'.replace('a', 'aaaaaaaaaa')` chained `n` times: the string grows tenfold per step. */
function replaceChain(n: number): string {
  return `'aaaaaaaaaa'${".replace('a', 'aaaaaaaaaa')".repeat(n)}`;
}

/**
 * `seed` doubled `n` times (by `+`, or `op`), each step binding the one before in a macro, so that each step
 * reads one value twice: `[seed].map(v0, [v0 + v0].map(v1, [v1 + v1].map(v2, v2)[0])[0])[0]`.
 */
function doubled(seed: string, n: number, op = (v: string) => `${v} + ${v}`): string {
  let inner = `v${n}`;
  for (let i = n; i >= 1; i--) inner = `[${op(`v${i - 1}`)}].map(v${i}, ${inner})[0]`;
  return `[${seed}].map(v0, ${inner})[0]`;
}

/** The defaults (CEL_BUDGET), written out. */
const SIZE = 1024 * 1024;
const COST = 1_000_000;

function run(text: string, limits: EvaluationLimits = {}, bindings = {}): Evaluation {
  return evaluateExpression(compileExpression(text), bindings, limits);
}

/** `run` in a worker thread, ended after 20 s. */
function runBounded(text: string, limits: EvaluationLimits = {}): Promise<Evaluation> {
  const worker = new Worker(new URL('./cel-worker.ts', import.meta.url));
  return new Promise<Evaluation>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${text.slice(0, 60)}… did not end within 20 s`)),
      20_000,
    );
    worker.once('message', (result: Evaluation) => {
      clearTimeout(timer);
      resolve(result);
    });
    worker.once('error', reject);
    worker.postMessage({ text, limits });
  }).finally(() => worker.terminate());
}

function expectRefused(result: Evaluation, error: string | RegExp): void {
  expect(
    result.ok,
    JSON.stringify(result, (_k, v) => (typeof v === 'bigint' ? `${v}` : v)),
  ).toBe(false);
  if (result.ok) return;
  expect(result.budget).toBe(true);
  if (typeof error === 'string') expect(result.error).toBe(error);
  else expect(result.error).toMatch(error);
}

function refused(text: string, error: string | RegExp, limits: EvaluationLimits = {}): void {
  expectRefused(run(text, limits), error);
}

/** For the expressions that froze the evaluator. */
const FROZE = 30_000;

describe('CEL budget: values are measured before they are made', () => {
  it('has the defaults its comments explain', () => {
    expect(CEL_BUDGET).toMatchObject({ cost: COST, valueSize: SIZE });
  });

  it(
    'the replace chain of the report (six steps, tenfold each) stops at the step past the size limit',
    async () => {
      expectRefused(
        await runBounded(replaceChain(6)),
        `replace would make a string of 10000000 characters, more than ${SIZE}`,
      );
      // Five steps make a million characters, within the limit.
      expect(await runBounded(`${replaceChain(5)}.endsWith('aaaa')`)).toEqual({ ok: true, value: true });
    },
    FROZE,
  );

  it('the limit is the evaluation’s to set: three steps refused under 5,000 characters', () => {
    refused(replaceChain(3), 'replace would make a string of 10000 characters, more than 5000', {
      valueSize: 5000,
    });
  });

  it(
    'replacing the empty string a huge number of times is measured, not looped',
    async () => {
      expectRefused(
        await runBounded("'a'.replace('', 'xxxxxxxxxx', 9223372036854775807)"),
        `replace would make a string of ${1 + Number(9223372036854775807n) * 10} characters, more than ${SIZE}`,
      );
      expect(run("'ab'.replace('', 'x', 3)")).toEqual({ ok: true, value: 'xxxab' });
    },
    FROZE,
  );

  it('concatenation doubled in nested macros stops at the first string past the limit', () => {
    refused(doubled("'ab'", 30), `+ would make a string of ${2 ** 21} characters, more than ${SIZE}`);
  });

  it('lists doubled by + stop there too, and macros that grow lists are counted per element', () => {
    refused(`${doubled('[1, 2]', 30)}.size()`, '+ would make a list of 1024 elements, more than 1000', {
      valueSize: 1000,
    });
    refused(
      '[1, 2, 3, 4, 5, 6, 7, 8].map(a, [1, 2, 3, 4, 5, 6, 7, 8].map(b, [1, 2, 3, 4, 5, 6, 7, 8].map(c, [a, b, c]))).size()',
      'map/filter would make a list of 8 elements, more than 7',
      { valueSize: 7 },
    );
  });

  it('join, split, format and strings.quote are measured from their operands', () => {
    refused("['x', 'y'].join('zzzz')", 'join would make a string of 6 characters, more than 5', {
      valueSize: 5,
    });
    refused(
      `${doubled("','", 9)}.split(',').size()`,
      'split would make a list of 513 elements, more than 512',
      {
        valueSize: 512,
      },
    );
    const limits = { valueSize: 500 };
    refused(
      `'%s%s'.format([${doubled("'ab'", 7)}, ${doubled("'ab'", 7)}])`,
      'format would make a string of 512 characters, more than 500',
      limits,
    );
    refused(
      `strings.quote(${doubled("'ab'", 7)})`,
      'strings.quote would make a string of 514 characters, more than 500',
      limits,
    );
  });
});

describe('CEL budget: work that makes nothing is charged', () => {
  it(
    'equality of a list holding one list 2^22 times over, built twice, is refused before it is walked',
    async () => {
      const shared = doubled('[1]', 22, (v) => `[${v}, ${v}]`);
      expectRefused(
        await runBounded(`${shared} == ${shared}`),
        `more than ${COST} cost units (the budget of one evaluation)`,
      );
    },
    FROZE,
  );

  it('nested macros stop at the cost limit', () => {
    const range = `[${Array.from({ length: 100 }, (_, i) => i).join(', ')}]`;
    refused(
      `${range}.all(a, ${range}.all(b, ${range}.all(c, a + b + c >= 0)))`,
      'more than 100000 cost units (the budget of one evaluation)',
      { cost: 100_000 },
    );
  });

  it(
    'a bound broken inside || still decides, though the other side is true',
    async () => {
      expectRefused(
        await runBounded(`${replaceChain(6)} == '' || true`),
        /^replace would make a string of 10000000 characters/,
      );
    },
    FROZE,
  );

  it('a rule that reads a few conditions costs little, and each evaluation starts afresh', () => {
    const conditions = objectBindings({
      status: {
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'Synced', status: 'True' },
        ],
      },
    });
    const expression = compileExpression(
      "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
    );
    expect(evaluateExpression(expression, conditions, { cost: 1000 })).toEqual({ ok: true, value: true });
    expect(evaluateExpression(expression, conditions, { cost: 50 })).toMatchObject({
      ok: false,
      budget: true,
    });
    expect(evaluateExpression(expression, conditions, { cost: 1000 })).toEqual({ ok: true, value: true });
  });
});

describe('CEL budget: matches', () => {
  it('takes literal patterns only, compiled with the rule, and bounded in size', () => {
    expect(() => compileExpression("'a'.matches(status.pattern)")).toThrow(
      'the pattern of matches must be a string literal (it is compiled with the rule)',
    );
    expect(() => compileExpression("'a'.matches('(abcdefghij){1000}')")).toThrow(
      /^matches "\(abcdefghij\)\{1000\}": the pattern of matches may compile to 12004 RE2 instructions/,
    );
    expect(() => compileExpression("'a'.matches('(a')")).toThrow(/^matches "\(a": missing closing \)/);
    expect(run("'v1.2.3'.matches('^v[0-9]+[.][0-9]+[.][0-9]+$')")).toEqual({ ok: true, value: true });
  });

  it('charges each instruction per character of the subject', () => {
    refused(`${doubled("'ab'", 12)}.matches('(a|b)*c')`, /^more than 100000 cost units/, { cost: 100_000 });
  });
});

describe('health rules over budget', () => {
  const crd = (annotations: Record<string, string>): KubeObject => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com', annotations },
    spec: { group: 'example.com', names: { kind: 'Widget', plural: 'widgets' }, scope: 'Namespaced' },
  });
  const widget: KubeObject = {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'prod' },
    status: { phase: 'Ready' },
  };

  it('fail their object, naming the rule, the field and the bound', () => {
    const rules = compileHealthRules(
      [{ apiVersion: 'example.com/v1', kind: 'Widget', current: `${doubled("'ab'", 30)}.size() > 0` }],
      'config health',
    );
    expect(stabilityOf(widget, NOW, rules)).toEqual({
      state: 'failed',
      message: `Widget prod/w: health rule example.com/Widget (config health[0]): current exceeded its cost budget (+ would make a string of ${2 ** 21} characters, more than ${SIZE})`,
    });
  });

  it('from a CRD, name the annotation', () => {
    const rules = crdHealthRules([crd({ 'mooring.io/health-current': `${doubled("'ab'", 30)}.size() > 0` })]);
    expect(stabilityOf(widget, NOW, rules).message).toBe(
      `Widget prod/w: health rule example.com/Widget (CustomResourceDefinition widgets.example.com): mooring.io/health-current exceeded its cost budget (+ would make a string of ${2 ** 21} characters, more than ${SIZE})`,
    );
  });

  it('from a CRD, may not call the string functions that grow values: refused naming the CRD, annotation and function', () => {
    expect(() => crdHealthRules([crd({ 'mooring.io/health-current': replaceChain(6) })])).toThrow(
      `CustomResourceDefinition widgets.example.com: annotation mooring.io/health-current: expression ${JSON.stringify(replaceChain(6))} does not compile: function replace is not available to rules from CustomResourceDefinition annotations (it makes values larger than its operands; rules of the agent's configuration may call it)`,
    );
    for (const call of ["['a'].join(',')", "'a,b'.split(',')", "'%s'.format(['a'])", "strings.quote('a')"])
      expect(() =>
        crdHealthRules([
          crd({ 'mooring.io/health-failed': `${call} == ''`, 'mooring.io/health-current': 'true' }),
        ]),
      ).toThrow(
        /annotation mooring\.io\/health-failed: .* does not compile: function (join|split|format|strings\.quote) is not available to rules from CustomResourceDefinition annotations/,
      );
    // What stays: predicates and functions whose result is no larger than their operand.
    expect(
      crdHealthRules([
        crd({
          'mooring.io/health-current':
            "status.phase.lowerAscii().trim().substring(0, 3) == 'rea' && status.phase.indexOf('d') > 0 && status.phase.matches('^R')",
        }),
      ]).size,
    ).toBe(1);
  });
});
