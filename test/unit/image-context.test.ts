// The image's build stage runs scripts/bundle.ts with only what the Dockerfile copies in and .dockerignore lets
// through: every script the bundle step imports, directly or through another, must be in both lists, and nothing
// else may be. A module left out fails only the image build, far into the integration run.
import { readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** The repository-relative paths of scripts/bundle.ts and of every local module it imports, transitively. */
async function bundleStepModules(): Promise<string[]> {
  const seen = new Set<string>();
  const queue = ['scripts/bundle.ts'];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const text = await readFile(join(ROOT, file), 'utf8');
    for (const [, specifier] of text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'(\.{1,2}\/[^']+)'/gm))
      queue.push(relative(ROOT, join(ROOT, dirname(file), specifier as string)));
  }
  return [...seen].sort();
}

describe('the image build context', () => {
  it('holds every module of the bundle step, in the Dockerfile and through .dockerignore', async () => {
    const modules = await bundleStepModules();
    expect(modules).toContain('scripts/builtin-imports.ts');

    const dockerfile = await readFile(join(ROOT, 'Dockerfile'), 'utf8');
    const copies = [...dockerfile.matchAll(/^COPY\s+(.+)\s+\.\/scripts\/\s*$/gm)].flatMap(([, list]) =>
      (list as string).split(/\s+/),
    );
    expect(copies.sort()).toEqual(modules);

    const ignore = (await readFile(join(ROOT, '.dockerignore'), 'utf8')).split('\n').map((l) => l.trim());
    expect(ignore).toContain('scripts/*');
    const allowed = ignore.filter((l) => l.startsWith('!scripts/')).map((l) => l.slice(1));
    expect(allowed.sort()).toEqual(modules);
  });
});
