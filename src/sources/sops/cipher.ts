// SOPS's value cipher: `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`, AES-256-GCM under the file's data key, the
// additional data being the value's path (keys joined with `:`, and a trailing `:`). Only decryption: mooring
// reads SOPS files, it never writes them.
import { createDecipheriv } from 'node:crypto';

// Each field stops at the delimiter after it (base64 has no `,`; a type no `]`), so matching is linear: with `.+`
// fields a crafted value (`data:,iv:,tag:,type:` repeated, no closing `]`) backtracks for minutes.
const ENCRYPTED = /^ENC\[AES256_GCM,data:([^,]*),iv:([^,]+),tag:([^,]+),type:([^\]]+)\]$/;

/** The Go types SOPS records for a value; the plaintext is their text form. */
export type SopsValueType = 'str' | 'int' | 'int64' | 'float' | 'bool' | 'bytes' | 'comment';

const TYPES: ReadonlySet<string> = new Set(['str', 'int', 'int64', 'float', 'bool', 'bytes', 'comment']);

export interface DecryptedValue {
  type: SopsValueType;
  /** The plaintext bytes: what SOPS feeds its MAC with. */
  plaintext: Buffer;
}

export function isEncryptedValue(value: string): boolean {
  return ENCRYPTED.test(value);
}

/** Decrypts one value; throws an Error whose message names no plaintext. An empty value stays empty, as in SOPS. */
export function decryptValue(value: string, key: Uint8Array, additionalData: string): DecryptedValue {
  if (value === '') return { type: 'str', plaintext: Buffer.alloc(0) };
  const match = ENCRYPTED.exec(value);
  if (!match) throw new Error('is not an ENC[AES256_GCM,…] value');
  const [, data = '', iv = '', tag = '', type = ''] = match;
  if (!TYPES.has(type)) throw new Error(`has an unknown type "${type}"`);
  const ivBytes = Buffer.from(iv, 'base64');
  const tagBytes = Buffer.from(tag, 'base64');
  if (ivBytes.length === 0 || tagBytes.length !== 16) throw new Error('has a malformed iv or tag');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, ivBytes, { authTagLength: 16 });
    decipher.setAAD(Buffer.from(additionalData, 'utf8'));
    decipher.setAuthTag(tagBytes);
    const plaintext = Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]);
    return { type: type as SopsValueType, plaintext };
  } catch {
    // The cause is OpenSSL's "unable to authenticate data": wrong key, altered value, or a value moved elsewhere.
    throw new Error('does not authenticate (altered, moved, or encrypted under another data key)');
  }
}

/** The plaintext as the YAML/JSON value SOPS would write back: a string, number or boolean. */
export function typedValue(value: DecryptedValue): string | number | boolean {
  const text = value.plaintext.toString('utf8');
  switch (value.type) {
    case 'int':
    case 'int64':
    case 'float': {
      const n = Number(text);
      if (text.trim() === '' || !Number.isFinite(n)) throw new Error(`holds no ${value.type}`);
      return n;
    }
    case 'bool':
      // Go's strconv.ParseBool, which SOPS uses.
      if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
      if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
      throw new Error('holds no bool');
    default:
      return text;
  }
}
