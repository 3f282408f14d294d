// Summarises a V8 sampling heap profile (bench:fleet --alloc-prof, DevTools' "allocation sampling"): the functions
// that allocated the most themselves and with their callees, each as `function file:line`, and the heaviest call
// paths into mooring's own code, so that what drives the garbage collector can be read without a browser.
// Usage: node scripts/alloc-profile.ts FILE [--top N]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface SamplingNode {
  callFrame: CallFrame;
  selfSize: number;
  children: SamplingNode[];
}
interface SamplingProfile {
  head: SamplingNode;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '30' } },
});
const file = positionals[0];
if (!file) throw new Error('usage: node scripts/alloc-profile.ts FILE [--top N]');
const top = Number(values.top);
const profile = JSON.parse(readFileSync(file, 'utf8')) as SamplingProfile;

const label = (f: CallFrame) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(src|dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
const own = (f: CallFrame) => /\/(src|dist)\//.test(f.url) && !f.url.includes('/node_modules/');

const self = new Map<string, number>();
const total = new Map<string, number>();
/** Bytes by the innermost frame of mooring's own code on the path (what of ours asked for it). */
const ours = new Map<string, number>();
let all = 0;

// Depth first without recursion: a profile's tree can be deeper than the stack allows.
const stack: { node: SamplingNode; path: string[]; inner: string }[] = [
  { node: profile.head, path: [], inner: '' },
];
while (stack.length > 0) {
  const { node, path, inner } = stack.pop() as (typeof stack)[number];
  const name = label(node.callFrame);
  const here = own(node.callFrame) ? name : inner;
  const onPath = path.includes(name) ? path : [...path, name];
  if (node.selfSize > 0) {
    all += node.selfSize;
    self.set(name, (self.get(name) ?? 0) + node.selfSize);
    for (const n of onPath) total.set(n, (total.get(n) ?? 0) + node.selfSize);
    const key = here || '(no code of mooring on the stack)';
    ours.set(key, (ours.get(key) ?? 0) + node.selfSize);
  }
  for (const child of node.children) stack.push({ node: child, path: onPath, inner: here });
}

const print = (title: string, m: Map<string, number>) => {
  process.stdout.write(`${title}\n`);
  for (const [name, bytes] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    process.stdout.write(
      `${(bytes / 2 ** 20).toFixed(1).padStart(9)} MiB ${((100 * bytes) / all).toFixed(1).padStart(5)}%  ${name}\n`,
    );
};
process.stdout.write(`${file}: ${(all / 2 ** 20).toFixed(1)} MiB allocated (sampled)\n`);
print('allocated by the function itself:', self);
print('allocated by mooring code, innermost on the stack:', ours);
print('allocated with callees:', total);
