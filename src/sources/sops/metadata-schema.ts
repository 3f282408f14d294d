// The `sops:` block's schema: only the fields mooring reads, each bounded. Loaded (with zod) only when a file turns
// out to be encrypted (decrypt.ts), so that reading plain files never pays for it.
import { z } from 'zod';
import { MAX_PATTERN_LENGTH } from './go-regexp.ts';

// Bounds on what a commit can put in the block: each age entry for one of our recipients costs a decryption.
const MAX_AGE_ENTRIES = 64;
const ageKey = z.object({
  recipient: z.string().min(1).max(1024),
  enc: z
    .string()
    .min(1)
    .max(64 * 1024),
});
const pattern = z.string().max(MAX_PATTERN_LENGTH).nullish();
const suffix = z.string().max(1024).nullish();

export const sopsMetadata = z.object({
  age: z.array(ageKey).max(MAX_AGE_ENTRIES).nullish(),
  key_groups: z
    .array(z.object({ age: z.array(ageKey).max(MAX_AGE_ENTRIES).nullish() }))
    .max(MAX_AGE_ENTRIES)
    .nullish(),
  shamir_threshold: z.number().int().nullish(),
  lastmodified: z.string().min(1).max(64),
  mac: z.string().max(1024),
  unencrypted_suffix: suffix,
  encrypted_suffix: suffix,
  unencrypted_regex: pattern,
  encrypted_regex: pattern,
  unencrypted_comment_regex: pattern,
  encrypted_comment_regex: pattern,
  mac_only_encrypted: z.boolean().nullish(),
});

export type SopsMetadata = z.infer<typeof sopsMetadata>;
export type AgeKeyEntry = z.infer<typeof ageKey>;
