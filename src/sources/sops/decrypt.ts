// Decrypting SOPS files (age recipients) in-process, before render: a manifest file with a top-level `sops:`
// block has its values decrypted, its MAC verified as sops verifies it, and its `sops:` blocks removed. Other files
// pass through untouched. A file that cannot be decrypted is a StalledError naming it: no part of it is used.
// Error messages name files, paths of keys and recipients, never a value. A commit chooses the file, its rules and
// its data key (the recipients are public), so the MAC is checked before the tree is trusted and the walk over it
// is bounded (walk.ts).
import { createHash, timingSafeEqual } from 'node:crypto';
import { type Document, isMap, isScalar } from 'yaml';
import { errorMessage, StalledError } from '../../errors.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { redactableValues } from '../../render/redact.ts';
import { parseYamlDocuments } from '../../yaml/parse.ts';
import type { AgeIdentity } from './age-keys.ts';
import { decryptValue } from './cipher.ts';
import { loadGoRegExp } from './go-regexp.ts';
import {
  type AgeKeyEntry,
  ageEntries,
  encryptionRule,
  lastModifiedText,
  type SopsMetadata,
} from './metadata.ts';
import { TreeWalk, WALK_LIMITS, type WalkLimits, type WalkStats } from './walk.ts';

/** The identities, or how to get them: read only when a file turns out to be encrypted. */
export type IdentitySource = readonly AgeIdentity[] | (() => Promise<readonly AgeIdentity[]>);

// sops starts the MAC of a file encrypted with mac_only_encrypted with these bytes (sops.go).
const MAC_ONLY_ENCRYPTED_INIT = Buffer.from(
  '8a3fd2ad54ce66527b1034f3d147be0b0b975b3bf44f72c6fdadec8176f27d69',
  'hex',
);

// A cheap look before parsing: a top-level `sops` key in YAML or JSON.
const MAY_BE_SOPS = /^["']?sops["']?[ \t]*:|"sops"\s*:/m;

/** Whether decryption would compose the text (it may hold a `sops:` block); a quick look, no YAML read. */
export function maySopsText(text: string): boolean {
  return MAY_BE_SOPS.test(text);
}

/** Whether a file's text is SOPS-encrypted: a top-level `sops:` block (a broken one counts, to fail naming it). */
export function isSopsText(text: string): boolean {
  if (!MAY_BE_SOPS.test(text)) return false;
  try {
    return sopsDocuments({ path: '', text }) !== undefined;
  } catch {
    return true;
  }
}

export interface DecryptOptions {
  /** Bounds of the walk over each file's tree (tests lower them). */
  limits?: Partial<WalkLimits> | undefined;
  /** Filled with what the walks cost, all files together (the limits apply to each file on its own). */
  stats?: WalkStats | undefined;
}

/**
 * The files with every SOPS file decrypted; the others as they were, in the same order. A decrypted file carries
 * `secrets`, the values decrypted from it worth redacting (render/redact.ts), for whatever later shows text built
 * from it: an error that quotes a value, the audit log, `mooring render`.
 */
/**
 * The files without their SOPS-encrypted ones, each left out named in a warning (a preview of a pull request does
 * not decrypt: whatever a template makes of a decrypted value would be shown, however it is encoded).
 */
export function omitEncrypted(files: readonly ManifestFile[], why: string): ManifestFile[] {
  const out: ManifestFile[] = [];
  for (const file of files) {
    if (MAY_BE_SOPS.test(file.text) && sopsDocuments(file))
      out.push({ path: file.path, text: '', warnings: [`${file.path}: SOPS-encrypted, left out (${why})`] });
    else out.push(file);
  }
  return out;
}

export async function decryptFiles(
  files: readonly ManifestFile[],
  identities: IdentitySource,
  options: DecryptOptions = {},
): Promise<ManifestFile[]> {
  let loaded: readonly AgeIdentity[] | undefined;
  const limits = { ...WALK_LIMITS, ...options.limits };
  const out: ManifestFile[] = [];
  for (const file of files) {
    const found = MAY_BE_SOPS.test(file.text) ? sopsDocuments(file) : undefined;
    if (!found) {
      out.push(file);
      continue;
    }
    const meta = await validMetadata(file, found.block);
    loaded ??= typeof identities === 'function' ? await identities() : identities;
    try {
      const stats: WalkStats = { steps: 0, values: 0 };
      const { text, decrypted } = await decryptDocuments(found.docs, meta, loaded, limits, stats).finally(
        () => {
          if (options.stats) {
            options.stats.steps += stats.steps;
            options.stats.values += stats.values;
          }
        },
      );
      out.push({ path: file.path, text, secrets: redactableValues(decrypted) });
    } catch (error) {
      throw cannotDecrypt(file, errorMessage(error), error);
    }
  }
  return out;
}

function cannotDecrypt(file: ManifestFile, why: string, cause?: unknown): StalledError {
  return new StalledError(`cannot decrypt (sops): ${why}`, { subject: { describe: file.path }, cause });
}

/** The documents and the `sops:` block of a SOPS file, or undefined when the file has no `sops:` block. */
function sopsDocuments(file: ManifestFile): { docs: Document[]; block: unknown } | undefined {
  const docs = parseYamlDocuments(file.text, { file: file.path, rules: 'sops' });
  const blocks = docs.map((d) => (isMap(d.contents) ? d.contents.get('sops', true) : undefined));
  if (blocks.every((b) => b === undefined)) return undefined;
  // A file sops wrote parses; a broken one is not passed on with its ciphertext either.
  const broken = docs.find((d) => d.errors.length > 0);
  if (broken) throw cannotDecrypt(file, `invalid YAML: ${broken.errors[0]?.code ?? 'syntax error'}`);
  const first = docs[0]?.contents;
  const block = isMap(first) ? first.get('sops', true) : undefined;
  // sops reads the block of the first document (it writes one into each).
  if (!isMap(block)) throw cannotDecrypt(file, 'the first document has no sops mapping');
  return { docs, block: block.toJSON() };
}

/** The `sops:` block checked against its schema (loaded with the first encrypted file). */
async function validMetadata(file: ManifestFile, block: unknown): Promise<SopsMetadata> {
  const { sopsMetadata } = await import('./metadata-schema.ts');
  const parsed = sopsMetadata.safeParse(block);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw cannotDecrypt(file, `sops.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

/**
 * The documents' text decrypted, and the values decrypted from them. The MAC is decrypted first (it needs only the
 * data key and `lastmodified`), then the tree is walked, bounded, and nothing of it is used unless the MAC computed
 * over it matches.
 */
async function decryptDocuments(
  docs: Document[],
  meta: SopsMetadata,
  identities: readonly AgeIdentity[],
  limits: WalkLimits,
  stats: WalkStats,
): Promise<{ text: string; decrypted: string[] }> {
  if (meta.encrypted_regex || meta.unencrypted_regex) await loadGoRegExp();
  const rule = encryptionRule(meta);
  const aad = lastModifiedText(meta.lastmodified);
  const key = await dataKey(ageEntries(meta), identities);
  if (meta.mac === '') throw new Error('the file has no MAC (sops.mac is empty)');
  let mac: string;
  try {
    mac = decryptValue(meta.mac, key, aad).plaintext.toString('utf8');
  } catch (error) {
    throw new Error(`sops.mac ${errorMessage(error)}`);
  }
  if (!/^[0-9A-F]{128}$/.test(mac)) throw new Error('sops.mac does not hold a SHA-512 digest');
  const macOnlyEncrypted = meta.mac_only_encrypted === true;
  const hash = createHash('sha512');
  if (macOnlyEncrypted) hash.update(MAC_ONLY_ENCRYPTED_INIT);
  const walk = new TreeWalk({ key, rule, hash, macOnlyEncrypted, limits, stats });
  for (const doc of docs) {
    const root = doc.contents;
    if (root === null || (isScalar(root) && root.value === null)) continue;
    if (!isMap(root)) throw new Error('a document is not a mapping');
    root.delete('sops');
    await walk.document(doc, root);
  }
  const computed = Buffer.from(hash.digest('hex').toUpperCase());
  if (!timingSafeEqual(Buffer.from(mac), computed))
    throw new Error('MAC mismatch: the file was changed after it was encrypted');
  const text = docs
    .map((d, i) => {
      const text = d.toString();
      return i === 0 || text.startsWith('---') ? text : `---\n${text}`;
    })
    .join('');
  return { text, decrypted: walk.decrypted };
}

/** The data key, unwrapped by the first identity that holds one of the file's age recipients. */
async function dataKey(entries: AgeKeyEntry[], identities: readonly AgeIdentity[]): Promise<Uint8Array> {
  if (entries.length === 0)
    throw new Error('the file has no age recipient (other key types are not supported)');
  const recipients = entries.map((e) => e.recipient).join(', ');
  const ours = new Set(identities.map((i) => i.recipient));
  const matching = entries.filter((e) => ours.has(e.recipient));
  if (matching.length === 0) {
    const hint = identities.length === 0 ? ' (no age key given: --age-key-file, SOPS_AGE_KEY_FILE)' : '';
    throw new Error(`no age identity for recipient ${recipients}${hint}`);
  }
  // age-encryption (and its post-quantum curves) is loaded on the first SOPS file, not by every agent.
  const { armor, Decrypter } = await import('age-encryption');
  const decrypter = new Decrypter();
  for (const identity of identities) decrypter.addIdentity(identity.secret);
  let last = '';
  for (const entry of matching) {
    try {
      const key = await decrypter.decrypt(armor.decode(entry.enc));
      if (key.length !== 32) throw new Error(`a data key of ${key.length} bytes instead of 32`);
      return key;
    } catch (error) {
      last = `the data key of recipient ${entry.recipient} does not decrypt: ${errorMessage(error)}`;
    }
  }
  throw new Error(last);
}
