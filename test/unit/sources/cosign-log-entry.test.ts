// A Sigstore bundle's transparency log entries are read by the verifier with JSON.parse. One whose body holds a key
// that ends in a backslash would change how the process reads later JSON (src/json.ts: a V8 bug), so such a bundle
// is refused before the verifier sees it, whoever pushed it. No log writes such an entry.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyBundle } from '../../../src/sources/registry/cosign.ts';

const base64 = (text: string) => Buffer.from(text).toString('base64');

function bundle(body: string): Buffer {
  const entry = {
    logIndex: '1',
    logId: { keyId: 'AA==' },
    kindVersion: { kind: 'dsse', version: '0.0.1' },
    integratedTime: '1',
    inclusionPromise: { signedEntryTimestamp: 'AA==' },
    inclusionProof: {
      logIndex: '1',
      rootHash: 'AA==',
      treeSize: '2',
      hashes: [],
      checkpoint: { envelope: 'x' },
    },
    canonicalizedBody: base64(body),
  };
  return Buffer.from(
    JSON.stringify({
      mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
      verificationMaterial: { publicKey: { hint: 'k' }, tlogEntries: [entry], timestampVerificationData: {} },
      dsseEnvelope: {
        payload: base64('{"predicateType":"x"}'),
        payloadType: 'application/vnd.in-toto+json',
        signatures: [{ sig: 'AA==', keyid: '' }],
      },
    }),
  );
}

describe('a bundle whose log entry would poison JSON.parse', () => {
  it('is refused before the verifier reads it; an ordinary entry goes on to the checks', async () => {
    const key = generateKeyPairSync('ed25519').publicKey;
    const trust = { keys: [{ key, id: 'k' }] } as unknown as Parameters<typeof verifyBundle>[2];
    const digest = `sha256:${'0'.repeat(64)}`;
    expect(await verifyBundle(bundle('{"apiVersion":"0.0.1","kind\\\\":"dsse"}'), digest, trust)).toBe(
      'has a transparency log entry that is not one',
    );
    expect(await verifyBundle(bundle('{"apiVersion":"0.0.1","kind":"dsse"}'), digest, trust)).toBe(
      'is an attestation (x), not a signature',
    );
    // This process's JSON.parse was never given the key.
    expect(Object.keys(JSON.parse('{"apiVersion":"0.0.1","kind\\u0041":"dsse"}'))).toStrictEqual([
      'apiVersion',
      'kindA',
    ]);
  });
});
