// SOPS files as a commit's author may write them, with only the public recipient: the rules run with RE2 (Go's
// syntax, flags, refusals), the MAC is decrypted before the tree is walked, and the walk is bounded.
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseAgeKeys } from '../../../src/sources/sops/age-keys.ts';
import { decryptValue, isEncryptedValue } from '../../../src/sources/sops/cipher.ts';
import { decryptFiles } from '../../../src/sources/sops/decrypt.ts';
import { goRegExp, loadGoRegExp, MAX_PATTERN_SIZE } from '../../../src/sources/sops/go-regexp.ts';
import type { WalkStats } from '../../../src/sources/sops/walk.ts';
import { encryptSops, newAgeKey } from './sops-fixture.ts';

// The engine loads with the first SOPS file that has a rule; these tests call the rules directly.
beforeAll(loadGoRegExp);

async function identityFor() {
  const key = await newAgeKey();
  return { key, identities: await parseAgeKeys(`${key.secret}\n`, 'keys.txt') };
}

const EVIL_KEY = `${'a'.repeat(40)}!`;

describe('goRegExp (RE2)', () => {
  it('matches ^(a+)+$ against forty a and a ! in linear time (a backtracking engine takes hours)', () => {
    const re = goRegExp('encrypted_regex', '^(a+)+$');
    expect(re.test(EVIL_KEY)).toBe(false);
    expect(re.test('a'.repeat(100_000))).toBe(true);
    expect(re.test(`${'a'.repeat(100_000)}!`)).toBe(false);
  });

  it("understands Go's inline flags and syntax", () => {
    expect(goRegExp('f', '(?i)^DATA$').test('data')).toBe(true);
    expect(goRegExp('f', '(?i)^DATA$').test('xdata')).toBe(false);
    expect(goRegExp('f', '^(?i:pass)word$').test('PASSword')).toBe(true);
    expect(goRegExp('f', '^(?i:pass)word$').test('PASSWORD')).toBe(false);
    expect(goRegExp('f', '^a.b$').test('a\nb')).toBe(false);
    expect(goRegExp('f', '(?s)^a.b$').test('a\nb')).toBe(true);
    expect(goRegExp('f', '(?m)^b$').test('a\nb')).toBe(true);
    expect(goRegExp('f', '^[[:upper:]]+$').test('ABC')).toBe(true);
    expect(goRegExp('f', '^\\pL+$').test('Grüße')).toBe(true);
    expect(goRegExp('f', '^(?P<name>data)$').test('data')).toBe(true);
    expect(goRegExp('f', '\\Q.*\\E').test('a.*b')).toBe(true);
    expect(goRegExp('f', '\\Q.*\\E').test('ab')).toBe(false);
    // Unanchored, as Go's MatchString.
    expect(goRegExp('f', 'data').test('stringData-data')).toBe(true);
  });

  it.each([
    ['(?=x)', 'invalid or unsupported Perl syntax'],
    ['(a)\\1', 'invalid escape sequence'],
    ['(?<=a)b', 'invalid named capture'],
    ['a**', 'invalid nested repetition operator'],
    ['x{2,1}', 'invalid repeat count'],
    ['a{1001}', 'invalid repeat count'],
    ['(?x)a', 'invalid or unsupported Perl syntax'],
    ['[z-a]', 'invalid character class range'],
  ])('refuses %s as RE2 does, naming the field', (pattern, why) => {
    expect(() => goRegExp('encrypted_regex', pattern)).toThrow(
      `sops.encrypted_regex: ${JSON.stringify(pattern)} is not an RE2 (Go) expression: ${why}`,
    );
  });

  it('refuses a pattern whose compiled program is too large, and one too long', () => {
    expect(() => goRegExp('unencrypted_regex', '[a-z]{1000}[a-z]{1000}')).toThrow(
      `is too large (it may compile to 2004 RE2 instructions, at most ${MAX_PATTERN_SIZE})`,
    );
    expect(() => goRegExp('unencrypted_regex', 'a'.repeat(1025))).toThrow('longer than 1024 characters');
  });
});

describe('SOPS rules in files', () => {
  it('decrypts a file whose encrypted_regex is ^(a+)+$ and whose key is forty a and a !', async () => {
    const { key, identities } = await identityFor();
    const doc = { [EVIL_KEY]: 'x', aaaa: 'secret-value', plain: 'kept' };
    const text = await encryptSops([doc], { recipients: [key.recipient], encryptedRegex: '^(a+)+$' });
    expect(parse(text).aaaa).toMatch(/^ENC\[/);
    expect(parse(text)[EVIL_KEY]).toBe('x');
    const stats: WalkStats = { steps: 0, values: 0 };
    const [out] = await decryptFiles([{ path: 'evil.yaml', text }], identities, { stats });
    expect(parse(out?.text ?? '')).toEqual(doc);
    expect(out?.secrets).toEqual(['secret-value']);
    expect(stats.values).toBe(3);
  });

  it('applies (?i) and unencrypted_regex as Go does', async () => {
    const { key, identities } = await identityFor();
    const doc = { DATA: { a: 'secret-one' }, meta: { data: 'secret-two' }, other: 'plain-one' };
    const text = await encryptSops([doc], { recipients: [key.recipient], encryptedRegex: '(?i)^data$' });
    const written = parse(text);
    expect(written.DATA.a).toMatch(/^ENC\[/);
    expect(written.meta.data).toMatch(/^ENC\[/);
    expect(written.other).toBe('plain-one');
    const [out] = await decryptFiles([{ path: 's.yaml', text }], identities);
    expect(parse(out?.text ?? '')).toEqual(doc);
    const plain = await encryptSops([doc], { recipients: [key.recipient], unencryptedRegex: '(?i)^other$' });
    expect(parse(plain).other).toBe('plain-one');
    expect(parse(plain).DATA.a).toMatch(/^ENC\[/);
    const [back] = await decryptFiles([{ path: 's.yaml', text: plain }], identities);
    expect(parse(back?.text ?? '')).toEqual(doc);
  });

  it('a pattern RE2 refuses fails naming the file and the field', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([{ a: 'x' }], { recipients: [key.recipient], encryptedRegex: '^a$' });
    const bad = text.replace('encrypted_regex: ^a$', 'encrypted_regex: "(?=a)"');
    await expect(decryptFiles([{ path: 'apps/s.yaml', text: bad }], identities)).rejects.toThrow(
      'apps/s.yaml: cannot decrypt (sops): sops.encrypted_regex: "(?=a)" is not an RE2 (Go) expression',
    );
    const comment = await encryptSops([{ a: 'x' }], {
      recipients: [key.recipient],
      extraSops: { encrypted_comment_regex: 'x' },
    });
    await expect(decryptFiles([{ path: 'c.yaml', text: comment }], identities)).rejects.toThrow(
      'c.yaml: cannot decrypt (sops): unencrypted_comment_regex and encrypted_comment_regex are not supported',
    );
  });
});

describe('the MAC first', () => {
  it('a MAC that does not decrypt under the data key stops the file before any value is read', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([{ password: 'canary-mac-first' }], {
      recipients: [key.recipient],
      tamperMacCipher: true,
    });
    // A value that would not decrypt either: the MAC is named, not the value.
    const both = text.replace(/password: ENC\[AES256_GCM,data:[^,]+/, 'password: ENC[AES256_GCM,data:AAAA');
    const stats: WalkStats = { steps: 0, values: 0 };
    await expect(decryptFiles([{ path: 'm.yaml', text: both }], identities, { stats })).rejects.toThrow(
      'm.yaml: cannot decrypt (sops): sops.mac does not authenticate',
    );
    expect(stats).toEqual({ steps: 0, values: 0 });
  });

  it('an empty MAC, or one that holds no digest, is refused before the walk', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([{ password: 'canary-mac-first' }], { recipients: [key.recipient] });
    const empty = text.replace(/mac: ENC\[[^\]]+\]/, "mac: ''");
    const stats: WalkStats = { steps: 0, values: 0 };
    await expect(decryptFiles([{ path: 'e.yaml', text: empty }], identities, { stats })).rejects.toThrow(
      'e.yaml: cannot decrypt (sops): the file has no MAC',
    );
    expect(stats.steps).toBe(0);
  });

  it('a MAC that decrypts but does not match: nothing of the file is returned', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([{ password: 'canary-mac-first', plain_unencrypted: 'x' }], {
      recipients: [key.recipient],
      tamperMac: true,
    });
    const stats: WalkStats = { steps: 0, values: 0 };
    const error = await decryptFiles([{ path: 't.yaml', text }], identities, { stats }).catch((e) => e);
    expect(String(error)).toContain('t.yaml: cannot decrypt (sops): MAC mismatch');
    expect(String(error)).not.toContain('canary-mac-first');
    expect(stats.values).toBe(2);
  });
});

describe('ENC[…] values from the commit', () => {
  it('a crafted value is refused in linear time (it backtracked with .+ fields)', () => {
    // 150 repetitions took a second with the old expression, and each doubling sixteen times longer.
    const crafted = `ENC[AES256_GCM,data:${',iv:,tag:,type:'.repeat(200_000)}x`;
    expect(isEncryptedValue(crafted)).toBe(false);
    expect(() => decryptValue(crafted, new Uint8Array(32), 'a:')).toThrow(
      'is not an ENC[AES256_GCM,…] value',
    );
  });
});

describe('the walk is bounded', () => {
  const deep = (depth: number): Record<string, unknown> => {
    let node: Record<string, unknown> = { leaf: 'value-at-the-bottom' };
    for (let i = 0; i < depth; i++) node = { [`k${i}`]: node };
    return node;
  };

  it('refuses nesting deeper than the limit, naming the path', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([deep(6) as never], { recipients: [key.recipient] });
    await expect(
      decryptFiles([{ path: 'd.yaml', text }], identities, { limits: { maxDepth: 4 } }),
    ).rejects.toThrow('d.yaml: cannot decrypt (sops): k5.k4.k3.k2: nested more than 4 levels deep');
    const [ok] = await decryptFiles([{ path: 'd.yaml', text }], identities, { limits: { maxDepth: 7 } });
    expect(ok?.secrets).toEqual(['value-at-the-bottom']);
  });

  it('refuses a key longer than the limit, and more values than the limit', async () => {
    const { key, identities } = await identityFor();
    const long = await encryptSops([{ ['k'.repeat(40)]: 'v' }], { recipients: [key.recipient] });
    await expect(
      decryptFiles([{ path: 'k.yaml', text: long }], identities, { limits: { maxKeyLength: 39 } }),
    ).rejects.toThrow('k.yaml: cannot decrypt (sops): a key under the document is longer than 39 characters');
    const many = await encryptSops([{ list: Array.from({ length: 20 }, (_, i) => `item-${i}`) }], {
      recipients: [key.recipient],
    });
    await expect(
      decryptFiles([{ path: 'n.yaml', text: many }], identities, { limits: { maxValues: 10 } }),
    ).rejects.toThrow('n.yaml: cannot decrypt (sops): list: more than 10 keys and values in the file');
  });

  it('stops when the work budget would be exceeded, never past it', async () => {
    const { key, identities } = await identityFor();
    // Many values under a long path: each one's additional data repeats the path.
    const path = Array.from({ length: 8 }, (_, i) => `${'p'.repeat(50)}${i}`);
    let doc: Record<string, unknown> = { items: Array.from({ length: 200 }, (_, i) => `value-${i}`) };
    for (const k of path.reverse()) doc = { [k]: doc };
    const text = await encryptSops([doc as never], { recipients: [key.recipient] });
    const stats: WalkStats = { steps: 0, values: 0 };
    const [out] = await decryptFiles([{ path: 'w.yaml', text }], identities, { stats });
    expect(out?.secrets).toHaveLength(200);
    const needed = stats.steps;
    const limited: WalkStats = { steps: 0, values: 0 };
    await expect(
      decryptFiles([{ path: 'w.yaml', text }], identities, {
        stats: limited,
        limits: { maxWork: needed - 1 },
      }),
    ).rejects.toThrow(`steps of work`);
    expect(limited.steps).toBeLessThanOrEqual(needed - 1);
  });
});

describe('decrypted values carried for redaction', () => {
  it('strings and numbers of 4 characters or more; not booleans, short values or an object identity', async () => {
    const { key, identities } = await identityFor();
    const doc = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db-credentials', namespace: 'shop', labels: { tier: 'database-tier' } },
      type: 'Opaque',
      stringData: { password: 'hunter2-hunter2', pin: 123456, on: true, short: 'abc', key: 'line-1\nline-2' },
    };
    const text = await encryptSops([doc as never], { recipients: [key.recipient] });
    const [out] = await decryptFiles([{ path: 's.yaml', text }], identities);
    expect(out?.secrets).toEqual([
      'hunter2-hunter2',
      'database-tier',
      'line-1\nline-2',
      '123456',
      'Opaque',
      'line-1',
      'line-2',
    ]);
  });
});
