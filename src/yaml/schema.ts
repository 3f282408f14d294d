// The tag sets mooring reads YAML with: Kubernetes' (go-yaml v2 through sigs.k8s.io/yaml, as kubectl, helm and the
// API server read manifests, values, charts and kubeconfigs) and SOPS's (go-yaml v3, for the MAC of a SOPS file).
// Each is the yaml package's map, seq and str, plus Go's scalar rules (go-scalars.ts): no Date (a timestamp stays
// the string kubectl sends), no Buffer (`!!binary` is decoded to the string go-yaml makes of it), no sexagesimal.
import {
  isAlias,
  isMap,
  isSeq,
  type Node,
  Scalar,
  type ScalarTag,
  type SchemaOptions,
  type Tags,
} from 'yaml';
import {
  goFloat,
  goInt,
  isGoFloat,
  ScalarTest,
  SPECIAL_FLOAT,
  V2_FALSE,
  V2_TRUE,
  V3_FALSE,
  V3_TRUE,
} from './go-scalars.ts';

/**
 * Whose reading: `kubernetes` for everything kubectl or helm would read, `sops` for a SOPS file's own tree, `core`
 * (YAML 1.2's core schema) for mooring's own configuration, whose keys include `on` (a boolean in YAML 1.1).
 */
export type YamlRules = 'kubernetes' | 'sops' | 'core';

const INT = 'tag:yaml.org,2002:int';
const FLOAT = 'tag:yaml.org,2002:float';

function boolTag(truths: readonly string[], falsehoods: readonly string[]): ScalarTag {
  const trues = new Set(truths);
  const all = new Set([...truths, ...falsehoods]);
  return {
    identify: (value) => typeof value === 'boolean',
    default: true,
    tag: 'tag:yaml.org,2002:bool',
    test: new ScalarTest((text) => all.has(text)),
    resolve: (text) => trues.has(text),
    stringify: ({ value }) => (value ? 'true' : 'false'),
  };
}

function numberText({ value }: { value: unknown }): string {
  const n = Number(value);
  if (Number.isNaN(n)) return '.nan';
  if (!Number.isFinite(n)) return n < 0 ? '-.inf' : '.inf';
  return JSON.stringify(n);
}

const intTag: ScalarTag = {
  identify: (value) => Number.isInteger(value),
  default: true,
  tag: INT,
  test: new ScalarTest((text) => goInt(text) !== undefined),
  resolve: (text) => goInt(text) ?? Number.NaN,
  stringify: numberText,
};

const specialFloatTag: ScalarTag = {
  identify: (value) => typeof value === 'number',
  default: true,
  tag: FLOAT,
  test: SPECIAL_FLOAT,
  resolve: (text) =>
    text.toLowerCase() === '.nan'
      ? Number.NaN
      : text.startsWith('-')
        ? Number.NEGATIVE_INFINITY
        : Number.POSITIVE_INFINITY,
  stringify: numberText,
};

const floatTag: ScalarTag = {
  identify: (value) => typeof value === 'number',
  default: true,
  tag: FLOAT,
  test: new ScalarTest(isGoFloat),
  resolve: goFloat,
  stringify: numberText,
};

const nullTag: ScalarTag = {
  identify: (value) => value === null || value === undefined,
  default: true,
  tag: 'tag:yaml.org,2002:null',
  test: /^(?:~|null|Null|NULL)?$/,
  resolve: () => new Scalar(null),
  stringify: () => 'null',
};

/** `!!binary`: go-yaml decodes the base64 (newlines allowed) into a Go string of those bytes. */
const binaryTag: ScalarTag = {
  identify: () => false,
  default: false,
  tag: 'tag:yaml.org,2002:binary',
  resolve: (text, onError) => {
    const base64 = text.replace(/[\r\n]/g, '');
    if (base64.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(base64)) {
      onError(`cannot decode !!binary: not base64`);
      return text;
    }
    return Buffer.from(base64, 'base64').toString('utf8');
  },
};

/** `!!timestamp`: kubectl keeps the text (go-yaml v2 gives a timestamp to an interface{} as its string). */
const timestampTag: ScalarTag = {
  identify: () => false,
  default: false,
  tag: 'tag:yaml.org,2002:timestamp',
  resolve: (text) => text,
};

/**
 * go-yaml v2's merge key: the merged mapping's keys are set when the `<<` is met, so a key written before it is
 * overwritten and one written after it wins; of a list of mappings, the earlier ones win. (YAML's merge spec, which
 * go-yaml v3 follows, keeps a key written before the `<<` instead.)
 */
const v2MergeTag: ScalarTag = {
  identify: (value) => typeof value === 'symbol' && value.description === '<<',
  default: 'key',
  tag: 'tag:yaml.org,2002:merge',
  test: /^<<$/,
  resolve: () => Object.assign(new Scalar(Symbol('<<')), { addToJSMap: addV2Merge }),
  stringify: () => '<<',
};

type MergeContext = Parameters<Node['toJSON']>[1];

function addV2Merge(ctx: MergeContext, map: unknown, value: unknown): void {
  const doc = ctx?.doc;
  const resolve = (node: unknown): unknown => (isAlias(node) && doc ? node.resolve(doc) : node);
  const source = resolve(value);
  const sources = isSeq(source) ? [...source.items].reverse() : [source];
  for (const item of sources) {
    const mapping = resolve(item);
    if (!isMap(mapping)) throw new Error('a merge key (<<) takes a mapping or a list of mappings');
    const entries = mapping.toJSON(null, ctx, Map) as Map<unknown, unknown>;
    for (const [key, v] of entries) {
      if (map instanceof Map) map.set(key, v);
      else
        Object.defineProperty(map, key === null ? '' : String(key), {
          value: v,
          writable: true,
          enumerable: true,
          configurable: true,
        });
    }
  }
}

/** The spec's merge key (keys already in the mapping are kept), as go-yaml v3 reads it. */
const specMergeTag = 'merge' as const;

const BOOL = { kubernetes: boolTag(V2_TRUE, V2_FALSE), sops: boolTag(V3_TRUE, V3_FALSE) };

/** The tags a plain scalar (not a key) is tried against, in the yaml package's order: the first whose test passes. */
const PLAIN_TAGS = [nullTag, BOOL.kubernetes, intTag, specialFloatTag, floatTag];

/**
 * A plain scalar's value under Kubernetes' rules, from the same tags the yaml package is given (fast-read.ts reads
 * with it): the first tag whose test takes the text resolves it, a string otherwise.
 */
export function plainScalar(text: string): unknown {
  return surelyString(text) ? text : plainScalarSlowly(text);
}

// Most plain texts of manifests (names, labels, kinds, image references): a letter, then letters, digits and `-_./`.
// None is a number, a date or null in any tag set here or in YAML 1.1; what such a text may still be is a boolean
// word of YAML 1.1 or null (`yes`, `Off`, `NULL`), or a YAML 1.1 float that is all exponent (`e1`, `E-5`): those take
// the tags' tests (texts beginning with `e` all do). test/unit/yaml/schema-fast.test.ts holds both paths to one answer.
const SIMPLE = /^[A-DF-Za-df-z][A-Za-z0-9_./-]*$/;
const WORDS = new Set(['y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null']);

/** A text known to read as a string (and be written plain as one), without trying every tag's test on it. */
export function surelyString(text: string): boolean {
  return SIMPLE.test(text) && (text.length > 5 || !WORDS.has(text.toLowerCase()));
}

/** plainScalar by every tag's test. */
export function plainScalarSlowly(text: string): unknown {
  for (const tag of PLAIN_TAGS) {
    if (!tag.test?.test(text)) continue;
    const value = tag.resolve(text, () => undefined, {});
    return value instanceof Scalar ? value.value : value;
  }
  return text;
}

const built = new Map<YamlRules, Tags>();

function tagsOf(rules: Exclude<YamlRules, 'core'>, collections: Tags): Tags {
  const done = built.get(rules);
  if (done) return done;
  const kept = collections.filter(
    (t) =>
      typeof t === 'object' &&
      ['tag:yaml.org,2002:map', 'tag:yaml.org,2002:seq', 'tag:yaml.org,2002:str'].includes(t.tag),
  );
  const bool = BOOL[rules];
  const merge = rules === 'kubernetes' ? v2MergeTag : specMergeTag;
  const tags: Tags = [
    ...kept,
    nullTag,
    bool,
    intTag,
    specialFloatTag,
    floatTag,
    merge,
    binaryTag,
    timestampTag,
  ];
  built.set(rules, tags);
  return tags;
}

/** The yaml package's schema options for `rules`; `merge: false` as the merge tag is in the list. */
export function schemaOptions(rules: YamlRules): SchemaOptions {
  if (rules === 'core') return { schema: 'core', merge: false };
  return { schema: 'core', merge: false, customTags: (tags) => tagsOf(rules, tags) };
}

/** What a string written by mooring must not be read as by any YAML 1.1 reader (sexagesimal, timestamps). */
export const WRITE_COMPAT = 'yaml-1.1';
