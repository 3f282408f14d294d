// The values health rules evaluate over, made so that no step of the evaluator costs more than the budget charges
// for it. The library's own map answers a lookup by an int key it does not hold by walking all its keys (for uint
// keys of the same value): `status.data[1]` repeated over an object with 200,000 keys took 1.4 s with no function
// call to charge. KeyedMap answers every lookup from a hash (a second one for uint keys), and serves both the
// objects' maps and the map literals of an expression (which the compiler wraps in `mooring.map`). A list a
// macro builds (`map`, `filter`) grows in place: the library's concatenation nests one view per element, which
// makes reading the result quadratic.
//
// The weight of a value bounds its text form (what `format('%s')` writes) and the work of walking it (equality,
// `in`): characters of strings, 24 per scalar, 2 per list element and 4 per map entry for separators. Memoized
// per list and map, so a value shared many times over (a list of the same list, doubled in each of several
// macros) is weighed once, and weighs what walking it would cost.
import type * as CelModule from '@bufbuild/cel';

type CelValue = CelModule.CelValue;
type MapKey = bigint | string | boolean | CelModule.CelUint;

const MAP_BRAND = Symbol.for('@bufbuild/cel/map');

/** A CEL map with the library's key semantics (ints, uints and integral doubles meet), without key walks. */
export class KeyedMap implements ReadonlyMap<MapKey, CelValue> {
  // The library recognizes maps by this registered symbol (isCelMap); its unit test checks that it still does.
  readonly [MAP_BRAND] = {};
  private readonly byUint = new Map<bigint, CelValue>();
  private readonly entriesOf: Map<MapKey, CelValue>;

  constructor(entriesOf: Map<MapKey, CelValue>, isUint: (key: unknown) => key is CelModule.CelUint) {
    this.entriesOf = entriesOf;
    for (const [key, value] of entriesOf)
      if (isUint(key) && !this.byUint.has(key.value)) this.byUint.set(key.value, value);
  }

  get size(): number {
    return this.entriesOf.size;
  }

  get(key: MapKey | number): CelValue | undefined {
    let k: unknown = key;
    if (typeof k === 'object' && k !== null && 'value' in k && typeof k.value === 'bigint') k = k.value;
    if (typeof k === 'number') {
      if (!Number.isInteger(k)) return undefined;
      k = BigInt(k);
    }
    const found = this.entriesOf.get(k as MapKey);
    if (found !== undefined) return found;
    return typeof k === 'bigint' ? this.byUint.get(k) : undefined;
  }

  has(key: MapKey | number): boolean {
    return this.get(key) !== undefined;
  }

  forEach(callback: (value: CelValue, key: MapKey, map: ReadonlyMap<MapKey, CelValue>) => void): void {
    this.entriesOf.forEach((value, key) => {
      callback(value, key, this);
    });
  }

  entries(): MapIterator<[MapKey, CelValue]> {
    return this.entriesOf.entries();
  }

  keys(): MapIterator<MapKey> {
    return this.entriesOf.keys();
  }

  values(): MapIterator<CelValue> {
    return this.entriesOf.values();
  }

  [Symbol.iterator](): MapIterator<[MapKey, CelValue]> {
    return this.entriesOf.entries();
  }
}

type Cel = Pick<typeof CelModule, 'isCelList' | 'isCelMap' | 'isCelUint' | 'celList'>;

const weights = new WeakMap<object, number>();
/** The array behind each list made here, read to copy it natively (the library's lists copy by generator). */
const arrays = new WeakMap<object, readonly CelValue[]>();
/** The array behind each list a macro's accumulator holds, which grows in place (see append). */
const growing = new WeakMap<object, CelValue[]>();

/** A list over `items`, which nothing may change afterwards. */
export function listOf(cel: Cel, items: CelValue[]): CelModule.CelList {
  const list = cel.celList(items);
  arrays.set(list, items);
  return list;
}

/** The elements of a list, as an array not to be changed. */
export function elementsOf(list: CelModule.CelList): readonly CelValue[] {
  return arrays.get(list) ?? [...list];
}

/** Per scalar (an int64 is at most 20 digits, a double's shortest form at most 24 characters). */
const SCALAR_WEIGHT = 24;

export function weightOf(cel: Cel, value: CelValue): number {
  if (typeof value === 'string') return value.length;
  if (value instanceof Uint8Array) return value.length;
  if (typeof value !== 'object' || value === null) return SCALAR_WEIGHT;
  const known = weights.get(value);
  if (known !== undefined) return known;
  let weight = SCALAR_WEIGHT;
  if (cel.isCelList(value)) {
    weight = 2;
    for (const element of value) weight += weightOf(cel, element) + 2;
  } else if (cel.isCelMap(value)) {
    weight = 2;
    for (const [key, element] of value) weight += weightOf(cel, key as CelValue) + weightOf(cel, element) + 4;
  } else if (!cel.isCelUint(value)) weight = 64;
  weights.set(value, weight);
  return weight;
}

/** `list + [element]` for a macro's accumulator, which no expression can name: it grows in place. */
export function append(
  cel: Cel,
  list: CelModule.CelList,
  element: CelValue,
): { list: CelModule.CelList; copied: number } {
  const backing = growing.get(list);
  const weight = weights.get(list);
  if (backing && backing.length === list.size) {
    backing.push(element);
    if (weight !== undefined) weights.set(list, weight + weightOf(cel, element) + 2);
    return { list, copied: 0 };
  }
  const items = [...elementsOf(list), element];
  const grown = listOf(cel, items);
  growing.set(grown, items);
  return { list: grown, copied: list.size };
}

/** A map literal's entries, or an object's, as a KeyedMap. */
export function keyedMap(cel: Cel, source: ReadonlyMap<MapKey, CelValue>): KeyedMap {
  return new KeyedMap(new Map(source), cel.isCelUint);
}

export interface InputCounts {
  values: number;
  chars: number;
}

/**
 * A JSON value of an object as a CEL value, as Kubernetes decodes JSON for cel-go (whole numbers are ints,
 * other numbers doubles, objects maps), weighed as it is built. `check` is called per value (and per key) with its depth and characters.
 */
export function inputValue(
  cel: Cel,
  value: unknown,
  depth: number,
  check: (depth: number, chars: number, isValue: boolean) => void,
): CelValue {
  if (typeof value === 'string') {
    check(depth, value.length, true);
    return value;
  }
  check(depth, 0, true);
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (typeof value === 'boolean' || value === null || value === undefined) return value ?? null;
  if (Array.isArray(value)) {
    let weight = 2;
    const items = value.map((v) => {
      const converted = inputValue(cel, v, depth + 1, check);
      weight += weightOf(cel, converted) + 2;
      return converted;
    });
    const list = listOf(cel, items);
    weights.set(list, weight);
    return list;
  }
  if (typeof value !== 'object') return null;
  let weight = 2;
  const entries = new Map<MapKey, CelValue>();
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue;
    check(depth, k.length, false);
    const converted = inputValue(cel, v, depth + 1, check);
    weight += k.length + weightOf(cel, converted) + 4;
    entries.set(k, converted);
  }
  const map = new KeyedMap(entries, cel.isCelUint);
  weights.set(map, weight);
  return map as unknown as CelValue;
}
