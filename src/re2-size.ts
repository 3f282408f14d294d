// How large an RE2 pattern may compile, read from its text before it is compiled. Both places that compile a
// pattern written by a commit use it: CEL's `matches` (src/stability/cel-regex.ts) and SOPS rules
// (src/sources/sops/go-regexp.ts). Compiling is the slow part of re2js, and it is proportional to the program it
// makes: a 1,022-character pattern of `a{1000}` repeated makes 146,002 instructions and took 2 s, so a program
// must be known to be small before the engine builds it, not measured after.
//
// The bound: every character of the pattern makes at most one instruction (a literal, a class, an operator, a
// capture's parenthesis; escapes and `(?:` make fewer than their characters, a class makes one), plus four for the program's
// frame (fail, the whole match's capture, match). A counted repetition copies what it repeats: `x{n}` n times,
// `x{n,m}` m times plus one instruction per optional copy, `x{n,}` n+1 times plus a loop; nested ones multiply.
// RE2 expands repetitions this way (Go's regexp/syntax simplify), so the bound is never below the program.

/** An upper bound of the instructions RE2 compiles `pattern` to (Number.MAX_SAFE_INTEGER when it is huge). */
export function instructionBound(pattern: string): number {
  // One frame per open group: the size so far and the size of the last atom (what a repetition would copy).
  const frames: Array<{ total: number; last: number }> = [{ total: 0, last: 0 }];
  const top = () => frames[frames.length - 1] as { total: number; last: number };
  const atom = (size: number) => {
    const frame = top();
    frame.total += size;
    frame.last = size;
  };
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i] as string;
    if (c === '\\') {
      // `\p{Greek}`, `\x{10FFFF}`: the braces belong to the escape.
      const braced = /^\\[pPx]\{[^}]*\}/.exec(pattern.slice(i, i + 64));
      const length = braced ? braced[0].length : 2;
      atom(1);
      i += length;
    } else if (c === '[') {
      // A class is one instruction (a rune range table), however many characters write it.
      atom(1);
      i = classEnd(pattern, i);
    } else if (c === '(') {
      frames.push({ total: 0, last: 0 });
      i += 1;
    } else if (c === ')' && frames.length > 1) {
      const group = frames.pop() as { total: number; last: number };
      atom(group.total + 2);
      i += 1;
    } else if (c === '{') {
      const counted = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i, i + 24));
      if (!counted) {
        atom(1);
        i += 1;
        continue;
      }
      const n = Number(counted[1]);
      const most = counted[2] === undefined ? n : counted[3] ? Number(counted[3]) : undefined;
      const frame = top();
      const copied =
        most === undefined
          ? (n + 1) * frame.last + 1
          : Math.max(n, most) * frame.last + Math.max(0, most - n);
      frame.total += copied - frame.last;
      frame.last = copied;
      if (frame.total > Number.MAX_SAFE_INTEGER) return Number.MAX_SAFE_INTEGER;
      i += counted[0].length;
    } else if (c === '|') {
      top().total += 1;
      top().last = 0;
      i += 1;
    } else if (c === '*' || c === '+' || c === '?') {
      // The operator's instruction belongs to what a following count would copy.
      top().total += 1;
      top().last += 1;
      i += 1;
    } else {
      atom(1);
      i += 1;
    }
  }
  // Groups left open (RE2 refuses them when compiling): counted as closed.
  let total = 0;
  while (frames.length > 0) total = (frames.pop() as { total: number }).total + total + 2;
  return Math.min(Number.MAX_SAFE_INTEGER, total + 2);
}

/** The index after the class that starts at `start` (`[]a]` and `[^]a]` hold a `]`; `[:alpha:]` nests). */
function classEnd(pattern: string, start: number): number {
  let i = start + 1;
  if (pattern[i] === '^') i += 1;
  if (pattern[i] === ']') i += 1;
  while (i < pattern.length) {
    const c = pattern[i];
    if (c === '\\') i += 2;
    else if (c === '[' && pattern[i + 1] === ':') {
      const close = pattern.indexOf(':]', i + 2);
      i = close < 0 ? i + 1 : close + 2;
    } else if (c === ']') return i + 1;
    else i += 1;
  }
  return pattern.length;
}
