// What the CLI's launcher line gives node (`#!/usr/bin/env -S NAME=value ... node FLAGS` on src/cli/main.ts and
// dist/cli/main.js): the environment and the V8 flags mooring runs with when its users start it. Benchmarks and the
// tests' agent processes run mooring with them, so that what they measure (memory above all) is what users get.
import { readFileSync } from 'node:fs';

export interface Launcher {
  env: Record<string, string>;
  flags: string[];
}

export function launcher(cli: string): Launcher {
  const first = readFileSync(cli, 'utf8').split('\n', 1)[0] ?? '';
  const words = /^#!\S*env -S (.*)$/.exec(first)?.[1]?.trim().split(/\s+/) ?? [];
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[i] as string); i++) {
    const [name = '', ...value] = (words[i] as string).split('=');
    env[name] = value.join('=');
  }
  return words[i] === 'node' ? { env, flags: words.slice(i + 1) } : { env: {}, flags: [] };
}
