// The `verify` setting of artifact sources (docs/verification.md): cosign with keys, on a registry, an OCI artifact
// and an oci:// chart source; refused where signatures cannot be kept (an https chart repository), without keys,
// and with a provider mooring does not speak. And the keys themselves: public keys only, each named by where it
// came from.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chartSource, ociSource, registrySource } from '../../../src/config/schema.ts';
import { readCosignKeys } from '../../../src/sources/registry/cosign.ts';

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
