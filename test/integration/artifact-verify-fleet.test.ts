// Signed images at the scale and under the faults users have: two dozen deployments follow one image source whose
// signatures are keyless (certificates of the operator's own CA for the release workflow's identity, signed by
// cosign itself as Sigstore bundles). A new digest that is not signed is pushed and kube-apiserver is killed while
// the agent (its own process, as in a pod) polls, checks and reports it: the process lives, every deployment's
// commit gets its failure status naming the digest once the server is back, none stays pending, and every
// deployment keeps running the verified digest. Signed, the digest reaches all of them, and each release records
// the certificate's identity.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { describe, expect, it, onTestFailed } from 'vitest';
import { certificateAuthority, cosignSign } from '../testbed/cosign.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { assertAlive, killApiServer, restartApiServer } from './fault-helpers.ts';
import { api, ledgerOf, useCleanups } from './faults-support.ts';
import {
  deploymentManifest,
  eventually,
  kubeConfig,
  type PostedStatus,
  postedStatuses,
  stableImageSource,
  startGitAgent,
  tempDir,
  testbed,
  unended,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const APPS = 24;

describe('signed images across many deployments', () => {
  const ns = useNamespace('verify-fleet');
  const cleanup = useCleanups();

  it('refuses an unsigned digest for every deployment through a killed API server, and rolls the signed one to all', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repository = `verify-fleet-${suffix}/web`;
    const image = `${env.registry.host}/${repository}`;
    const ca = await certificateAuthority();
    const issuer = 'https://token.ci.example.com';
    const subject = 'https://ci.example.com/org/web/.ci/release.yaml@refs/heads/main';
    const release = await ca.issue(subject, issuer);
    const dir = await tempDir();
    const root = join(dir, 'trusted_root.json');
    await writeFile(root, await ca.trustedRoot());
    const push = async (content: string) =>
      (await pushImage({ registry: env.registry.url, repository, tag: 'stable', content })).digest;
    const first = await push('one');
    await cosignSign(`${image}@${first}`, release, { bundle: true });

    const names = Array.from({ length: APPS }, (_, i) => `app-${String(i).padStart(2, '0')}`);
    const agentNs = `${ns()}-agent`;
    const {
      receiver,
      first: commit,
      agent,
    } = await startGitAgent({
      repo: `verify-fleet-${suffix}/app`,
      files: Object.fromEntries(
        names.map((name) => [
          `apps/${name}/app.yaml`,
          yamlDocuments(deploymentManifest({ name, image: `${image}:stable` })),
        ]),
      ),
      cluster: { namespace: agentNs, requestTimeout: '5s' },
      deployments: names.map((name) => ({
        name,
        namespace: ns(),
        paths: [`apps/${name}`],
        images: ['web-image'],
      })),
      extra: {
        sources: {
          registry: [
            {
              ...stableImageSource(image, '1s'),
              verify: {
                provider: 'cosign',
                keyless: { trustedRoot: { file: root }, identities: [{ issuer, subject }] },
              },
            },
          ],
        },
      },
      start: { process: true },
    });
    cleanup(() => {
      if (agent.alive()) agent.child.kill('SIGKILL');
    });
    onTestFailed(() => {
      process.stderr.write(
        `agent output (last lines):\n${agent.output().split('\n').slice(-60).join('\n')}\n`,
      );
    });
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    const running = async () =>
      new Map(
        (await apps.listNamespacedDeployment({ namespace: ns() })).items.map((d) => [
          d.metadata?.name ?? '',
          d.spec?.template.spec?.containers[0]?.image,
        ]),
      );
    /** The last status of each deployment on `commit`, once every deployment's satisfies `ok`. */
    const everyDeployment = (what: string, ok: (s: PostedStatus | undefined) => boolean, ms: number) =>
      eventually(
        what,
        async () => {
          if (!agent.alive())
            return Promise.reject(new Error(`the agent exited: ${agent.output().slice(-500)}`));
          const posted = postedStatuses(receiver.captured).filter((s) => s.sha === commit);
          const last = names.map((name) => posted.filter((s) => s.context.endsWith(`/${name}`)).at(-1));
          return last.every(ok) ? last : undefined;
        },
        ms,
      );

    await everyDeployment(
      'every deployment stable on the verified digest',
      (s) => s?.state === 'success',
      240_000,
    );
    expect([...(await running()).values()]).toEqual(names.map(() => `${image}:stable@${first}`));

    // A digest nobody signed, and the API server killed as the agent polls, checks and reports it.
    const second = await push('two');
    await killApiServer();
    await new Promise((resolve) => setTimeout(resolve, 4000));
    await restartApiServer();
    const refused = await everyDeployment(
      'every deployment told of the refusal',
      (s) => s?.state === 'failure' && s.description.includes(`${second.slice(0, 19)}… is not signed`),
      180_000,
    );
    expect(refused).toHaveLength(APPS);
    // A status keeps 140 characters; the log says the whole refusal, with the identity it expected.
    expect(
      agent
        .logs()
        .some((l) => typeof l.err === 'string' && l.err.includes(`for ${subject} (issuer ${issuer})`)),
    ).toBe(true);
    assertAlive(agent);
    expect([...(await running()).values()]).toEqual(names.map(() => `${image}:stable@${first}`));

    // Signed: every deployment runs it, every status ends, each release names the certificate's identity.
    await cosignSign(`${image}@${second}`, release, { bundle: true });
    await everyDeployment(
      'every deployment stable on the signed digest',
      (s) => s?.state === 'success',
      240_000,
    );
    await eventually(
      'the signed digest running everywhere',
      async () =>
        [...(await running()).values()].every((i) => i === `${image}:stable@${second}`) ? true : undefined,
      120_000,
    );
    assertAlive(agent);
    expect(unended(postedStatuses(receiver.captured))).toEqual([]);
    const kube = api();
    try {
      for (const name of names) {
        const ledger = await ledgerOf(kube, agentNs, name);
        expect(ledger.releases[0]?.images['web-image'], name).toMatchObject({
          digest: second,
          signedBy: `cosign ${subject} (issuer ${issuer})`,
        });
      }
    } finally {
      kube.close();
    }
  });
});
