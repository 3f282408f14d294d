// Folding and appending arrays whose length content chooses (objects in a commit, values in a file, tags a
// registry lists, rows of a table). Spreading such an array into a call (`Math.max(...xs)`, `out.push(...xs)`)
// passes every element as an argument on the stack, and V8 throws a RangeError past about a hundred thousand:
// one file of many values would then crash what renders it. These loops take any length.

/**
 * Code-unit order of two strings (Go's `<` on ASCII, and the same on every machine): what ordering of names, kinds and
 * timestamps uses instead of `localeCompare`, whose order follows the process's locale (LANG) and loads ICU's
 * collation data (about 2 MiB of resident memory) for it.
 */
export function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The first index in `from..to` at which `before` is false, for a `before` that holds on a prefix of the range and
 * not after it (a lower bound, by binary search): the one search of sorted lists, pack indexes and rings.
 */
export function lowerBound(from: number, to: number, before: (index: number) => boolean): number {
  let low = from;
  let high = to;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (before(mid)) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The largest of `values`, or `floor` when there is none larger (Math.max(floor, ...values) without a spread). */
export function maxOf(values: Iterable<number>, floor = Number.NEGATIVE_INFINITY): number {
  let max = floor;
  for (const value of values) if (value > max) max = value;
  return max;
}

/** Appends `items` to `target` in order (target.push(...items) without a spread); returns `target`. */
export function append<T>(target: T[], items: Iterable<T>): T[] {
  for (const item of items) target.push(item);
  return target;
}

/** The length of the longest run of `char` (one UTF-16 unit) in `text`; 0 when it does not occur. */
export function longestRun(text: string, char: string): number {
  const code = char.charCodeAt(0);
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === code) {
      run++;
      if (run > longest) longest = run;
    } else run = 0;
  }
  return longest;
}
