// A slice of the CEL specification's conformance suite (google/cel-spec, as @bufbuild/cel-spec ships it) run
// through the same wrapper health rules use (src/stability/cel.ts: compile with its checks and budget, evaluate
// with its bounds): field selection and has() on maps, the macros all/exists/exists_one/filter/map, string
// functions and comparisons, logic. Tests that need protobuf message types, a container, disabled macros or a
// type check only are outside what health rules use and are left out; so are results other than scalars, and
// backquoted field names (`a.\`b-c\``, fields/quoted_map_fields), which the library does not parse yet (docs/stability.md).
import type { CelInput } from '@bufbuild/cel';
import type { Value } from '@bufbuild/cel-spec/cel/expr/value_pb.js';
import { getConformanceSuite, type IncrementalTestSuite } from '@bufbuild/cel-spec/testdata/tests.js';
import { describe, expect, it } from 'vitest';
import { compileExpression, evaluateExpression } from '../../../src/stability/cel.ts';

/** Sections (`suite/section`) health rules rely on. */
const SECTIONS = [
  'fields/map_fields',
  'fields/map_has',
  'fields/in',
  'macros/exists',
  'macros/all',
  'macros/exists_one',
  'macros/map',
  'macros/filter',
  'macros/nested',
  'string/size',
  'string/starts_with',
  'string/ends_with',
  'string/matches',
  'string/concatenation',
  'string/contains',
  'comparisons/eq_literal',
  'comparisons/ne_literal',
  'comparisons/lt_literal',
  'comparisons/gt_literal',
  'comparisons/in_list_literal',
  'comparisons/in_map_literal',
  'logic/conditional',
  'logic/AND',
  'logic/OR',
  'logic/NOT',
  'string_ext/ascii_casing',
  'string_ext/index_of',
  'string_ext/split',
  'string_ext/trim',
  'string_ext/char_at',
  'string_ext/last_index_of',
  'string_ext/replace',
  'string_ext/substring',
  'string_ext/join',
  'string_ext/quote',
  'string_ext/format',
];

function toInput(value: Value): CelInput {
  const kind = value.kind;
  switch (kind.case) {
    case 'nullValue':
      return null;
    case 'boolValue':
    case 'stringValue':
    case 'doubleValue':
    case 'int64Value':
    case 'bytesValue':
      return kind.value;
    case 'listValue':
      return kind.value.values.map(toInput);
    case 'mapValue':
      return new Map(
        kind.value.entries.map(
          (e) => [toInput(e.key as Value), toInput(e.value as Value)] as [CelInput, CelInput],
        ),
      ) as CelInput;
    default:
      throw new Error(`unsupported value ${kind.case}`);
  }
}

type Scalar = string | number | bigint | boolean | null;

function scalarOf(value: Value | undefined): { scalar: Scalar } | undefined {
  const kind = value?.kind;
  switch (kind?.case) {
    case 'nullValue':
      return { scalar: null };
    case 'boolValue':
    case 'stringValue':
    case 'doubleValue':
    case 'int64Value':
      return { scalar: kind.value };
    default:
      return undefined;
  }
}

interface Runnable {
  name: string;
  expr: string;
  bindings: Record<string, CelInput>;
  expected: { scalar: Scalar } | 'error';
}

function runnable(suite: IncrementalTestSuite, path: string): Runnable[] {
  return suite.tests.flatMap((test): Runnable[] => {
    const t = test.original;
    if (
      t.disableMacros ||
      t.checkOnly ||
      t.container !== '' ||
      t.typeEnv.some(
        (d) => d.declKind.case === 'ident' && d.declKind.value.type?.typeKind.case === 'messageType',
      )
    )
      return [];
    if (/TestAllTypes|google\.protobuf|type\(|dyn\(|uint|bytes|b'|b"/.test(t.expr)) return [];
    let expected: Runnable['expected'];
    if (t.resultMatcher.case === 'evalError') expected = 'error';
    else if (t.resultMatcher.case === 'value' || t.resultMatcher.case === undefined) {
      const scalar = t.resultMatcher.case === 'value' ? scalarOf(t.resultMatcher.value) : { scalar: true };
      if (!scalar) return [];
      expected = scalar;
    } else return [];
    const bindings: Record<string, CelInput> = {};
    try {
      for (const [name, v] of Object.entries(t.bindings)) {
        if (v.kind.case !== 'value') return [];
        bindings[name] = toInput(v.kind.value);
      }
    } catch {
      return [];
    }
    return [{ name: `${path}: ${test.name}`, expr: t.expr, bindings, expected }];
  });
}

function section(path: string): IncrementalTestSuite {
  const [suiteName, sectionName] = path.split('/');
  const suite = getConformanceSuite().suites.find((s) => s.name === suiteName);
  const found = suite?.suites.find((s) => s.name === sectionName);
  if (!found) throw new Error(`no conformance section ${path}`);
  return found;
}

const cases = SECTIONS.flatMap((path) => runnable(section(path), path));

describe('CEL conformance, through the health rules wrapper', () => {
  it('runs a slice large enough to mean something', () => {
    expect(cases.length).toBeGreaterThan(250);
  });

  it.each(cases)('$name', ({ expr, bindings, expected }) => {
    let result: ReturnType<typeof evaluateExpression>;
    try {
      result = evaluateExpression(compileExpression(expr), bindings);
    } catch (error) {
      // A compile error is the expected error of a test that expects one, never a pass otherwise.
      expect(expected, String(error)).toBe('error');
      return;
    }
    if (expected === 'error') {
      expect(result.ok).toBe(false);
      return;
    }
    expect(result).toEqual({ ok: true, value: expected.scalar });
  });
});
