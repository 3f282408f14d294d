// The `verify` setting of artifact sources (docs/verification.md): cosign with keys, on a registry, an OCI artifact
// and an oci:// chart source; refused where signatures cannot be kept (an https chart repository), without keys,
// and with a provider mooring does not speak. And the keys themselves: public keys only, each named by where it
// came from.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chartSource, ociSource, registrySource } from '../../../src/config/schema.ts';
import { readCosignKeys, readTrustedRoot } from '../../../src/sources/registry/cosign.ts';

const verify = { provider: 'cosign', keys: [{ file: '/etc/mooring/cosign.pub' }] };

// A P-256 public key (as cosign.pub holds) and the private key of the same pair, made with Node's crypto.
const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const publicPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const privatePem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

describe('verify on artifact sources', () => {
  it('is taken by registry, OCI and oci:// chart sources', () => {
    expect(registrySource.safeParse({ name: 'web', image: 'ghcr.io/example/web', verify }).success).toBe(
      true,
    );
    expect(ociSource.safeParse({ name: 'm', url: 'oci://ghcr.io/example/manifests', verify }).success).toBe(
      true,
    );
    expect(
      chartSource.safeParse({ name: 'c', url: 'oci://ghcr.io/example/charts', chart: 'podinfo', verify })
        .success,
    ).toBe(true);
  });

  it('is refused on an https chart repository, without keys, and for another provider', () => {
    const https = chartSource.safeParse({
      name: 'c',
      url: 'https://charts.example.com',
      chart: 'podinfo',
      verify,
    });
    expect(https.error?.issues[0]?.message).toContain('verify needs an oci:// chart repository');
    expect(https.error?.issues[0]?.path).toEqual(['verify']);
    const noKeys = registrySource.safeParse({
      name: 'web',
      image: 'x/web',
      verify: { provider: 'cosign', keys: [] },
    });
    expect(noKeys.error?.issues[0]?.path).toEqual(['verify', 'keys']);
    const notation = registrySource.safeParse({
      name: 'web',
      image: 'x/web',
      verify: { ...verify, provider: 'notation' },
    });
    expect(notation.error?.issues[0]?.path).toEqual(['verify', 'provider']);
  });
});

describe('cosign keys', () => {
  it('reads PEM public keys and names each by its fingerprint', async () => {
    const keys = await readCosignKeys([
      { text: `# team key\n${publicPem}`, origin: 'file /keys/cosign.pub' },
    ]);
    expect(keys).toHaveLength(1);
    expect(keys[0]?.id).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });

  it('refuses a private key and a text with no key, naming where each came from and none of the key', async () => {
    const secret = privatePem.split('\n')[1] ?? '';
    const privateRefusal = await readCosignKeys([
      { text: privatePem, origin: 'file /keys/cosign.key' },
    ]).catch((e: Error) => e.message);
    expect(privateRefusal).toContain('file /keys/cosign.key holds a private key');
    expect(privateRefusal).not.toContain(secret);
    const none = await readCosignKeys([{ text: 'ssh-ed25519 AAAA', origin: 'verify.keys[0]' }]).catch(
      (e: Error) => e.message,
    );
    expect(none).toContain('verify.keys[0]: no PEM public key');
  });
});

describe('keyless verification', () => {
  const keyless = {
    trustedRoot: { file: '/etc/mooring/trusted_root.json' },
    identities: [
      { issuer: 'https://token.ci.example.com', subjectRegExp: 'https://ci\\.example\\.com/org/.*' },
    ],
  };
  const parse = (v: unknown) => registrySource.safeParse({ name: 'web', image: 'x/web', verify: v });

  it('takes a trusted root and identities, with or without keys; neither is refused', () => {
    expect(parse({ provider: 'cosign', keyless }).success).toBe(true);
    expect(parse({ ...verify, keyless }).success).toBe(true);
    const neither = parse({ provider: 'cosign' });
    expect(neither.error?.issues[0]?.message).toContain('give "keys", "keyless" or both');
  });

  it('asks each identity for one issuer and one subject, exact or as a valid regular expression', () => {
    const identity = (i: unknown) => parse({ provider: 'cosign', keyless: { ...keyless, identities: [i] } });
    const noIssuer = identity({ subject: 'release@example.com' });
    expect(noIssuer.error?.issues[0]?.message).toBe('give exactly one of "issuer" or "issuerRegExp"');
    expect(noIssuer.error?.issues[0]?.path).toEqual(['verify', 'keyless', 'identities', 0]);
    const both = identity({ issuer: 'a', issuerRegExp: 'a', subject: 'b' });
    expect(both.error?.issues[0]?.message).toBe('give exactly one of "issuer" or "issuerRegExp"');
    const noSubject = identity({ issuer: 'a' });
    expect(noSubject.error?.issues[0]?.message).toBe('give exactly one of "subject" or "subjectRegExp"');
    const badPattern = identity({ issuer: 'a', subjectRegExp: '(' });
    expect(badPattern.error?.issues[0]?.path).toEqual([
      'verify',
      'keyless',
      'identities',
      0,
      'subjectRegExp',
    ]);
    expect(badPattern.error?.issues[0]?.message).toBe('is not a valid regular expression');
    const none = parse({ provider: 'cosign', keyless: { ...keyless, identities: [] } });
    expect(none.error?.issues[0]?.path).toEqual(['verify', 'keyless', 'identities']);
  });

  it('reads a trusted root as JSON or PEM certificates, and says what is wrong with one', async () => {
    const origin = 'file /etc/mooring/root.pem';
    const identities = keyless.identities;
    const refusal = (text: string) =>
      readTrustedRoot({ text, origin }, identities).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
    expect(await refusal(privatePem)).toBe(
      `${origin} holds a private key (PRIVATE KEY): give the CA's certificates only`,
    );
    expect(await refusal(publicPem)).toContain('neither a Sigstore trusted root (JSON) nor PEM certificates');
    expect(await refusal('{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1"}')).toBe(
      `${origin}: the trusted root names no certificate authority`,
    );
    expect(await refusal('{ not json')).toContain(`${origin}: not a Sigstore trusted root (`);
    expect(await refusal('-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n')).toContain(
      `${origin}: not a certificate (`,
    );
  });
});
