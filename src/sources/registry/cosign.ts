// Signed artifacts (docs/verification.md): an image, chart or manifests source with `verify: {provider: cosign,
// keys}` accepts a digest only when a cosign signature of that digest verifies under one of the keys. cosign keeps
// the signatures of `repo@sha256:<hex>` in the same repository, in one of two layouts:
// - the manifest tagged `sha256-<hex>.sig`, each layer a "simple signing" payload (JSON naming the signed
//   manifest's digest) with its signature in the layer's `dev.cosignproject.cosign/signature` annotation;
// - Sigstore bundles (cosign's new bundle format, the default of cosign 3) in manifests that refer to the digest
//   (OCI 1.1 referrers, or the index under the fallback tag `sha256-<hex>`): a DSSE envelope of an in-toto
//   statement of cosign's signing predicate whose subject is the digest.
// Either way the signed content must name the very digest asked about (a signature copied from another image is
// refused), and the signature is checked by @sigstore/verify under the trusted key (a simple-signing payload as a
// message signature; Ed25519 ones, which cosign makes as Ed25519ph, by @noble/curves).
//
// Nothing read is trusted before the check: manifests are bounded by the registry client (layers, annotations),
// payloads and bundles are read only up to their bounds and checked against their digests, and at most
// MAX_SIGNATURES of each layout are looked at.
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { StalledError } from '../../errors.ts';
import { type KeyRef, type KeyText, SignatureVerdicts } from '../trusted-keys.ts';
import type { RegistryClient } from './client.ts';

export const SIMPLE_SIGNING = 'application/vnd.dev.cosign.simplesigning.v1+json';
export const SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
const SIGNATURE_TYPE = 'cosign container image signature';
const MAX_PAYLOAD_BYTES = 64 * 1024;
export const SIGSTORE_BUNDLE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const COSIGN_SIGN_PREDICATE = 'https://sigstore.dev/cosign/sign/v1';
const MAX_BUNDLE_BYTES = 256 * 1024;
const MAX_SIGNATURES = 16;

/** A key an operator trusts to sign artifacts (cosign.pub), by its fingerprint. */
export interface CosignKey {
  /** `SHA256:` and the unpadded base64 of the SHA-256 of its SubjectPublicKeyInfo: how messages and records name it. */
  id: string;
  key: KeyObject;
  origin: string;
}

/** Who signed an artifact's digest, as releases record it. */
export interface ArtifactSigner {
  /** `cosign SHA256:…` */
  key: string;
}

/** A digest refused for want of a signature by a trusted key: not deployed, and said so in the sync's status. */
export class SignatureRefusal extends StalledError {}

/** The tag under which cosign keeps the signatures of `digest`. */
export function signatureTag(digest: string): string {
  return `${digest.replace(':', '-')}.sig`;
}

/** The fingerprint a CosignKey is named by. */
export function keyId(key: KeyObject): string {
  const der = key.export({ type: 'spki', format: 'der' });
  return `SHA256:${createHash('sha256').update(der).digest('base64').replace(/=+$/, '')}`;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/** The public keys in the texts (PEM blocks, as `cosign generate-key-pair` writes cosign.pub); a private key is refused. */
export async function readCosignKeys(texts: readonly KeyText[]): Promise<CosignKey[]> {
  const keys: CosignKey[] = [];
  for (const { text, origin } of texts) {
    let found = 0;
    for (const block of text.matchAll(PEM_BLOCK)) {
      const label = block[1] ?? '';
      if (label.includes('PRIVATE'))
        throw new StalledError(
          `${origin} holds a private key (${label}): give the public key only (cosign.pub)`,
        );
      if (label !== 'PUBLIC KEY') continue;
      let key: KeyObject;
      try {
        key = createPublicKey({ key: block[0], format: 'pem' });
      } catch (error) {
        throw new StalledError(`${origin}: not a public key (${(error as Error).message.slice(0, 200)})`);
      }
      const type = key.asymmetricKeyType;
      if (type !== 'ec' && type !== 'rsa' && type !== 'ed25519')
        throw new StalledError(
          `${origin}: a ${type} key cannot verify cosign signatures (ECDSA, RSA or Ed25519)`,
        );
      keys.push({ id: keyId(key), key, origin });
      found++;
    }
    if (found === 0)
      throw new StalledError(`${origin}: no PEM public key (-----BEGIN PUBLIC KEY-----, as in cosign.pub)`);
  }
  return keys;
}

/** How messages name the keys a refusal expected. */
export function keyNames(keys: readonly CosignKey[]): string {
  return keys.map((k) => `cosign ${k.id}`).join(', ');
}

/**
 * The signer of `repository@digest` (its cosign signatures read from `client`), or a SignatureRefusal naming what
 * was found and which keys were expected. `label` names the artifact in messages (`image host/web@sha256:0123…`).
 * Both of cosign's layouts are read: the `.sig` tag's simple-signing layers, and Sigstore bundles that refer to
 * the digest (cosign's new bundle format, the default of cosign 3). A registry that cannot be read throws its own
 * error (transient or not), not a refusal.
 */
export async function verifyCosign(
  client: RegistryClient,
  repository: string,
  digest: string,
  keys: readonly CosignKey[],
  label: string,
): Promise<ArtifactSigner> {
  const expected = `expected a cosign signature by ${keyNames(keys)}`;
  const reasons: string[] = [];
  const tagged = await tagSignatures(client, repository, digest, keys, reasons);
  if (tagged.signer) return tagged.signer;
  const bundled = await bundleSignatures(client, repository, digest, keys, reasons);
  if (bundled.signer) return bundled.signer;
  if (!tagged.found && !bundled.found)
    throw new SignatureRefusal(
      `${label} is not signed (no ${signatureTag(digest).slice(0, 19)}….sig and no Sigstore bundle in the registry): ${expected}`,
    );
  throw new SignatureRefusal(`${label} is not signed by a trusted key: ${reasons.join('; ')}; ${expected}`);
}

interface Found {
  /** Whether any signature of this layout was there. */
  found: boolean;
  signer?: ArtifactSigner | undefined;
}

/** The `.sig` tag's simple-signing layers (cosign's first layout); what refuses each goes to `reasons`. */
async function tagSignatures(
  client: RegistryClient,
  repository: string,
  digest: string,
  keys: readonly CosignKey[],
  reasons: string[],
): Promise<Found> {
  const tag = signatureTag(digest);
  const manifest = await client.artifactManifest(repository, tag, 'undefined');
  if (!manifest) return { found: false };
  const layers = manifest.layers.filter((l) => l.mediaType === SIMPLE_SIGNING).slice(0, MAX_SIGNATURES);
  if (layers.length === 0) reasons.push(`${tag.slice(0, 19)}….sig holds no cosign signature`);
  for (const [i, layer] of layers.entries()) {
    const encoded = layer.annotations?.[SIGNATURE_ANNOTATION];
    if (encoded === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) {
      reasons.push(`signature ${i + 1} has no base64 ${SIGNATURE_ANNOTATION} annotation`);
      continue;
    }
    if (layer.size > MAX_PAYLOAD_BYTES) {
      reasons.push(`signature ${i + 1}'s payload is larger than ${MAX_PAYLOAD_BYTES} bytes`);
      continue;
    }
    const payload = await readBlob(client, repository, layer.digest, MAX_PAYLOAD_BYTES);
    if (typeof payload === 'string') {
      reasons.push(`signature ${i + 1} ${payload}`);
      continue;
    }
    const signed = signedDigest(payload);
    if (signed !== digest) {
      reasons.push(
        `signature ${i + 1} ${signed === undefined ? 'is not a cosign simple-signing payload' : `signs ${signed.slice(0, 19)}…, another digest`}`,
      );
      continue;
    }
    const signature = Buffer.from(encoded, 'base64');
    const key = await firstVerifying(keys, payload, signature);
    if (key) return { found: true, signer: { key: `cosign ${key.id}` } };
    reasons.push(`signature ${i + 1} verifies under none of the trusted keys`);
  }
  return { found: true };
}

/**
 * Sigstore bundles that refer to the digest (OCI 1.1 referrers, or their fallback tag): each a DSSE envelope of an
 * in-toto statement of cosign's signing predicate whose subject is the digest, signed by a trusted key. Other
 * referrers (SBOMs, attestations of other predicates) are not signatures and are passed over.
 */
async function bundleSignatures(
  client: RegistryClient,
  repository: string,
  digest: string,
  keys: readonly CosignKey[],
  reasons: string[],
): Promise<Found> {
  const referrers = (await client.referrers(repository, digest, SIGSTORE_BUNDLE)).slice(0, MAX_SIGNATURES);
  let found = false;
  for (const [i, referrer] of referrers.entries()) {
    // One unreadable referrer (anyone who can push may add one) does not hide the others.
    let manifest: Awaited<ReturnType<RegistryClient['artifactManifest']>>;
    try {
      manifest = await client.artifactManifest(repository, referrer.digest);
    } catch (error) {
      if (!(error instanceof StalledError)) throw error;
      found = true;
      reasons.push(`referrer ${i + 1} cannot be read (${error.message.slice(0, 120)})`);
      continue;
    }
    const layer = manifest.layers.find((l) => l.mediaType === SIGSTORE_BUNDLE);
    if (manifest.artifactType !== SIGSTORE_BUNDLE && !layer) continue;
    found = true;
    const n = `bundle ${i + 1}`;
    if (!layer) {
      reasons.push(`${n} holds no ${SIGSTORE_BUNDLE} layer`);
      continue;
    }
    if (layer.size > MAX_BUNDLE_BYTES) {
      reasons.push(`${n} is larger than ${MAX_BUNDLE_BYTES} bytes`);
      continue;
    }
    const text = await readBlob(client, repository, layer.digest, MAX_BUNDLE_BYTES);
    if (typeof text === 'string') {
      reasons.push(`${n} ${text}`);
      continue;
    }
    const verdict = await verifyBundle(text, digest, keys);
    if (typeof verdict !== 'string') return { found, signer: { key: `cosign ${verdict.id}` } };
    reasons.push(`${n} ${verdict}`);
  }
  return { found };
}

/** A blob, or why it cannot be read (missing, or not what its digest says): one bad layer hides no other. */
async function readBlob(
  client: RegistryClient,
  repository: string,
  digest: string,
  maxBytes: number,
): Promise<Buffer | string> {
  try {
    return await client.blob(repository, digest, maxBytes);
  } catch (error) {
    if (!(error instanceof StalledError)) throw error;
    return `cannot be read (${error.message.slice(0, 120)})`;
  }
}

/** The key a bundle's signature of `digest` verifies under, or why it does not. */
async function verifyBundle(
  text: Buffer,
  digest: string,
  keys: readonly CosignKey[],
): Promise<CosignKey | string> {
  const { bundleFromJSON } = await import('@sigstore/bundle');
  let bundle: ReturnType<typeof bundleFromJSON>;
  try {
    bundle = bundleFromJSON(JSON.parse(text.toString('utf8')));
  } catch {
    return 'is not a Sigstore bundle';
  }
  if (bundle.content.$case !== 'dsseEnvelope') return 'is not a DSSE envelope (cosign signs images with one)';
  const envelope = bundle.content.dsseEnvelope;
  if (envelope.payloadType !== 'application/vnd.in-toto+json') return 'is not an in-toto statement';
  let statement: { predicateType?: unknown; subject?: unknown };
  try {
    statement = JSON.parse(envelope.payload.toString('utf8')) as typeof statement;
  } catch {
    return 'is not an in-toto statement';
  }
  if (statement.predicateType !== COSIGN_SIGN_PREDICATE)
    return `is an attestation (${String(statement.predicateType).slice(0, 80)}), not a signature`;
  const hex = digest.slice('sha256:'.length);
  const subjects = Array.isArray(statement.subject) ? statement.subject.slice(0, 64) : [];
  if (!subjects.some((s) => (s as { digest?: { sha256?: unknown } } | null)?.digest?.sha256 === hex))
    return 'signs another digest';
  if (bundle.verificationMaterial.content.$case !== 'publicKey')
    return 'is keyless (a certificate): only signatures by trusted keys are verified';
  // A key the operator gave is trusted as it is: log entries and timestamps the bundle carries are not asked for.
  const trusted = { ...bundle, verificationMaterial: { ...bundle.verificationMaterial, tlogEntries: [] } };
  delete (trusted.verificationMaterial as { timestampVerificationData?: unknown }).timestampVerificationData;
  const { Verifier, toSignedEntity } = await import('@sigstore/verify');
  const entity = toSignedEntity(trusted);
  const signature = envelope.signatures[0]?.sig;
  for (const candidate of keys) {
    if (candidate.key.asymmetricKeyType === 'ed25519') {
      // DSSE's pre-authentication encoding, signed as cosign signs with an Ed25519 key (Ed25519ph).
      const type = Buffer.from(envelope.payloadType);
      const pae = Buffer.concat([
        Buffer.from(`DSSEv1 ${type.length} `),
        type,
        Buffer.from(` ${envelope.payload.length} `),
        envelope.payload,
      ]);
      if (signature && (await ed25519phVerifies(candidate.key, pae, signature))) return candidate;
      continue;
    }
    try {
      verifierOf(Verifier, candidate).verify(entity);
      return candidate;
    } catch {
      // not this key
    }
  }
  return 'verifies under none of the trusted keys';
}

/** A verifier that trusts exactly `candidate`, asking for no log entry, certificate or timestamp. */
function verifierOf(
  Verifier: typeof import('@sigstore/verify').Verifier,
  candidate: CosignKey,
): import('@sigstore/verify').Verifier {
  return new Verifier(
    {
      certificateAuthorities: [],
      timestampAuthorities: [],
      tlogs: [],
      ctlogs: [],
      publicKey: () => ({ publicKey: candidate.key, validFor: () => true }),
    },
    { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 },
  );
}

/** The digest a simple-signing payload signs, or undefined when it is not one. */
function signedDigest(payload: Buffer): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
  const critical = (json as { critical?: unknown } | null)?.critical as
    | { type?: unknown; image?: { 'docker-manifest-digest'?: unknown } }
    | undefined;
  if (typeof critical?.type !== 'string' || critical.type.toLowerCase() !== SIGNATURE_TYPE) return undefined;
  const digest = critical.image?.['docker-manifest-digest'];
  return typeof digest === 'string' && /^sha256:[0-9a-f]{64}$/.test(digest) ? digest : undefined;
}

/**
 * An Ed25519 signature as cosign makes it with an Ed25519 key: Ed25519ph (RFC 8032's pre-hashed variant, SHA-512),
 * which Node's crypto does not verify; checked with @noble/curves.
 */
async function ed25519phVerifies(key: KeyObject, message: Buffer, signature: Buffer): Promise<boolean> {
  const { ed25519ph } = await import('@noble/curves/ed25519.js');
  const raw = Buffer.from(String(key.export({ format: 'jwk' }).x), 'base64url');
  try {
    return ed25519ph.verify(signature, message, raw);
  } catch {
    return false;
  }
}

/** The first key under which `signature` of `payload` verifies. */
async function firstVerifying(
  keys: readonly CosignKey[],
  payload: Buffer,
  signature: Buffer,
): Promise<CosignKey | undefined> {
  const { Verifier, toSignedEntity } = await import('@sigstore/verify');
  const { HashAlgorithm } = await import('@sigstore/protobuf-specs');
  for (const candidate of keys) {
    if (candidate.key.asymmetricKeyType === 'ed25519') {
      if (await ed25519phVerifies(candidate.key, payload, signature)) return candidate;
      continue;
    }
    const entity = toSignedEntity(
      {
        mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
        verificationMaterial: {
          content: { $case: 'publicKey', publicKey: { hint: candidate.id } },
          tlogEntries: [],
          timestampVerificationData: undefined,
        },
        content: {
          $case: 'messageSignature',
          messageSignature: {
            messageDigest: {
              algorithm: HashAlgorithm.SHA2_256,
              digest: createHash('sha256').update(payload).digest(),
            },
            signature,
          },
        },
      },
      payload,
    );
    const verifier = verifierOf(Verifier, candidate);
    try {
      verifier.verify(entity);
      return candidate;
    } catch {
      // not this key
    }
  }
  return undefined;
}

/** What an artifact poller offers for signatures: the check of a digest, and the last refusal it made. */
export interface DigestVerifier {
  /** The signer of `digest`, or the SignatureRefusal that refuses it (kept, under the keys of now). */
  verify(digest: string): Promise<ArtifactSigner>;
  /** What the last refused digest was refused for, until a digest is accepted. */
  lastRefusal(): string | undefined;
}

/**
 * The digest check of an artifact source with `verify` (undefined without): `where` names the source in messages
 * about its keys (`sources.registry web`), `label` an artifact (`image host/web@sha256:0123…`).
 */
export function cosignVerifier(
  verify: { provider: 'cosign'; keys: readonly KeyRef[] } | undefined,
  where: string,
  client: RegistryClient,
  repository: string,
  label: (digest: string) => string,
): DigestVerifier | undefined {
  if (!verify) return undefined;
  const verdicts = new SignatureVerdicts<CosignKey[], ArtifactSigner>(
    `${where} verify.keys`,
    verify.keys,
    readCosignKeys,
    false,
  );
  let refusal: string | undefined;
  return {
    async verify(digest) {
      try {
        const signer = await verdicts.check(digest, (keys) =>
          verifyCosign(client, repository, digest, keys, label(digest)),
        );
        refusal = undefined;
        return signer;
      } catch (error) {
        if (error instanceof StalledError) refusal = error.message;
        throw error instanceof StalledError && !(error instanceof SignatureRefusal)
          ? new SignatureRefusal(error.message)
          : error;
      }
    },
    lastRefusal: () => refusal,
  };
}
