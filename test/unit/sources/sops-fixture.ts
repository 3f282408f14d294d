// Test fixtures: SOPS files encrypted for age recipients, written as sops writes them (the sops binary cannot be
// installed here, so this encryption, following sops's format, is the fixture): a random 32-byte data key wrapped
// for each recipient with age (armored), every value `ENC[AES256_GCM,data,iv,tag,type]` under that key with a
// 32-byte IV and its path (`a:b:`) as additional data, and the MAC (SHA-512 over the plaintexts, upper-case hex)
// encrypted under `lastmodified`. The `sops:` block is appended to every document.
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { armor, Encrypter, generateX25519Identity, identityToRecipient } from 'age-encryption';
import { RE2JS } from 're2js';
import { stringify } from 'yaml';

export interface SopsOptions {
  recipients: string[];
  /** Go (RE2) expressions, matched with RE2 as sops does (re2js). */
  encryptedRegex?: string;
  unencryptedRegex?: string;
  unencryptedSuffix?: string;
  lastmodified?: string;
  /** Make the MAC over something else (to test that a wrong MAC is refused). */
  tamperMac?: boolean;
  /** Encrypt the MAC under other additional data than `lastmodified` (it then does not decrypt). */
  tamperMacCipher?: boolean;
  /** Fields written into the sops block as they are (after the others). */
  extraSops?: Record<string, Json>;
}

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

export async function newAgeKey(): Promise<{ secret: string; recipient: string }> {
  const secret = await generateX25519Identity();
  return { secret, recipient: await identityToRecipient(secret) };
}

function goText(value: string | number | boolean): { type: string; bytes: Buffer } {
  if (typeof value === 'boolean') return { type: 'bool', bytes: Buffer.from(value ? 'True' : 'False') };
  if (typeof value === 'number')
    return { type: Number.isInteger(value) ? 'int' : 'float', bytes: Buffer.from(String(value)) };
  return { type: 'str', bytes: Buffer.from(value, 'utf8') };
}

export function encryptValue(plain: Buffer, type: string, key: Buffer, aad: string): string {
  const iv = randomBytes(32);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const data = Buffer.concat([cipher.update(plain), cipher.final()]);
  const tag = cipher.getAuthTag();
  return `ENC[AES256_GCM,data:${data.toString('base64')},iv:${iv.toString('base64')},tag:${tag.toString('base64')},type:${type}]`;
}

/** The documents encrypted as one SOPS YAML file. */
export async function encryptSops(docs: Record<string, Json>[], options: SopsOptions): Promise<string> {
  const key = randomBytes(32);
  const hash = createHash('sha512');
  const encryptedRe = options.encryptedRegex ? RE2JS.compile(options.encryptedRegex) : undefined;
  const unencryptedRe = options.unencryptedRegex ? RE2JS.compile(options.unencryptedRegex) : undefined;
  const encrypts = (path: string[]) =>
    encryptedRe
      ? path.some((k) => encryptedRe.test(k))
      : unencryptedRe
        ? !path.some((k) => unencryptedRe.test(k))
        : !path.some((k) => k.endsWith(options.unencryptedSuffix ?? '_unencrypted'));
  const walk = (value: Json, path: string[]): Json => {
    if (value === null) return null;
    if (Array.isArray(value)) return value.map((v) => walk(v, path));
    if (typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]));
    const { type, bytes } = goText(value);
    hash.update(bytes);
    if (!encrypts(path)) return value;
    if (bytes.length === 0) return '';
    return encryptValue(bytes, type, key, `${path.join(':')}:`);
  };
  const encrypted = docs.map((d) => walk(d, []) as Record<string, Json>);
  if (options.tamperMac) hash.update('tampered');
  const lastmodified = options.lastmodified ?? '2026-01-02T03:04:05Z';
  const age = [];
  for (const recipient of options.recipients) {
    const e = new Encrypter();
    e.addRecipient(recipient);
    age.push({ recipient, enc: armor.encode(await e.encrypt(key)) });
  }
  const sops = {
    age,
    lastmodified,
    mac: encryptValue(
      Buffer.from(hash.digest('hex').toUpperCase()),
      'str',
      key,
      options.tamperMacCipher ? 'another time' : lastmodified.replace(/\.\d+/, ''),
    ),
    ...(options.encryptedRegex ? { encrypted_regex: options.encryptedRegex } : {}),
    ...(options.unencryptedRegex ? { unencrypted_regex: options.unencryptedRegex } : {}),
    ...(options.unencryptedSuffix ? { unencrypted_suffix: options.unencryptedSuffix } : {}),
    version: '3.9.4',
    ...options.extraSops,
  };
  return encrypted.map((d) => stringify({ ...d, sops })).join('---\n');
}
