// Every command-line command makes its Kubernetes client through commandKubeApi (src/kube/api.ts), which gives it the
// command line's request budget: a command that made its own would wait on the agent's fixed 200 requests a second
// (docs/apply.md). Read from the sources, so that a new command cannot forget it.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_BUDGET, commandKubeApi } from '../../../src/kube/api.ts';

const CLI = join(import.meta.dirname, '..', '..', '..', 'src', 'cli');

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sources(path)));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

describe("the command line's clients", () => {
  it('are all made by commandKubeApi', async () => {
    const files = await sources(CLI);
    expect(files.length).toBeGreaterThan(20);
    const own: string[] = [];
    let made = 0;
    for (const file of files) {
      const text = await readFile(file, 'utf8');
      if (/new KubeApi\s*\(/.test(text)) own.push(file);
      made += (text.match(/commandKubeApi\(/g) ?? []).length;
    }
    expect(own).toEqual([]);
    expect(made).toBeGreaterThanOrEqual(9);
  });

  it("start at the command line's budget, whatever else the command sets", () => {
    const config = {
      server: 'https://127.0.0.1:1',
      namespace: undefined,
      contextName: 'test',
      describe: 'a test',
      applyTo: async () => undefined,
    };
    const api = commandKubeApi(config, { maxSockets: 8 });
    try {
      expect(api.requestStats.budgetRate).toBe(CLI_BUDGET.qpsStart);
    } finally {
      api.close();
    }
  });
});
