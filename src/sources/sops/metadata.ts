// The `sops:` block of an encrypted file, validated with only the fields mooring reads, and SOPS's rules for which
// values are encrypted (one of unencrypted_suffix, encrypted_suffix, unencrypted_regex, encrypted_regex; by
// default the suffix `_unencrypted`).
import { goRegExp } from './go-regexp.ts';
import type { AgeKeyEntry, SopsMetadata } from './metadata-schema.ts';

export type { AgeKeyEntry, SopsMetadata } from './metadata-schema.ts';

/** The age-wrapped data keys of the file; key groups (Shamir's secret sharing over several groups) are refused. */
export function ageEntries(meta: SopsMetadata): AgeKeyEntry[] {
  const groups = meta.key_groups ?? [];
  if (groups.length > 1)
    throw new Error(`${groups.length} key groups (Shamir secret sharing) are not supported`);
  return [...(meta.age ?? []), ...(groups[0]?.age ?? [])];
}

/**
 * Which values are encrypted, decided one key at a time as the tree is walked (each key is matched once, not once
 * per value beneath it): a value is encrypted when some key on its path matches and `matchEncrypts`, or when
 * none does and not `matchEncrypts`.
 */
export interface EncryptionRule {
  matches(key: string): boolean;
  matchEncrypts: boolean;
  /** The most work matching one character of a key costs (the regex's size; 1 for a suffix). */
  cost: number;
}

export function encryptionRule(meta: SopsMetadata): EncryptionRule {
  if (meta.unencrypted_comment_regex || meta.encrypted_comment_regex)
    throw new Error('unencrypted_comment_regex and encrypted_comment_regex are not supported');
  const rules = [
    meta.unencrypted_suffix,
    meta.encrypted_suffix,
    meta.unencrypted_regex,
    meta.encrypted_regex,
  ].filter((r) => r);
  if (rules.length > 1) throw new Error('more than one encryption rule (suffix or regex) in the sops block');
  if (meta.encrypted_suffix) {
    const suffix = meta.encrypted_suffix;
    return { matches: (k) => k.endsWith(suffix), matchEncrypts: true, cost: 1 };
  }
  if (meta.unencrypted_regex) {
    const re = goRegExp('unencrypted_regex', meta.unencrypted_regex);
    return { matches: (k) => re.test(k), matchEncrypts: false, cost: re.size };
  }
  if (meta.encrypted_regex) {
    const re = goRegExp('encrypted_regex', meta.encrypted_regex);
    return { matches: (k) => re.test(k), matchEncrypts: true, cost: re.size };
  }
  const suffix = meta.unencrypted_suffix || '_unencrypted';
  return { matches: (k) => k.endsWith(suffix), matchEncrypts: false, cost: 1 };
}

/** The additional data of the MAC: `lastmodified` as Go's time.RFC3339 formats it (no fraction, `Z` for UTC). */
export function lastModifiedText(value: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.exec(value);
  if (!m) throw new Error(`lastmodified "${value}" is not an RFC 3339 time`);
  const zone = m[2]?.toUpperCase() ?? 'Z';
  return `${m[1]}${zone === '+00:00' || zone === '-00:00' ? 'Z' : zone}`;
}
