// Every function health rules can call, each charged to the evaluation's budget before it runs (cel-budget.ts).
// The library's definitions are kept and wrapped, by overload, except four that are replaced: list `+` (flat,
// not a view over views), `replace` (linear, measured first), `matches` (a pattern compiled once, cel-regex.ts)
// and the internal calls the compiler weaves in (the iteration tick, a macro's append, a map literal).
//
// Why no remaining call runs long: each name below has a rule, and load() refuses an environment with a function
// that has none (a newer library's addition is refused until it is given one). With n the characters (or bytes)
// of the strings among the operands, w a value's weight (cel-values.ts) and s a list's or map's size:
//   O(1), 1 unit:      arithmetic (_-_ _*_ _/_ _%_ -_, _+_ of numbers, durations, timestamps), !_, type, dyn,
//                      the getters of durations and timestamps (500 more with a time zone, which Intl parses),
//                      size of a list, map or bytes.
//   O(n), n/10:        comparisons, contains, startsWith, endsWith, indexOf, lastIndexOf, charAt, substring,
//                      trim, string(bytes), conversions from numbers and bools.
//   O(n), n:           JavaScript loops over each character: size of a string, lowerAscii, upperAscii,
//                      strings.quote (makes 2n+2 at most), int/uint/double/bool/timestamp/duration of a string,
//                      bytes of a string (makes 3n at most).
//   made, measured:    _+_ of strings, bytes (the sum) and lists (the sum, one unit per element copied), replace
//                      (its exact length), split (at most n+1 elements), join (the exact length), format (a bound
//                      read from its clauses): refused past the value size limit before anything is made.
//   walks, w/10:       _==_ and _!=_ (the smaller operand; 1 for the same value), @in of a list (each element
//                      against the value); @in of a map is a hash lookup.
//   matches:           8 units per RE2 instruction per character of the subject (re2js's slowest path takes
//                      about 0.8 µs per step), with patterns only literals, compiled when the rule is.
// Steps of the evaluator that are no function call (field selection, index, list and map literals, `?:`, `&&`,
// `||`) are each O(1) or O(their elements, written in the expression), and at most the expression's nodes run
// per iteration: each iteration is charged its condition's and step's nodes, and the whole expression once.
import type * as CelModule from '@bufbuild/cel';
import type { RE2JS } from 're2js';
import { charge, chars, checkSize, iterate } from './cel-budget.ts';
import { compilePattern, instructionsOf } from './cel-regex.ts';
import { formatBound, joinedLength, planReplace } from './cel-strings.ts';
import { append, elementsOf, keyedMap, listOf, weightOf } from './cel-values.ts';

type Cel = typeof CelModule;
type CelValue = CelModule.CelValue;
type Operands = readonly CelValue[];
type Rule = (cel: Cel, target: CelValue | undefined, args: Operands) => void;
type Impl = (target: CelValue | undefined, args: Operands) => CelModule.CelInput;

export const TICK = 'mooring.tick';
export const APPEND = 'mooring.append';
export const MAP = 'mooring.map';

/** Functions of the string extension that make values larger than their operands: not for rules from CRDs. */
export const GROWING_STRING_FUNCTIONS = ['replace', 'split', 'join', 'format', 'strings.quote'] as const;

function textLength(values: Operands, target: CelValue | undefined): number {
  let n = 0;
  for (const v of target === undefined ? values : [target, ...values])
    if (typeof v === 'string' || v instanceof Uint8Array) n += v.length;
  return n;
}

const linear: Rule = (_cel, target, args) => charge(1 + chars(textLength(args, target)));
const perChar: Rule = (_cel, target, args) => charge(1 + textLength(args, target));
const constant: Rule = () => charge(1);

function equality(cel: Cel, l: CelValue, r: CelValue): number {
  if (l === r) return 1;
  return 1 + chars(Math.min(weightOf(cel, l), weightOf(cel, r)));
}

const RULES: Record<string, Rule> = {
  '_+_': (cel, _t, [l, r]) => {
    if (typeof l === 'string' && typeof r === 'string') {
      checkSize('+', 'string', l.length + r.length);
      charge(1 + chars(l.length + r.length));
    } else if (l instanceof Uint8Array && r instanceof Uint8Array) {
      checkSize('+', 'bytes', l.length + r.length);
      charge(1 + chars(l.length + r.length));
    } else if (cel.isCelList(l) && cel.isCelList(r)) {
      checkSize('+', 'list', l.size + r.size);
      charge(1 + l.size + r.size);
    } else charge(1);
  },
  '_==_': (cel, _t, [l, r]) => charge(equality(cel, l as CelValue, r as CelValue)),
  '_!=_': (cel, _t, [l, r]) => charge(equality(cel, l as CelValue, r as CelValue)),
  '@in': (cel, _t, [value, range]) => {
    if (!cel.isCelList(range)) return charge(1 + chars(textLength([value as CelValue], undefined)));
    const each = weightOf(cel, value as CelValue);
    charge(1 + range.size + chars(Math.min(weightOf(cel, range), range.size * each)));
  },
  size: (_cel, target, args) => {
    const of = target ?? args[0];
    charge(typeof of === 'string' ? 1 + of.length : 1);
  },
  lowerAscii: perChar,
  upperAscii: perChar,
  'strings.quote': (_cel, _t, [text]) => {
    const n = typeof text === 'string' ? text.length : 0;
    checkSize('strings.quote', 'string', 2 * n + 2);
    charge(1 + n);
  },
  int: perChar,
  uint: perChar,
  double: perChar,
  bool: perChar,
  timestamp: perChar,
  duration: perChar,
  bytes: (_cel, _t, [text]) => {
    const n = typeof text === 'string' ? text.length : 0;
    checkSize('bytes', 'bytes', 3 * n);
    charge(1 + n);
  },
  split: (_cel, target, [separator, num]) => {
    const text = target as string;
    const limit = typeof num === 'bigint' && num > 0n ? Number(num) : Number.POSITIVE_INFINITY;
    const most = Math.min(limit, separator === '' ? text.length : text.length + 1);
    checkSize('split', 'list', most);
    charge(1 + chars(text.length) + most);
  },
  join: (_cel, target, [separator]) => {
    const list = target as CelModule.CelList;
    const length = joinedLength(list, typeof separator === 'string' ? separator : '');
    checkSize('join', 'string', length);
    charge(1 + list.size + chars(length));
  },
  format: (cel, target, [args]) => {
    const text = target as string;
    const list = args as CelModule.CelList;
    const bound = formatBound(text, list, (v) => weightOf(cel, v as CelValue));
    checkSize('format', 'string', bound);
    charge(1 + text.length + bound);
  },
};

for (const name of ['-_', '_-_', '_*_', '_/_', '_%_', '!_', 'type', 'dyn']) RULES[name] = constant;
for (const name of ['getSeconds', 'getMinutes', 'getHours', 'getMilliseconds', 'getFullYear', 'getMonth'])
  RULES[name] = timeGetter;
for (const name of ['getDate', 'getDayOfMonth', 'getDayOfWeek', 'getDayOfYear']) RULES[name] = timeGetter;
for (const name of ['_<_', '_<=_', '_>_', '_>=_', 'contains', 'startsWith', 'endsWith', 'string'])
  RULES[name] = linear;
for (const name of ['indexOf', 'lastIndexOf', 'charAt', 'substring', 'trim']) RULES[name] = linear;
// Read here; what they make (replace) or match (matches) is charged by their implementations below.
for (const name of ['replace', 'matches']) RULES[name] = linear;

function timeGetter(_cel: Cel, _target: CelValue | undefined, args: Operands): void {
  const zone = args[0];
  charge(typeof zone === 'string' ? 501 + zone.length : 1);
}

/** Implementations that replace the library's. */
function replacements(
  cel: Cel,
  re2: typeof RE2JS,
): Record<string, (func: CelModule.CelFunc) => Impl | undefined> {
  return {
    '_+_': (func) =>
      func.arguments.every((a) => a.kind === 'list')
        ? (_t, [l, r]) =>
            listOf(cel, elementsOf(l as CelModule.CelList).concat(elementsOf(r as CelModule.CelList)))
        : undefined,
    replace:
      () =>
      (target, [search, replacement, num]) => {
        const plan = planReplace(
          target as string,
          search as string,
          replacement as string,
          num as bigint | undefined,
        );
        checkSize('replace', 'string', plan.length);
        charge(chars(plan.length));
        return plan.build();
      },
    matches:
      () =>
      (target, [pattern]) => {
        const subject = target as string;
        const re = compilePattern(re2, pattern as string);
        charge(8 * instructionsOf(re) * (subject.length + 1));
        return re.test(subject);
      },
  };
}

function wrap(cel: Cel, func: CelModule.CelFunc, rule: Rule, impl: Impl | undefined): CelModule.CelFunc {
  const run: Impl =
    impl ??
    ((target, args) => {
      const result = func.call(0, target, [...args]);
      if (result === undefined) throw new Error(`no overload ${func.id}`);
      if (cel.isCelError(result)) throw result;
      return result;
    });
  const body = function (this: CelValue | undefined, ...args: CelValue[]) {
    rule(cel, this, args);
    return run(this, args);
  };
  // The library types each impl by its declared signature; this one serves every overload alike.
  const loose = body as never;
  return func.target
    ? cel.celMethod(func.name, func.target, func.arguments, func.result, loose)
    : cel.celFunc(func.name, func.arguments, func.result, loose);
}

/** The library's functions (standard and string extension), each metered; throws for one without a rule. */
export function meteredFunctions(
  cel: Cel,
  re2: typeof RE2JS,
  strings: readonly CelModule.CelFunc[],
): CelModule.CelFunc[] {
  const base = cel.celEnv({ funcs: [...strings] });
  const replaced = replacements(cel, re2);
  const metered: CelModule.CelFunc[] = [];
  for (const func of base.funcs) {
    const rule = RULES[func.name];
    if (!rule) throw new Error(`CEL function ${func.id} has no cost rule`);
    metered.push(wrap(cel, func, rule, replaced[func.name]?.(func)));
  }
  return metered;
}

/** The calls the compiler weaves into expressions (cel.ts: instrument). */
export function internalFunctions(cel: Cel): CelModule.CelFunc[] {
  const { DYN, INT } = cel.CelScalar;
  const LIST = cel.listType(DYN);
  const MAP_TYPE = cel.mapType(DYN, DYN);
  return [
    cel.celFunc(TICK, [DYN, INT], DYN, (condition, units) => {
      iterate(Number(units));
      return condition;
    }),
    cel.celFunc(APPEND, [LIST, DYN], LIST, (list, element) => {
      checkSize('map/filter', 'list', list.size + 1);
      const grown = append(cel, list, element);
      charge(1 + grown.copied);
      return grown.list;
    }),
    cel.celFunc(MAP, [MAP_TYPE], MAP_TYPE, (map) => {
      charge(1 + map.size);
      return keyedMap(cel, map) as unknown as CelModule.CelMap;
    }),
  ];
}
