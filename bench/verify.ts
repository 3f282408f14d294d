// Benchmark: the signature check of images (verify: {provider: cosign}) against the requests it cannot avoid, side
// by side in one run on the test bed's registry. IMAGES images are pushed and signed by cosign (not timed), half in
// the `.sig` layout and half as Sigstore bundles, then each side reads every image's signatures once, in turn:
// (a) mooring: a fresh poller's `verify` of each digest (what the first poll of a new digest costs: the `.sig` tag,
//     then the referrers, the payload or bundle, the key check);
// (b) a raw request loop: the same GETs with fetch and nothing checked (the floor any verifier pays).
// The ratio (a)/(b) is what verification adds over the network work, median of ROUNDS rounds each. A third line
// times `cosign verify` of a few images, a process per image as a script that shelled out would. Both kinds of
// trust are measured: a key, and keyless (certificates of a private CA for an allowed identity).
// Run: npm run bench:verify (starts the test bed when none runs).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { registrySource } from '../src/config/schema.ts';
import { createArtifactPoller } from '../src/sources/create-poller.ts';
import { signatureTag } from '../src/sources/registry/cosign.ts';
import { certificateAuthority, cosign, cosignKeyPair, cosignSign } from '../test/testbed/cosign.ts';
import { pushImage } from '../test/testbed/oci-push.ts';
import { down, up } from '../test/testbed/testbed.ts';
import { median } from './support/process.ts';

const IMAGES = Number(process.env.MOORING_BENCH_IMAGES ?? 40);
const ROUNDS = 5;
const COSIGN_RUNS = 4;
const run = promisify(execFile);

async function timed(action: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await action();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const { env, started } = await up((line) => process.stderr.write(`testbed: ${line}\n`));
try {
  const key = await cosignKeyPair();
  const ca = await certificateAuthority();
  const subject = 'https://ci.example.com/org/web/.ci/release.yaml@refs/heads/main';
  const issuer = 'https://token.ci.example.com';
  const certified = await ca.issue(subject, issuer);
  const kinds = [
    { label: 'a trusted key', pair: key, verify: { provider: 'cosign', keys: [key.publicKey] } },
    {
      label: 'keyless (a certificate of a private CA)',
      pair: certified,
      verify: {
        provider: 'cosign',
        keyless: { trustedRoot: ca.chainPem, identities: [{ issuer, subject }] },
      },
    },
  ];
  for (const kind of kinds) {
    const repository = `bench-verify-${Date.now().toString(36)}/web`;
    const image = `${env.registry.host}/${repository}`;
    const digests: string[] = [];
    for (let i = 0; i < IMAGES; i++) {
      const { digest } = await pushImage({
        registry: env.registry.url,
        repository,
        tag: `v${i}`,
        content: `build ${i}`,
      });
      await cosignSign(`${image}@${digest}`, kind.pair, { bundle: i % 2 === 1 });
      digests.push(digest);
    }
    process.stderr.write(`${IMAGES} images pushed and signed with ${kind.label}\n`);
    const source = registrySource.parse({
      name: 'web',
      image,
      insecure: true,
      verify: kind.verify,
      // The source's own request rate (5 a second by default, a courtesy to the registry) is not what is measured.
      requestsPerSecond: 10_000,
    });
    const mooring = async () => {
      const poller = await createArtifactPoller({ kind: 'image', source });
      for (const digest of digests) await poller.verifier?.verify(digest);
    };
    // The same reads, unchecked: the .sig tag (found or not), the referrers (API, then fallback tag), each
    // referrer's manifest and the payload or bundle blob.
    const base = `${env.registry.url}/v2/${repository}`;
    const get = async (path: string, accept?: string) => {
      const response = await fetch(`${base}/${path}`, accept ? { headers: { accept } } : {});
      const body = await response.text();
      return { status: response.status, body };
    };
    const manifestType = 'application/vnd.oci.image.manifest.v1+json';
    const indexType = 'application/vnd.oci.image.index.v1+json';
    const raw = async () => {
      for (const digest of digests) {
        const sig = await get(`manifests/${signatureTag(digest)}`, manifestType);
        if (sig.status === 200) {
          const layer = (JSON.parse(sig.body) as { layers: { digest: string }[] }).layers[0];
          if (layer) await get(`blobs/${layer.digest}`);
          continue;
        }
        const api = await get(`referrers/${digest}`, indexType);
        const list = api.status === 200 ? api : await get(`manifests/${digest.replace(':', '-')}`, indexType);
        for (const entry of (JSON.parse(list.body) as { manifests: { digest: string }[] }).manifests) {
          const manifest = await get(`manifests/${entry.digest}`, manifestType);
          const layer = (JSON.parse(manifest.body) as { layers: { digest: string }[] }).layers[0];
          if (layer) await get(`blobs/${layer.digest}`);
        }
      }
    };
    await mooring();
    await raw();
    const a: number[] = [];
    const b: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      a.push(await timed(mooring));
      b.push(await timed(raw));
    }
    const binary = await cosign();
    const trust =
      'certificateFile' in kind.pair
        ? [
            '--certificate-chain',
            kind.pair.chainFile,
            '--certificate-identity',
            subject,
            '--certificate-oidc-issuer',
            issuer,
            '--insecure-ignore-sct',
          ]
        : ['--key', `${kind.pair.dir}/cosign.pub`];
    const c: number[] = [];
    // The `.sig` ones (even indexes): cosign verify reads that layout without --new-bundle-format.
    for (const digest of digests.filter((_, i) => i % 2 === 0).slice(0, COSIGN_RUNS))
      c.push(
        await timed(() =>
          run(
            binary,
            [
              'verify',
              ...trust,
              '--insecure-ignore-tlog=true',
              '--allow-http-registry',
              '--allow-insecure-registry',
              `${image}@${digest}`,
            ],
            { env: { PATH: process.env.PATH, HOME: kind.pair.dir, TUF_ROOT: `${kind.pair.dir}/tuf` } },
          ).catch(() => undefined),
        ),
      );
    const ms = (v: number) => `${v.toFixed(0)} ms`;
    console.log(
      `signature checks of ${IMAGES} images signed with ${kind.label} (half .sig, half bundles), median of ${ROUNDS}:`,
    );
    console.log(`  mooring verify (fresh poller, every digest checked): ${ms(median(a))}`);
    console.log(`  raw request loop (the same GETs, nothing checked):   ${ms(median(b))}`);
    console.log(`  ratio: ${(median(a) / median(b)).toFixed(2)}`);
    console.log(
      `  per image: mooring ${(median(a) / IMAGES).toFixed(1)} ms, cosign verify (a process) ${ms(median(c))}`,
    );
  }
} finally {
  if (started) await down();
}
