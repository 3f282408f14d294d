// Decrypting SOPS files (age recipients) in-process, before render: a manifest file with a top-level `sops:`
// block has its values decrypted, its MAC verified as sops verifies it, and its `sops:` blocks removed. Other files
// pass through untouched. A file that cannot be decrypted is a StalledError naming it: no part of it is used.
// Error messages name files, paths of keys and recipients, never a value.
import { createHash } from 'node:crypto';
import {
  type Document,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  type Node,
  parseAllDocuments,
  type Scalar,
  type YAMLMap,
} from 'yaml';
import { errorMessage, StalledError } from '../../errors.ts';
import type { ManifestFile } from '../../render/parse.ts';
import type { AgeIdentity } from './age-keys.ts';
import { decryptValue, typedValue } from './cipher.ts';
import {
  type AgeKeyEntry,
  ageEntries,
  type EncryptionRule,
  encryptionRule,
  lastModifiedText,
  type SopsMetadata,
  sopsMetadata,
} from './metadata.ts';

/** The identities, or how to get them: read only when a file turns out to be encrypted. */
export type IdentitySource = readonly AgeIdentity[] | (() => Promise<readonly AgeIdentity[]>);

// sops starts the MAC of a file encrypted with mac_only_encrypted with these bytes (sops.go).
const MAC_ONLY_ENCRYPTED_INIT = Buffer.from(
  '8a3fd2ad54ce66527b1034f3d147be0b0b975b3bf44f72c6fdadec8176f27d69',
  'hex',
);

// A cheap look before parsing: a top-level `sops` key in YAML or JSON.
const MAY_BE_SOPS = /^["']?sops["']?[ \t]*:|"sops"\s*:/m;

/** Whether a file's text is SOPS-encrypted: a top-level `sops:` block (a broken one counts, to fail naming it). */
export function isSopsText(text: string): boolean {
  if (!MAY_BE_SOPS.test(text)) return false;
  try {
    return sopsDocuments({ path: '', text }) !== undefined;
  } catch {
    return true;
  }
}

/** The files with every SOPS file decrypted; the others as they were, in the same order. */
export async function decryptFiles(
  files: readonly ManifestFile[],
  identities: IdentitySource,
): Promise<ManifestFile[]> {
  let loaded: readonly AgeIdentity[] | undefined;
  const out: ManifestFile[] = [];
  for (const file of files) {
    const found = MAY_BE_SOPS.test(file.text) ? sopsDocuments(file) : undefined;
    if (!found) {
      out.push(file);
      continue;
    }
    loaded ??= typeof identities === 'function' ? await identities() : identities;
    try {
      out.push({ path: file.path, text: await decryptDocuments(found.docs, found.meta, loaded) });
    } catch (error) {
      throw cannotDecrypt(file, errorMessage(error), error);
    }
  }
  return out;
}

function cannotDecrypt(file: ManifestFile, why: string, cause?: unknown): StalledError {
  return new StalledError(`cannot decrypt (sops): ${why}`, { subject: { describe: file.path }, cause });
}

/** The documents and the metadata of a SOPS file, or undefined when the file has no `sops:` block. */
function sopsDocuments(file: ManifestFile): { docs: Document[]; meta: SopsMetadata } | undefined {
  const docs = parseAllDocuments(file.text, { uniqueKeys: true });
  if (!Array.isArray(docs)) return undefined;
  const blocks = docs.map((d) => (isMap(d.contents) ? d.contents.get('sops', true) : undefined));
  if (blocks.every((b) => b === undefined)) return undefined;
  // A file sops wrote parses; a broken one is not passed on with its ciphertext either.
  const broken = docs.find((d) => d.errors.length > 0);
  if (broken) throw cannotDecrypt(file, `invalid YAML: ${broken.errors[0]?.code ?? 'syntax error'}`);
  const first = docs[0]?.contents;
  const block = isMap(first) ? first.get('sops', true) : undefined;
  // sops reads the block of the first document (it writes one into each).
  if (!isMap(block)) throw cannotDecrypt(file, 'the first document has no sops mapping');
  const parsed = sopsMetadata.safeParse(block.toJSON());
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw cannotDecrypt(file, `sops.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return { docs, meta: parsed.data };
}

async function decryptDocuments(
  docs: Document[],
  meta: SopsMetadata,
  identities: readonly AgeIdentity[],
): Promise<string> {
  const rule = encryptionRule(meta);
  const aad = lastModifiedText(meta.lastmodified);
  const key = await dataKey(ageEntries(meta), identities);
  const macOnlyEncrypted = meta.mac_only_encrypted === true;
  const hash = createHash('sha512');
  if (macOnlyEncrypted) hash.update(MAC_ONLY_ENCRYPTED_INIT);
  const walker: Walker = { key, rule, hash, macOnlyEncrypted };
  for (const doc of docs) {
    const root = doc.contents;
    if (root === null || (isScalar(root) && root.value === null)) continue;
    if (!isMap(root)) throw new Error('a document is not a mapping');
    root.delete('sops');
    walkMap(walker, doc, root, []);
  }
  const mac = decryptValue(meta.mac, key, aad).plaintext.toString('utf8');
  if (mac !== hash.digest('hex').toUpperCase())
    throw new Error('MAC mismatch: the file was changed after it was encrypted');
  return docs
    .map((d, i) => {
      const text = d.toString();
      return i === 0 || text.startsWith('---') ? text : `---\n${text}`;
    })
    .join('');
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

interface Walker {
  key: Uint8Array;
  rule: EncryptionRule;
  hash: ReturnType<typeof createHash>;
  macOnlyEncrypted: boolean;
}

// As sops walks its tree: keys in order, list items under their list's path (no index), null values skipped.
function walkMap(w: Walker, doc: Document, map: YAMLMap, path: string[]): void {
  for (const pair of map.items) {
    const k = isScalar(pair.key) ? pair.key.value : pair.key;
    if (typeof k !== 'string' && typeof k !== 'number' && typeof k !== 'boolean')
      throw new Error(`a key under ${describePath(path)} is not a scalar`);
    pair.value = walkValue(w, doc, pair.value as Node | null, [...path, String(k)]);
  }
}

function walkValue(w: Walker, doc: Document, node: Node | null, path: string[]): Node | null {
  if (node === null || node === undefined) return node;
  if (isAlias(node)) throw new Error(`${describePath(path)}: YAML aliases are not supported in a SOPS file`);
  if (isMap(node)) {
    walkMap(w, doc, node, path);
    return node;
  }
  if (isSeq(node)) {
    node.items = node.items.map((item) => walkValue(w, doc, item as Node | null, path));
    return node;
  }
  if (!isScalar(node) || node.value === null || node.value === undefined) return node;
  const encrypted = w.rule(path);
  if (!encrypted) {
    if (!w.macOnlyEncrypted) w.hash.update(goText(node.value));
    return node;
  }
  if (typeof node.value !== 'string')
    throw new Error(`${describePath(path)}: an encrypted value is not a string`);
  try {
    const value = decryptValue(node.value, w.key, `${path.join(':')}:`);
    w.hash.update(value.plaintext);
    return doc.createNode(typedValue(value)) as Scalar;
  } catch (error) {
    throw new Error(`${describePath(path)}: the value ${errorMessage(error)}`);
  }
}

function describePath(path: readonly string[]): string {
  return path.length === 0 ? 'the document' : path.join('.');
}

/** A value as sops's ToBytes writes an unencrypted one into the MAC (Go's formatting). */
function goText(value: unknown): string {
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') {
    const text = String(value);
    if (!/e/i.test(text)) return text;
    return value.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 100 });
  }
  return String(value);
}
