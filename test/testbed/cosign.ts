// cosign, Sigstore's signer, as a publisher runs it: the tests sign images, charts and artifacts in the test bed's
// registry with it (built once per machine from its Go module by scripts/build-cosign.sh), so that the signatures
// mooring verifies are the ones cosign writes, not bytes made by hand.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './paths.ts';

const run = promisify(execFile);

let binary: Promise<string> | undefined;

/** The path of the cosign binary (built on first use; cached per machine). */
export function cosign(): Promise<string> {
  binary ??= run('bash', [join(REPO_ROOT, 'scripts', 'build-cosign.sh')], {
    maxBuffer: 64 * 1024 * 1024,
  }).then(({ stdout }) => stdout.trim());
  return binary;
}

/** The environment cosign runs in: no password on keys, no Sigstore service asked, nothing of the user's. */
function env(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    COSIGN_PASSWORD: '',
    COSIGN_EXPERIMENTAL: '0',
    TUF_ROOT: join(home, 'tuf'),
  };
}

export interface CosignKeyPair {
  /** The folder holding cosign.key and cosign.pub. */
  dir: string;
  keyFile: string;
  /** cosign.pub's text: what an operator puts in verify.keys. */
  publicKey: string;
}

/** A new key pair made by `cosign generate-key-pair` (an ECDSA P-256 key, as cosign makes them). */
export async function cosignKeyPair(): Promise<CosignKeyPair> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-cosign-'));
  await run(await cosign(), ['generate-key-pair'], { cwd: dir, env: env(dir) });
  return {
    dir,
    keyFile: join(dir, 'cosign.key'),
    publicKey: await readFile(join(dir, 'cosign.pub'), 'utf8'),
  };
}

/**
 * A key pair made elsewhere (an Ed25519 or RSA key in PEM, as openssl writes them) taken in by `cosign
 * import-key-pair`, as an operator brings a key of their own.
 */
export async function cosignImportedKeyPair(privatePem: string): Promise<CosignKeyPair> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-cosign-'));
  await writeFile(join(dir, 'own.pem'), privatePem, { mode: 0o600 });
  await run(await cosign(), ['import-key-pair', '--key', 'own.pem', '--output-key-prefix', 'cosign'], {
    cwd: dir,
    env: env(dir),
  });
  return {
    dir,
    keyFile: join(dir, 'cosign.key'),
    publicKey: await readFile(join(dir, 'cosign.pub'), 'utf8'),
  };
}

/**
 * Signs `reference` (`host/repository@sha256:…`) with the key pair, as `cosign sign --key` does without a
 * transparency log; the signature goes to the same plain-HTTP registry, in cosign's `.sig` layout or (`bundle`)
 * as a Sigstore bundle.
 */
export async function cosignSign(
  reference: string,
  pair: CosignKeyPair,
  options: { bundle?: boolean } = {},
): Promise<void> {
  await run(
    await cosign(),
    [
      'sign',
      // cosign 3's default: a Sigstore bundle kept as an OCI 1.1 referrer of the image (its fallback tag here).
      ...(options.bundle ? ['--new-bundle-format'] : []),
      '--key',
      pair.keyFile,
      '--tlog-upload=false',
      '--allow-http-registry',
      '--allow-insecure-registry',
      '--yes',
      reference,
    ],
    { cwd: pair.dir, env: env(pair.dir), timeout: 120_000 },
  );
}
