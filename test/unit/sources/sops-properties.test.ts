// Properties of decrypting SOPS files that a commit's author controls (rules, keys, values, structure), checked
// over generated files: the walk's work is bounded by the file's length (counted in steps, never timed), stops
// within its budget, and no error message ever holds a decrypted value.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { errorMessage } from '../../../src/errors.ts';
import { type AgeIdentity, parseAgeKeys } from '../../../src/sources/sops/age-keys.ts';
import { decryptFiles } from '../../../src/sources/sops/decrypt.ts';
import { goRegExp, loadGoRegExp } from '../../../src/sources/sops/go-regexp.ts';
import type { WalkStats } from '../../../src/sources/sops/walk.ts';
import { encryptSops, type Json, newAgeKey } from './sops-fixture.ts';

// The engine loads with the first SOPS file that has a rule; these tests call the rules directly.
beforeAll(loadGoRegExp);

const key = await newAgeKey();
const identities: AgeIdentity[] = await parseAgeKeys(`${key.secret}\n`, 'keys.txt');

// Regular expressions from a small grammar that includes what backtracking engines choke on: nested and adjacent
// quantifiers over overlapping atoms, alternations of prefixes, optional anchors and Go's inline flags.
const atom = fc.constantFrom('a', 'b', 'A', '!', '.', '[ab]', '\\w', '_', 'a|aa');
const regex: fc.Arbitrary<string> = fc.letrec<{ expr: string }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atom,
    fc.tuple(tie('expr'), tie('expr')).map(([x, y]) => `${x}${y}`),
    fc.tuple(tie('expr'), tie('expr')).map(([x, y]) => `(?:${x}|${y})`),
    fc.tuple(tie('expr'), fc.constantFrom('*', '+', '?', '{2,5}')).map(([x, q]) => `(${x})${q}`),
  ),
})).expr;
const pattern = fc
  .tuple(fc.constantFrom('', '(?i)', '(?s)', '(?U)'), fc.boolean(), regex, fc.boolean())
  .map(([flags, start, body, end]) => `${flags}${start ? '^' : ''}${body}${end ? '$' : ''}`);

type Rule = { encryptedRegex: string } | { unencryptedRegex: string } | { unencryptedSuffix: string };
const rule: fc.Arbitrary<Rule> = fc.oneof(
  pattern.map((p) => ({ encryptedRegex: p })),
  pattern.map((p) => ({ unencryptedRegex: p })),
  fc.constant({ unencryptedSuffix: '_unencrypted' }),
);

// Keys from the letters the patterns use (long runs of `a` then `!` among them); values are canaries that no key,
// rule or metadata can contain (keys have no `-`).
const keyText = fc.oneof(
  fc.stringMatching(/^[aAb!_]{1,12}$/),
  fc.integer({ min: 10, max: 60 }).map((n) => `${'a'.repeat(n)}!`),
  fc.constant('x_unencrypted'),
);
const canary = fc.stringMatching(/^[A-Za-z0-9]{6,16}$/).map((s) => `canary-${s}`);
const leaf: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: canary },
  fc.integer({ min: 1000, max: 1e9 }),
);
const tree: fc.Arbitrary<Json> = fc.letrec<{ node: Json }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    leaf,
    fc.array(tie('node'), { minLength: 1, maxLength: 4 }),
    fc.dictionary(keyText, tie('node'), { minKeys: 1, maxKeys: 5 }),
  ),
})).node;
const document = fc.dictionary(keyText, tree, { minKeys: 1, maxKeys: 6 });

/** Every scalar of a document, as text (what decryption may produce). */
function scalars(value: Json): string[] {
  if (value === null) return [];
  if (Array.isArray(value)) return value.flatMap(scalars);
  if (typeof value === 'object') return Object.values(value).flatMap(scalars);
  return [String(value)];
}

function ruleSize(r: Rule): number {
  if ('encryptedRegex' in r) return goRegExp('encrypted_regex', r.encryptedRegex).size;
  if ('unencryptedRegex' in r) return goRegExp('unencrypted_regex', r.unencryptedRegex).size;
  return 1;
}

describe('decrypting generated SOPS files', () => {
  it('round-trips, and its work is linear in the file: steps ≤ (rule size + 4) × characters', async () => {
    await fc.assert(
      fc.asyncProperty(document, rule, async (doc, r) => {
        const text = await encryptSops([doc as Record<string, Json>], { recipients: [key.recipient], ...r });
        const stats: WalkStats = { steps: 0, values: 0 };
        const [out] = await decryptFiles([{ path: 'g.yaml', text }], identities, { stats });
        expect(parse(out?.text ?? '')).toEqual(doc);
        // Each distinct key goes through the rule once (≤ its length × the program's size); each value costs its
        // length and its path's (the path's keys are shorter than the value's ciphertext), each key or item 1.
        expect(stats.steps).toBeLessThanOrEqual((ruleSize(r) + 4) * text.length);
      }),
      { numRuns: 60 },
    );
  });

  it('stops within its budget whatever the limits: a limit error, never more steps than allowed', async () => {
    const limits = fc.record({
      maxDepth: fc.integer({ min: 1, max: 6 }),
      maxKeyLength: fc.integer({ min: 1, max: 64 }),
      maxValues: fc.integer({ min: 1, max: 60 }),
      maxWork: fc.integer({ min: 1, max: 20_000 }),
    });
    await fc.assert(
      fc.asyncProperty(document, rule, limits, async (doc, r, lim) => {
        const text = await encryptSops([doc as Record<string, Json>], { recipients: [key.recipient], ...r });
        const stats: WalkStats = { steps: 0, values: 0 };
        const result = await decryptFiles([{ path: 'b.yaml', text }], identities, {
          stats,
          limits: lim,
        }).then(
          () => undefined,
          (error: unknown) => errorMessage(error),
        );
        expect(stats.steps).toBeLessThanOrEqual(lim.maxWork);
        expect(stats.values).toBeLessThanOrEqual(lim.maxValues);
        if (result !== undefined)
          expect(result).toMatch(/steps of work|levels deep|characters|keys and values in the file/);
      }),
      { numRuns: 60 },
    );
  });

  it('no error message holds a decrypted value, whatever is wrong with the file', async () => {
    const faults = fc.constantFrom(
      'plain value changed',
      'values swapped',
      'type changed',
      'MAC over other values',
      'MAC under another time',
      'value truncated',
      'no key',
      'rule refused',
      'tiny budget',
    );
    await fc.assert(
      fc.asyncProperty(document, rule, faults, async (doc, r, fault) => {
        let text = await encryptSops([doc as Record<string, Json>], {
          recipients: [key.recipient],
          ...r,
          tamperMac: fault === 'MAC over other values',
          tamperMacCipher: fault === 'MAC under another time',
        });
        const encrypted = [...text.matchAll(/ENC\[AES256_GCM,[^\]]*\]/g)].map((m) => m[0]);
        const mac = encrypted.pop(); // the last one is the MAC
        if (fault === 'plain value changed') text = text.replace(/: (canary-\w+|\d+)$/m, ': altered');
        if (fault === 'values swapped' && encrypted.length >= 2) {
          const [a = '', b = ''] = encrypted;
          text = text.replace(a, '\0').replace(b, a).replace('\0', b);
        }
        if (fault === 'type changed') text = text.replace(/type:str\]/, 'type:int]');
        if (fault === 'value truncated' && encrypted[0])
          text = text.replace(encrypted[0], `${encrypted[0].slice(0, 30)}]`);
        if (fault === 'rule refused')
          text = text.replace(/^(\s*)version: /m, '$1encrypted_comment_regex: "(?=x)"\n$1version: ');
        const keys = fault === 'no key' ? [] : identities;
        const limits = fault === 'tiny budget' ? { maxWork: 50 } : {};
        const error = await decryptFiles([{ path: 'f.yaml', text }], keys, { limits }).then(
          () => undefined,
          (e: unknown) => e,
        );
        if (error === undefined) return; // the fault changed nothing the file depends on (no value of that kind)
        const messages: string[] = [];
        for (let e: unknown = error; e instanceof Error; e = e.cause)
          messages.push(e.message, String(e.stack));
        const all = messages.join('\n');
        for (const value of scalars(doc)) if (value.length >= 4) expect(all).not.toContain(value);
        expect(mac).toBeDefined();
      }),
      { numRuns: 80 },
    );
  });
});
