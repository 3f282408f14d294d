// bench:render's reading floor: the floor (tool-floor.mjs) plus what no render of the tool's output can skip: every
// document read into values by mooring's own YAML reader (src/yaml/documents.ts, the one render's parse calls, with
// the process's limits), then the tool's text printed unchanged. Nothing is checked, rendered or written anew, so a
// render that only spliced its changes into the tool's text would still take at least this long. Bundled into one
// plain module before the run (render-tools.ts), so that Node loads no TypeScript stripper. The reader is loaded
// while the tool runs, as mooring loads its render path beside helm (src/cli/early-render.ts).
const { spawn } = process.getBuiltinModule('node:child_process');
const [command, ...args] = process.argv.slice(2);
if (!command) throw new Error('usage: tool-read-floor COMMAND [ARG ...]');
const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
const chunks: Buffer[] = [];
child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
const reader = Promise.all([
  import('../../src/config/render-defaults.ts'),
  import('../../src/yaml/documents.ts'),
]);
child.on('close', async (code) => {
  const [{ RENDER_DEFAULTS }, { readDocuments }] = await reader;
  const text = Buffer.concat(chunks).toString('utf8');
  let values = 0;
  for (const doc of readDocuments(text, {
    file: 'output',
    maxDocuments: Number.POSITIVE_INFINITY,
    maxDocumentBytes: RENDER_DEFAULTS.maxFileBytes,
  })) {
    if ('value' in doc) values++;
    else if (!('empty' in doc))
      throw new Error(`a document of the output was not read: ${JSON.stringify(doc)}`);
  }
  if (values === 0) throw new Error('no document read');
  process.stdout.write(text);
  process.exitCode = code ?? 1;
});
