// Reading the secrets that the config refers to (`{env: NAME}` or `{file: PATH}`). The value itself never
// appears in an error: messages name only the variable or the file, so they are safe to log and report.
import { readFile } from 'node:fs/promises';
import { StalledError } from '../errors.ts';

// A credential is short; a larger file is almost certainly the wrong path (and would bloat memory).
const MAX_SECRET_BYTES = 1024 * 1024;

export async function readSecret(ref: {
  env?: string | undefined;
  file?: string | undefined;
}): Promise<string> {
  if (ref.env !== undefined) {
    const value = process.env[ref.env];
    if (value === undefined) throw new StalledError(`environment variable ${ref.env} is not set`);
    return trimNewline(value);
  }
  if (ref.file !== undefined) {
    let data: Buffer;
    try {
      data = await readFile(ref.file);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
      // The cause is a Node fs error, which names the path and errno only, never the contents.
      throw new StalledError(`cannot read secret file ${ref.file} (${code})`, { cause: error });
    }
    if (data.length > MAX_SECRET_BYTES) {
      throw new StalledError(`secret file ${ref.file} is ${data.length} bytes, over ${MAX_SECRET_BYTES}`);
    }
    return trimNewline(data.toString('utf8'));
  }
  throw new StalledError('a secret reference needs "env" or "file"');
}

// Files written by `echo` or editors end in a newline that is not part of the secret.
function trimNewline(value: string): string {
  return value.replace(/\r?\n$/, '');
}
