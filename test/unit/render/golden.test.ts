// Golden-file tests of the render engine: each folder under test/fixtures/render/ is a case with its input
// manifests (input.yaml, or every file under input/), an optional case.yaml (namespace, application, images,
// snapshot, options) and what must come out: expected.yaml (hydrated objects), expected-plan.yaml (the apply
// plan) and/or expected-error.txt (the whole error message). UPDATE_GOLDEN=1 rewrites the expected files; review
// the diff as you would review code.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { toYaml } from '../../../src/render/canonical.ts';
import { type RenderInput, render } from '../../../src/render/render.ts';

const ROOT = join(import.meta.dirname, '..', '..', 'fixtures', 'render');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

interface CaseFile {
  namespace?: string;
  application?: string;
  images?: RenderInput['images'];
  snapshot?: RenderInput['snapshot'];
  /** `hashKey` is given as text. */
  options?: Omit<NonNullable<RenderInput['options']>, 'hashKey'> & { hashKey?: string };
}

function inputFiles(dir: string): { path: string; text: string }[] {
  const single = join(dir, 'input.yaml');
  if (existsSync(single)) return [{ path: 'input.yaml', text: readFileSync(single, 'utf8') }];
  const files: { path: string; text: string }[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else files.push({ path: relative(dir, p), text: readFileSync(p, 'utf8') });
    }
  };
  walk(join(dir, 'input'));
  return files;
}

function check(dir: string, file: string, actual: string): void {
  const path = join(dir, file);
  if (UPDATE) writeFileSync(path, actual);
  expect(existsSync(path), `${path} is missing (run with UPDATE_GOLDEN=1 and review it)`).toBe(true);
  expect(actual).toBe(readFileSync(path, 'utf8'));
}

const cases = readdirSync(ROOT)
  .filter((name) => statSync(join(ROOT, name)).isDirectory())
  .sort();

describe('render golden files', () => {
  it('has cases', () => {
    expect(cases.length).toBeGreaterThan(20);
  });

  it.each(cases)('%s', (name) => {
    const dir = join(ROOT, name);
    const spec = (
      existsSync(join(dir, 'case.yaml')) ? parse(readFileSync(join(dir, 'case.yaml'), 'utf8')) : {}
    ) as CaseFile;
    const wantsError = existsSync(join(dir, 'expected-error.txt'));
    const input: RenderInput = {
      files: inputFiles(dir),
      namespace: spec.namespace ?? 'prod',
      application: spec.application ?? 'shop',
      images: spec.images ?? [],
      snapshot: spec.snapshot ?? { versions: [], live: [] },
      options: {
        ...spec.options,
        hashKey: spec.options?.hashKey === undefined ? undefined : Buffer.from(spec.options.hashKey),
      },
    };
    let result: ReturnType<typeof render> | undefined;
    let error: unknown;
    try {
      result = render(input);
    } catch (e) {
      error = e;
    }
    if (wantsError || (UPDATE && error)) {
      expect(result, 'expected the render to fail').toBeUndefined();
      check(dir, 'expected-error.txt', `${(error as Error).message}\n`);
      return;
    }
    if (error) throw error;
    if (!result) throw new Error('no result');
    check(dir, 'expected.yaml', toYaml(result.objects));
    if (existsSync(join(dir, 'expected-plan.yaml')) || (UPDATE && name.startsWith('strategy'))) {
      const plan = result.plan.map((p) => ({
        object: p.object,
        ...p.strategy,
        ...(p.version ? { version: p.version.version, reused: p.version.reused } : {}),
      }));
      check(dir, 'expected-plan.yaml', stringify(plan));
    }
  });

  it('gives the same bytes for the same input', () => {
    const dir = join(ROOT, 'references-all-paths');
    const input = { files: inputFiles(dir), namespace: 'prod', application: 'shop' };
    expect(toYaml(render(input).objects)).toBe(toYaml(render(input).objects));
  });
});
