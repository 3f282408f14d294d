// Summarises a V8 CPU profile (`node --cpu-prof`, bench:fleet --cpu-prof): the functions with the most self time
// and the most total time (self plus callees), each as `function file:line`, with a window of the run if asked.
// Usage: node scripts/cpu-profile.ts FILE [--from S] [--to S] [--top N]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { from: { type: 'string' }, to: { type: 'string' }, top: { type: 'string', default: '30' } },
});
const file = positionals[0];
if (!file) throw new Error('usage: node scripts/cpu-profile.ts FILE [--from S] [--to S] [--top N]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const from = values.from ? Number(values.from) * 1e6 : 0;
const to = values.to ? Number(values.to) * 1e6 : Number.POSITIVE_INFINITY;
const top = Number(values.top);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (f: CallFrame) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(src|dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;

const self = new Map<string, number>();
const total = new Map<string, number>();
let t = 0;
let counted = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const delta = profile.timeDeltas[i] ?? 0;
  t += delta;
  if (t < from || t > to) continue;
  counted += delta;
  const id = profile.samples[i] as number;
  const node = byId.get(id);
  if (!node) continue;
  const own = label(node.callFrame);
  self.set(own, (self.get(own) ?? 0) + delta);
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const name = label((byId.get(at) as ProfileNode).callFrame);
    if (seen.has(name)) continue;
    seen.add(name);
    total.set(name, (total.get(name) ?? 0) + delta);
  }
}
const print = (title: string, m: Map<string, number>) => {
  process.stdout.write(`${title}\n`);
  for (const [name, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    process.stdout.write(
      `${(us / 1e6).toFixed(2).padStart(9)} s ${((100 * us) / counted).toFixed(1).padStart(5)}%  ${name}\n`,
    );
};
process.stdout.write(
  `${file}: ${(counted / 1e6).toFixed(1)} s sampled of ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s\n`,
);
print('self time:', self);
print('total time:', total);
