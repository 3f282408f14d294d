// Signed commits: a Git source with `verify` deploys a commit only when its signature (the commit's `gpgsig` header,
// made by `git commit -S`) verifies under one of the keys the operator trusts. Two kinds of signature, as git makes
// them: OpenPGP (gpg; verified with openpgp.js, loaded only when a source has OpenPGP keys) and SSH (`gpg.format
// ssh`: an SSHSIG in the `git` namespace, verified here with Node's crypto). Keys come as armored OpenPGP public key
// blocks and as SSH public keys or allowed_signers lines (`principal[,…] [namespaces="git"] key-type base64`), each
// from a file, a variable or inline text; what a text holds is read from its content.
//
// The signed payload is the commit object without its `gpgsig` header, byte for byte as git signs it. Nothing of a
// commit is trusted before the check: its size is the object's (bounded by maxObjectBytes), the signature's by it.
import { createHash, createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import type ssh2 from 'ssh2';
import { StalledError } from '../../errors.ts';
import { fingerprint } from '../../http/known-hosts.ts';
import { type KeyRef, keyTexts, SignatureVerdicts } from '../trusted-keys.ts';

/** Who signed a commit, as releases record it and messages name it. */
export interface CommitSigner {
  kind: 'openpgp' | 'ssh';
  /** `openpgp 4F2A…91C3` (the signing key's fingerprint) or `ssh-ed25519 SHA256:…`. */
  key: string;
  /** The OpenPGP key's first user ID, or the allowed_signers principals. */
  identity?: string | undefined;
}

interface SshKey {
  type: string;
  blob: Buffer;
  principals: string[];
  public: KeyObject;
}

export interface TrustedKeys {
  ssh: SshKey[];
  /** openpgp.js keys (typed loosely: the module is loaded only when there are any). */
  openpgp: unknown[];
  /** Each trusted key as messages name them. */
  names: string[];
}

const SSH_KEY_TYPES = /^(ssh-ed25519|ecdsa-sha2-nistp(256|384|521)|ssh-rsa)$/;
const ECDSA_SIZES: Record<string, { hash: string; bytes: number }> = {
  'ecdsa-sha2-nistp256': { hash: 'sha256', bytes: 32 },
  'ecdsa-sha2-nistp384': { hash: 'sha384', bytes: 48 },
  'ecdsa-sha2-nistp521': { hash: 'sha512', bytes: 66 },
};

/** Reads the trusted keys from their texts (`origin` names each for messages: `file /etc/keys/alice.asc`). */
export async function readTrustedKeys(
  texts: readonly { text: string; origin: string }[],
): Promise<TrustedKeys> {
  const keys: TrustedKeys = { ssh: [], openpgp: [], names: [] };
  for (const { text, origin } of texts) {
    if (text.includes('-----BEGIN PGP PUBLIC KEY BLOCK-----')) {
      const openpgp = await import('openpgp');
      let read: Awaited<ReturnType<typeof openpgp.readKeys>>;
      try {
        read = await openpgp.readKeys({ armoredKeys: text });
      } catch (error) {
        throw new StalledError(
          `${origin}: not an OpenPGP public key block (${(error as Error).message.slice(0, 200)})`,
        );
      }
      for (const key of read) {
        if (key.isPrivate())
          throw new StalledError(`${origin} holds a private OpenPGP key: give its public key only`);
        keys.openpgp.push(key);
        const user = key.getUserIDs()[0];
        keys.names.push(`openpgp ${key.getFingerprint().toUpperCase()}${user ? ` (${user})` : ''}`);
      }
      continue;
    }
    const lines = text.split(/\r?\n/);
    // ssh2 (its key parser) is loaded by the first source with SSH keys, not by every agent.
    const { utils } = (await import('ssh2')).default;
    for (let i = 0; i < lines.length; i++) {
      const line = (lines[i] ?? '').trim();
      if (line === '' || line.startsWith('#')) continue;
      const key = sshKeyLine(line, `${origin}:${i + 1}`, utils);
      if (key) {
        keys.ssh.push(key);
        keys.names.push(
          `${key.type} ${fingerprint(key.blob)}${key.principals.length > 0 ? ` (${key.principals.join(',')})` : ''}`,
        );
      }
    }
  }
  if (keys.ssh.length === 0 && keys.openpgp.length === 0)
    throw new StalledError(
      `${texts.map((t) => t.origin).join(', ') || 'verify.keys'}: no public key to verify with`,
    );
  return keys;
}

/** An SSH public key line or an allowed_signers line; undefined for one whose namespaces leave out `git`. */
function sshKeyLine(line: string, where: string, utils: typeof ssh2.utils): SshKey | undefined {
  const fields = line.match(/(?:[^\s"]+|"[^"]*")+/g) ?? [];
  const at = fields.findIndex((f) => SSH_KEY_TYPES.test(f));
  const type = fields[at];
  const base64 = fields[at + 1];
  if (at < 0 || !type || !base64)
    throw new StalledError(`${where}: not an SSH public key or allowed_signers line (key-type base64-key)`);
  const before = fields.slice(0, at);
  const principals = before.length > 0 ? (before[0] ?? '').split(',') : [];
  const options = before.slice(1).join(',');
  const namespaces = /namespaces="([^"]*)"/.exec(options)?.[1];
  if (options.includes('cert-authority'))
    throw new StalledError(`${where}: cert-authority signers are not supported`);
  if (namespaces !== undefined && !namespaces.split(',').includes('git')) return undefined;
  const parsed = utils.parseKey(`${type} ${base64}`);
  if (parsed instanceof Error || Array.isArray(parsed))
    throw new StalledError(`${where}: the ${type} key cannot be read`);
  return {
    type,
    blob: parsed.getPublicSSH(),
    principals,
    public: createPublicKey(parsed.getPublicPEM()),
  };
}

/** The commit without its signature, and the signature (its header's lines joined), as git verifies them. */
export function splitSignedCommit(raw: Buffer): { payload: Buffer; signature: string | undefined } {
  const text = raw.toString('latin1');
  const end = text.indexOf('\n\n');
  const headerEnd = end === -1 ? text.length : end + 1;
  const lines = text.slice(0, headerEnd).split('\n');
  const kept: string[] = [];
  const signature: string[] = [];
  let inSignature = false;
  for (const line of lines) {
    if (line.startsWith('gpgsig ')) {
      inSignature = true;
      signature.push(line.slice('gpgsig '.length));
      continue;
    }
    if (inSignature && line.startsWith(' ')) {
      signature.push(line.slice(1));
      continue;
    }
    inSignature = false;
    kept.push(line);
  }
  if (signature.length === 0) return { payload: raw, signature: undefined };
  const payload = Buffer.from(kept.join('\n') + text.slice(headerEnd), 'latin1');
  return { payload, signature: `${signature.join('\n')}\n` };
}

/**
 * The signer of a commit (its raw object) under the trusted keys, or a StalledError naming the commit, what was
 * wrong and the keys that were expected.
 */
export async function verifyCommit(raw: Buffer, commit: string, keys: TrustedKeys): Promise<CommitSigner> {
  const { payload, signature } = splitSignedCommit(raw);
  return verifySigned(payload, signature, `commit ${commit.slice(0, 12)}`, keys);
}

/**
 * An annotated tag's signature, appended to its message (`git tag -s`): the object up to the armor's first line is
 * what was signed. The tag must point at `commit`, or its signature says nothing of it.
 */
export async function verifyTag(
  raw: Buffer,
  name: string,
  commit: string,
  keys: TrustedKeys,
): Promise<CommitSigner> {
  const text = raw.toString('latin1');
  const subject = `tag ${name}`;
  const object = /^object ([0-9a-f]{40})\n/.exec(text)?.[1];
  if (object !== commit)
    throw new StalledError(
      `${subject} does not point at commit ${commit.slice(0, 12)} (it names ${object ?? 'nothing'})`,
    );
  const at = Math.max(
    text.lastIndexOf('\n-----BEGIN PGP SIGNATURE-----'),
    text.lastIndexOf('\n-----BEGIN SSH SIGNATURE-----'),
  );
  const headerEnd = text.indexOf('\n\n');
  if (at === -1 || headerEnd === -1 || at < headerEnd) return verifySigned(raw, undefined, subject, keys);
  return verifySigned(raw.subarray(0, at + 1), text.slice(at + 1), subject, keys);
}

async function verifySigned(
  payload: Buffer,
  signature: string | undefined,
  subject: string,
  keys: TrustedKeys,
): Promise<CommitSigner> {
  const expected = `; trusted: ${keys.names.join(', ')}`;
  if (signature === undefined) throw new StalledError(`${subject} is not signed${expected}`);
  if (signature.startsWith('-----BEGIN SSH SIGNATURE-----'))
    return verifySsh(payload, signature, subject, keys, expected);
  if (signature.startsWith('-----BEGIN PGP SIGNATURE-----'))
    return verifyOpenpgp(payload, signature, subject, keys, expected);
  throw new StalledError(
    `${subject} carries a signature of a kind mooring does not verify (x509?)${expected}`,
  );
}

/** Reads an SSH string (uint32 length, bytes) at `at`. */
function sshString(buffer: Buffer, at: number): { value: Buffer; next: number } {
  if (at + 4 > buffer.length) throw new Error('truncated');
  const length = buffer.readUInt32BE(at);
  if (at + 4 + length > buffer.length) throw new Error('truncated');
  return { value: buffer.subarray(at + 4, at + 4 + length), next: at + 4 + length };
}

function sshStringOf(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function verifySsh(
  payload: Buffer,
  armored: string,
  short: string,
  keys: TrustedKeys,
  expected: string,
): CommitSigner {
  const body = armored
    .replace('-----BEGIN SSH SIGNATURE-----', '')
    .replace('-----END SSH SIGNATURE-----', '')
    .replace(/\s+/g, '');
  const blob = Buffer.from(body, 'base64');
  let publicKey: Buffer;
  let namespace: string;
  let hashName: string;
  let sigAlgo: string;
  let sigBytes: Buffer;
  try {
    if (blob.subarray(0, 6).toString('latin1') !== 'SSHSIG' || blob.readUInt32BE(6) !== 1)
      throw new Error('magic');
    let at = 10;
    const pk = sshString(blob, at);
    publicKey = pk.value;
    const ns = sshString(blob, pk.next);
    namespace = ns.value.toString('latin1');
    const reserved = sshString(blob, ns.next);
    const hash = sshString(blob, reserved.next);
    hashName = hash.value.toString('latin1');
    const sig = sshString(blob, hash.next);
    const algo = sshString(sig.value, 0);
    sigAlgo = algo.value.toString('latin1');
    sigBytes = sshString(sig.value, algo.next).value;
    at = sig.next;
  } catch {
    throw new StalledError(`${short}'s SSH signature is malformed${expected}`);
  }
  const signer = `${sshTypeOf(publicKey)} ${fingerprint(publicKey)}`;
  const key = keys.ssh.find((k) => k.blob.equals(publicKey));
  if (!key) throw new StalledError(`${short} is signed by ${signer}, which is not a trusted key${expected}`);
  if (namespace !== 'git')
    throw new StalledError(`${short}'s signature by ${signer} is for namespace "${namespace}", not "git"`);
  if (hashName !== 'sha512' && hashName !== 'sha256')
    throw new StalledError(`${short}'s signature by ${signer} uses hash ${hashName.slice(0, 20)}`);
  const signed = Buffer.concat([
    Buffer.from('SSHSIG'),
    sshStringOf('git'),
    sshStringOf(''),
    sshStringOf(hashName),
    sshStringOf(createHash(hashName).update(payload).digest()),
  ]);
  let valid = false;
  try {
    if (key.type === 'ssh-ed25519' && sigAlgo === 'ssh-ed25519')
      valid = cryptoVerify(null, signed, key.public, sigBytes);
    else if (key.type === 'ssh-rsa' && (sigAlgo === 'rsa-sha2-512' || sigAlgo === 'rsa-sha2-256'))
      valid = cryptoVerify(sigAlgo === 'rsa-sha2-512' ? 'sha512' : 'sha256', signed, key.public, sigBytes);
    else if (ECDSA_SIZES[key.type] && sigAlgo === key.type) {
      const size = ECDSA_SIZES[key.type] as { hash: string; bytes: number };
      const r = sshString(sigBytes, 0);
      const s = sshString(sigBytes, r.next);
      const fixed = (n: Buffer) => {
        const trimmed = n.subarray(Math.max(0, n.length - size.bytes));
        return Buffer.concat([Buffer.alloc(size.bytes - trimmed.length), trimmed]);
      };
      valid = cryptoVerify(
        size.hash,
        signed,
        { key: key.public, dsaEncoding: 'ieee-p1363' },
        Buffer.concat([fixed(r.value), fixed(s.value)]),
      );
    } else
      throw new StalledError(
        `${short}'s signature by ${signer} uses ${sigAlgo.slice(0, 30)}, which is not accepted`,
      );
  } catch (error) {
    if (error instanceof StalledError) throw error;
    valid = false;
  }
  if (!valid)
    throw new StalledError(
      `${short}'s signature by ${signer} does not verify: the ${short.split(' ')[0]} is not what was signed`,
    );
  return {
    kind: 'ssh',
    key: signer,
    ...(key.principals.length > 0 ? { identity: key.principals.join(',') } : {}),
  };
}

function sshTypeOf(blob: Buffer): string {
  try {
    return sshString(blob, 0).value.toString('latin1');
  } catch {
    return 'unknown';
  }
}

async function verifyOpenpgp(
  payload: Buffer,
  armored: string,
  short: string,
  keys: TrustedKeys,
  expected: string,
): Promise<CommitSigner> {
  const openpgp = await import('openpgp');
  let signature: Awaited<ReturnType<typeof openpgp.readSignature>>;
  try {
    signature = await openpgp.readSignature({ armoredSignature: armored });
  } catch {
    throw new StalledError(`${short}'s OpenPGP signature is malformed${expected}`);
  }
  const signingIds = signature.getSigningKeyIDs().map((id) => id.toHex().toUpperCase());
  const trusted = keys.openpgp as Awaited<ReturnType<typeof openpgp.readKeys>>;
  const key = trusted.find((k) =>
    k.getKeys().some((sub) => signingIds.includes(sub.getKeyID().toHex().toUpperCase())),
  );
  const named = `openpgp key ${signingIds.join(', ') || 'of unknown id'}`;
  if (!key) throw new StalledError(`${short} is signed by ${named}, which is not a trusted key${expected}`);
  const message = await openpgp.createMessage({ binary: new Uint8Array(payload) });
  const result = await openpgp.verify({ message, signature, verificationKeys: [key], expectSigned: false });
  try {
    await result.signatures[0]?.verified;
    if (!result.signatures[0]) throw new Error('no signature');
  } catch (error) {
    throw new StalledError(
      `${short}'s signature by ${named} does not verify (${(error as Error).message.slice(0, 200)})`,
    );
  }
  const user = key.getUserIDs()[0];
  return {
    kind: 'openpgp',
    key: `openpgp ${key.getFingerprint().toUpperCase()}`,
    ...(user ? { identity: user } : {}),
  };
}

/** A Git source's signature checks (trusted-keys.ts): its keys parsed by readTrustedKeys. */
export class CommitVerifier extends SignatureVerdicts<TrustedKeys, CommitSigner> {
  constructor(source: string, keys: readonly KeyRef[]) {
    super(() => keyTexts(keys, `sources.git ${source} verify.keys`), readTrustedKeys);
  }
}
