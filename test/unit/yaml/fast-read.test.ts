// The direct reader (src/yaml/fast-read.ts) against the yaml package: every text gives the same documents, values,
// places, errors and limit refusals whichever reads it (readDocuments, which takes the direct reader first, against
// readComposed, the yaml package alone), and the direct reader does take the manifests tools write, so that these
// comparisons are not of the yaml package with itself.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { checkYaml } from '../../../src/yaml/count.ts';
import { type ReadOptions, readComposed, readDocuments } from '../../../src/yaml/documents.ts';
import { fastDocument } from '../../../src/yaml/fast-read.ts';
import { DEFAULT_YAML_LIMITS } from '../../../src/yaml/limits.ts';
import { parseYaml, parseYamlDocument, toValue, type YamlOptions } from '../../../src/yaml/parse.ts';
import { stringifyYaml } from '../../../src/yaml/write.ts';

const OPTIONS: ReadOptions = { file: 'f.yaml', maxDocuments: 1000 };

function outcome(read: () => Iterable<unknown>): unknown {
  try {
    return { documents: [...read()] };
  } catch (error) {
    return { thrown: error instanceof Error ? { name: error.name, message: error.message } : String(error) };
  }
}

function bothWays(text: string, options: ReadOptions = OPTIONS): { direct: unknown; composed: unknown } {
  return {
    direct: outcome(() => readDocuments(text, options)),
    composed: outcome(() => readComposed(text, options)),
  };
}

function expectSame(text: string, options: ReadOptions = OPTIONS): void {
  const { direct, composed } = bothWays(text, options);
  expect(direct, JSON.stringify(text)).toStrictEqual(composed);
}

/** Whether the direct reader takes `text` as one document (rather than leaving it to the yaml package). */
function taken(text: string): boolean {
  return fastDocument(text, 0, text.length, 1, DEFAULT_YAML_LIMITS.maxDepth) !== undefined;
}

/** A small seeded generator: the same inputs on every run. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s / 0x7fffffff;
  };
}

const WORDS = [
  'web',
  'yes',
  'no',
  'On',
  '0755',
  '0x1F',
  '1e3',
  '12:30',
  '~',
  'null',
  '',
  ' lead',
  'trail ',
  'a: b',
  'x #y',
  '#c',
  '-',
  '- x',
  '[x]',
  '{y}',
  '"q"',
  "it's",
  'two\nlines',
  'two\nlines\n',
  'tab\there',
  '\n\nlead',
  'end\n\n',
  '  indented\nnot',
  'a long sentence of words that a writer may fold at some width, as descriptions in CRDs often are',
  'é ü',
  '1_000',
  '.inf',
  '-.5',
  '+1',
  'True',
  'y',
  '@at',
  '%pct',
  '!bang',
  '&amp',
  '*star',
  '|pipe',
  '>gt',
  '?q',
  ':c',
  'https://example.com:8443/x',
];

function generated(next: () => number, depth = 0): unknown {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const r = next();
  if (depth > 4 || r < 0.45) {
    const s = next();
    if (s < 0.6) return pick(WORDS) + (next() < 0.3 ? pick(WORDS) : '');
    if (s < 0.75) return Math.floor(next() * 1e6) - 5000;
    if (s < 0.85) return next() < 0.5;
    if (s < 0.9) return null;
    return next() * 100;
  }
  if (r < 0.7) {
    const map: Record<string, unknown> = {};
    const n = Math.floor(next() * 5);
    for (let i = 0; i < n; i++) map[`${pick(WORDS)}${i}`] = generated(next, depth + 1);
    return map;
  }
  return Array.from({ length: Math.floor(next() * 4) }, () => generated(next, depth + 1));
}

function fixtureTexts(): string[] {
  const root = join(import.meta.dirname, '../../fixtures');
  const texts: string[] = [];
  const visit = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) visit(path);
      else if (/\.ya?ml$/.test(name)) texts.push(readFileSync(path, 'utf8'));
    }
  };
  visit(root);
  return texts;
}

describe('the direct YAML reader', () => {
  it('reads the edge cases of documents, scalars and collections as the yaml package does', () => {
    const cases = [
      '',
      '# only a comment\n',
      '---',
      '---\n',
      'a: 1\n---',
      '---\n# c\n---\na: 1\n',
      '\n\n---\na: 1',
      'a: 1\n\n# c\n---\n\n',
      '---\n---\n',
      'a: |\n  x\n---\nb: 1',
      'a: |\n  x\n\n  y\n\n\nb: >\n  p\n  q\n\n  r\n   s\n  t\nc: 1\n',
      'a: |-\n\n  x\n',
      'a: |\n   \n  x\n',
      'a: |\nb: 1\n',
      'a: >-\n  one\n  two\n\n\n  three\n',
      "a:\n  - b\n  -\n  - c: 1\n    d: 2\nb: \"q\\tx\\u00e9\\x41\\U0001F600\"\nc: 'it''s'\n",
      'a: plain\n  more\n\n  lines\nb: 1',
      'x: [a, "b", {c: 1, d: [e]}]\ny: {}\nz: []\n',
      'k: 0400\n0x10: y\nyes: no\n~: n\nf: 1.5e3\ng: .inf\nh: 1_000\ni: 12:30\nj: -0\n',
      '- a\n- b\n',
      '  a: 1\n  b: 2\n',
      'a:\n- 1\n- 2\nb: 3\n',
      '- - a\n  - b\n- c\n',
      'a: 1 # comment\nb: "x" # c\n# between\nc:   # c\n  d: e\n',
      'url: http://x:80/y\ntime: "12:30"\nempty:\nnul: ~\n',
      'a: &x 1\nb: *x\n',
      'a: !!str 1\n',
      'a: 1\na: 2\n',
      '? a\n: b\n',
      '<<: {a: 1}\nb: 2\n',
      '__proto__: {a: 1}\n',
      'a: |+\n  x\n\nb: 1\n',
      'a: |2\n    x\n',
      'a: "multi\n  line"\n',
      'a: [1,\n  2]\n',
      'a:\tb\n',
      'a: b: c\n',
      '%YAML 1.1\n---\na: 1\n',
      'a: 1\n...\n---\nb: 2\n',
      '--- a: 1\n',
      'a: 1\r\nb: 2\r\n',
      '{"apiVersion": "v1", "kind": "List", "items": []}\n',
      'kind: List\nitems:\n- kind: A\n- kind: B\n',
      'a:\n  b: 1\n c: 2\n',
      '- a\nb: 1\n',
      'a: "unclosed\n---\nb: 1\n',
    ];
    for (const text of cases) expectSame(text);
  });

  it('takes the manifests a writer makes, with the same values and places', () => {
    const next = random(7);
    let all = 0;
    let direct = 0;
    for (let i = 0; i < 1500; i++) {
      const docs = Array.from({ length: 1 + Math.floor(next() * 3) }, () => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `c${i}` },
        data: generated(next),
      }));
      const texts = docs.map((doc) => stringifyYaml(doc));
      expectSame(texts.join('---\n'));
      for (const text of texts) {
        all++;
        if (taken(text)) direct++;
      }
    }
    // Most are read directly: the comparison above is of two readers, not of the yaml package with itself.
    expect(direct / all).toBeGreaterThan(0.8);
  }, 60_000);

  it('takes quoted scalars over several lines and plain ones continued by an indicator, as generators write them', () => {
    // The shapes controller-gen's CRDs are full of (go-yaml wraps long strings), and their edges.
    const texts = [
      "description: 'Container name: required for volumes,\n  optional for env vars'\ntype: string\n",
      'description: "allocatedResourceStatuses stores status\n  of resource.\\nKey names\n  follow \\"label\\" syntax."\n',
      'description: "joined \\\n  here, \\\\\n  and \\t tab"\n',
      "a: 'foo  \n   bar  '\nb: 'x\n\n  y\n  \n\n  z'\nc: '\n  lead'\nd: 'trail\n  '\ne: 'it''s\n  ''q'''\n",
      '- \'item\n  two\' # c\n- "x\n   y"\n',
      "a: 'foo\n  # not a comment\n  bar'\n",
      'selector:\n  description: selects the Kubernetes\n    `Pod` objects, [all] of them,\n    {or} "none" \'at\' |all| >x &y *z !w %v @u\n',
      'a: b\n  , c\n',
      // A wrapped description whose line starts with a flag (Argo CD's Application CRD): text, not an entry.
      'dryRun:\n  description: DryRun performs a `kubectl apply\n    --dry-run` without\n    -o yaml, ?q and :c\n    -x\n  type: boolean\n',
    ];
    for (const text of texts) {
      expect(taken(text), text).toBe(true);
      expectSame(text);
    }
    // Still the yaml package's: what it reads otherwise or calls an error.
    for (const text of [
      "a: 'foo\nbar'\n",
      "a: 'foo\n  bar' x\n",
      "a: 'foo\n  bar'\n  c\n",
      "a: 'never closed\n  b: 1\n",
      'a: "bad \\q escape\n  x"\n',
      'a: foo\n  #bar\nb: 1\n',
      'a: foo\n  - bar\n',
      'a: foo\n  -\n',
      'a: foo\n  ? bar\n',
      'a: foo\n  : bar\n',
      'a: foo\n  :\n',
      "a: 'tab\n\tx'\n",
    ]) {
      expect(taken(text), text).toBe(false);
      expectSame(text);
    }
  });

  it('reads generated quoted scalars over several lines as the yaml package does', () => {
    const next = random(11);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
    const pieces = [
      'word',
      ' ',
      '  ',
      "''",
      '"',
      "'",
      '\\',
      '\\\\',
      '\\n',
      '\\t',
      '\\"',
      '\\ ',
      '\\x41',
      '\\q',
      '#',
      ': ',
      '- ',
      '`',
      '\t',
    ];
    let taken = 0;
    for (let i = 0; i < 3000; i++) {
      const q = next() < 0.5 ? "'" : '"';
      const indent = ' '.repeat(1 + Math.floor(next() * 4));
      const lines: string[] = [];
      for (let l = 0, n = 2 + Math.floor(next() * 3); l < n; l++) {
        let line = '';
        for (let p = 0, m = Math.floor(next() * 4); p < m; p++) line += pick(pieces);
        lines.push(next() < 0.15 ? pick(['', ' ', '   ']) : `${l === 0 ? '' : pick(['', ' '])}${line}`);
      }
      const body = lines.map((line, l) => (l === 0 || line.trim() === '' ? line : indent + line)).join('\n');
      const text = pick([
        `a: ${q}${body}${q}\nb: 1\n`,
        `- ${q}${body}${q}\n- x\n`,
        `a:\n  k: ${q}${body}${q} # c\n`,
      ]);
      const { direct, composed } = bothWays(text);
      if (!isDeepStrictEqual(direct, composed)) expect(direct, JSON.stringify(text)).toStrictEqual(composed);
      if (fastDocument(text, 0, text.length, 1, DEFAULT_YAML_LIMITS.maxDepth) !== undefined) taken++;
    }
    // Most are read directly, so that this compares the direct reader with the yaml package.
    expect(taken).toBeGreaterThan(1000);
  }, 60_000);

  it('counts the nodes count.ts counts, and nests no deeper than its bound allows', () => {
    const next = random(11);
    let compared = 0;
    for (let i = 0; i < 1000; i++) {
      const text = stringifyYaml({ kind: 'X', spec: generated(next) });
      const read = fastDocument(text, 0, text.length, 1, DEFAULT_YAML_LIMITS.maxDepth);
      if (!read) continue;
      const counted = checkYaml(text, 'f', DEFAULT_YAML_LIMITS);
      expect(read.nodes, text).toBe(counted.nodes);
      expect(counted.depth, text).toBeLessThanOrEqual(2 * read.depth + 2);
      compared++;
    }
    expect(compared).toBeGreaterThan(800);
  }, 60_000);

  it('gives the same documents, errors and places for mutated manifests', () => {
    const corpus = fixtureTexts().filter((text) => text.length < 20_000);
    expect(corpus.length).toBeGreaterThan(50);
    const next = random(3);
    const pieces = [' ', ':', ': ', '- ', '#', ' #', '"', "'", '|', '|-', '>', '\n', '\n  ', '\t', '[', ']'];
    pieces.push('{', '}', ',', '---\n', '\\', '&a ', '*a', '!!str ', '? ', '0755', 'yes', '~', '\n- ', '|+');
    for (let i = 0; i < 1500; i++) {
      let text = corpus[Math.floor(next() * corpus.length)] as string;
      for (let j = 0, n = 1 + Math.floor(next() * 3); j < n; j++) {
        const at = Math.floor(next() * text.length);
        text =
          next() < 0.3
            ? text.slice(0, at) + text.slice(at + 1 + Math.floor(next() * 3))
            : text.slice(0, at) + pieces[Math.floor(next() * pieces.length)] + text.slice(at);
      }
      const { direct, composed } = bothWays(text);
      if (!isDeepStrictEqual(direct, composed)) expect(direct, JSON.stringify(text)).toStrictEqual(composed);
    }
  }, 60_000);

  it('refuses a text past a limit as the yaml package path does, at the same place', () => {
    const manifest = (i: number) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c${i}\ndata:\n  a: "1"\n  b: [x, y]\n`;
    const many = Array.from({ length: 40 }, (_, i) => manifest(i)).join('---\n');
    const deep = `a:\n${Array.from({ length: 30 }, (_, i) => `${'  '.repeat(i + 1)}k${i}:`).join('\n')} 1\n`;
    const limits = (over: Partial<typeof DEFAULT_YAML_LIMITS>) => ({ ...DEFAULT_YAML_LIMITS, ...over });
    const cases: [string, ReadOptions][] = [
      [many, { ...OPTIONS, limits: limits({ maxNodes: 10 }) }],
      [many, { ...OPTIONS, limits: limits({ maxNodes: 100, maxFileNodes: 300 }) }],
      [deep, { ...OPTIONS, limits: limits({ maxDepth: 20 }) }],
      [deep, { ...OPTIONS, limits: limits({ maxDepth: 40 }) }],
      // A limit configured far past what the reader recurses to: the yaml package reads it, as before.
      [
        `a:\n${Array.from({ length: 200 }, (_, i) => `${' '.repeat(i + 1)}- `).join('\n')}x\n`,
        { ...OPTIONS, limits: limits({ maxDepth: 5000 }) },
      ],
      [many, { ...OPTIONS, maxDocuments: 10 }],
      [many, { ...OPTIONS, maxDocuments: Number.POSITIVE_INFINITY, maxDocumentBytes: 60 }],
      [many, { ...OPTIONS, maxDocuments: Number.POSITIVE_INFINITY, maxDocumentBytes: 4096 }],
    ];
    // Each size about a document's own, in UTF-8 bytes (characters of 2, 3 and 4 bytes, a comment after it): the
    // direct reader measures what the yaml path measures, and refuses or takes each document as it does.
    const wide = [
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: é}\ndata: {a: "ü€😀"}\n# after\n',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {a: x}\n',
    ].join('---\n');
    for (let bytes = 40; bytes <= 90; bytes++)
      cases.push([wide, { ...OPTIONS, maxDocuments: Number.POSITIVE_INFINITY, maxDocumentBytes: bytes }]);
    for (const [text, options] of cases) expectSame(text, options);
    // The limits are met: each refusal above is a refusal, and it is the yaml path's.
    expect(() => [...readDocuments(many, { ...OPTIONS, limits: limits({ maxNodes: 10 }) })]).toThrow(
      /render\.maxYamlNodes/,
    );
    expect(() => [...readDocuments(deep, { ...OPTIONS, limits: limits({ maxDepth: 20 }) })]).toThrow(
      /render\.maxYamlDepth/,
    );
  });

  it('declines what it does not read, and the yaml package reads it', () => {
    for (const text of [
      'a: &x 1\nb: *x\n',
      'a: !!binary aGk=\n',
      '? a\n: b\n',
      'a: "two\\\n\n  lines"\n',
      'a: "two\\ \n  lines"\n',
      "a:\n  b: 'two\n  lines'\n",
      'a: |+\n  kept\n\n',
      'kind: List\nitems: []\n',
      '{"a": 1}\n',
    ]) {
      expect(taken(text), text).toBe(false);
      expectSame(text);
    }
  });

  it('gives parseYaml the value, error and limit refusal the yaml package gives, for one-document texts', () => {
    const composed = (text: string, options: YamlOptions) => {
      const doc = parseYamlDocument(text, options);
      if (doc.errors.length > 0) throw doc.errors[0];
      return toValue(doc, options);
    };
    const result = (read: () => unknown) => {
      try {
        return { value: read() };
      } catch (error) {
        return {
          thrown: error instanceof Error ? { name: error.name, message: error.message } : String(error),
        };
      }
    };
    const same = (text: string, options: YamlOptions = { file: 'Chart.yaml' }) => {
      const direct = result(() => parseYaml(text, options));
      const tree = result(() => composed(text, options));
      if (!isDeepStrictEqual(direct, tree)) expect(direct, JSON.stringify(text)).toStrictEqual(tree);
    };
    const corpus = fixtureTexts().filter((text) => text.length < 20_000);
    const next = random(11);
    const pieces = [
      ' ',
      ':',
      ': ',
      '- ',
      '#',
      '"',
      "'",
      '|',
      '>',
      '\n',
      '\n  ',
      '\t',
      '[',
      ']',
      '{',
      '}',
      ',',
      '&a ',
    ];
    pieces.push('*a', '? ', '0755', 'yes', '~', '__proto__: 1\n', 'name: x\n', '0x1f', '1:20');
    let direct = 0;
    for (let i = 0; i < 2000; i++) {
      let text = (corpus[Math.floor(next() * corpus.length)] as string).split('\n---')[0] as string;
      for (let j = 0, n = Math.floor(next() * 3); j < n; j++) {
        const at = Math.floor(next() * text.length);
        text = text.slice(0, at) + pieces[Math.floor(next() * pieces.length)] + text.slice(at);
      }
      if (taken(text) && !text.startsWith('---')) direct++;
      same(text);
    }
    // Most are taken directly: the comparison is of the direct reader, not of the yaml package with itself.
    expect(direct).toBeGreaterThan(500);
    for (const text of [
      '',
      '# c\n',
      'name: web\nversion: 1.0.0\n',
      'a: 1\na: 2\n',
      'a: &x 1\nb: *x\n',
      '[1, 2]\n',
    ])
      same(text);
    // Past a limit: the same refusal, whichever reader saw the text first.
    const deep = `${'a:\n'.repeat(1)}${Array.from({ length: 40 }, (_, d) => `${'  '.repeat(d + 1)}k${d}:`).join('\n')} 1\n`;
    same(deep, { file: 'deep.yaml', limits: { ...DEFAULT_YAML_LIMITS, maxDepth: 10 } });
    const wide = Array.from({ length: 300 }, (_, k) => `k${k}: ${k}`).join('\n');
    same(wide, { file: 'wide.yaml', limits: { ...DEFAULT_YAML_LIMITS, maxNodes: 100 } });
    expect(
      result(() => parseYaml(wide, { file: 'wide.yaml', limits: { ...DEFAULT_YAML_LIMITS, maxNodes: 100 } })),
    ).toMatchObject({ thrown: { message: expect.stringContaining('wide.yaml') } });
  });
});
