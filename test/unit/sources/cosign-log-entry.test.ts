// A Sigstore bundle's transparency log entries are read by the verifier with JSON.parse, which may misread a key
// written with an escape (src/json.ts: a V8 bug), so a bundle whose entry body holds one is refused before the
// verifier sees it, whoever pushed it. No log writes such an entry.
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

describe('a bundle whose log entry holds an escaped key', () => {
  it('is refused before the verifier reads it; an ordinary entry goes on to the checks', async () => {
    const key = generateKeyPairSync('ed25519').publicKey;
    const trust = { keys: [{ key, id: 'k' }] } as unknown as Parameters<typeof verifyBundle>[2];
    const digest = `sha256:${'0'.repeat(64)}`;
    for (const body of [
      '{"apiVersion":"0.0.1","kind\\\\":"dsse"}',
      '{"apiVersion":"0.0.1","kind\\u0041":"dsse"}',
      '{"apiVersion":"0.0.1","spec":{"k\\"":1}}',
    ])
      expect(await verifyBundle(bundle(body), digest, trust), body).toBe(
        'has a transparency log entry that is not one',
      );
    // An escape in a value is no reason: the entry goes on to the checks.
    expect(await verifyBundle(bundle('{"apiVersion":"0.0.1","kind":"dsse\\u0041"}'), digest, trust)).toBe(
      'is an attestation (x), not a signature',
    );
    expect(await verifyBundle(bundle('{"apiVersion":"0.0.1","kind":"dsse"}'), digest, trust)).toBe(
      'is an attestation (x), not a signature',
    );
  });
});
