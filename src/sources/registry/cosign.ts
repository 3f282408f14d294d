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
// message signature; Ed25519 ones, which cosign makes as Ed25519ph, by @noble/curves), or (keyless) under the key of
// the certificate that comes with it (the `.sig` layer's `dev.sigstore.cosign/certificate` annotation, the bundle's
// certificate), which must chain to the operator's trusted root and name an allowed identity (OIDC issuer and
// subject). Only the trusted root's certificates make a chain: the chain a publisher sends along is not read.
//
// Nothing read is trusted before the check: manifests are bounded by the registry client (layers, annotations),
// payloads and bundles are read only up to their bounds and checked against their digests, and at most
// MAX_SIGNATURES of each layout are looked at.
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import type { SignedEntity, Signer, TrustMaterial } from '@sigstore/verify';
import type { ArtifactVerify, KeylessIdentity } from '../../config/schema-sources.ts';
import { StalledError } from '../../errors.ts';
import { holdsEscapedKey, parseJson } from '../../json.ts';
import { type KeyText, keyTexts, SignatureVerdicts } from '../trusted-keys.ts';
import type { RegistryClient } from './client.ts';

export const SIMPLE_SIGNING = 'application/vnd.dev.cosign.simplesigning.v1+json';
export const SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
export const CERTIFICATE_ANNOTATION = 'dev.sigstore.cosign/certificate';
/** A `.sig` layer's RFC 3161 timestamp of its signature (JSON: `{"SignedRFC3161Timestamp": base64 DER}`). */
export const TIMESTAMP_ANNOTATION = 'dev.sigstore.cosign/rfc3161timestamp';
const MAX_TIMESTAMP_BYTES = 16 * 1024;
const REKOR_ANNOTATION = 'dev.sigstore.cosign/bundle';
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
  /** `cosign SHA256:…`, or for a certificate `cosign release@example.com (issuer https://…)` */
  key: string;
  /**
   * Until when the verdict holds (ms since the epoch): a certificate checked at the time of the check (no timestamp
   * authority or log in the root) is valid only until it expires, then the digest is checked again.
   */
  validUntil?: number | undefined;
}

/** Certificates an operator trusts to sign artifacts (keyless), and whom. */
export interface KeylessTrust {
  material: TrustMaterial;
  identities: readonly KeylessIdentity[];
  /**
   * Whether the root names transparency logs or timestamp authorities: a signature must then carry a time they
   * vouch for, at which its certificate was valid. Without them (a private CA), the certificate must be valid now.
   */
  timestamped: boolean;
  /** How messages name the root (`sources.registry web verify.keyless.trustedRoot`, `file /etc/…`). */
  origin: string;
}

/** What a source with `verify` trusts: keys, certificates of a trusted root, or both. */
export interface CosignTrust {
  keys: readonly CosignKey[];
  keyless?: KeylessTrust | undefined;
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

const END_OF_TIME = new Date(8_640_000_000_000_000);

/**
 * The trusted root of `verify.keyless`: a Sigstore trusted root (trusted_root.json, as `cosign trusted-root create`
 * writes it, with its certificate authorities and any transparency logs, CT logs and timestamp authorities), or PEM
 * certificates (a private CA: its root and intermediates).
 */
export async function readTrustedRoot(
  { text, origin }: KeyText,
  identities: readonly KeylessIdentity[],
): Promise<KeylessTrust> {
  const { toTrustMaterial } = await import('@sigstore/verify');
  if (text.trimStart().startsWith('{')) {
    const { TrustedRoot } = await import('@sigstore/protobuf-specs');
    let material: TrustMaterial;
    try {
      material = toTrustMaterial(TrustedRoot.fromJSON(parseJson(text)));
    } catch (error) {
      throw new StalledError(
        `${origin}: not a Sigstore trusted root (${(error as Error).message.slice(0, 200)})`,
      );
    }
    if (material.certificateAuthorities.length === 0)
      throw new StalledError(`${origin}: the trusted root names no certificate authority`);
    return {
      material,
      identities,
      timestamped: material.tlogs.length + material.timestampAuthorities.length > 0,
      origin,
    };
  }
  const { X509Certificate } = await import('@sigstore/core');
  const certificates: InstanceType<typeof X509Certificate>[] = [];
  for (const block of text.matchAll(PEM_BLOCK)) {
    const label = block[1] ?? '';
    if (label.includes('PRIVATE'))
      throw new StalledError(`${origin} holds a private key (${label}): give the CA's certificates only`);
    if (label !== 'CERTIFICATE') continue;
    try {
      certificates.push(X509Certificate.parse(Buffer.from((block[2] ?? '').replace(/\s+/g, ''), 'base64')));
    } catch (error) {
      throw new StalledError(`${origin}: not a certificate (${(error as Error).message.slice(0, 200)})`);
    }
  }
  if (certificates.length === 0)
    throw new StalledError(
      `${origin}: neither a Sigstore trusted root (JSON) nor PEM certificates (-----BEGIN CERTIFICATE-----)`,
    );
  if (!certificates.some((c) => c.subject.equals(c.issuer)))
    throw new StalledError(`${origin}: no root certificate (self-signed) among its certificates`);
  return {
    material: {
      certificateAuthorities: [
        { certChain: certificates, validFor: { start: new Date(0), end: END_OF_TIME } },
      ],
      timestampAuthorities: [],
      tlogs: [],
      ctlogs: [],
      publicKey: () => {
        throw new StalledError(`${origin} holds no keys`);
      },
    },
    identities,
    timestamped: false,
    origin,
  };
}

/** How messages name an identity of `verify.keyless`. */
function identityName(identity: KeylessIdentity): string {
  const subject = identity.subject ?? `/${identity.subjectRegExp}/`;
  const issuer = identity.issuer ?? `/${identity.issuerRegExp}/`;
  return `${subject} (issuer ${issuer})`;
}

/** Whether a certificate's subject and issuer are those of an identity (regular expressions match all of them). */
function identityAllows(identity: KeylessIdentity, subject: string, issuer: string): boolean {
  const matches = (exact: string | undefined, pattern: string | undefined, value: string) =>
    exact !== undefined ? exact === value : new RegExp(`^(?:${pattern})$`, 'u').test(value);
  return (
    matches(identity.subject, identity.subjectRegExp, subject) &&
    matches(identity.issuer, identity.issuerRegExp, issuer)
  );
}

/** How messages name what a refusal expected. */
export function keyNames(trust: CosignTrust): string {
  const names = trust.keys.map((k) => `cosign ${k.id}`);
  if (trust.keyless)
    names.push(
      `a certificate of ${trust.keyless.origin} for ${trust.keyless.identities.map(identityName).join(' or ')}`,
    );
  return names.join(', ');
}

/**
 * The signer of a signed entity (a bundle's, or one built from a `.sig` layer) whose key is a certificate, or why
 * it is refused: the certificate must chain to the trusted root at a time the root's logs or timestamp authorities
 * vouch for (or, without them, now), the signature verify under its key, and its identity be allowed.
 */
async function verifyCertificate(
  entity: SignedEntity,
  trust: KeylessTrust,
): Promise<ArtifactSigner | string> {
  const { Verifier } = await import('@sigstore/verify');
  const material = trust.material;
  let checked = entity;
  if (!trust.timestamped) {
    // A private CA has no log: the time of this check stands as the signing time (as `cosign verify` does with a
    // certificate and no transparency log), so an expired certificate is refused.
    checked = {
      ...entity,
      tlogEntries: [],
      timestamps: [
        {
          $case: 'transparency-log',
          tlogEntry: {
            logIndex: '0',
            logId: { keyId: Buffer.from('now') },
            kindVersion: { kind: 'hashedrekord', version: '0.0.1' },
            integratedTime: String(Math.floor(Date.now() / 1000)),
            inclusionPromise: { signedEntryTimestamp: Buffer.alloc(0) },
            inclusionProof: undefined,
            canonicalizedBody: Buffer.alloc(0),
          },
        },
      ],
    };
  }
  let signer: Signer;
  try {
    signer = new Verifier(material, {
      tlogThreshold: trust.timestamped && material.tlogs.length > 0 ? 1 : 0,
      ctlogThreshold: material.ctlogs.length > 0 ? 1 : 0,
      timestampThreshold: 1,
    }).verify(checked);
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message;
    return `is refused by ${trust.origin} (${(error as Error).message.slice(0, 160)}${cause ? `: ${cause.slice(0, 120)}` : ''})`;
  }
  const subject = signer.identity?.subjectAlternativeName ?? '';
  const issuer = signer.identity?.extensions?.issuer ?? '';
  const name = `${subject || 'no subject'} (issuer ${issuer || 'none'})`;
  if (!trust.identities.some((identity) => identityAllows(identity, subject, issuer)))
    return `is signed with a certificate for ${name.slice(0, 300)}, an identity verify.keyless does not allow`;
  const leaf = entity.key.$case === 'certificate' ? entity.key.certificate : undefined;
  return {
    key: `cosign ${name}`,
    ...(!trust.timestamped && leaf ? { validUntil: leaf.notAfter.getTime() } : {}),
  };
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
  trust: CosignTrust,
  label: string,
): Promise<ArtifactSigner> {
  const expected = `expected a cosign signature by ${keyNames(trust)}`;
  const reasons: string[] = [];
  const tagged = await tagSignatures(client, repository, digest, trust, reasons);
  if (tagged.signer) return tagged.signer;
  const bundled = await bundleSignatures(client, repository, digest, trust, reasons);
  if (bundled.signer) return bundled.signer;
  if (!tagged.found && !bundled.found)
    throw new SignatureRefusal(
      `${label} is not signed (no ${signatureTag(digest).slice(0, 19)}….sig and no Sigstore bundle in the registry): ${expected}`,
    );
  throw new SignatureRefusal(
    `${label} is not signed by a trusted ${trust.keyless ? 'key or certificate' : 'key'}: ${reasons.join('; ')}; ${expected}`,
  );
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
  trust: CosignTrust,
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
    const key = await firstVerifying(trust.keys, payload, signature);
    if (key) return { found: true, signer: { key: `cosign ${key.id}` } };
    const certificate = layer.annotations?.[CERTIFICATE_ANNOTATION];
    const keyless = trust.keyless;
    if (certificate !== undefined && keyless) {
      const timestamp = rfc3161(layer.annotations?.[TIMESTAMP_ANNOTATION]);
      const verdict = await messageEntity(payload, signature, { certificate, timestamp })
        .then((entity) => verifyCertificate(entity, keyless))
        .catch(
          (error: unknown) =>
            `has a certificate that cannot be read (${(error as Error).message.slice(0, 120)})`,
        );
      if (typeof verdict !== 'string') return { found: true, signer: verdict };
      // The `.sig` layout keeps a transparency log's entry in an annotation of its own shape, which is not read:
      // a root that asks for a log entry is met by the bundle layout.
      const logged = keyless.material.tlogs.length > 0 && layer.annotations?.[REKOR_ANNOTATION] !== undefined;
      reasons.push(
        `signature ${i + 1} ${verdict}${logged ? ` (its log entry, in ${REKOR_ANNOTATION}, is not read: sign with cosign's bundle format)` : ''}`,
      );
      continue;
    }
    reasons.push(
      certificate !== undefined
        ? `signature ${i + 1} is made with a certificate (keyless), and verify.keyless is not set; it verifies under none of the trusted keys`
        : `signature ${i + 1} verifies under none of the trusted keys`,
    );
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
  trust: CosignTrust,
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
    const verdict = await verifyBundle(text, digest, trust);
    if (typeof verdict !== 'string') return { found, signer: verdict };
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

/** The signer of a bundle's signature of `digest` (a trusted key, or a certificate of the trusted root), or why not. */
export async function verifyBundle(
  text: Buffer,
  digest: string,
  trust: CosignTrust,
): Promise<ArtifactSigner | string> {
  const { bundleFromJSON } = await import('@sigstore/bundle');
  let bundle: ReturnType<typeof bundleFromJSON>;
  try {
    bundle = bundleFromJSON(parseJson(text.toString('utf8')));
  } catch {
    return 'is not a Sigstore bundle';
  }
  // The verifier reads each log entry's body with JSON.parse, which may misread an escaped key (src/json.ts). No log
  // writes one: a body holding one is refused before.
  if (
    bundle.verificationMaterial.tlogEntries.some((entry) =>
      holdsEscapedKey(entry.canonicalizedBody.toString('utf8')),
    )
  )
    return 'has a transparency log entry that is not one';
  if (bundle.content.$case !== 'dsseEnvelope') return 'is not a DSSE envelope (cosign signs images with one)';
  const envelope = bundle.content.dsseEnvelope;
  if (envelope.payloadType !== 'application/vnd.in-toto+json') return 'is not an in-toto statement';
  let statement: { predicateType?: unknown; subject?: unknown };
  try {
    statement = parseJson(envelope.payload.toString('utf8')) as typeof statement;
  } catch {
    return 'is not an in-toto statement';
  }
  if (statement.predicateType !== COSIGN_SIGN_PREDICATE)
    return `is an attestation (${String(statement.predicateType).slice(0, 80)}), not a signature`;
  const hex = digest.slice('sha256:'.length);
  const subjects = Array.isArray(statement.subject) ? statement.subject.slice(0, 64) : [];
  if (!subjects.some((s) => (s as { digest?: { sha256?: unknown } } | null)?.digest?.sha256 === hex))
    return 'signs another digest';
  const { Verifier, toSignedEntity } = await import('@sigstore/verify');
  if (bundle.verificationMaterial.content.$case !== 'publicKey') {
    if (!trust.keyless) return 'is keyless (a certificate), and verify.keyless is not set';
    let entity: SignedEntity;
    try {
      entity = toSignedEntity(bundle);
    } catch (error) {
      return `has a certificate that cannot be read (${(error as Error).message.slice(0, 120)})`;
    }
    return verifyCertificate(entity, trust.keyless);
  }
  // A key the operator gave is trusted as it is: log entries and timestamps the bundle carries are not asked for.
  const trusted = { ...bundle, verificationMaterial: { ...bundle.verificationMaterial, tlogEntries: [] } };
  delete (trusted.verificationMaterial as { timestampVerificationData?: unknown }).timestampVerificationData;
  const entity = toSignedEntity(trusted);
  const signature = envelope.signatures[0]?.sig;
  for (const candidate of trust.keys) {
    if (candidate.key.asymmetricKeyType === 'ed25519') {
      // DSSE's pre-authentication encoding, signed as cosign signs with an Ed25519 key (Ed25519ph).
      const type = Buffer.from(envelope.payloadType);
      const pae = Buffer.concat([
        Buffer.from(`DSSEv1 ${type.length} `),
        type,
        Buffer.from(` ${envelope.payload.length} `),
        envelope.payload,
      ]);
      if (signature && (await ed25519phVerifies(candidate.key, pae, signature)))
        return { key: `cosign ${candidate.id}` };
      continue;
    }
    try {
      verifierOf(Verifier, candidate).verify(entity);
      return { key: `cosign ${candidate.id}` };
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
    json = parseJson(payload.toString('utf8'));
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

/** The DER timestamp response of a `.sig` layer's timestamp annotation, when it holds one (bounded). */
function rfc3161(annotation: string | undefined): Buffer | undefined {
  if (annotation === undefined || annotation.length > MAX_TIMESTAMP_BYTES) return undefined;
  try {
    const encoded = (parseJson(annotation) as { SignedRFC3161Timestamp?: unknown }).SignedRFC3161Timestamp;
    return typeof encoded === 'string' && /^[A-Za-z0-9+/]+={0,2}$/.test(encoded)
      ? Buffer.from(encoded, 'base64')
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A simple-signing payload and its signature as @sigstore/verify checks them: under the key named by `hint`, or
 * under the key of a PEM `certificate` (which throws when it is no certificate), with its RFC 3161 `timestamp`.
 */
async function messageEntity(
  payload: Buffer,
  signature: Buffer,
  key: { hint: string } | { certificate: string; timestamp?: Buffer | undefined },
): Promise<SignedEntity> {
  const { toSignedEntity } = await import('@sigstore/verify');
  const { HashAlgorithm } = await import('@sigstore/protobuf-specs');
  let content: Parameters<typeof toSignedEntity>[0]['verificationMaterial']['content'];
  if ('hint' in key) content = { $case: 'publicKey', publicKey: { hint: key.hint } };
  else {
    const block = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/.exec(
      key.certificate,
    );
    if (!block) throw new Error(`${CERTIFICATE_ANNOTATION} is no PEM certificate`);
    content = { $case: 'certificate', certificate: { rawBytes: Buffer.from(block[1] ?? '', 'base64') } };
  }
  return toSignedEntity(
    {
      mediaType: SIGSTORE_BUNDLE,
      verificationMaterial: {
        content,
        tlogEntries: [],
        timestampVerificationData:
          'timestamp' in key && key.timestamp
            ? { rfc3161Timestamps: [{ signedTimestamp: key.timestamp }] }
            : undefined,
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
}

/** The first key under which `signature` of `payload` verifies. */
async function firstVerifying(
  keys: readonly CosignKey[],
  payload: Buffer,
  signature: Buffer,
): Promise<CosignKey | undefined> {
  const { Verifier } = await import('@sigstore/verify');
  for (const candidate of keys) {
    if (candidate.key.asymmetricKeyType === 'ed25519') {
      if (await ed25519phVerifies(candidate.key, payload, signature)) return candidate;
      continue;
    }
    const entity = await messageEntity(payload, signature, { hint: candidate.id });
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
  verify: ArtifactVerify | undefined,
  where: string,
  client: RegistryClient,
  repository: string,
  label: (digest: string) => string,
): DigestVerifier | undefined {
  if (!verify) return undefined;
  const keys = verify.keys ?? [];
  const keyless = verify.keyless;
  const verdicts = new SignatureVerdicts<CosignTrust, ArtifactSigner>(
    async () => [
      ...(await keyTexts(keys, `${where} verify.keys`)),
      ...(keyless
        ? (await keyTexts([keyless.trustedRoot], `${where} verify.keyless.trustedRoot`)).map((t) =>
            typeof keyless.trustedRoot === 'string'
              ? { ...t, origin: `${where} verify.keyless.trustedRoot` }
              : t,
          )
        : []),
    ],
    async (texts) => ({
      keys: await readCosignKeys(texts.slice(0, keys.length)),
      keyless: keyless && (await readTrustedRoot(texts[keys.length] as KeyText, keyless.identities)),
    }),
    false,
  );
  let refusal: string | undefined;
  return {
    async verify(digest) {
      try {
        const check = () =>
          verdicts.check(digest, (trust) => verifyCosign(client, repository, digest, trust, label(digest)));
        let signer = await check();
        if (signer.validUntil !== undefined && signer.validUntil < Date.now()) {
          // Accepted while its certificate was valid, which it no longer is: asked again, as after a restart.
          verdicts.forget(digest);
          signer = await check();
        }
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
