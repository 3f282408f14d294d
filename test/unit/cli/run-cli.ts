// What the CLI tests share: running the program in-process with its output captured, and the render seed.
import { join } from 'node:path';
import { runCli } from '../../../src/cli/program.ts';

/** The seed the render tests print: a first deploy of one Deployment and its ConfigMap. */
export const SEED_004 = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'render',
  'seed-004-first-deploy',
  'input.yaml',
);

/** Runs `mooring <argv>` and returns its exit code and what it printed on each stream. */
export async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: (t) => (stdout += `${t}\n`),
    stderr: (t) => (stderr += `${t}\n`),
  });
  return { code, stdout, stderr };
}
