// The private CA of a Git server (`caFile` of a Git source): a PEM bundle read once, when the configuration is
// loaded and when the source's repository is opened, and then trusted for that source's connections.
import { readFileSync } from 'node:fs';
import { StalledError } from '../errors.ts';
import type { GitSource } from './schema.ts';

const MAX_CA_BYTES = 1024 * 1024;

/** The PEM text of the source's caFile, undefined without one; a file that cannot be read is a StalledError. */
export function readGitCa(source: Pick<GitSource, 'name' | 'caFile'>): string | undefined {
  if (source.caFile === undefined) return undefined;
  const problem = caFileProblem(source.caFile);
  if (typeof problem === 'object') return problem.pem;
  throw new StalledError(`caFile: ${problem}`, { subject: { describe: `Git source ${source.name}` } });
}

/** The bundle, or why it cannot be used: the message names the file, never its content. */
export function caFileProblem(file: string): { pem: string } | string {
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a folder' : (code ?? 'unreadable');
    return `cannot read ${file} (${reason})`;
  }
  if (data.length > MAX_CA_BYTES) return `${file} is larger than ${MAX_CA_BYTES} bytes`;
  const pem = data.toString('utf8');
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) return `${file} holds no PEM certificate`;
  return { pem };
}

/** One problem per Git source whose caFile cannot be read, with its field path: checked when the config loads. */
export function gitCaProblems(config: {
  sources: { git: readonly Pick<GitSource, 'caFile'>[] };
}): { path: (string | number)[]; message: string }[] {
  const problems: { path: (string | number)[]; message: string }[] = [];
  for (const [i, source] of config.sources.git.entries()) {
    if (source.caFile === undefined) continue;
    const problem = caFileProblem(source.caFile);
    if (typeof problem === 'string')
      problems.push({ path: ['sources', 'git', i, 'caFile'], message: problem });
  }
  return problems;
}
