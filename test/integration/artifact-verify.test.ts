// Signed artifacts, as a publisher and an operator set them up: images, an OCI artifact and a Helm chart in the test
// bed's registry signed by cosign itself (`cosign sign --key`, built from its Go module; `.sig` tags and Sigstore
// bundles), and sources whose `verify: {provider: cosign, keys}` trust cosign.pub. The check accepts a digest signed
// by the trusted key and refuses one not signed, one signed by another key, one whose signature or bundle was copied
// from another image and hostile signature manifests; an
// agent refuses an unsigned image tag with a status naming the cause, deploys it once signed, keeps the verified
// digest running (and syncs new commits with it) while the tag points to an unsigned one, and records the signer.
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { chartSource, ociSource, registrySource } from '../../src/config/schema.ts';
import { createArtifactPoller } from '../../src/sources/create-poller.ts';
import {
  CERTIFICATE_ANNOTATION,
  type DigestVerifier,
  keyId,
  SIGNATURE_ANNOTATION,
  SIGSTORE_BUNDLE,
  SIMPLE_SIGNING,
  SignatureRefusal,
  signatureTag,
} from '../../src/sources/registry/cosign.ts';
import { packageChart, pushChart, writeChart } from '../testbed/chart-repo.ts';
import {
  certificateAuthority,
  cosignImportedKeyPair,
  cosignKeyPair,
  cosignSign,
  cosignVerifies,
} from '../testbed/cosign.ts';
import { FaultProxy } from '../testbed/fault-proxy.ts';
import { pushArtifact, pushImage, pushLayers } from '../testbed/oci-push.ts';
import { timestampAuthority } from '../testbed/timestamp-authority.ts';
import {
  bareRepo,
  configMapManifest,
  deploymentManifest,
  eventually,
  kubeConfig,
  kubectl,
  ledgerHistory,
  mooring,
  stableImageSource,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

interface Release {
  id: number;
  commit?: string;
  result: string;
  images: Record<string, { digest: string; signedBy?: string }>;
}

/** What a refusal says, or a failure of the test when the check accepted. */
async function refusal(check: Promise<unknown>): Promise<string> {
  try {
    await check;
  } catch (error) {
    expect(error).toBeInstanceOf(SignatureRefusal);
    return (error as Error).message;
  }
  throw new Error('the digest was accepted');
}

/** The signature check of an image source with `verify`, as the agent's poller makes it. */
async function imageVerifier(image: string, verify: Record<string, unknown>): Promise<DigestVerifier> {
  const poller = await createArtifactPoller({
    kind: 'image',
    source: registrySource.parse({ name: 'web', image, insecure: true, verify }),
  });
  if (!poller.verifier) throw new Error('no verifier');
  return poller.verifier;
}

describe('signed artifacts (verify: cosign)', () => {
  const ns = useNamespace('artifact-verify');

  it('accepts what the trusted key signed and refuses the unsigned, the other key and a copied signature', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repository = `cosign-${suffix}/web`;
    const image = `${env.registry.host}/${repository}`;
    const trusted = await cosignKeyPair();
    const other = await cosignKeyPair();
    const push = (tag: string) =>
      pushImage({ registry: env.registry.url, repository, tag, content: `build ${tag}` });
    const signed = (await push('signed')).digest;
    const unsigned = (await push('unsigned')).digest;
    const byOther = (await push('other')).digest;
    await cosignSign(`${image}@${signed}`, trusted);
    await cosignSign(`${image}@${byOther}`, other);

    const source = registrySource.parse({
      name: 'web',
      image,
      insecure: true,
      verify: { provider: 'cosign', keys: [trusted.publicKey] },
    });
    const poller = await createArtifactPoller({ kind: 'image', source });
    const verifier = poller.verifier;
    if (!verifier) throw new Error('no verifier');
    const id = keyId(createPublicKey(trusted.publicKey));
    expect(await verifier.verify(signed)).toEqual({ key: `cosign ${id}` });

    const notSigned = await refusal(verifier.verify(unsigned));
    expect(notSigned).toContain(`image ${image}@${unsigned.slice(0, 19)}… is not signed (no sha256-`);
    expect(notSigned).toContain('and no Sigstore bundle in the registry');
    expect(notSigned).toContain(`expected a cosign signature by cosign ${id}`);
    expect(verifier.lastRefusal()).toBe(notSigned);
    expect(await refusal(verifier.verify(byOther))).toContain('verifies under none of the trusted keys');

    // The signature of the signed image copied under the unsigned one's signature tag: it signs another digest.
    const sigTag = (digest: string) =>
      `${env.registry.url}/v2/${repository}/manifests/${signatureTag(digest)}`;
    const accept = { accept: 'application/vnd.oci.image.manifest.v1+json' };
    const copied = await fetch(sigTag(signed), { headers: accept });
    expect(copied.status).toBe(200);
    const put = await fetch(sigTag(unsigned), {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
      body: Buffer.from(await copied.arrayBuffer()),
    });
    expect(put.status).toBe(201);
    expect(await refusal(verifier.verify(unsigned))).toContain(
      `signs ${signed.slice(0, 19)}…, another digest`,
    );

    // What a hostile publisher can put under an image's signature tag: a payload too large to read (its size
    // declared so), a signature that is no base64, and a payload that is no cosign payload. Each is refused for
    // what it is (the large one by its declared size, before any of it is read).
    const hostile = (await push('hostile')).digest;
    const payload = (digest: string) =>
      Buffer.from(
        JSON.stringify({
          critical: {
            identity: { 'docker-reference': image },
            image: { 'docker-manifest-digest': digest },
            type: 'cosign container image signature',
          },
          optional: null,
        }),
      );
    await pushLayers({ registry: env.registry.url, repository }, signatureTag(hostile), [
      {
        mediaType: SIMPLE_SIGNING,
        blob: payload(hostile),
        annotations: { [SIGNATURE_ANNOTATION]: 'MEUCIQ==' },
        declaredSize: 1 << 30,
      },
      {
        mediaType: SIMPLE_SIGNING,
        blob: payload(hostile),
        annotations: { [SIGNATURE_ANNOTATION]: '<script>' },
      },
      {
        mediaType: SIMPLE_SIGNING,
        blob: Buffer.from('{"critical": "not a payload"}'),
        annotations: { [SIGNATURE_ANNOTATION]: 'MEUCIQ==' },
      },
      {
        mediaType: SIMPLE_SIGNING,
        blob: payload(hostile),
        annotations: { [SIGNATURE_ANNOTATION]: 'MEUCIQ==' },
      },
    ]);
    const hostileRefusal = await refusal(verifier.verify(hostile));
    expect(hostileRefusal).toContain("signature 1's payload is larger than 65536 bytes");
    expect(hostileRefusal).toContain(`signature 2 has no base64 ${SIGNATURE_ANNOTATION} annotation`);
    expect(hostileRefusal).toContain('signature 3 is not a cosign simple-signing payload');
    expect(hostileRefusal).toContain('signature 4 verifies under none of the trusted keys');

    // A Sigstore bundle (cosign 3's default layout) refers to the digest it signs: accepted; the same bundle's
    // index put under another image's fallback tag signs another digest.
    const bundled = (await push('bundled')).digest;
    await cosignSign(`${image}@${bundled}`, trusted, { bundle: true });
    expect(await verifier.verify(bundled)).toEqual({ key: `cosign ${id}` });
    const fallback = (digest: string) =>
      `${env.registry.url}/v2/${repository}/manifests/${digest.replace(':', '-')}`;
    const index = { accept: 'application/vnd.oci.image.index.v1+json' };
    const referrers = await fetch(fallback(bundled), { headers: index });
    expect(referrers.status).toBe(200);
    const referrersBytes = Buffer.from(await referrers.arrayBuffer());
    const putIndex = (digest: string, body: Buffer) =>
      fetch(fallback(digest), {
        method: 'PUT',
        headers: { 'content-type': 'application/vnd.oci.image.index.v1+json' },
        body,
      });
    const elsewhere = (await push('elsewhere')).digest;
    expect((await putIndex(elsewhere, referrersBytes)).status).toBe(201);
    expect(await refusal(verifier.verify(elsewhere))).toContain('bundle 1 signs another digest');
    // A referrer that cannot be read as a manifest (an index), listed before a good bundle, hides nothing.
    const listedAfter = (await push('listed-after')).digest;
    await cosignSign(`${image}@${listedAfter}`, trusted, { bundle: true });
    const own = JSON.parse(await (await fetch(fallback(listedAfter), { headers: index })).text()) as {
      manifests: unknown[];
    };
    const unreadable = {
      mediaType: 'application/vnd.oci.image.index.v1+json',
      digest: `sha256:${createHash('sha256').update(referrersBytes).digest('hex')}`,
      size: referrersBytes.length,
      artifactType: SIGSTORE_BUNDLE,
    };
    const listed = { ...own, manifests: [unreadable, ...own.manifests] };
    expect((await putIndex(listedAfter, Buffer.from(JSON.stringify(listed)))).status).toBe(201);
    expect(await verifier.verify(listedAfter)).toEqual({ key: `cosign ${id}` });
    // Another key's bundle: refused.
    const otherBundle = (await push('other-bundle')).digest;
    await cosignSign(`${image}@${otherBundle}`, other, { bundle: true });
    expect(await refusal(verifier.verify(otherBundle))).toContain(
      'bundle 1 verifies under none of the trusted keys',
    );

    // Keys of other kinds, made elsewhere and taken in by `cosign import-key-pair`: Ed25519 (which cosign signs
    // as Ed25519ph) and RSA, in both layouts.
    for (const type of ['ed25519', 'rsa'] as const) {
      const made =
        type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 3072 }) : generateKeyPairSync('ed25519');
      const imported = await cosignImportedKeyPair(
        made.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      );
      const own = await createArtifactPoller({
        kind: 'image',
        source: registrySource.parse({
          name: 'web',
          image,
          insecure: true,
          verify: { provider: 'cosign', keys: [trusted.publicKey, imported.publicKey] },
        }),
      });
      const ownId = `cosign ${keyId(createPublicKey(imported.publicKey))}`;
      for (const bundle of [false, true]) {
        const digest = (await push(`${type}-${bundle}`)).digest;
        await cosignSign(`${image}@${digest}`, imported, { bundle });
        expect(await own.verifier?.verify(digest), `${type}, bundle ${bundle}`).toEqual({ key: ownId });
      }
    }

    // Signed later (as CI signs after it pushes): a refusal is not kept, the next check accepts.
    const late = (await push('late')).digest;
    await refusal(verifier.verify(late));
    await cosignSign(`${image}@${late}`, trusted);
    expect(await verifier.verify(late)).toEqual({ key: `cosign ${id}` });

    // A private key where a public one belongs: refused, naming where it came from (and none of its bytes).
    const wrongKeys = await createArtifactPoller({
      kind: 'image',
      source: registrySource.parse({
        name: 'web',
        image,
        insecure: true,
        verify: { provider: 'cosign', keys: [{ file: trusted.keyFile }] },
      }),
    });
    const wrong = await wrongKeys.verifier?.verify(signed).then(
      () => 'accepted',
      (error: Error) => error.message,
    );
    expect(wrong).toContain(`file ${trusted.keyFile} holds a private key`);

    // An OCI artifact of manifests, signed the same way, through its own source.
    const artifactRepo = `cosign-${suffix}/manifests`;
    const artifact = await pushArtifact({
      registry: env.registry.url,
      repository: artifactRepo,
      tag: 'v1',
      files: { 'cm.yaml': yamlDocuments(configMapManifest('settings', { round: '1' })) },
    });
    const oci = await createArtifactPoller({
      kind: 'manifests',
      source: ociSource.parse({
        name: 'manifests',
        url: `oci://${env.registry.host}/${artifactRepo}`,
        insecure: true,
        verify: { provider: 'cosign', keys: [trusted.publicKey] },
      }),
    });
    expect(await refusal(oci.verifier?.verify(artifact.digest) ?? Promise.resolve())).toContain(
      'is not signed',
    );
    await cosignSign(`${env.registry.host}/${artifactRepo}@${artifact.digest}`, trusted);
    expect(await oci.verifier?.verify(artifact.digest)).toEqual({ key: `cosign ${id}` });

    // A Helm chart pushed by `helm push` to an oci:// repository, signed by cosign, through a chart source.
    const out = await tempDir();
    const chartPath = `cosign-${suffix}/charts`;
    const pushed = await pushChart(
      env.tools.helm,
      await packageChart(
        env.tools.helm,
        await writeChart(out, { name: 'web', version: '1.0.0', templates: { 'cm.yaml': 'kind: ConfigMap' } }),
        out,
      ),
      { url: env.registry.url, host: env.registry.host },
      chartPath,
    );
    const chart = await createArtifactPoller({
      kind: 'chart',
      source: chartSource.parse({
        name: 'web-chart',
        url: `oci://${env.registry.host}/${chartPath}`,
        chart: 'web',
        insecure: true,
        verify: { provider: 'cosign', keys: [trusted.publicKey] },
      }),
    });
    expect(await refusal(chart.verifier?.verify(pushed.digest) ?? Promise.resolve())).toContain(
      'chart web (oci://',
    );
    await cosignSign(`${env.registry.host}/${chartPath}/web@${pushed.digest}`, trusted);
    expect(await chart.verifier?.verify(pushed.digest)).toEqual({ key: `cosign ${id}` });
  });

  it('keyless: a certificate of the trusted root for an allowed identity is accepted in both layouts, as cosign verify agrees; the rest refused', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repository = `keyless-${suffix}/web`;
    const image = `${env.registry.host}/${repository}`;
    const push = (tag: string) =>
      pushImage({ registry: env.registry.url, repository, tag, content: `build ${tag}` });
    const ca = await certificateAuthority();
    const issuer = 'https://token.ci.example.com';
    const subject = 'https://ci.example.com/org/web/.ci/release.yaml@refs/heads/main';
    const release = await ca.issue(subject, issuer);
    const verifierOf = (keyless: { trustedRoot: unknown; identities: unknown[] }, keys?: string[]) =>
      imageVerifier(image, { provider: 'cosign', keyless, ...(keys ? { keys } : {}) });
    const allowed = [{ issuer, subject }];
    // A private CA's root has no timestamp authority: the verdict holds until the certificate expires.
    const signer = { key: `cosign ${subject} (issuer ${issuer})`, validUntil: expect.any(Number) };
    // The root as PEM certificates (a private CA) and as the trusted_root.json `cosign trusted-root create` writes.
    const pem = await verifierOf({ trustedRoot: ca.chainPem, identities: allowed });
    const json = await verifierOf({ trustedRoot: await ca.trustedRoot(), identities: allowed });
    const digests: Record<string, string> = {};
    for (const bundle of [false, true]) {
      const digest = (await push(`release-${bundle}`)).digest;
      digests[String(bundle)] = digest;
      await cosignSign(`${image}@${digest}`, release, { bundle });
      expect(await pem.verify(digest), `bundle ${bundle}`).toEqual(signer);
      expect(await json.verify(digest), `bundle ${bundle}`).toEqual(signer);
      expect(await cosignVerifies(`${image}@${digest}`, ca, subject, issuer, { bundle })).toBe(true);
    }

    // The same CA's certificate for another workflow, the right subject from another issuer and a certificate of
    // another CA: each refused for what it is, in both layouts, and cosign verify refuses them too.
    const other = await certificateAuthority();
    const cases = [
      {
        name: 'another subject',
        pair: await ca.issue('https://ci.example.com/fork/web/.ci/release.yaml@refs/heads/main', issuer),
        says: 'an identity verify.keyless does not allow',
      },
      {
        name: 'another issuer',
        pair: await ca.issue(subject, 'https://token.elsewhere.example.com'),
        says: `for ${subject} (issuer https://token.elsewhere.example.com), an identity verify.keyless does not allow`,
      },
      {
        name: 'another CA',
        pair: await other.issue(subject, issuer),
        says: 'Failed to verify certificate chain: no valid certificate path found',
      },
    ];
    for (const { name, pair, says } of cases)
      for (const bundle of [false, true]) {
        const digest = (await push(`${name.replaceAll(' ', '-')}-${bundle}`)).digest;
        await cosignSign(`${image}@${digest}`, pair, { bundle });
        const message = await refusal(pem.verify(digest));
        expect(message, `${name}, bundle ${bundle}`).toContain(says);
        expect(message).toContain(
          `is not signed by a trusted key or certificate: ${bundle ? 'bundle' : 'signature'} 1 `,
        );
        expect(message).toContain(
          `expected a cosign signature by a certificate of sources.registry web verify.keyless.trustedRoot for ${subject} (issuer ${issuer})`,
        );
        expect(await refusal(json.verify(digest))).toContain(says);
        expect(await cosignVerifies(`${image}@${digest}`, ca, subject, issuer, { bundle }), name).toBe(false);
      }

    // Regular expressions match the whole subject: a subject that merely contains the allowed one is refused.
    const pattern = [{ issuer, subjectRegExp: 'https://ci\\.example\\.com/org/web/.*' }];
    const byPattern = await verifierOf({ trustedRoot: ca.chainPem, identities: pattern });
    expect(await byPattern.verify(digests.false as string)).toEqual(signer);
    const embedding = (await push('embedding')).digest;
    await cosignSign(
      `${image}@${embedding}`,
      await ca.issue(`https://evil.example.com/?https://ci.example.com/org/web/x`, issuer),
      {},
    );
    expect(await refusal(byPattern.verify(embedding))).toContain('an identity verify.keyless does not allow');
    const issuerPattern = await verifierOf({
      trustedRoot: ca.chainPem,
      identities: [{ issuerRegExp: 'https://token\\.(ci|cd)\\.example\\.com', subject }],
    });
    expect(await issuerPattern.verify(digests.true as string)).toEqual(signer);

    // The trusted certificate put beside another signer's signature (its annotation rewritten in the `.sig`
    // manifest): the signature does not verify under the certificate's key.
    const forged = (await push('forged')).digest;
    await cosignSign(`${image}@${forged}`, cases[2]?.pair as never, {});
    const sigUrl = `${env.registry.url}/v2/${repository}/manifests/${signatureTag(forged)}`;
    const manifest = (await (
      await fetch(sigUrl, { headers: { accept: 'application/vnd.oci.image.manifest.v1+json' } })
    ).json()) as { layers: { annotations: Record<string, string> }[] };
    const layer = manifest.layers[0];
    if (!layer) throw new Error('no signature layer');
    const { readFile } = await import('node:fs/promises');
    layer.annotations[CERTIFICATE_ANNOTATION] = await readFile(release.certificateFile, 'utf8');
    const put = await fetch(sigUrl, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
      body: JSON.stringify(manifest),
    });
    expect(put.status).toBe(201);
    expect(await refusal(pem.verify(forged))).toContain('signature verification failed');
    // The signature's own certificate, expired since (no log says when it signed, so it must be valid now).
    const lapsed = (await push('lapsed')).digest;
    await cosignSign(`${image}@${lapsed}`, release, {});
    const lapsedUrl = `${env.registry.url}/v2/${repository}/manifests/${signatureTag(lapsed)}`;
    const lapsedManifest = (await (
      await fetch(lapsedUrl, { headers: { accept: 'application/vnd.oci.image.manifest.v1+json' } })
    ).json()) as typeof manifest;
    const lapsedLayer = lapsedManifest.layers[0];
    if (!lapsedLayer) throw new Error('no signature layer');
    lapsedLayer.annotations[CERTIFICATE_ANNOTATION] = await ca.expired(release);
    const putLapsed = await fetch(lapsedUrl, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
      body: JSON.stringify(lapsedManifest),
    });
    expect(putLapsed.status).toBe(201);
    expect(await refusal(pem.verify(lapsed))).toContain(
      'certificate is not valid or expired at the specified date',
    );
    expect(await cosignVerifies(`${image}@${lapsed}`, ca, subject, issuer)).toBe(false);
    // A certificate annotation that is no certificate: refused as such.
    layer.annotations[CERTIFICATE_ANNOTATION] =
      '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
    await fetch(sigUrl, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
      body: JSON.stringify(manifest),
    });
    expect(await refusal(pem.verify(forged))).toContain('has a certificate that cannot be read');

    // Keys only: a keyless signature is named as such. Keys and keyless together: either signer is accepted.
    const keyed = await cosignKeyPair();
    const keysOnly = await imageVerifier(image, { provider: 'cosign', keys: [keyed.publicKey] });
    expect(await refusal(keysOnly.verify(digests.false as string))).toContain(
      'is made with a certificate (keyless), and verify.keyless is not set',
    );
    expect(await refusal(keysOnly.verify(digests.true as string))).toContain(
      'is keyless (a certificate), and verify.keyless is not set',
    );
    const both = await verifierOf({ trustedRoot: ca.chainPem, identities: allowed }, [keyed.publicKey]);
    const byKey = (await push('by-key')).digest;
    await cosignSign(`${image}@${byKey}`, keyed);
    expect(await both.verify(byKey)).toEqual({ key: `cosign ${keyId(createPublicKey(keyed.publicKey))}` });
    expect(await both.verify(digests.true as string)).toEqual(signer);

    // A root with nothing trusted in it, and a private key where the root belongs: said when the check runs.
    const rootless = await verifierOf({ trustedRoot: release.publicKey, identities: allowed });
    expect(await rootless.verify(digests.false as string).catch((e: Error) => e.message)).toContain(
      'neither a Sigstore trusted root (JSON) nor PEM certificates',
    );
  });

  it('keyless with a timestamp authority: a certificate that lapsed after it signed is accepted by its timestamp; no timestamp, no acceptance', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repository = `keyless-tsa-${suffix}/web`;
    const image = `${env.registry.host}/${repository}`;
    const push = (tag: string) =>
      pushImage({ registry: env.registry.url, repository, tag, content: `build ${tag}` });
    const ca = await certificateAuthority();
    const tsa = await timestampAuthority(ca.dir);
    try {
      const issuer = 'https://token.ci.example.com';
      const subject = 'release@example.com';
      const identities = [{ issuer, subject }];
      const signer = { key: `cosign ${subject} (issuer ${issuer})` };
      const verifierOf = (trustedRoot: string) =>
        imageVerifier(image, { provider: 'cosign', keyless: { trustedRoot, identities } });
      const timestamped = await verifierOf(await ca.trustedRoot({ tsaChainFile: tsa.chainFile }));
      const privateCa = await verifierOf(ca.chainPem);
      // A certificate that lasts seconds, as Fulcio's last minutes: it signs (with a timestamp, and without) and
      // lapses before the checks.
      const lapsing = await ca.issue(subject, issuer, { validSeconds: 8 });
      const signedAt = Date.now();
      const digests: Record<string, { stamped: string; bare: string }> = {};
      for (const bundle of [false, true]) {
        const stamped = (await push(`stamped-${bundle}`)).digest;
        const bare = (await push(`bare-${bundle}`)).digest;
        await cosignSign(`${image}@${stamped}`, lapsing, { bundle, timestampServer: tsa.url });
        await cosignSign(`${image}@${bare}`, lapsing, { bundle });
        digests[String(bundle)] = { stamped, bare };
      }
      // Checked by the private CA's root while the certificate is valid: accepted, until it expires.
      const early = digests.false?.bare as string;
      expect(await privateCa.verify(early)).toEqual({ ...signer, validUntil: expect.any(Number) });
      expect(Date.now() - signedAt, "signed and checked within the certificate's seconds").toBeLessThan(
        8_000,
      );
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, signedAt + 9_000 - Date.now())));
      // The same digest once the certificate has lapsed: the verdict has expired with it, refused.
      expect(await refusal(privateCa.verify(early))).toContain(
        'certificate is not valid or expired at the specified date',
      );
      for (const bundle of [false, true]) {
        const { stamped, bare } = digests[String(bundle)] as { stamped: string; bare: string };
        // The timestamp authority vouches that it signed while its certificate was valid: accepted, as cosign
        // verify accepts it.
        expect(await timestamped.verify(stamped), `bundle ${bundle}`).toEqual(signer);
        expect(
          await cosignVerifies(`${image}@${stamped}`, ca, subject, issuer, {
            bundle,
            tsaChainFile: tsa.chainFile,
          }),
        ).toBe(true);
        // Without a timestamp, a root that names a timestamp authority accepts nothing.
        expect(await refusal(timestamped.verify(bare)), `bundle ${bundle}`).toContain(
          'expected 1 timestamps, got 0',
        );
        // A root without one (a private CA) checks the certificate now: it has lapsed.
        expect(await refusal(privateCa.verify(stamped)), `bundle ${bundle}`).toContain(
          'certificate is not valid or expired at the specified date',
        );
      }
      // A timestamp from an authority the root does not name: refused.
      const otherCa = await certificateAuthority();
      const otherTsa = await timestampAuthority(otherCa.dir);
      try {
        const elsewhere = (await push('elsewhere')).digest;
        await cosignSign(`${image}@${elsewhere}`, await ca.issue(subject, issuer), {
          bundle: true,
          timestampServer: otherTsa.url,
        });
        expect(await refusal(timestamped.verify(elsewhere))).toContain('(timestamp could not be verified)');
      } finally {
        await otherTsa.close();
      }
    } finally {
      await tsa.close();
    }
  });

  it('a registry that fails during a check (500, 429, hung) refuses nothing and accepts nothing; the next check works', async () => {
    const env = testbed();
    const repository = `cosign-faults-${Date.now().toString(36)}/web`;
    const trusted = await cosignKeyPair();
    const { digest } = await pushImage({
      registry: env.registry.url,
      repository,
      tag: 'v1',
      content: 'faults',
    });
    await cosignSign(`${env.registry.host}/${repository}@${digest}`, trusted);
    const proxy = await FaultProxy.start(env.registry.url);
    try {
      const source = registrySource.parse({
        name: 'web',
        image: `${proxy.host}/${repository}`,
        insecure: true,
        verify: { provider: 'cosign', keys: [trusted.publicKey] },
      });
      const poller = await createArtifactPoller({ kind: 'image', source });
      const sig = (r: { path: string }) => r.path.includes('.sig');
      for (const fault of [
        { kind: 'status', status: 500 } as const,
        { kind: 'rate-limit', retryAfterSeconds: 1 } as const,
        { kind: 'hang' } as const,
      ]) {
        proxy.set(fault, { match: sig });
        const outcome = await poller.verifier?.verify(digest).then(
          () => 'accepted',
          (error: unknown) => error,
        );
        expect(outcome, fault.kind).not.toBe('accepted');
        expect(outcome, fault.kind).not.toBeInstanceOf(SignatureRefusal);
        proxy.pass();
      }
      // The registry back: the same digest verifies (the failures were not kept as verdicts).
      await new Promise((r) => setTimeout(r, 1100)); // the 429's Retry-After
      expect(await poller.verifier?.verify(digest)).toEqual({
        key: `cosign ${keyId(createPublicKey(trusted.publicKey))}`,
      });
    } finally {
      await proxy.close();
    }
  });

  it('an agent refuses an unsigned image tag with a status, deploys it once signed, and keeps the verified one', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repository = `verify-${suffix}/web`;
    const image = `${env.registry.host}/${repository}`;
    const trusted = await cosignKeyPair();
    const dir = await tempDir();
    await writeFile(join(dir, 'cosign.pub'), trusted.publicKey);
    const id = keyId(createPublicKey(trusted.publicKey));
    const push = async (content: string, labels?: Record<string, string>) =>
      (await pushImage({ registry: env.registry.url, repository, tag: 'stable', content, labels })).digest;
    const first = await push('one');

    const repo = await bareRepo(`verify-${suffix}/app`);
    const manifests = (round: string) => ({
      'app.yaml': yamlDocuments(
        configMapManifest('settings', { round }),
        deploymentManifest({ image: `${image}:stable` }),
      ),
    });
    const commit = await repo.commit(manifests('1'));
    const agentNs = `${ns()}-agent`;
    const { receiver, agent, configFile } = await startGitAgent({
      repo,
      cluster: { namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns(), images: ['web-image'] }],
      extra: {
        sources: {
          registry: [
            {
              ...stableImageSource(image, '1s'),
              verify: { provider: 'cosign', keys: [{ file: join(dir, 'cosign.pub') }] },
            },
          ],
        },
      },
    });
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    const running = async () =>
      (await apps.listNamespacedDeployment({ namespace: ns() })).items.find((d) => d.metadata?.name === 'web')
        ?.spec?.template.spec?.containers[0]?.image;
    const status = (sha: string, state: string, text?: string) =>
      eventually(
        `${state} on ${sha.slice(0, 7)}${text ? ` saying ${text}` : ''}`,
        async () =>
          receiver
            .statuses()
            .find((s) => s.sha === sha && s.state === state && (!text || s.description.includes(text))),
        90_000,
      );
    try {
      // Unsigned: nothing deployed, the commit's status says why.
      const refused = await status(commit, 'failure');
      expect(refused.description).toContain('no verified digest of image source web-image yet');
      expect(await running()).toBeUndefined();

      // Signed: deployed by digest, the release names the key.
      await cosignSign(`${image}@${first}`, trusted);
      await status(commit, 'success');
      expect(await running()).toBe(`${image}:stable@${first}`);
      let history = await ledgerHistory<Release>('web', configFile);
      expect(history[0]?.images['web-image']).toMatchObject({ digest: first, signedBy: `cosign ${id}` });
      const table = await mooring('history', 'web', '--config', configFile);
      expect(table.stdout).toContain('SIGNED BY');
      expect(table.stdout).toContain(`web-image: cosign ${id}`);

      // A new unsigned digest on the tag: refused with a status naming it; the signed one keeps running.
      // Built from a commit of another repository of the same forge (its OCI labels): that commit hears of it too.
      const built = 'c'.repeat(40);
      const second = await push('two', {
        'org.opencontainers.image.source': `${testbed().git.url}/verify-${suffix}/service`,
        'org.opencontainers.image.revision': built,
      });
      await status(commit, 'failure', `${second.slice(0, 19)}… is not signed`);
      const onBuild = await status(built, 'failure', 'is not signed');
      expect(onBuild.repository).toBe(`verify-${suffix}/service`);
      expect(await running()).toBe(`${image}:stable@${first}`);
      // Counted for alerts: polls whose new digest was refused.
      await eventually('refused polls counted', async () =>
        /mooring_source_polls_total\{source="web-image",kind="registry",result="refused"\} [1-9]/.test(
          await (await fetch(`http://127.0.0.1:${agent.port()}/metrics`)).text(),
        )
          ? true
          : undefined,
      );
      await eventually('an ArtifactRefused Event', async () =>
        (await kubectl('-n', agentNs, 'get', 'events', '-o', 'json')).stdout.includes('ArtifactRefused')
          ? true
          : undefined,
      );

      // A new commit meanwhile is deployed with the verified digest, not held by the refused one.
      const next = await repo.commit(manifests('2'));
      await status(next, 'success');
      expect(await running()).toBe(`${image}:stable@${first}`);

      // The new digest signed: deployed.
      await cosignSign(`${image}@${second}`, trusted);
      await eventually('the second digest running', async () =>
        (await running()) === `${image}:stable@${second}` ? true : undefined,
      );
      // Its release is written once it is stable.
      history = await eventually('the release of the second digest', async () => {
        const releases = await ledgerHistory<Release>('web', configFile);
        return releases[0]?.images['web-image']?.digest === second && releases[0].result === 'stable'
          ? releases
          : undefined;
      });
      expect(history[0]?.images['web-image']).toMatchObject({ digest: second, signedBy: `cosign ${id}` });

      // A rollback to the first release re-verifies its digest with today's keys: with the key replaced by
      // another, it is refused and nothing changes.
      await agent.stop();
      const firstRelease = history.find(
        (r) => r.images['web-image']?.digest === first && r.result === 'stable',
      );
      await writeFile(join(dir, 'cosign.pub'), (await cosignKeyPair()).publicKey);
      const back = await mooring('rollback', 'web', '--to', String(firstRelease?.id), '--config', configFile);
      expect(back.code).not.toBe(0);
      expect(`${back.stdout}${back.stderr}`).toContain('verifies under none of the trusted keys');
      expect(await running()).toBe(`${image}:stable@${second}`);
      // With the key back, the same rollback verifies and runs the first digest again.
      await writeFile(join(dir, 'cosign.pub'), trusted.publicKey);
      const again = await mooring(
        'rollback',
        'web',
        '--to',
        String(firstRelease?.id),
        '--config',
        configFile,
      );
      expect(again.code, again.stderr).toBe(0);
      expect(await running()).toBe(`${image}:stable@${first}`);
      history = await ledgerHistory<Release>('web', configFile);
      expect(history[0]?.images['web-image']).toMatchObject({ digest: first, signedBy: `cosign ${id}` });
    } finally {
      await agent.stop();
      await receiver.close();
    }
  });
});
