// A fuzz pass of the YAML module: texts mutated from a corpus of what mooring reads (manifests, an index, a
// kubeconfig, flow, anchors, block scalars, directives), under a fixed seed, a fixed number of inputs and a time
// bound as a safety stop. Every input must end in a value or in one of the expected errors (a limit, invalid
// YAML, an alias expansion refused), never in another exception (a stack overflow, a TypeError), and whatever
// is composed stays within the limits.
import { describe, expect, it } from 'vitest';
import { YAMLError } from 'yaml';
import { parseYamlAll, YamlLimitError } from '../../../src/yaml/index.ts';
import { random } from '../seeded-random.ts';
import { composed } from './composed.ts';

const LIMITS = { maxNodes: 2000, maxDepth: 32, maxAliasCount: 20 };
const INPUTS = 1500;
const TIME_BOUND_MS = 3000;

const CORPUS = [
  'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: "nginx:1.27"\n          args: [--port, "8080"]\n',
  'apiVersion: v1\nentries:\n  web:\n  - version: 1.0.0\n    digest: abc\n    urls:\n    - https://charts.example.com/web-1.0.0.tgz\ngenerated: "2024-01-01T00:00:00Z"\n',
  'apiVersion: v1\nclusters:\n- cluster: {server: "https://k:6443"}\n  name: k\nusers:\n- name: u\n  user: {token: t}\n',
  'base: &b {a: 1, b: [x, y]}\nuse: *b\nmerge:\n  <<: *b\n  c: |\n    text\n    more\n  d: >-\n    folded\n',
  '%YAML 1.2\n---\n!!map {? a : b, c: !!str 1}\n...\n---\n- [1, [2, [3]]]\n- ? complex key\n  : value\n',
  '- \'single\'\n- "double\\n"\n- plain # comment\n-\n- - nested\n  - seq\n',
];
const PIECES = [
  '[',
  ']',
  '{',
  '}',
  '- ',
  ': ',
  '? ',
  ',',
  '&a ',
  '*a',
  '*b',
  '!!str ',
  '|',
  '>',
  '\n',
  '  ',
  '\t',
  '#',
  '---\n',
  '...\n',
  '%YAML 1.2\n',
  '"',
  "'",
  '<<: ',
  '- []\n',
  '\r\n',
  '\uFEFF',
];

function mutate(text: string, next: () => number): string {
  let out = text;
  const steps = 1 + Math.floor(next() * 6);
  for (let i = 0; i < steps; i++) {
    const at = Math.floor(next() * (out.length + 1));
    const op = Math.floor(next() * 5);
    if (op === 0) out = out.slice(0, at) + PIECES[Math.floor(next() * PIECES.length)] + out.slice(at);
    else if (op === 1) out = out.slice(0, at) + out.slice(at + Math.floor(next() * 8));
    else if (op === 2) {
      // A piece repeated: the way small texts grow many nodes or deep nesting.
      const piece = out.slice(at, at + 1 + Math.floor(next() * 6));
      out = out.slice(0, at) + piece.repeat(1 + Math.floor(next() * 400)) + out.slice(at);
    } else if (op === 3)
      out = out.slice(0, at) + String.fromCharCode(Math.floor(next() * 128)) + out.slice(at + 1);
    else out = out + (CORPUS[Math.floor(next() * CORPUS.length)] ?? '');
  }
  return out;
}

/** The nodes of the largest document the composer built of `text`, and how deep they nest. */
function largest(text: string): { nodes: number; depth: number } {
  const { nodes, depth } = composed(text);
  return { nodes: Math.max(0, ...nodes), depth };
}

describe('the YAML module, fuzzed', () => {
  it('ends every mutated input in a value or an expected error, within the limits', () => {
    const next = random(35_4);
    const started = Date.now();
    const outcomes = { values: 0, limits: 0, invalid: 0, aliases: 0 };
    for (let i = 0; i < INPUTS && Date.now() - started < TIME_BOUND_MS; i++) {
      const text = mutate(CORPUS[i % CORPUS.length] ?? '', next);
      try {
        parseYamlAll(text, { file: 'fuzz.yaml', limits: LIMITS });
        outcomes.values++;
        const built = largest(text);
        expect(built.nodes, text).toBeLessThanOrEqual(2 * LIMITS.maxNodes + 1);
        expect(built.depth, text).toBeLessThanOrEqual(LIMITS.maxDepth + 1);
      } catch (error) {
        if (error instanceof YamlLimitError) outcomes.limits++;
        // The yaml package reports its own stack overflow as a parse error: that is exhaustion, not invalid YAML.
        else if (error instanceof YAMLError && !/call stack/.test(error.message)) outcomes.invalid++;
        else if (error instanceof ReferenceError && /alias/i.test(error.message)) outcomes.aliases++;
        else
          throw new Error(`unexpected ${String(error)} for ${JSON.stringify(text.slice(0, 300))}`, {
            cause: error,
          });
      }
    }
    if (process.env.FUZZ_REPORT) console.log(outcomes);
    // Each kind of ending was reached: the mutations reach past the limits and into invalid YAML.
    expect(outcomes.values).toBeGreaterThan(0);
    expect(outcomes.limits).toBeGreaterThan(0);
    expect(outcomes.invalid).toBeGreaterThan(0);
  }, 30_000);
});
