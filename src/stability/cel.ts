// The one wrapper around the CEL library (@bufbuild/cel, a conformance-tested implementation of the CEL spec):
// expressions are compiled once, with their parse errors, and evaluated with bounds, since their text and the
// objects they read may come from a commit. The library is loaded on the first compile, synchronously (its
// CommonJS build), so an agent without health rules never holds it, and configuration checks can compile.
//
// Bounds (the library has no cost limit of its own): the expression's length; the object's size and depth as it
// is converted; and a cost budget of each evaluation (cel-budget.ts), charged by every function before it runs
// (cel-functions.ts says what each costs and why nothing else runs long) and by every iteration of a macro, through
// a call woven into each comprehension's loop condition. Values a function would make past the size limit are
// refused before they are made. A wall-clock deadline is the backstop (CEL_LIMITS.deadlineMs).
//
// Two function sets: rules of the agent's configuration (written by its operator) have the whole string
// extension; rules from CustomResourceDefinition annotations (written by whoever can push a commit) do not have
// the functions that make values larger than their operands (replace, split, join, format, strings.quote), and
// are refused when they call one, naming it.
import { createRequire } from 'node:module';
import type * as CelModule from '@bufbuild/cel';
import type * as CelExt from '@bufbuild/cel/ext';
import type * as Syntax from '@bufbuild/cel-spec/cel/expr/syntax_pb.js';
import type * as Protobuf from '@bufbuild/protobuf';
import type * as Re2 from 're2js';
import { CelBudgetError, chargeNodes, meterReading, startMeter } from './cel-budget.ts';
import { GROWING_STRING_FUNCTIONS, internalFunctions, meteredFunctions } from './cel-functions.ts';
import { CelCompileError, instrument, nodeCount, type RuleOrigin } from './cel-instrument.ts';
import { inputValue } from './cel-values.ts';

export { CEL_BUDGET } from './cel-budget.ts';
export { CelCompileError, type RuleOrigin } from './cel-instrument.ts';

export const CEL_LIMITS = {
  /** Characters of one expression. */
  expressionLength: 4096,
  /** Macro iterations of one evaluation. */
  iterations: 100_000,
  /**
   * Milliseconds one evaluation may run: a backstop above the cost budget's (about 100 ms of work), so that the
   * budget, which fails the object, is what ends an evaluation, and the clock, which leaves it in progress, only
   * what the budget does not count. It is read once an evaluation has run this many iterations, or used
   * CEL_BUDGET.clockAfter units,
   */
  deadlineMs: 250,
  /**
   * so that a rule that reads a handful of conditions never meets the clock, and its verdict does not depend on
   * the machine's load (a pause of the collector).
   */
  clockAfter: 100,
  /** Values (objects, arrays and scalars) of an object converted for evaluation. */
  inputValues: 250_000,
  /** Characters of all strings of an object converted for evaluation. */
  inputChars: 8 * 1024 * 1024,
  /** Nesting of an object converted for evaluation. */
  inputDepth: 100,
} as const;

interface Library {
  cel: typeof CelModule;
  protobuf: typeof Protobuf;
  syntax: typeof Syntax;
  re2: typeof Re2.RE2JS;
  envs: Record<RuleOrigin, CelModule.CelEnv>;
}

let library: Library | undefined;

function load(): Library {
  if (library) return library;
  const require = createRequire(import.meta.url);
  const cel = require('@bufbuild/cel') as typeof CelModule;
  const ext = require('@bufbuild/cel/ext') as typeof CelExt;
  const protobuf = require('@bufbuild/protobuf') as typeof Protobuf;
  const syntax = require('@bufbuild/cel-spec/cel/expr/syntax_pb.js') as typeof Syntax;
  const re2 = (require('re2js') as typeof Re2).RE2JS;
  const metered = meteredFunctions(cel, re2, ext.strings);
  const internal = internalFunctions(cel);
  const growing = new Set<string>(GROWING_STRING_FUNCTIONS);
  const envs = {
    config: cel.celEnv({ funcs: [...metered, ...internal] }),
    crd: cel.celEnv({ funcs: [...metered.filter((f) => !growing.has(f.name)), ...internal] }),
  };
  library = { cel, protobuf, syntax, re2, envs };
  return library;
}

export interface CompiledExpression {
  readonly text: string;
  readonly origin: RuleOrigin;
  /** Nodes of the expression: what evaluating it costs at least, charged before it starts. */
  readonly nodes: number;
  readonly run: (bindings: Record<string, CelModule.CelInput>) => CelModule.CelResult;
}

/**
 * Parses and plans an expression, with the function set of its origin. Throws CelCompileError with the parser's
 * message (`<input>:1:9: …`), or naming the function a rule may not call.
 */
export function compileExpression(text: string, origin: RuleOrigin = 'config'): CompiledExpression {
  if (text.length > CEL_LIMITS.expressionLength)
    throw new CelCompileError(
      `expression of ${text.length} characters is longer than the limit of ${CEL_LIMITS.expressionLength}`,
    );
  if (text.trim() === '') throw new CelCompileError('expression is empty');
  const lib = load();
  let parsed: ReturnType<typeof CelModule.parse>;
  try {
    parsed = lib.cel.parse(text);
  } catch (error) {
    // A RangeError is a nesting too deep for the parser's recursion.
    throw new CelCompileError(error instanceof Error ? error.message : String(error));
  }
  const nodes = nodeCount(parsed.expr);
  const full = lib.envs.config.funcs;
  instrument({ ...lib, has: (name) => full.find(name) !== undefined }, parsed.expr, origin);
  let planned: (bindings: Record<string, CelModule.CelInput>) => CelModule.CelResult;
  try {
    planned = lib.cel.plan(lib.envs[origin], parsed) as typeof planned;
  } catch (error) {
    throw new CelCompileError(error instanceof Error ? error.message : String(error));
  }
  return { text, origin, nodes, run: planned };
}

/** `budget` when the evaluation broke its budget (cost, value size, iterations): the rule fails its object. */
export type Evaluation =
  | { ok: true; value: CelModule.CelValue }
  | { ok: false; error: string; budget?: true; deadline?: true };

export interface EvaluationLimits {
  iterations?: number;
  cost?: number;
  valueSize?: number;
}

/** Evaluates a compiled expression with the bounds above. Never throws. */
export function evaluateExpression(
  expression: CompiledExpression,
  bindings: Record<string, CelModule.CelInput>,
  limits: EvaluationLimits = {},
): Evaluation {
  const lib = load();
  startMeter({
    iterations: limits.iterations ?? CEL_LIMITS.iterations,
    clockAfterIterations: CEL_LIMITS.clockAfter,
    cost: limits.cost,
    valueSize: limits.valueSize,
    deadlineMs: CEL_LIMITS.deadlineMs,
  });
  let value: CelModule.CelResult | undefined;
  let thrown: unknown;
  try {
    chargeNodes(expression.nodes);
    value = expression.run(bindings);
  } catch (error) {
    thrown = error;
  }
  // A bound broken inside `a || b` may have been absorbed by the other operand: it decides all the same.
  const { broken } = meterReading();
  if (broken)
    return {
      ok: false,
      error: broken.message,
      ...(broken instanceof CelBudgetError ? { budget: true as const } : { deadline: true as const }),
    };
  if (thrown !== undefined)
    return { ok: false, error: thrown instanceof Error ? thrown.message : String(thrown) };
  if (value === undefined || lib.cel.isCelError(value))
    return { ok: false, error: value?.message ?? 'no value' };
  return { ok: true, value };
}

/** Too large, too deep: the object is not evaluated. */
export class InputBoundError extends Error {}

/**
 * The object's top-level fields as variables (`status`, `metadata`, `spec`, …: what Flux binds), converted as
 * Kubernetes decodes JSON for cel-go: whole numbers are ints, other numbers doubles, objects maps. Throws
 * InputBoundError past the input limits.
 */
export function objectBindings(
  object: Readonly<Record<string, unknown>>,
): Record<string, CelModule.CelInput> {
  const { cel } = load();
  const counts = { values: 0, chars: 0 };
  const check = (depth: number, chars: number, isValue: boolean): void => {
    if (isValue) {
      counts.values += 1;
      if (counts.values > CEL_LIMITS.inputValues)
        throw new InputBoundError(`the object has more than ${CEL_LIMITS.inputValues} values`);
      if (depth > CEL_LIMITS.inputDepth)
        throw new InputBoundError(`the object nests deeper than ${CEL_LIMITS.inputDepth} levels`);
    }
    counts.chars += chars;
    if (counts.chars > CEL_LIMITS.inputChars)
      throw new InputBoundError(`the object's strings exceed ${CEL_LIMITS.inputChars} characters`);
  };
  const bindings: Record<string, CelModule.CelInput> = {};
  for (const [key, value] of Object.entries(object))
    if (value !== undefined) bindings[key] = inputValue(cel, value, 1, check) as CelModule.CelInput;
  return bindings;
}

/** Whether the library has been loaded (an agent without health rules never loads it). */
export function celLoaded(): boolean {
  return library !== undefined;
}
