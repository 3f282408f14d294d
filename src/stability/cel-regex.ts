// The patterns of CEL's `matches`, compiled with RE2 (re2js, the engine SOPS rules use here, of which the CEL
// library's own is a fork: linear-time matching, Go's syntax, as cel-go). Compiling is the slow part in this engine (measured: a 1,022-character pattern of
// `a{1000}` took 1.5 s, a 3,000-character alternation 0.3 s to parse), and the library compiles on every call.
// So a pattern must be a string literal of the expression, checked and compiled once when the expression is, and
// small: at most 512 characters, and at most 5,000 RE2 instructions by an upper bound read from its text and its
// counted repetitions (src/re2-size.ts, shared with SOPS rules). Matching then costs at
// most one step per instruction per character of the subject, which the budget charges.
import type { RE2JS } from 're2js';
import { instructionBound } from '../re2-size.ts';

export const REGEX_LIMITS = {
  /** Characters of one pattern. */
  patternLength: 512,
  /** RE2 instructions of one compiled pattern (bounded from above before compiling). */
  instructions: 5_000,
} as const;

type Engine = typeof RE2JS;

const compiled = new Map<string, RE2JS>();
const KEPT = 256;

/** Why `pattern` may not be compiled, or undefined. */
export function patternProblem(pattern: string): string | undefined {
  if (pattern.length > REGEX_LIMITS.patternLength)
    return `the pattern of matches is ${pattern.length} characters, more than ${REGEX_LIMITS.patternLength}`;
  const bound = instructionBound(pattern);
  if (bound > REGEX_LIMITS.instructions)
    return `the pattern of matches may compile to ${bound} RE2 instructions (by its characters and repetition counts), more than ${REGEX_LIMITS.instructions}`;
  return undefined;
}

/** The compiled pattern (kept by its text); throws with the engine's message when RE2 refuses it. */
export function compilePattern(engine: Engine, pattern: string): RE2JS {
  const known = compiled.get(pattern);
  if (known) return known;
  const problem = patternProblem(pattern);
  if (problem) throw new Error(problem);
  const re = engine.compile(pattern);
  if (compiled.size >= KEPT) compiled.clear();
  compiled.set(pattern, re);
  return re;
}

/** Its instructions: the most steps matching takes per character of the subject. */
export function instructionsOf(re: RE2JS): number {
  const prog = re.re2()?.prog as { numInst?: () => number } | undefined;
  const n = typeof prog?.numInst === 'function' ? prog.numInst() : undefined;
  // A future re2js that hides the program: the bound the pattern was admitted with.
  return typeof n === 'number' && Number.isFinite(n) ? n : instructionBound(re.pattern());
}
