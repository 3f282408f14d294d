// Summarises a V8 heap snapshot (bench:fleet --heap-snapshot, `node --heapsnapshot-signal`, v8.writeHeapSnapshot):
// the node types' and the constructors' self sizes and counts, largest first, and the longest strings' beginnings,
// so that what an idle agent holds per deployment can be read without a browser.
// Usage: node scripts/heap-summary.ts FILE [--top N]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] }; node_count: number };
  nodes: number[];
  strings: string[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '40' } },
});
const file = positionals[0];
if (!file) throw new Error('usage: node scripts/heap-summary.ts FILE [--top N]');
const top = Number(values.top);
const heap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const fields = heap.snapshot.meta.node_fields;
const types = heap.snapshot.meta.node_types[0];
const width = fields.length;
const TYPE = fields.indexOf('type');
const NAME = fields.indexOf('name');
const SIZE = fields.indexOf('self_size');

interface Tally {
  count: number;
  bytes: number;
}
const add = (map: Map<string, Tally>, key: string, bytes: number) => {
  const t = map.get(key) ?? { count: 0, bytes: 0 };
  t.count++;
  t.bytes += bytes;
  map.set(key, t);
};
const byType = new Map<string, Tally>();
const byName = new Map<string, Tally>();
const strings = new Map<string, Tally>();
let total = 0;
for (let i = 0; i < heap.nodes.length; i += width) {
  const type = types[heap.nodes[i + TYPE] ?? 0] ?? '?';
  const name = heap.strings[heap.nodes[i + NAME] ?? 0] ?? '';
  const bytes = heap.nodes[i + SIZE] ?? 0;
  total += bytes;
  add(byType, type, bytes);
  if (type === 'string' || type === 'concatenated string' || type === 'sliced string')
    add(strings, name.slice(0, 60).replace(/\s+/g, ' '), bytes);
  else add(byName, `${type} ${name.slice(0, 70)}`, bytes);
}

const kib = (n: number) => `${(n / 1024).toFixed(0).padStart(8)} KiB`;
const print = (title: string, map: Map<string, Tally>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [key, t] of [...map].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top))
    process.stdout.write(`${kib(t.bytes)} ${String(t.count).padStart(9)}  ${key}\n`);
};
process.stdout.write(`${file}: ${heap.snapshot.node_count} nodes, ${kib(total).trim()} of self size\n`);
print('by node type (self size, count)', byType);
print('by constructor or name', byName);
print('strings by their beginning', strings);
