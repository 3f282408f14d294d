import { describe, expect, it, vi } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { StalledError } from '../../../src/errors.ts';
import { parseAgeKeys } from '../../../src/sources/sops/age-keys.ts';
import { decryptFiles } from '../../../src/sources/sops/decrypt.ts';
import { encryptSops, encryptValue, newAgeKey } from './sops-fixture.ts';

const secret = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'db', labels: { app: 'shop' } },
  type: 'Opaque',
  stringData: { password: 'canary-Pl41n-s3cret', user: 'admin' },
};

async function identityFor() {
  const key = await newAgeKey();
  return { key, identities: await parseAgeKeys(`# test key\n${key.secret}\n`, 'keys.txt') };
}

describe('decryptFiles', () => {
  it('decrypts every value of a SOPS file and drops its sops block; other files pass untouched', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([secret], { recipients: [key.recipient] });
    expect(text).not.toContain('canary-Pl41n-s3cret');
    expect(text).toContain('ENC[AES256_GCM,');
    const plain = { path: 'app/plain.yaml', text: 'apiVersion: v1\nkind: ConfigMap\n' };
    const out = await decryptFiles([plain, { path: 'secrets/db.yaml', text }], identities);
    expect(out[0]).toBe(plain);
    expect(out[1]?.path).toBe('secrets/db.yaml');
    expect(parse(out[1]?.text ?? '')).toEqual(secret);
  });

  it('decrypts only what encrypted_regex names, keeps the rest and checks the MAC over all of it', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([secret], {
      recipients: [key.recipient],
      encryptedRegex: '^(data|stringData)$',
    });
    expect(parse(text).metadata.name).toBe('db');
    const [out] = await decryptFiles([{ path: 's.yaml', text }], identities);
    expect(parse(out?.text ?? '')).toEqual(secret);
    // A plain value changed after encryption is caught by the MAC.
    const altered = text.replace('name: db', 'name: other');
    await expect(decryptFiles([{ path: 's.yaml', text: altered }], identities)).rejects.toThrow(
      's.yaml: cannot decrypt (sops): MAC mismatch',
    );
  });

  it('keeps types, lists, empty and null values, and every document of a multi-document file', async () => {
    const { key, identities } = await identityFor();
    const config = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
      data: { a: '007', b: 'true', empty: '' },
      spec: { replicas: 3, ratio: 0.5, on: false, none: null, list: ['x', 'y'], keep_unencrypted: 'plain' },
    };
    const text = await encryptSops([config, secret], { recipients: [key.recipient] });
    expect(text).toContain('keep_unencrypted: plain');
    const [out] = await decryptFiles([{ path: 'two.yaml', text }], identities);
    const docs = parseAllDocuments(out?.text ?? '');
    expect(Array.isArray(docs) ? docs.map((d) => d.toJS()) : docs).toEqual([config, secret]);
    expect(out?.text).not.toContain('sops');
  });

  it('names the file and the recipients when no identity is for them, and reads keys only for SOPS files', async () => {
    const { identities } = await identityFor();
    const other = await newAgeKey();
    const text = await encryptSops([secret], { recipients: [other.recipient] });
    const load = vi.fn(async () => identities);
    await decryptFiles([{ path: 'a.yaml', text: 'kind: ConfigMap\n' }], load);
    expect(load).not.toHaveBeenCalled();
    const error = await decryptFiles([{ path: 'secrets/db.yaml', text }], load).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect((error as Error).message).toBe(
      `secrets/db.yaml: cannot decrypt (sops): no age identity for recipient ${other.recipient}`,
    );
    await expect(decryptFiles([{ path: 'secrets/db.yaml', text }], [])).rejects.toThrow(
      /no age identity for recipient age1.* \(no age key given/,
    );
  });

  it('decrypts with any one of several recipients', async () => {
    const { key, identities } = await identityFor();
    const other = await newAgeKey();
    const text = await encryptSops([secret], { recipients: [other.recipient, key.recipient] });
    const [out] = await decryptFiles([{ path: 's.yaml', text }], identities);
    expect(parse(out?.text ?? '').stringData.password).toBe('canary-Pl41n-s3cret');
  });

  it('refuses a wrong MAC, a corrupt value and a value moved to another key, naming no plaintext', async () => {
    const { key, identities } = await identityFor();
    const tampered = await encryptSops([secret], { recipients: [key.recipient], tamperMac: true });
    await expect(decryptFiles([{ path: 'm.yaml', text: tampered }], identities)).rejects.toThrow(
      'm.yaml: cannot decrypt (sops): MAC mismatch: the file was changed after it was encrypted',
    );
    const text = await encryptSops([secret], { recipients: [key.recipient] });
    const doc = parse(text);
    const corrupt = text.replace(
      doc.stringData.password,
      doc.stringData.password.replace(/data:(.)/, 'data:A$1'),
    );
    const error = await decryptFiles([{ path: 'c.yaml', text: corrupt }], identities).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StalledError);
    expect((error as Error).message).toMatch(
      /^c\.yaml: cannot decrypt \(sops\): stringData\.password: the value/,
    );
    expect((error as Error).message).not.toContain('canary');
    // The additional data binds a value to its path: swapped values do not authenticate.
    const swapped = text
      .replace(doc.stringData.password, 'SWAP')
      .replace(doc.stringData.user, doc.stringData.password)
      .replace('SWAP', doc.stringData.user);
    await expect(decryptFiles([{ path: 'w.yaml', text: swapped }], identities)).rejects.toThrow(
      /w\.yaml: cannot decrypt \(sops\): stringData\.password: the value does not authenticate/,
    );
  });

  it('refuses a sops block it cannot use: no mac, key groups, comment rules, a block only in a later document', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([secret], { recipients: [key.recipient] });
    const cases: [string, string, RegExp][] = [
      ['no-mac.yaml', text.replace(/\n {2}mac: .*\n/, '\n'), /sops\.mac/],
      [
        'groups.yaml',
        text.replace('  lastmodified:', '  key_groups: [{age: []}, {age: []}]\n  lastmodified:'),
        /2 key groups \(Shamir secret sharing\) are not supported/,
      ],
      [
        'comments.yaml',
        text.replace('  lastmodified:', '  encrypted_comment_regex: sops\n  lastmodified:'),
        /encrypted_comment_regex are not supported/,
      ],
      ['later.yaml', `kind: ConfigMap\n---\n${text}`, /the first document has no sops mapping/],
    ];
    for (const [path, body, why] of cases) {
      const error = await decryptFiles([{ path, text: body }], identities).catch((e: unknown) => e);
      expect(error, path).toBeInstanceOf(StalledError);
      expect((error as Error).message, path).toMatch(
        new RegExp(`^${path.replace('.', '\\.')}: cannot decrypt \\(sops\\): `),
      );
      expect((error as Error).message, path).toMatch(why);
    }
  });

  it('reads lastmodified as Go formats it for the MAC (fractional seconds dropped)', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([secret], {
      recipients: [key.recipient],
      lastmodified: '2026-01-02T03:04:05.123456Z',
    });
    const [out] = await decryptFiles([{ path: 's.yaml', text }], identities);
    expect(parse(out?.text ?? '').stringData.user).toBe('admin');
  });

  it('decrypts a JSON file', async () => {
    const { key, identities } = await identityFor();
    const yamlText = await encryptSops([secret], { recipients: [key.recipient] });
    const json = JSON.stringify(parse(yamlText), null, 2);
    const [out] = await decryptFiles([{ path: 'db.json', text: json }], identities);
    expect(parse(out?.text ?? '')).toEqual(secret);
  });

  it('leaves a value that is not ENC[…] refused, even when it looks harmless', async () => {
    const { key, identities } = await identityFor();
    const text = await encryptSops([secret], { recipients: [key.recipient] });
    const plainUser = text.replace(/user: ENC\[[^\n]*\]/, 'user: admin');
    await expect(decryptFiles([{ path: 'p.yaml', text: plainUser }], identities)).rejects.toThrow(
      'p.yaml: cannot decrypt (sops): stringData.user: the value is not an ENC[AES256_GCM,…] value',
    );
    expect(encryptValue(Buffer.from('x'), 'str', Buffer.alloc(32), 'a:')).toMatch(/^ENC\[AES256_GCM,data:/);
  });
});

describe('parseAgeKeys', () => {
  it('reads identities, skips comments and names a bad line without printing it', async () => {
    const { key } = await identityFor();
    const ids = await parseAgeKeys(`# created\n\n${key.secret}\n`, 'k.txt');
    expect(ids).toEqual([{ secret: key.secret, recipient: key.recipient }]);
    const error = await parseAgeKeys(`# c\nnot-a-key-hunter2\n`, 'k.txt').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect((error as Error).message).toBe('k.txt:2: is not an age identity (AGE-SECRET-KEY-1…)');
  });
});
