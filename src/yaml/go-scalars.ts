// How the Go YAML libraries of Kubernetes resolve a plain scalar, as data and small functions: kubectl, helm and
// the API server read YAML with sigs.k8s.io/yaml (a fork of go-yaml v2), SOPS with go-yaml v3. Both first look the
// whole text up in a table (booleans, nulls, `.inf`, `<<`), then, for a text starting with a digit or a sign, drop
// every `_` and try Go's strconv.ParseInt(text, 0, 64) (so `0755` is octal 493, `0x1F`, `0o17` and `0b101` are
// numbers), then ParseUint, then a decimal float. Nothing else is a number: `1:20` (YAML 1.1's sexagesimal) and
// timestamps stay strings, as they reach kubectl's JSON.

/** go-yaml v2's booleans (YAML 1.1's, with `y` and `n`): what kubectl and helm read. */
export const V2_TRUE = ['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'];
export const V2_FALSE = ['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'];

/** go-yaml v3's booleans (what SOPS reads): YAML 1.2's three spellings. */
export const V3_TRUE = ['true', 'True', 'TRUE'];
export const V3_FALSE = ['false', 'False', 'FALSE'];

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** What strconv.ParseInt with base 0 takes, once the `_` are gone. */
const GO_INT = /^([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/;
/** go-yaml's yamlStyleFloat, tried on the text without `_`. */
const GO_FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
/** A text starting with `.` is given to strconv.ParseFloat as it is: `_` only between digits, as in Go's literals. */
const GO_DOT_FLOAT = /^\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?$/;

/** The integer Go reads from `text`, or undefined when it is not one (then maybe a float, or a string). */
export function goInt(text: string): number | undefined {
  const value = goBigInt(text);
  return value === undefined ? undefined : Number(value);
}

/** goInt, exactly: what strconv.ParseInt (or, past int64, ParseUint) makes of `text`. */
function goBigInt(text: string): bigint | undefined {
  if (!/^[-+0-9]/.test(text)) return undefined;
  const match = GO_INT.exec(text.replaceAll('_', ''));
  if (!match) return undefined;
  const sign = match[1] ?? '';
  const body = match[2] ?? '0';
  // A leading 0 is octal for Go; BigInt wants the 0o prefix for that.
  const prefixed = /^0[0-7]+$/.test(body) ? `0o${body.slice(1)}` : body;
  const prefix = /^0[xXoObB]/.test(prefixed) ? prefixed.slice(0, 2) : '';
  const digits = prefixed.slice(prefix.length).replace(/^0+(?=.)/, '');
  // Past 64 digits no base fits 64 bits; BigInt is not asked to read a long text (its time grows faster).
  if (digits.length > 64) return undefined;
  const magnitude = BigInt(`${prefix}${digits}`);
  const value = sign === '-' ? -magnitude : magnitude;
  if (value < INT64_MIN) return undefined;
  // Past int64 only ParseUint takes it, and ParseUint takes no sign.
  if (value > INT64_MAX && (sign !== '' || value > UINT64_MAX)) return undefined;
  return value;
}

/**
 * The JSON key sigs.k8s.io/yaml makes of a mapping key that is not a string: `value` as resolved from `source` (the
 * key's text, for an integer's exact digits). An integer is written in decimal, a boolean as `true`/`false`, a float
 * as Go's FormatFloat(f, 'g', -1, 32) (`1e6` is `1e+06`, `3.14159265` is `3.1415927`, `.inf` is `.inf`). Undefined
 * for a key Go refuses ("unsupported map key"): null, and an integer past int64 (go-yaml makes it a uint64).
 */
export function goKeyText(source: string, value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value !== 'number') return undefined;
  const exact = goBigInt(source);
  if (exact !== undefined) return exact > INT64_MAX ? undefined : exact.toString();
  return goFloat32Text(value);
}

/** strconv.FormatFloat(f, 'g', -1, 32), with go-yaml's spellings of the infinities and NaN. */
export function goFloat32Text(n: number): string {
  const f = Math.fround(n);
  if (Number.isNaN(f)) return '.nan';
  if (f === Number.POSITIVE_INFINITY) return '.inf';
  if (f === Number.NEGATIVE_INFINITY) return '-.inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const magnitude = Math.abs(f);
  // The fewest digits that read back as the same float32: Go's shortest form. toExponential rounds a tie up, Go to
  // the even digit: 1155257.25 is 1.1552572e+06 in Go.
  let shortest = magnitude.toExponential(8);
  for (let digits = 1; digits < 9; digits++) {
    const candidate = magnitude.toExponential(digits - 1);
    if (Math.fround(Number(candidate)) === magnitude) {
      shortest = evenOnTie(magnitude, candidate, digits);
      break;
    }
  }
  const [mantissa = '', exponent = '0'] = shortest.split('e');
  const d = mantissa.replace('.', '').replace(/0+$/, '') || '0';
  const exp = Number(exponent);
  const sign = f < 0 ? '-' : '';
  // %e below 1e-4 and from 1e6 on (the shortest form decides with a precision of 6), %f between.
  if (exp < -4 || exp >= 6) {
    const tail = d.length > 1 ? `.${d.slice(1)}` : '';
    return `${sign}${d[0]}${tail}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  const point = exp + 1;
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${d}`;
  if (point >= d.length) return `${sign}${d}${'0'.repeat(point - d.length)}`;
  return `${sign}${d.slice(0, point)}.${d.slice(point)}`;
}

/** `rounded` (`magnitude` to `digits` digits, a tie rounded up), or the digits below it when the tie's lower digit is even. */
function evenOnTie(magnitude: number, rounded: string, digits: number): string {
  const [exactMantissa = '', exponent = '0'] = magnitude.toExponential(100).split('e');
  const exact = exactMantissa.replace('.', '');
  if (!/^50*$/.test(exact.slice(digits)) || Number(exact[digits - 1]) % 2 !== 0) return rounded;
  const lower = `${exact[0]}${digits > 1 ? `.${exact.slice(1, digits)}` : ''}e${exponent}`;
  return Math.fround(Number(lower)) === magnitude ? lower : rounded;
}

/** Whether Go reads `text` as a float (an integer text is one too: the int rule is tried first). */
export function isGoFloat(text: string): boolean {
  if (text.startsWith('.'))
    return GO_DOT_FLOAT.test(text) && Number.isFinite(Number(text.replaceAll('_', '')));
  if (!/^[-+0-9]/.test(text)) return false;
  const plain = text.replaceAll('_', '');
  // ParseFloat refuses what is out of range: go-yaml keeps such a text as a string.
  return GO_FLOAT.test(plain) && Number.isFinite(Number(plain));
}

/** The float Go reads from a text isGoFloat accepted. */
export function goFloat(text: string): number {
  return Number(text.replaceAll('_', ''));
}

/** `.inf`, `-.inf`, `.nan` and their spellings, from go-yaml's table. */
export const SPECIAL_FLOAT = /^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;

/**
 * A RegExp whose `test` is a function: the yaml package finds a scalar's tag (and decides, when writing, whether a
 * string must be quoted) by calling `tag.test.test(text)`, and Go's rules are not a regular expression.
 */
export class ScalarTest extends RegExp {
  readonly #accepts: (text: string) => boolean;

  constructor(accepts: (text: string) => boolean) {
    super('(?:)');
    this.#accepts = accepts;
  }

  override test(text: string): boolean {
    return this.#accepts(text);
  }
}
