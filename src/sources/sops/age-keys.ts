// The age identities SOPS files are decrypted with: key files as age-keygen writes them (`AGE-SECRET-KEY-1…`
// lines, `#` comments), named by --age-key-file, the agent's `decryption.ageKeyFile`, or, as sops reads them, the
// environment's SOPS_AGE_KEY_FILE (a file) and SOPS_AGE_KEY (the keys themselves).

import { StalledError } from '../../errors.ts';
import { FileTooLargeError, readBounded } from '../local/bounded-read.ts';

const IDENTITY = /^AGE-SECRET-KEY-(PQ-)?1[02-9ac-hj-np-z]+$/i;

export interface AgeIdentity {
  /** The secret key, `AGE-SECRET-KEY-1…`. Never logged. */
  secret: string;
  /** Its public recipient, `age1…`, matched against the recipients a file names. */
  recipient: string;
}

/** Parses a key file; `from` names it in errors (the line, never the key). */
export async function parseAgeKeys(text: string, from: string): Promise<AgeIdentity[]> {
  const identities: AgeIdentity[] = [];
  const lines = text.split(/\r?\n/);
  // age-encryption (and its post-quantum curves) is loaded only when there is a key to read.
  let toRecipient: ((identity: string) => Promise<string>) | undefined;
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = { describe: `${from}:${index + 1}` };
    if (!IDENTITY.test(line))
      throw new StalledError('is not an age identity (AGE-SECRET-KEY-1…)', { subject: where });
    try {
      toRecipient ??= (await import('age-encryption')).identityToRecipient;
      identities.push({ secret: line, recipient: await toRecipient(line) });
    } catch {
      throw new StalledError('is not a valid age identity', { subject: where });
    }
  }
  return identities;
}

/** An age key file holds lines of about 75 bytes: thousands of identities fit. */
const AGE_KEY_FILE_MAX_BYTES = 1024 * 1024;

export async function readAgeKeyFile(path: string): Promise<AgeIdentity[]> {
  let text: string;
  try {
    // Named by the user (a pipe from a secret manager is fine), but bounded: `/dev/zero` is no key file.
    text = await readBounded(path, AGE_KEY_FILE_MAX_BYTES, { anyKind: true });
  } catch (error) {
    if (error instanceof FileTooLargeError)
      throw new StalledError(`is more than ${AGE_KEY_FILE_MAX_BYTES} bytes: not an age key file`, {
        subject: { describe: path },
      });
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new StalledError(`cannot read the age key file (${code})`, {
      subject: { describe: path },
      cause: error,
    });
  }
  const identities = await parseAgeKeys(text, path);
  if (identities.length === 0)
    throw new StalledError('holds no age identity', { subject: { describe: path } });
  return identities;
}

/**
 * The identities of a key file named by a flag or the config, else of the environment as sops reads it. None
 * when nothing names any: a SOPS file then fails naming its recipients.
 */
export async function loadAgeIdentities(
  file: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<AgeIdentity[]> {
  if (file) return readAgeKeyFile(file);
  const identities: AgeIdentity[] = [];
  if (env.SOPS_AGE_KEY_FILE) identities.push(...(await readAgeKeyFile(env.SOPS_AGE_KEY_FILE)));
  if (env.SOPS_AGE_KEY) identities.push(...(await parseAgeKeys(env.SOPS_AGE_KEY, 'SOPS_AGE_KEY')));
  return identities;
}
