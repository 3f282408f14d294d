// The one wrapper around the CEL library (@bufbuild/cel, a conformance-tested implementation of the CEL spec):
// expressions are compiled once, with their parse errors, and evaluated with bounds, since their text and the
// objects they read may come from a commit. The library is loaded on the first compile, synchronously (its
// CommonJS build), so an agent without health rules never holds it, and configuration checks can compile.
//
// Bounds (the library has no cost limit of its own): the expression's length; the object's size and depth as it
// is converted; and the iterations of all macros (all, exists, exists_one, filter, map) of one evaluation,
// counted by a call woven into each comprehension's loop condition, with a wall-clock deadline checked on each
// iteration past the first hundred (as cel-go's interrupt check, which Flux sets, checks its context). Outside
// macros, the work of an expression is bounded by its length.
import { createRequire } from 'node:module';
import type * as CelModule from '@bufbuild/cel';
import type * as CelExt from '@bufbuild/cel/ext';
import type * as Syntax from '@bufbuild/cel-spec/cel/expr/syntax_pb.js';
import type * as Protobuf from '@bufbuild/protobuf';

export const CEL_LIMITS = {
  /** Characters of one expression. */
  expressionLength: 4096,
  /** Macro iterations of one evaluation. */
  iterations: 100_000,
  /** Milliseconds one evaluation may run, */
  deadlineMs: 100,
  /**
   * counted once it has run this many iterations: a rule that reads a handful of conditions never meets the
   * clock, so its verdict does not depend on the machine's load (a pause of the collector).
   */
  clockAfter: 100,
  /** Values (objects, arrays and scalars) of an object converted for evaluation. */
  inputValues: 250_000,
  /** Characters of all strings of an object converted for evaluation. */
  inputChars: 8 * 1024 * 1024,
  /** Nesting of an object converted for evaluation. */
  inputDepth: 100,
} as const;

const TICK = 'mooring.tick';

/**
 * Namespaces of cel-go's extension libraries Flux enables (sets, encoders, math, optional): `sets.contains(…)`
 * is such a function, not a method on a field named `sets`, and is refused when the library lacks it.
 */
const EXTENSION_NAMESPACES = new Set(['sets', 'base64', 'math', 'optional', 'strings']);

interface Library {
  cel: typeof CelModule;
  ext: typeof CelExt;
  protobuf: typeof Protobuf;
  syntax: typeof Syntax;
  env: CelModule.CelEnv;
}

let library: Library | undefined;

/** Counts of the evaluation under way (evaluation is synchronous, so one at a time). */
const budget: { iterations: number; deadline: number; limit: number } = {
  iterations: 0,
  deadline: 0,
  limit: CEL_LIMITS.iterations,
};

function load(): Library {
  if (library) return library;
  const require = createRequire(import.meta.url);
  const cel = require('@bufbuild/cel') as typeof CelModule;
  const ext = require('@bufbuild/cel/ext') as typeof CelExt;
  const protobuf = require('@bufbuild/protobuf') as typeof Protobuf;
  const syntax = require('@bufbuild/cel-spec/cel/expr/syntax_pb.js') as typeof Syntax;
  const tick = cel.celFunc(TICK, [cel.CelScalar.DYN], cel.CelScalar.DYN, (condition) => {
    budget.iterations += 1;
    if (budget.iterations > budget.limit)
      throw new Error(`more than ${budget.limit} macro iterations (the limit of one evaluation)`);
    if (budget.iterations > CEL_LIMITS.clockAfter && performance.now() > budget.deadline)
      throw new Error(`evaluation took longer than ${CEL_LIMITS.deadlineMs}ms (the limit of one evaluation)`);
    return condition;
  });
  const env = cel.celEnv({ funcs: [...ext.strings, tick] });
  library = { cel, ext, protobuf, syntax, env };
  return library;
}

/** An expression that does not parse, or calls a function CEL does not have here. */
export class CelCompileError extends Error {}

export interface CompiledExpression {
  readonly text: string;
  readonly run: (bindings: Record<string, CelModule.CelInput>) => CelModule.CelResult;
}

type Expr = Syntax.Expr;

/** Operators and the parser's internal calls have names no expression can write. */
function isOperator(name: string): boolean {
  return !/^[A-Za-z_][A-Za-z0-9_.]*$/.test(name) || name.startsWith('_');
}

function qualifiedName(expr: Expr | undefined): string | undefined {
  if (!expr) return undefined;
  if (expr.exprKind.case === 'identExpr') return expr.exprKind.value.name;
  if (expr.exprKind.case === 'selectExpr' && !expr.exprKind.value.testOnly) {
    const parent = qualifiedName(expr.exprKind.value.operand);
    return parent === undefined ? undefined : `${parent}.${expr.exprKind.value.field}`;
  }
  return undefined;
}

/**
 * Walks the parsed expression: every function it calls must exist (the library would only say so when the call
 * is reached), and every comprehension's loop condition is wrapped in the budget's tick.
 */
function instrument(lib: Library, root: Expr): void {
  let nextId = 0n;
  const ids: Expr[] = [root];
  while (ids.length > 0) {
    const e = ids.pop() as Expr;
    if (e.id >= nextId) nextId = e.id + 1n;
    children(e).forEach((c) => {
      ids.push(c);
    });
  }
  const visit = (e: Expr): void => {
    const kind = e.exprKind;
    if (kind.case === 'callExpr') {
      const { function: name, target } = kind.value;
      const qualified = qualifiedName(target);
      const namespaced = qualified !== undefined && EXTENSION_NAMESPACES.has(qualified);
      const known =
        isOperator(name) ||
        (qualified !== undefined && lib.env.funcs.find(`${qualified}.${name}`) !== undefined) ||
        (!namespaced && lib.env.funcs.find(name) !== undefined);
      if (!known) throw new CelCompileError(`unknown function ${qualified ? `${qualified}.` : ''}${name}`);
    }
    if (kind.case === 'comprehensionExpr' && kind.value.loopCondition) {
      kind.value.loopCondition = lib.protobuf.create(lib.syntax.ExprSchema, {
        id: nextId++,
        exprKind: {
          case: 'callExpr',
          value: { function: TICK, args: [kind.value.loopCondition] },
        },
      });
      // The wrapped condition itself is visited below (its own comprehensions are wrapped once).
      const wrapped = kind.value.loopCondition.exprKind.value as Syntax.Expr_Call;
      for (const child of [kind.value.iterRange, kind.value.accuInit, kind.value.loopStep, kind.value.result])
        if (child) visit(child);
      for (const arg of wrapped.args) visit(arg);
      return;
    }
    for (const child of children(e)) visit(child);
  };
  visit(root);
}

function children(e: Expr): Expr[] {
  const kind = e.exprKind;
  switch (kind.case) {
    case 'selectExpr':
      return kind.value.operand ? [kind.value.operand] : [];
    case 'callExpr':
      return [...(kind.value.target ? [kind.value.target] : []), ...kind.value.args];
    case 'listExpr':
      return kind.value.elements;
    case 'structExpr':
      return kind.value.entries.flatMap((entry) => [
        ...(entry.keyKind.case === 'mapKey' ? [entry.keyKind.value] : []),
        ...(entry.value ? [entry.value] : []),
      ]);
    case 'comprehensionExpr':
      return [
        kind.value.iterRange,
        kind.value.accuInit,
        kind.value.loopCondition,
        kind.value.loopStep,
        kind.value.result,
      ].filter((c): c is Expr => c !== undefined);
    default:
      return [];
  }
}

/** Parses and plans an expression. Throws CelCompileError with the parser's message (`<input>:1:9: …`). */
export function compileExpression(text: string): CompiledExpression {
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
  instrument(lib, parsed.expr);
  let planned: (bindings: Record<string, CelModule.CelInput>) => CelModule.CelResult;
  try {
    planned = lib.cel.plan(lib.env, parsed) as typeof planned;
  } catch (error) {
    throw new CelCompileError(error instanceof Error ? error.message : String(error));
  }
  return { text, run: planned };
}

export type Evaluation = { ok: true; value: CelModule.CelValue } | { ok: false; error: string };

/** Evaluates a compiled expression with the bounds above. Never throws. */
export function evaluateExpression(
  expression: CompiledExpression,
  bindings: Record<string, CelModule.CelInput>,
  limits: { iterations?: number } = {},
): Evaluation {
  const lib = load();
  budget.iterations = 0;
  budget.limit = limits.iterations ?? CEL_LIMITS.iterations;
  budget.deadline = performance.now() + CEL_LIMITS.deadlineMs;
  try {
    const value = expression.run(bindings);
    if (lib.cel.isCelError(value)) return { ok: false, error: value.message };
    return { ok: true, value };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
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
  const counts = { values: 0, chars: 0 };
  const convert = (value: unknown, depth: number): CelModule.CelInput => {
    counts.values += 1;
    if (counts.values > CEL_LIMITS.inputValues)
      throw new InputBoundError(`the object has more than ${CEL_LIMITS.inputValues} values`);
    if (depth > CEL_LIMITS.inputDepth)
      throw new InputBoundError(`the object nests deeper than ${CEL_LIMITS.inputDepth} levels`);
    if (typeof value === 'string') {
      counts.chars += value.length;
      if (counts.chars > CEL_LIMITS.inputChars)
        throw new InputBoundError(`the object's strings exceed ${CEL_LIMITS.inputChars} characters`);
      return value;
    }
    if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
    if (typeof value === 'boolean' || value === null || value === undefined) return value ?? null;
    if (Array.isArray(value)) return value.map((v) => convert(v, depth + 1));
    if (typeof value !== 'object') return null;
    const map = new Map<string, CelModule.CelInput>();
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue;
      counts.chars += k.length;
      map.set(k, convert(v, depth + 1));
    }
    return map;
  };
  const bindings: Record<string, CelModule.CelInput> = {};
  for (const [key, value] of Object.entries(object))
    if (value !== undefined) bindings[key] = convert(value, 1);
  return bindings;
}

/** Whether the library has been loaded (an agent without health rules never loads it). */
export function celLoaded(): boolean {
  return library !== undefined;
}
