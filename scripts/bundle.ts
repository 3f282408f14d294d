// Builds dist/, what users run (`npm run build`; the image's build stage): the `mooring` command and the YAML
// worker thread as ES module bundles, split where a command imports lazily, with comments and whitespace left
// out and every character past ASCII escaped (V8 keeps a source with one character past Latin-1 at two bytes a
// character); names are kept, so stack traces still name their functions, and a source map sits beside each file.
//
// Why a bundle and not tsc's file-for-file output: V8 keeps every module's source text and a record per module
// for as long as the process lives. The idle agent loaded about 600 modules and 4 MB of source (a third of it
// mooring's own comments) into about 36 MiB over a bare node; the same code bundled takes about 25 MiB
// (docs/memory.md, "One bundle"). Types are checked by `npm run typecheck`, not here.
//
// Layout, which the code relies on: every file is directly in dist/ (src/version.ts reads `../package.json`,
// src/yaml/parse-async.ts starts `./worker.js` beside the chunk that holds it), and dist/cli/main.js is the
// launcher line (the same as src/cli/main.ts's: node's flags and environment) and an import of ../mooring.js.
// Dependencies with native code (ssh2) and those loaded by `createRequire` at run time stay in node_modules.
//
//   node scripts/bundle.ts [--out DIR]     (default dist; DIR is emptied first)
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'rolldown';
import { builtinImports } from './builtin-imports.ts';

const ROOT = resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: { out: { type: 'string', default: join(ROOT, 'dist') } } });
const out = resolve(values.out);

await rm(out, { recursive: true, force: true });
await build({
  cwd: ROOT,
  input: {
    mooring: join(ROOT, 'src', 'cli', 'main.ts'),
    worker: join(ROOT, 'src', 'yaml', 'worker.ts'),
  },
  platform: 'node',
  // Native addons cannot be bundled: ssh2 (and its optional cpu-features) is loaded from node_modules.
  external: [/\.node$/, /^ssh2(\/|$)/, /^cpu-features(\/|$)/],
  logLevel: 'warn',
  plugins: [builtinImports()],
  output: {
    dir: out,
    format: 'esm',
    entryFileNames: '[name].js',
    chunkFileNames: '[name]-[hash].js',
    sourcemap: true,
    comments: false,
    minify: { compress: false, mangle: false, codegen: { removeWhitespace: true, asciiOnly: true } },
  },
});

// The command's path stays dist/cli/main.js (package.json's bin, the image's ENTRYPOINT, users' scripts), with
// the launcher line of the sources: the flags node runs mooring with.
const source = await readFile(join(ROOT, 'src', 'cli', 'main.ts'), 'utf8');
const shebang = source.split('\n', 1)[0] ?? '';
if (!shebang.startsWith('#!')) throw new Error('src/cli/main.ts has no launcher line');
await mkdir(join(out, 'cli'), { recursive: true });
await writeFile(
  join(out, 'cli', 'main.js'),
  `${shebang}\n// The mooring command (built by scripts/bundle.ts from src/cli/main.ts).\nimport '../mooring.js';\n`,
  { mode: 0o755 },
);
