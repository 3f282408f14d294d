// scripts/builtin-imports.ts, the bundle's step that takes Node's own modules through process.getBuiltinModule:
// the import clauses it rewrites, the chunks it leaves alone (those on a cycle of imports), and a bundle built with
// it that runs, names its source lines in a stack trace, and keeps the imports of a cycle.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'rolldown';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindingPattern, builtinImports, chunksOnCycles } from '../../scripts/builtin-imports.ts';

const exec = promisify(execFile);

describe('bindingPattern', () => {
  it('turns each import clause into the const pattern that binds the same names', () => {
    expect(bindingPattern('{ readFileSync }')).toBe('{ readFileSync }');
    expect(bindingPattern('{readFileSync,statSync as stat$1}')).toBe('{ readFileSync, statSync: stat$1 }');
    expect(bindingPattern('{ a as a }')).toBe('{ a }');
    expect(bindingPattern('* as fs')).toBe('fs');
    expect(bindingPattern('process')).toBe('process');
    expect(bindingPattern('{ }')).toBe('{  }');
  });

  it('leaves what it does not know as an import', () => {
    expect(bindingPattern('{ default as fs }')).toBeUndefined();
    expect(bindingPattern('fs, { readFileSync }')).toBeUndefined();
    expect(bindingPattern('{ "a-b" as c }')).toBeUndefined();
  });
});

describe('chunksOnCycles', () => {
  it('finds the chunks of every cycle of static imports and no other', () => {
    const cyclic = chunksOnCycles({
      'a.js': { imports: ['b.js'] },
      'b.js': { imports: ['c.js', 'node:fs'] },
      'c.js': { imports: ['a.js'] },
      'd.js': { imports: ['a.js', 'e.js'] },
      'e.js': { imports: [] },
      'f.js': { imports: ['f.js'] },
    });
    expect([...cyclic].sort()).toStrictEqual(['a.js', 'b.js', 'c.js', 'f.js']);
    expect(chunksOnCycles({ 'x.js': { imports: ['y.js'] }, 'y.js': { imports: [] } }).size).toBe(0);
  });

  it('walks a long chain without running out of stack', () => {
    const chunks: Record<string, { imports: string[] }> = {};
    for (let i = 0; i < 2000; i++)
      chunks[`c${i}.js`] = { imports: i + 1 < 2000 ? [`c${i + 1}.js`] : ['c0.js'] };
    expect(chunksOnCycles(chunks).size).toBe(2000);
  });
});

describe('a bundle built with the step', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mooring-builtin-imports-'));
    const src = join(dir, 'src');
    const files: Record<string, string> = {
      'main.ts': [
        "import { createHash } from 'node:crypto';",
        "import * as path from 'node:path';",
        "import { ping } from './ring-a.ts';",
        "export const digest = createHash('sha256').update(path.posix.join('a', 'b')).digest('hex');",
        "const { fail } = await import('./late.ts');",
        'console.log(JSON.stringify({ digest, ping: ping() }));',
        "if (process.argv[2] === 'fail') fail();",
      ].join('\n'),
      'late.ts': [
        "import { statSync as stat } from 'node:fs';",
        'export function fail(): void {',
        "  stat('/');",
        "  throw new Error('failed here');",
        '}',
      ].join('\n'),
      // Two modules that import each other, entries of their own: a chunk both entries share.
      'ring-a.ts': [
        "import { tmpdir } from 'node:os';",
        "import { pong } from './ring-b.ts';",
        'export function ping(): string { return typeof tmpdir() + pong(); }',
      ].join('\n'),
      'ring-b.ts': [
        "import { ping } from './ring-a.ts';",
        "import { EOL } from 'node:os';",
        'export function pong(): string { return EOL.length > 0 ? "!" : typeof ping; }',
      ].join('\n'),
    };
    await rm(src, { recursive: true, force: true });
    await mkdir(src, { recursive: true });
    for (const [name, text] of Object.entries(files)) await writeFile(join(src, name), text);
    await build({
      cwd: dir,
      input: { main: join(src, 'main.ts'), a: join(src, 'ring-a.ts'), b: join(src, 'ring-b.ts') },
      platform: 'node',
      logLevel: 'silent',
      plugins: [builtinImports()],
      output: {
        dir: join(dir, 'dist'),
        format: 'esm',
        entryFileNames: '[name].js',
        chunkFileNames: '[name]-[hash].js',
        sourcemap: true,
        minify: { compress: false, mangle: false, codegen: { removeWhitespace: true } },
      },
    });
  }, 60_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('runs with its built-in modules taken through process.getBuiltinModule', async () => {
    const main = await readFile(join(dir, 'dist', 'main.js'), 'utf8');
    expect(main).not.toMatch(/from\s*["'`]node:/);
    expect(main).toContain('process.getBuiltinModule(`node:crypto`)');
    const { stdout } = await exec(process.execPath, [join(dir, 'dist', 'main.js')]);
    const { createHash } = await import('node:crypto');
    expect(JSON.parse(stdout)).toStrictEqual({
      digest: createHash('sha256').update('a/b').digest('hex'),
      ping: 'string!',
    });
  });

  it('names the source line of an error through the source map', async () => {
    const run = exec(process.execPath, ['--enable-source-maps', join(dir, 'dist', 'main.js'), 'fail']);
    const error = (await run.catch((e: { stderr: string }) => e)) as { stderr: string };
    expect(error.stderr).toContain('failed here');
    expect(error.stderr).toMatch(/src\/late\.ts:4:9/);
  });

  it('keeps the imports of a chunk on a cycle, and rewrites the same chunk off it', () => {
    const plugin = builtinImports() as unknown as {
      renderStart(): void;
      renderChunk(code: string, chunk: { fileName: string }, options: unknown, meta: unknown): unknown;
    };
    const code = 'import { tmpdir } from "node:os";\nexport const t = tmpdir();\n';
    const chunk = { fileName: 'a.js' };
    plugin.renderStart();
    const ring = { 'a.js': { imports: ['b.js'] }, 'b.js': { imports: ['a.js'] } };
    expect(plugin.renderChunk(code, chunk, {}, { chunks: ring })).toBeNull();
    plugin.renderStart();
    const line = { 'a.js': { imports: ['b.js'] }, 'b.js': { imports: [] } };
    const out = plugin.renderChunk(code, chunk, {}, { chunks: line }) as { code: string };
    expect(out.code).toBe(
      'const { tmpdir } = globalThis.process.getBuiltinModule("node:os");\nexport const t = tmpdir();\n',
    );
  });
});
