// A build step of scripts/bundle.ts: a chunk's imports of Node's own modules (`import { readFileSync } from
// "node:fs"`) become `const { readFileSync } = globalThis.process.getBuiltinModule("node:fs")`. An ES module import of a
// built-in module makes Node build a module facade with every export of it, which reads every property: `node:fs`
// then loads its file streams, `node:crypto` all of WebCrypto; process.getBuiltinModule returns the module object
// itself and loads nothing more. Measured on a 2-core machine: the modules `mooring render` needs before it can start
// helm came 12 ms sooner, and every command started sooner by about as much (docs/render.md, "Render speed").
//
// An import is bound before any code of its module runs; a const only when its line runs. Rewritten at the top of a
// chunk, the lines run before any code of the chunk, so they are bound in time unless another chunk calls into this
// one while it is still loading, which happens only in a cycle of static imports: a chunk on such a cycle keeps its
// imports. Each import is replaced on its own line and the source map is carried through (magic-string).
import MagicString from 'magic-string';
import type { Plugin, RenderedChunk } from 'rolldown';
import { stronglyConnected } from './strongly-connected.ts';

const IMPORT = /^import\s*(\{[^}]*\}|\*\s*as\s+[\w$]+|[\w$]+)\s*from\s*["'](node:[\w/]+)["'];?[ \t]*$/gm;

/** The binding pattern of an import clause as a const pattern, or undefined when it has none this step knows. */
export function bindingPattern(clause: string): string | undefined {
  const trimmed = clause.trim();
  const namespace = /^\*\s*as\s+([\w$]+)$/.exec(trimmed);
  if (namespace) return namespace[1];
  if (/^[\w$]+$/.test(trimmed)) return trimmed;
  if (!trimmed.startsWith('{')) return undefined;
  const parts: string[] = [];
  for (const raw of trimmed.slice(1, -1).split(',')) {
    const part = raw.trim();
    if (part === '') continue;
    const named = /^([\w$]+)(?:\s+as\s+([\w$]+))?$/.exec(part);
    if (!named) return undefined;
    const [, imported, local] = named;
    if (imported === 'default') {
      // `{ default as x }`: the module object itself, which a pattern cannot name beside others.
      return undefined;
    }
    parts.push(local && local !== imported ? `${imported}: ${local}` : (imported as string));
  }
  return `{ ${parts.join(', ')} }`;
}

/** The names of the chunks on a cycle of static imports (a chunk that imports itself among them). */
export function chunksOnCycles(chunks: Record<string, Pick<RenderedChunk, 'imports'>>): Set<string> {
  const inBundle = (name: string) => (chunks[name]?.imports ?? []).filter((dep) => dep in chunks);
  const cyclic = new Set(stronglyConnected(Object.keys(chunks), inBundle).flat());
  for (const name of Object.keys(chunks)) if (inBundle(name).includes(name)) cyclic.add(name);
  return cyclic;
}

/** The rolldown plugin. */
export function builtinImports(): Plugin {
  let cyclic: Set<string> | undefined;
  return {
    name: 'mooring-builtin-imports',
    renderStart() {
      cyclic = undefined;
    },
    renderChunk(code, chunk, _options, meta) {
      cyclic ??= chunksOnCycles(meta.chunks);
      if (cyclic.has(chunk.fileName)) return null;
      const s = new MagicString(code);
      let changed = false;
      for (const match of code.matchAll(IMPORT)) {
        const pattern = bindingPattern(match[1] as string);
        if (pattern === undefined) continue;
        s.overwrite(
          match.index,
          match.index + match[0].length,
          `const ${pattern} = globalThis.process.getBuiltinModule(${JSON.stringify(match[2])});`,
        );
        changed = true;
      }
      if (!changed) return null;
      return { code: s.toString(), map: s.generateMap({ hires: true, source: chunk.fileName }) };
    },
  };
}
