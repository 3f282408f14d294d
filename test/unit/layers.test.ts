// The layer check `npm run lint` runs (scripts/check-layers.ts): src/ as it is passes, and each kind of problem is
// found, named by file, in a tree made to hold it.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  jsonProblems,
  LAYERS,
  layerOf,
  layerProblems,
  signalProblems,
  sourceFiles,
} from '../../scripts/check-layers.ts';

describe('the layers of src/', () => {
  it('holds for the sources as they are, every folder in its place', () => {
    const files = sourceFiles(join(import.meta.dirname, '../../src'));
    expect(files.length).toBeGreaterThan(300);
    expect(layerProblems(files)).toStrictEqual([]);
    const layers = new Set(files.map((f) => layerOf(f.path)));
    for (const layer of layers) expect(LAYERS).toContain(layer);
  });

  it('refuses an import from a lower layer to a higher one, type-only and dynamic ones too', () => {
    const problems = layerProblems([
      { path: 'render/a.ts', text: "import type { Release } from '../report/ledger.ts';\n" },
      { path: 'kube/b.ts', text: "const m = await import('../sync/queue.ts');\n" },
      { path: 'yaml/c.ts', text: "export { x } from '../contract.ts';\n" },
      { path: 'report/ledger.ts', text: "import { describeKubeError } from '../kube/errors.ts';\n" },
    ]);
    expect(problems).toStrictEqual([
      'src/render/a.ts imports src/report/ledger.ts: render is below report',
      'src/kube/b.ts imports src/sync/queue.ts: kube is below sync',
      'src/yaml/c.ts imports src/contract.ts: yaml is below contract',
    ]);
  });

  it('refuses folders that import each other within a layer, and a folder it has no place for', () => {
    const problems = layerProblems([
      { path: 'report/status/a.ts', text: "import { b } from '../preview/b.ts';\n" },
      { path: 'report/preview/b.ts', text: "import { c } from '../notify/c.ts';\n" },
      { path: 'report/notify/c.ts', text: "import { a } from '../status/a.ts';\n" },
      // A folder and its own subfolder are one: no cycle.
      { path: 'kube/rollout.ts', text: "import { d } from './rollout/d.ts';\n" },
      { path: 'kube/rollout/d.ts', text: "import { e } from '../api.ts';\n" },
      { path: 'gadgets/x.ts', text: '' },
    ]);
    expect(problems).toStrictEqual([
      'src/gadgets/x.ts: the folder gadgets/ has no place in LAYERS (scripts/check-layers.ts)',
      'folders import each other: report/notify -> report/status (src/report/notify/c.ts), report/status -> report/preview (src/report/status/a.ts), report/preview -> report/notify (src/report/preview/b.ts)',
    ]);
  });

  it('finds JSON read anywhere but through parseJson, comments aside', () => {
    expect(jsonProblems(sourceFiles(join(import.meta.dirname, '../../src')))).toStrictEqual([]);
    expect(
      jsonProblems([
        { path: 'kube/a.ts', text: 'const x = 1;\nconst v = JSON.parse(text);\n' },
        { path: 'report/b.ts', text: '// JSON.parse is not called here\nconst body = await res.json();\n' },
        { path: 'json.ts', text: 'return JSON.parse(text);\n' },
      ]),
    ).toStrictEqual([
      'src/kube/a.ts:2: JSON read without parseJson (src/json.ts)',
      'src/report/b.ts:2: JSON read without parseJson (src/json.ts)',
    ]);
  });

  it('finds signals combined anywhere but through linkSignals, comments aside', () => {
    expect(signalProblems(sourceFiles(join(import.meta.dirname, '../../src')))).toStrictEqual([]);
    expect(
      signalProblems([
        { path: 'sources/a.ts', text: 'const t = 1;\nconst s = AbortSignal.any([t, stop]);\n' },
        { path: 'signals.ts', text: '// AbortSignal.any would do it, but\n' },
      ]),
    ).toStrictEqual([
      'src/sources/a.ts:2: AbortSignal.any: combine signals with linkSignals (src/signals.ts)',
    ]);
  });
});
