// The keys a source trusts to sign what it deploys (a Git source's commits and tags, an artifact source's digests;
// docs/verification.md), and the verdicts reached with them. Keys are read at each check (a rotated Secret file is
// read again) and parsed again only when their text changed; a verdict is kept (bounded) under the keys it was
// reached with, so that a key removed takes effect at the next check and a rollback is checked against today's keys.
import { createHash } from 'node:crypto';
import { StalledError } from '../errors.ts';

/** A key as `verify.keys` gives it: inline text, or a reference to a file or variable that holds it. */
export type KeyRef = string | { env?: string | undefined; file?: string | undefined };

/** A key's text and how messages name where it came from. */
export interface KeyText {
  text: string;
  origin: string;
}

/** The texts of `keys`, each read now; `where` names inline ones (`sources.git app verify.keys`). */
export async function keyTexts(keys: readonly KeyRef[], where: string): Promise<KeyText[]> {
  const { readSecret } = await import('../config/secret.ts');
  const texts: KeyText[] = [];
  for (const [i, key] of keys.entries()) {
    if (typeof key === 'string') texts.push({ text: key, origin: `${where}[${i}]` });
    else
      texts.push({
        text: await readSecret(key),
        origin: key.file !== undefined ? `file ${key.file}` : `environment variable ${key.env}`,
      });
  }
  return texts;
}

const VERDICTS = 256;

/**
 * One source's signature checks: `read` reads the texts of its keys (keyTexts) at each check, `parse` turns them
 * into what `check`'s callback verifies with, and the verdict on each id (a commit, a tag object, an artifact's
 * digest) is kept. A refusal (StalledError) is kept like a signer unless told otherwise; any other failure (a registry
 * that did not answer) is asked again next time.
 */
export class SignatureVerdicts<K, S> {
  readonly #read: () => Promise<KeyText[]>;
  readonly #parse: (texts: KeyText[]) => Promise<K>;
  #parsed: { digest: string; keys: Promise<K> } | undefined;
  readonly #verdicts = new Map<string, Promise<S>>();

  readonly #keepRefusals: boolean;

  /**
   * `keepRefusals`: a refusal is final for what cannot change (a commit carries its own signature); an artifact's
   * signatures are kept beside it and may be added later (a digest pushed, then signed), so it is asked again.
   */
  constructor(read: () => Promise<KeyText[]>, parse: (texts: KeyText[]) => Promise<K>, keepRefusals = true) {
    this.#read = read;
    this.#parse = parse;
    this.#keepRefusals = keepRefusals;
  }

  /** Drops the verdict on `id`: the next check reaches one again. */
  forget(id: string): void {
    this.#verdicts.delete(id);
  }

  /** The signer of `id`, or the StalledError that refuses it; `verify` checks it with the keys of now. */
  async check(id: string, verify: (keys: K) => Promise<S>): Promise<S> {
    const texts = await this.#read();
    const digest = createHash('sha256')
      .update(texts.map((t) => `${t.origin}\0${t.text}`).join('\0\0'))
      .digest('hex');
    if (this.#parsed?.digest !== digest) {
      this.#parsed = { digest, keys: this.#parse(texts) };
      this.#verdicts.clear();
    }
    const keys = this.#parsed.keys;
    let verdict = this.#verdicts.get(id);
    if (!verdict) {
      verdict = (async () => verify(await keys))();
      this.#verdicts.set(id, verdict);
      if (this.#verdicts.size > VERDICTS) this.#verdicts.delete(this.#verdicts.keys().next().value as string);
      verdict.catch((error: unknown) => {
        if (!(error instanceof StalledError && this.#keepRefusals)) this.#verdicts.delete(id);
      });
    }
    return verdict;
  }
}
