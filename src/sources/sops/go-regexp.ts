// The regular expressions of a `sops:` block (`unencrypted_regex`, `encrypted_regex`): Go expressions, which sops
// runs with Go's regexp package (RE2). They come from the commit, so they run here with RE2 too (re2js): linear
// in the key's length whatever the pattern, with Go's syntax and semantics (inline flags such as `(?i)`, `(?s)`,
// `(?U)` understood natively; no backreferences or lookaround, which RE2 refuses). A JavaScript RegExp would
// backtrack: `^(a+)+$` against forty `a`s and a `!` blocks the event loop for hours.
import type { RE2JS } from 're2js';
import { instructionBound } from '../../re2-size.ts';

// Loaded with the first SOPS file that has a rule (as age-encryption is): most agents never need it.
let engine: typeof RE2JS | undefined;

/** Loads the RE2 engine; goRegExp needs it loaded. */
export async function loadGoRegExp(): Promise<void> {
  engine ??= (await import('re2js')).RE2JS;
}

/** Longer than any rule sops users write; a pattern is part of the commit, so it is bounded like the rest. */
export const MAX_PATTERN_LENGTH = 1024;
/** Compiled size (RE2 program instructions): matching costs at most this much per character of a key. */
export const MAX_PATTERN_SIZE = 2000;

export interface GoRegExp {
  /** Whether the expression matches anywhere in `text`, as Go's MatchString. */
  test(text: string): boolean;
  /** The compiled program's size: the most work matching does per character of input. */
  readonly size: number;
}

/** The RE2 expression `source` of the sops block's `field`; an Error naming the field when RE2 refuses it. */
export function goRegExp(field: string, source: string): GoRegExp {
  const shown = JSON.stringify(source.length > 80 ? `${source.slice(0, 80)}…` : source);
  if (source.length > MAX_PATTERN_LENGTH)
    throw new Error(`sops.${field}: the expression is longer than ${MAX_PATTERN_LENGTH} characters`);
  // Bounded before it is compiled: compiling is what is slow in re2js (146,002 instructions from a 1,022-character
  // pattern took 2 s of the event loop, per file and per sync), and its cost follows the program it makes.
  const bound = instructionBound(source);
  if (bound > MAX_PATTERN_SIZE)
    throw new Error(
      `sops.${field}: ${shown} is too large (it may compile to ${bound} RE2 instructions, at most ${MAX_PATTERN_SIZE})`,
    );
  if (!engine) throw new Error('the RE2 engine is not loaded (loadGoRegExp)');
  let re: RE2JS;
  try {
    re = engine.compile(source);
  } catch (error) {
    const why = error instanceof Error ? error.message.replace(/^error parsing regexp: /, '') : 'invalid';
    throw new Error(`sops.${field}: ${shown} is not an RE2 (Go) expression: ${why}`);
  }
  const size = programSize(re);
  if (size > MAX_PATTERN_SIZE)
    throw new Error(
      `sops.${field}: ${shown} is too large (${size} RE2 instructions, at most ${MAX_PATTERN_SIZE})`,
    );
  return { test: (text) => re.test(text), size };
}

/** The number of instructions of the compiled program (re2js keeps it on the RE2 object). */
function programSize(re: RE2JS): number {
  const prog = re.re2()?.prog as { numInst?: () => number; inst?: unknown[] } | undefined;
  const n = typeof prog?.numInst === 'function' ? prog.numInst() : prog?.inst?.length;
  // A future re2js that hides the program: count the pattern's length, which bounds it from below.
  return typeof n === 'number' && Number.isFinite(n) ? n : re.pattern().length;
}
