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

/** A key pair with the certificate a certificate authority issued for it: what a keyless signer signs with. */
export interface CertifiedKeyPair extends CosignKeyPair {
  certificateFile: string;
  /** The issuing intermediate and the root, as `cosign sign --certificate-chain` takes them. */
  chainFile: string;
}

/** A certificate authority of its own (a root and an intermediate, made by openssl), as an operator runs one. */
export interface CertificateAuthority {
  dir: string;
  /** The root's certificate (PEM). */
  rootPem: string;
  /** The intermediate's and the root's certificates (PEM): what `verify.keyless.trustedRoot` takes. */
  chainPem: string;
  /**
   * The same as a Sigstore trusted root (trusted_root.json, in `dir`), written by `cosign trusted-root create`;
   * with the certificate chain of a timestamp authority (`tsaChainFile`) when given.
   */
  trustedRoot(options?: { tsaChainFile?: string }): Promise<string>;
  /**
   * A new key pair and a code-signing certificate for it, shaped as Fulcio issues them: `subject` in the subject
   * alternative name (an e-mail address, or a URI when it has a scheme), `issuer` in Fulcio's OIDC issuer extensions
   * (1.3.6.1.4.1.57264.1.1 and .8), valid for a day or `validSeconds` (Fulcio's last ten minutes).
   */
  issue(subject: string, issuer: string, options?: { validSeconds?: number }): Promise<CertifiedKeyPair>;
  /**
   * Another certificate for the same key and identity whose validity ended yesterday (cosign signs with no expired
   * certificate: a test puts it beside a signature made while the first was valid).
   */
  expired(pair: CertifiedKeyPair): Promise<string>;
}

const openssl = (args: string[], cwd: string) => run('openssl', args, { cwd });

/** A new certificate authority (ECDSA P-256 root and intermediate, as Fulcio's). */
export async function certificateAuthority(): Promise<CertificateAuthority> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-ca-'));
  // The trusted root says the CA was valid from its making (`cosign trusted-root create` would say: from the
  // root's writing, after some signatures).
  const since = `${new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().slice(0, 19)}Z`;
  await writeFile(
    join(dir, 'ext.cnf'),
    [
      '[inter]',
      'basicConstraints=critical,CA:TRUE,pathlen:0',
      'keyUsage=critical,keyCertSign,cRLSign',
      'subjectKeyIdentifier=hash',
      'authorityKeyIdentifier=keyid',
      'extendedKeyUsage=codeSigning',
      '',
    ].join('\n'),
  );
  const ecKey = async (name: string) => {
    await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.ec`], dir);
    await openssl(['pkcs8', '-topk8', '-nocrypt', '-in', `${name}.ec`, '-out', `${name}.key`], dir);
  };
  await ecKey('root');
  await openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      'root.key',
      '-subj',
      '/O=mooring tests/CN=root',
      '-days',
      '30',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      'root.pem',
    ],
    dir,
  );
  await ecKey('inter');
  await openssl(
    ['req', '-new', '-key', 'inter.key', '-subj', '/O=mooring tests/CN=intermediate', '-out', 'inter.csr'],
    dir,
  );
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      'inter.csr',
      '-CA',
      'root.pem',
      '-CAkey',
      'root.key',
      '-CAcreateserial',
      '-days',
      '30',
      '-extfile',
      'ext.cnf',
      '-extensions',
      'inter',
      '-out',
      'inter.pem',
    ],
    dir,
  );
  const rootPem = await readFile(join(dir, 'root.pem'), 'utf8');
  const chainPem = (await readFile(join(dir, 'inter.pem'), 'utf8')) + rootPem;
  await writeFile(join(dir, 'chain.pem'), chainPem);
  // `openssl ca` signs leaves: it alone takes exact validity times (a certificate that lapses in seconds).
  await writeFile(
    join(dir, 'ca.cnf'),
    [
      '[ca]',
      'default_ca = own',
      '[own]',
      `database = ${join(dir, 'index.txt')}`,
      `new_certs_dir = ${dir}`,
      `serial = ${join(dir, 'leaf.serial')}`,
      'default_md = sha256',
      'policy = any',
      'unique_subject = no',
      '[any]',
      'organizationName = optional',
      '',
    ].join('\n'),
  );
  await writeFile(join(dir, 'index.txt'), '');
  await writeFile(join(dir, 'leaf.serial'), '1000\n');
  const time = (date: Date) => `${date.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
  const leaf = (n: string, out: string, start: Date, end: Date) =>
    openssl(
      [
        'ca',
        '-batch',
        '-notext',
        '-config',
        'ca.cnf',
        '-cert',
        'inter.pem',
        '-keyfile',
        'inter.key',
        '-in',
        `${n}.csr`,
        '-out',
        out,
        '-startdate',
        time(start),
        '-enddate',
        time(end),
        '-extfile',
        `${n}.cnf`,
        '-extensions',
        'leaf',
      ],
      dir,
    );
  let issued = 0;
  return {
    dir,
    rootPem,
    chainPem,
    async trustedRoot(options = {}) {
      await run(
        await cosign(),
        [
          'trusted-root',
          'create',
          '--fulcio',
          `url=https://fulcio.test,certificate-chain=chain.pem,start-time=${since}`,
          ...(options.tsaChainFile
            ? [
                '--tsa',
                `url=https://timestamps.test,certificate-chain=${options.tsaChainFile},start-time=${since}`,
              ]
            : []),
          '--out',
          'trusted_root.json',
        ],
        { cwd: dir, env: env(dir) },
      );
      return readFile(join(dir, 'trusted_root.json'), 'utf8');
    },
    async issue(subject, issuer, options = {}) {
      const n = `leaf${++issued}`;
      await ecKey(n);
      const pair = await cosignImportedKeyPair(await readFile(join(dir, `${n}.key`), 'utf8'));
      await writeFile(
        join(dir, `${n}.cnf`),
        [
          '[leaf]',
          'basicConstraints=critical,CA:FALSE',
          'keyUsage=critical,digitalSignature',
          'extendedKeyUsage=codeSigning',
          'subjectKeyIdentifier=hash',
          'authorityKeyIdentifier=keyid',
          `subjectAltName=critical,${subject.includes('://') ? 'URI' : 'email'}:${subject}`,
          // Fulcio writes the issuer twice: raw (the first OID, which cosign's `.sig` check reads) and as a DER string.
          `1.3.6.1.4.1.57264.1.1=DER:${Buffer.from(issuer).toString('hex')}`,
          `1.3.6.1.4.1.57264.1.8=ASN1:UTF8String:${issuer}`,
          '',
        ].join('\n'),
      );
      await openssl(
        ['req', '-new', '-key', `${n}.key`, '-subj', '/O=mooring tests', '-out', `${n}.csr`],
        dir,
      );
      // From this second on: the CA's own certificates start when they were made, and cosign checks the chain at
      // the leaf's start.
      const now = Date.now();
      await leaf(n, `${n}.pem`, new Date(now), new Date(now + (options.validSeconds ?? 86_400) * 1000));
      return { ...pair, certificateFile: join(dir, `${n}.pem`), chainFile: join(dir, 'chain.pem') };
    },
    async expired(pair) {
      const n = pair.certificateFile.slice(dir.length + 1, -'.pem'.length);
      const now = Date.now();
      await leaf(n, `${n}-expired.pem`, new Date(now - 2 * 86_400_000), new Date(now - 86_400_000));
      return readFile(join(dir, `${n}-expired.pem`), 'utf8');
    },
  };
}

/**
 * Whether `cosign verify` (the reference verifier) accepts `reference` as signed with a certificate of `chainFile`'s
 * CA for `subject` and `issuer` (no transparency log, no SCT: a private CA has neither).
 */
export async function cosignVerifies(
  reference: string,
  ca: CertificateAuthority,
  subject: string,
  issuer: string,
  options: { bundle?: boolean; tsaChainFile?: string } = {},
): Promise<boolean> {
  const trust = options.bundle
    ? [
        '--new-bundle-format',
        '--trusted-root',
        join(ca.dir, 'trusted_root.json'),
        ...(options.tsaChainFile ? ['--use-signed-timestamps'] : []),
      ]
    : [
        '--certificate-chain',
        join(ca.dir, 'chain.pem'),
        ...(options.tsaChainFile
          ? ['--timestamp-certificate-chain', options.tsaChainFile, '--use-signed-timestamps']
          : []),
      ];
  if (options.bundle) await ca.trustedRoot(options);
  try {
    await run(
      await cosign(),
      [
        'verify',
        ...trust,
        '--certificate-identity',
        subject,
        '--certificate-oidc-issuer',
        issuer,
        '--insecure-ignore-tlog',
        '--insecure-ignore-sct',
        '--allow-http-registry',
        '--allow-insecure-registry',
        reference,
      ],
      { cwd: ca.dir, env: env(ca.dir), timeout: 120_000 },
    );
    return true;
  } catch (error) {
    if (process.env.DEBUG_COSIGN) console.error((error as Error).message);
    return false;
  }
}

/**
 * Signs `reference` (`host/repository@sha256:…`) with the key pair, as `cosign sign --key` does without a
 * transparency log; the signature goes to the same plain-HTTP registry, in cosign's `.sig` layout or (`bundle`)
 * as a Sigstore bundle. A certified pair signs keyless-style: its certificate and chain go with the signature
 * (`--certificate`, `--certificate-chain`), as when Fulcio issued it.
 */
export async function cosignSign(
  reference: string,
  pair: CosignKeyPair | CertifiedKeyPair,
  options: { bundle?: boolean; timestampServer?: string } = {},
): Promise<void> {
  await run(
    await cosign(),
    [
      'sign',
      // cosign 3's default: a Sigstore bundle kept as an OCI 1.1 referrer of the image (its fallback tag here).
      ...(options.bundle ? ['--new-bundle-format'] : []),
      // An RFC 3161 timestamp of the signature, from a timestamp authority (test/testbed/timestamp-authority.ts).
      ...(options.timestampServer ? ['--timestamp-server-url', options.timestampServer] : []),
      ...('certificateFile' in pair
        ? ['--certificate', pair.certificateFile, '--certificate-chain', pair.chainFile]
        : []),
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
