// The compiler's pass over a parsed expression, before it is planned: every function it calls must exist (the
// library would only say so when the call is reached) and be in its rule's function set; a `matches` pattern must
// be a literal RE2 accepts (compiled here, once); no protobuf message is built. And it weaves in the budget:
// each comprehension's loop condition is wrapped in the iteration tick (charged the nodes an iteration runs), a
// macro's `accumulator + [element]` becomes an append in place, and a map literal a KeyedMap (cel-values.ts).
import type * as Syntax from '@bufbuild/cel-spec/cel/expr/syntax_pb.js';
import type * as Protobuf from '@bufbuild/protobuf';
import type { RE2JS } from 're2js';
import { APPEND, GROWING_STRING_FUNCTIONS, MAP, TICK } from './cel-functions.ts';
import { compilePattern } from './cel-regex.ts';

type Expr = Syntax.Expr;

/** Whose rule an expression is: the agent's configuration, or a CustomResourceDefinition's annotation. */
export type RuleOrigin = 'config' | 'crd';

/** An expression that does not parse, or calls a function CEL does not have here. */
export class CelCompileError extends Error {}

export interface InstrumentLibrary {
  protobuf: typeof Protobuf;
  syntax: typeof Syntax;
  re2: typeof RE2JS;
  /** Whether the full function set has `name`. */
  has: (name: string) => boolean;
}

/**
 * Namespaces of cel-go's extension libraries Flux enables (sets, encoders, math, optional): `sets.contains(…)`
 * is such a function, not a method on a field named `sets`, and is refused when the library lacks it.
 */
const EXTENSION_NAMESPACES = new Set(['sets', 'base64', 'math', 'optional', 'strings']);

/** The accumulator the library's macros name, which no expression can write (`@` starts no identifier). */
const ACCUMULATOR = '@result';

const GROWING = new Set<string>(GROWING_STRING_FUNCTIONS);

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

export function children(e: Expr): Expr[] {
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

/** The nodes of an expression (what evaluating it once runs at most, beside the calls it makes). */
export function nodeCount(root: Expr | undefined): number {
  let n = 0;
  const stack = root ? [root] : [];
  while (stack.length > 0) {
    n += 1;
    stack.push(...children(stack.pop() as Expr));
  }
  return n;
}

function checkCall(lib: InstrumentLibrary, call: Syntax.Expr_Call, origin: RuleOrigin): void {
  const { function: name, target, args } = call;
  const qualified = qualifiedName(target);
  const namespaced = qualified !== undefined && EXTENSION_NAMESPACES.has(qualified);
  const full = qualified !== undefined && lib.has(`${qualified}.${name}`) ? `${qualified}.${name}` : name;
  const known = isOperator(name) || full !== name || (!namespaced && lib.has(name));
  if (!known) throw new CelCompileError(`unknown function ${qualified ? `${qualified}.` : ''}${name}`);
  if (origin === 'crd' && GROWING.has(full))
    throw new CelCompileError(
      `function ${full} is not available to rules from CustomResourceDefinition annotations (it makes values larger than its operands; rules of the agent's configuration may call it)`,
    );
  if (name !== 'matches') return;
  const pattern = args[args.length - 1]?.exprKind;
  if (pattern?.case !== 'constExpr' || pattern.value.constantKind.case !== 'stringValue')
    throw new CelCompileError(
      'the pattern of matches must be a string literal (it is compiled with the rule)',
    );
  const text = pattern.value.constantKind.value;
  try {
    compilePattern(lib.re2, text);
  } catch (error) {
    const why = error instanceof Error ? error.message.replace(/^error parsing regexp: /, '') : String(error);
    throw new CelCompileError(`matches ${JSON.stringify(text)}: ${why}`);
  }
}

/** Checks `root` and weaves the budget into it (in place). Throws CelCompileError. */
export function instrument(lib: InstrumentLibrary, root: Expr, origin: RuleOrigin): void {
  let nextId = 0n;
  const all: Expr[] = [root];
  while (all.length > 0) {
    const e = all.pop() as Expr;
    if (e.id >= nextId) nextId = e.id + 1n;
    all.push(...children(e));
  }
  const node = (exprKind: Expr['exprKind']): Expr =>
    lib.protobuf.create(lib.syntax.ExprSchema, { id: nextId++, exprKind });
  const call = (fn: string, args: Expr[]): Expr['exprKind'] => ({
    case: 'callExpr',
    value: lib.protobuf.create(lib.syntax.Expr_CallSchema, { function: fn, args }),
  });
  const visit = (e: Expr): void => {
    const kind = e.exprKind;
    if (kind.case === 'callExpr') {
      checkCall(lib, kind.value, origin);
      const [accumulator, list] = kind.value.args;
      if (
        kind.value.function === '_+_' &&
        accumulator?.exprKind.case === 'identExpr' &&
        accumulator.exprKind.value.name === ACCUMULATOR &&
        list?.exprKind.case === 'listExpr' &&
        list.exprKind.value.elements.length === 1 &&
        list.exprKind.value.optionalIndices.length === 0
      )
        e.exprKind = call(APPEND, [accumulator, list.exprKind.value.elements[0] as Expr]);
    }
    if (kind.case === 'structExpr') {
      if (kind.value.messageName !== '')
        throw new CelCompileError(`a health rule cannot build a message (${kind.value.messageName})`);
      for (const child of children(e)) visit(child);
      if (kind.value.entries.length > 0) e.exprKind = call(MAP, [node(kind)]);
      return;
    }
    if (kind.case === 'comprehensionExpr' && kind.value.loopCondition) {
      const condition = kind.value.loopCondition;
      const units = 1 + nodeCount(condition) + nodeCount(kind.value.loopStep);
      for (const child of children(e)) visit(child);
      const cost = node({
        case: 'constExpr',
        value: lib.protobuf.create(lib.syntax.ConstantSchema, {
          constantKind: { case: 'int64Value', value: BigInt(units) },
        }),
      });
      kind.value.loopCondition = node(call(TICK, [condition, cost]));
      return;
    }
    for (const child of children(e)) visit(child);
  };
  visit(root);
}
