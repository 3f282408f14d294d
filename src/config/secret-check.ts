// Checking, at start, that every secret the configuration refers to can be read: a missing file or an unset
// environment variable is found before the agent runs, not at the first sync that needs it. Messages name the
// field, the file or the variable, never a value.
import { errorMessage } from '../errors.ts';
import { isSecretRef, type ReferenceProblem, type SecretRef } from './schema.ts';
import { readSecret } from './secret.ts';

export interface FoundSecret {
  path: (string | number)[];
  ref: SecretRef;
}

/** Every secret reference in a parsed config, with its field path, in document order. */
export function secretReferences(config: unknown): FoundSecret[] {
  const found: FoundSecret[] = [];
  const walk = (value: unknown, path: (string | number)[]): void => {
    if (isSecretRef(value)) found.push({ path, ref: value });
    else if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) walk(item, [...path, i]);
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) walk(item, [...path, key]);
    }
  };
  walk(config, []);
  return found;
}

/** One problem per secret that cannot be read (its value, when it can, is dropped at once). */
export async function checkSecrets(config: unknown): Promise<ReferenceProblem[]> {
  const problems: ReferenceProblem[] = [];
  for (const { path, ref } of secretReferences(config)) {
    try {
      await readSecret(ref);
    } catch (error) {
      // readSecret's messages name the variable or the file only.
      problems.push({ path, message: errorMessage(error) });
    }
  }
  return problems;
}
