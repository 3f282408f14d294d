// The `sops:` block of an encrypted file, validated with only the fields mooring reads, and SOPS's rules for which
// values are encrypted (one of unencrypted_suffix, encrypted_suffix, unencrypted_regex, encrypted_regex; by
// default the suffix `_unencrypted`).
import { z } from 'zod';

const ageKey = z.object({ recipient: z.string().min(1), enc: z.string().min(1) });

export const sopsMetadata = z.object({
  age: z.array(ageKey).nullish(),
  key_groups: z.array(z.object({ age: z.array(ageKey).nullish() })).nullish(),
  shamir_threshold: z.number().int().nullish(),
  lastmodified: z.string().min(1),
  mac: z.string(),
  unencrypted_suffix: z.string().nullish(),
  encrypted_suffix: z.string().nullish(),
  unencrypted_regex: z.string().nullish(),
  encrypted_regex: z.string().nullish(),
  unencrypted_comment_regex: z.string().nullish(),
  encrypted_comment_regex: z.string().nullish(),
  mac_only_encrypted: z.boolean().nullish(),
});

export type SopsMetadata = z.infer<typeof sopsMetadata>;
export type AgeKeyEntry = z.infer<typeof ageKey>;

/** The age-wrapped data keys of the file; key groups (Shamir's secret sharing over several groups) are refused. */
export function ageEntries(meta: SopsMetadata): AgeKeyEntry[] {
  const groups = meta.key_groups ?? [];
  if (groups.length > 1)
    throw new Error(`${groups.length} key groups (Shamir secret sharing) are not supported`);
  return [...(meta.age ?? []), ...(groups[0]?.age ?? [])];
}

/** Whether the value at `path` (its keys, outermost first) is encrypted. */
export type EncryptionRule = (path: readonly string[]) => boolean;

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
    return (path) => path.some((k) => k.endsWith(suffix));
  }
  if (meta.unencrypted_regex) {
    const re = goRegExp(meta.unencrypted_regex);
    return (path) => !path.some((k) => re.test(k));
  }
  if (meta.encrypted_regex) {
    const re = goRegExp(meta.encrypted_regex);
    return (path) => path.some((k) => re.test(k));
  }
  const suffix = meta.unencrypted_suffix || '_unencrypted';
  return (path) => !path.some((k) => k.endsWith(suffix));
}

/** A Go (RE2) expression as a JavaScript one; a leading `(?i)`-style flag group becomes flags. */
function goRegExp(source: string): RegExp {
  const flags = /^\(\?([imsU]+)\)/.exec(source);
  const body = flags ? source.slice(flags[0].length) : source;
  const js = [...(flags?.[1] ?? '')].filter((f) => f === 'i' || f === 'm' || f === 's').join('');
  try {
    return new RegExp(body, js);
  } catch {
    throw new Error(`the regular expression "${source}" of the sops block is not supported`);
  }
}

/** The additional data of the MAC: `lastmodified` as Go's time.RFC3339 formats it (no fraction, `Z` for UTC). */
export function lastModifiedText(value: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.exec(value);
  if (!m) throw new Error(`lastmodified "${value}" is not an RFC 3339 time`);
  const zone = m[2]?.toUpperCase() ?? 'Z';
  return `${m[1]}${zone === '+00:00' || zone === '-00:00' ? 'Z' : zone}`;
}
