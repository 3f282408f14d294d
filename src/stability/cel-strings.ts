// Sizes of the values the string extension's growing functions make, computed from their inputs before anything is
// made, and `replace` itself in linear time. The library's `replace` rebuilds the whole string once per
// occurrence (quadratic: 10,000 occurrences in a 100,000-character string is a billion characters copied); this
// one gives the same result, occurrence for occurrence, including its handling of an empty search string (the
// replacement inserted `n` times at the start), which a property test checks against the library's.

/** How many replacements `text.replace(search, replacement[, n])` makes: `n` defaults to the text's length. */
function replacementCount(text: string, num: bigint | undefined): number {
  const count = num === undefined ? text.length : Number(num);
  return count > 0 ? count : 0;
}

export interface ReplacePlan {
  /** The result's length. */
  length: number;
  /** Builds the result (call only once its length is admitted). */
  build: () => string;
}

/** The result of CEL's `text.replace(search, replacement[, n])`, measured before it is built. */
export function planReplace(text: string, search: string, replacement: string, num?: bigint): ReplacePlan {
  const count = replacementCount(text, num);
  if (search === '') {
    // Each replacement is searched for where the previous one ended: the empty string is found there again.
    if (count === 0 || replacement === '') return { length: text.length, build: () => text };
    return {
      length: text.length + count * replacement.length,
      build: () => replacement.repeat(count) + text,
    };
  }
  if (count * search.length >= text.length) {
    // Every occurrence: splitting finds them as replace does, left to right, each after the one before.
    const pieces = text.split(search);
    return {
      length: text.length + (pieces.length - 1) * (replacement.length - search.length),
      build: () => pieces.join(replacement),
    };
  }
  // The first `count` (fewer than the text's length): the text up to the end of the last one is split.
  let found = 0;
  let end = 0;
  while (found < count) {
    const at = text.indexOf(search, end);
    if (at < 0) break;
    found += 1;
    end = at + search.length;
  }
  return {
    length: text.length + found * (replacement.length - search.length),
    build: () => text.slice(0, end).split(search).join(replacement) + text.slice(end),
  };
}

/** The characters of `separator` between items and of the items: what `join` makes. */
export function joinedLength(items: Iterable<unknown>, separator: string): number {
  let length = 0;
  let n = 0;
  for (const item of items) {
    if (typeof item === 'string') length += item.length;
    n += 1;
  }
  return length + Math.max(0, n - 1) * separator.length;
}

/** The most precision a clause may ask for before the figure is only counted (the engine refuses past 100). */
const PRECISION_CAP = 1_000_000;

/**
 * An upper bound of what `format.format(args)` writes, reading its clauses as the library does: literal text,
 * `%s` of a value at most its weight, `%x` of a string six hex digits per UTF-16 unit, `%b` 64 digits, `%e` and
 * `%f` the precision plus 330 characters (the digits of the largest double).
 */
export function formatBound(
  format: string,
  args: { get(index: number): unknown },
  weigh: (value: unknown) => number,
): number {
  let bound = 0;
  let i = 0;
  let j = 0;
  while (i < format.length) {
    if (format[i] !== '%') {
      bound += 1;
      i += 1;
      continue;
    }
    if (i + 1 >= format.length) return bound;
    let clause = format[i + 1];
    i += 2;
    if (clause === '%') {
      bound += 1;
      continue;
    }
    let precision = 6;
    if (clause === '.') {
      precision = 0;
      while (i < format.length && (format[i] as string) >= '0' && (format[i] as string) <= '9') {
        precision = Math.min(PRECISION_CAP, precision * 10 + Number(format[i]));
        i += 1;
      }
      if (i >= format.length) return bound;
      clause = format[i];
      i += 1;
    }
    const arg = args.get(j++);
    if (arg === undefined) return bound;
    const weight = weigh(arg);
    if (clause === 'x' || clause === 'X') bound += 6 * weight + 16;
    else if (clause === 'b') bound += 64 + weight;
    else if (clause === 'e' || clause === 'f') bound += precision + 330 + weight;
    else bound += weight;
  }
  return bound;
}
