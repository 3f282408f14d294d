// Reporting end to end: two agents (two "clusters") deploy the same commit and post commit statuses with their
// own contexts to a GitHub-shaped endpoint whose every request is checked against GitHub's OpenAPI description;
// a broken Deployment is reported as a failure naming it; the audit log holds the hydrated manifests; and a
// Secret's canary value appears in no log, audit record, ledger, status request, error, history or HTTP answer
// (the status page's data included):
// not when the API server refuses a Secret and quotes the value, and not through the content-hash annotation,
// which cannot confirm the value without the installation's key. A SOPS/age-encrypted Secret beside it, decrypted by
// the agents (decryption.ageKeyFile), keeps its plaintext out of every output just the same.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTENT_HASH } from '../../src/render/annotations.ts';
import { contentHash, keyedContentHash } from '../../src/render/canonical.ts';
import type { KubeObject } from '../../src/render/manifest.ts';
import { versionContent } from '../../src/render/versioning.ts';
import { githubStatusValidator } from '../contract/github-openapi.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { encryptSops, newAgeKey } from '../unit/sources/sops-fixture.ts';
import {
  agentConfig,
  bareRepo,
  deleteNamespace,
  deploymentManifest,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  secretManifest,
  stableImageSource,
  startAgent,
  startStatusReceiver,
  stopsAfterAll,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

/** A Secret's field as the cluster holds it (a jsonpath of `kubectl get -o`). */
const secretField = (namespace: string, name: string, jsonpath: string) =>
  kubectl('-n', namespace, 'get', 'secret', name, '-o', jsonpath);

const CANARY = `canary-${Math.random().toString(36).slice(2)}-value`;
const SOPS_CANARY = `sops-canary-${Math.random().toString(36).slice(2)}-value`;

describe('commit statuses, audit log and secrecy', () => {
  const nsEast = useNamespace('report-east');
  const nsWest = useNamespace('report-west');
  const stops = stopsAfterAll();

  it('posts pending then success per cluster, failure naming the object, and never leaks the Secret', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repoPath = `team-${suffix}/app`;
    const repo = await bareRepo(repoPath);
    const validate = githubStatusValidator();
    const receiver = await startStatusReceiver();
    const { captured } = receiver;

    const image = `${env.registry.host}/report-${suffix}/web`;
    const app = (deployment: object) =>
      yamlDocuments(secretManifest('credentials', { token: CANARY }), deployment);
    const good = deploymentManifest({ image: `${image}:stable`, secret: 'credentials' });
    const broken = deploymentManifest({
      image: `${image}:stable`,
      secret: 'credentials',
      progressDeadlineSeconds: 5,
      behavior: 'never-ready',
    });
    const age = await newAgeKey();
    const sealed = await encryptSops(
      [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'sealed' },
          stringData: { token: SOPS_CANARY },
        },
      ],
      { recipients: [age.recipient] },
    );
    const first = await repo.commit({ 'app.yaml': app(good), 'sealed.yaml': sealed });
    await pushImage({ registry: env.registry.url, repository: `report-${suffix}/web`, tag: 'stable' });
    const secrets = await manifestDir({
      'age-keys.txt': `${age.secret}\n`,
    });

    const sinks: string[][] = [];
    const start = async (cluster: string, namespace: string) => {
      const audit = join(secrets, `audit-${cluster}.jsonl`);
      const agent = startAgent(
        await agentConfig({
          cluster: { name: cluster, namespace: `mooring-${cluster}-${suffix}` },
          git: [{ name: 'app', repo }],
          deployments: [{ name: 'web', namespace, source: 'app', images: ['web-image'] }],
          statuses: receiver,
          extra: {
            sources: {
              registry: [stableImageSource(image, '1s')],
            },
            server: { statusPage: { enabled: true, anonymous: true } },
            audit: { file: audit },
            decryption: { ageKeyFile: `${secrets}/age-keys.txt` },
          },
        }),
      );
      sinks.push(agent.lines);
      stops.push(() => agent.stop());
      return { audit, port: agent.port };
    };
    const statuses = receiver.statuses;
    const states = (sha: string, context: string) =>
      statuses()
        .filter((s) => s.sha === sha && s.context === context)
        .map((s) => s.state);

    const east = await start('east', nsEast());
    const west = await start('west', nsWest());
    // Pending then success; under load a first sync may be superseded (its image found a poll later), and then
    // its pending ends before the next one starts: every pending is followed by its end, the last is success.
    const pendingThenSuccess = (sequence: string[]) =>
      sequence.at(-1) === 'success' && sequence.every((state, i) => (i % 2 === 0) === (state === 'pending'))
        ? true
        : Promise.reject(new Error(sequence.join(' -> ') || 'no status yet'));
    // Two agents' first syncs while the rest of the suite runs beside them: a minute has not always been enough.
    await eventually(
      'east: pending then success',
      async () => pendingThenSuccess(states(first, 'mooring/east/web')),
      120_000,
    );
    await eventually(
      'west: pending then success',
      async () => pendingThenSuccess(states(first, 'mooring/west/web')),
      120_000,
    );
    expect(statuses().find((s) => s.state === 'success')?.description).toMatch(/^\d+\/\d+ stable in \d+s$/);

    // A new image built from another repository of the same host: the rollout is also reported on the commit it
    // was built from (its OCI labels), not only on the manifests' commit.
    const built = 'b'.repeat(40);
    await pushImage({
      registry: env.registry.url,
      repository: `report-${suffix}/web`,
      tag: 'stable',
      content: 'a new build',
      labels: {
        'org.opencontainers.image.source': `${env.git.url}/team-${suffix}/service`,
        'org.opencontainers.image.revision': built,
      },
    });
    await eventually('success on the image source commit', async () =>
      statuses().some(
        (s) =>
          s.repository === `team-${suffix}/service` &&
          s.sha === built &&
          s.state === 'success' &&
          s.context === 'mooring/east/web',
      )
        ? true
        : undefined,
    );

    // A broken Deployment: the failure names it and the rule.
    const second = await repo.commit({ 'app.yaml': app(broken) });
    await eventually(
      'east: failure',
      async () => (states(second, 'mooring/east/web').includes('failure') ? true : undefined),
      90_000,
    );
    const failure = statuses().find(
      (s) => s.sha === second && s.state === 'failure' && s.context === 'mooring/east/web',
    );
    expect(failure?.description).toContain(`Deployment ${nsEast()}/web`);
    expect(failure?.description).toContain('ProgressDeadlineExceeded');

    // A Secret the API server refuses, quoting the value (`data` that is no base64; replaced, so the decoding
    // error echoes the bytes around the fault): the failure names the object and the field, not the value.
    const echoed = `apiVersion: v1
kind: Secret
metadata: {name: echoed, annotations: {strategy.spinnaker.io/replace: "true"}}
data: {pin: ${CANARY}}
---
`;
    const third = await repo.commit({ 'app.yaml': `${echoed}${app(good)}` });
    const refused = await eventually('east: the refused Secret reported', async () =>
      statuses().find((s) => s.sha === third && s.context === 'mooring/east/web' && s.state !== 'pending'),
    );
    expect(refused.state).toBe('failure');
    // The description is cut to GitHub's 140 characters; the ledger and `mooring history` below hold it whole.
    expect(refused.description).toContain(`Secret ${nsEast()}/echoed`);
    await eventually('west: the refused Secret reported', async () =>
      statuses().find((s) => s.sha === third && s.context === 'mooring/west/web' && s.state !== 'pending'),
    );

    // Every request matched GitHub's OpenAPI description.
    expect(captured.length).toBeGreaterThanOrEqual(6);
    for (const request of captured) expect(validate(request), request.path).toEqual([]);

    // The audit log holds the hydrated manifests, with Secret values redacted.
    const records = (await readFile(east.audit, 'utf8'))
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            commit: string;
            object: { kind: string; metadata: { name: string }; stringData?: Record<string, string> };
          },
      );
    const secret = records.find((r) => r.object.kind === 'Secret');
    expect(secret?.object.metadata.name).toBe('credentials-v000');
    expect(secret?.object.stringData?.token).toBe('<redacted>');
    const deployment = records.find((r) => r.object.kind === 'Deployment' && r.commit === first);
    expect(JSON.stringify(deployment?.object)).toContain('credentials-v000');

    // The content hash on the Secret confirms no guess of its value without the installation's key: it is not the
    // SHA-256 of the content (the canary put back into the audited object), and it is the HMAC under the key kept in
    // the agent's namespace (so the content was rebuilt right, and the inequality means something).
    const annotation = await secretField(
      nsEast(),
      'credentials-v000',
      `jsonpath={.metadata.annotations.${CONTENT_HASH.replaceAll('.', '\\.')}}`,
    );
    const guessed = structuredClone(secret?.object) as unknown as KubeObject;
    guessed.stringData = { token: CANARY };
    const keyText = await secretField(
      `mooring-east-${suffix}`,
      'mooring-content-hash-key',
      'jsonpath={.data.key}',
    );
    const key = Buffer.from(keyText.stdout, 'base64');
    expect(key).toHaveLength(32);
    expect(annotation.stdout).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(annotation.stdout).not.toBe(contentHash(versionContent(guessed)));
    expect(annotation.stdout).not.toContain(contentHash(versionContent(guessed)).slice('sha256:'.length));
    expect(annotation.stdout).not.toBe(keyedContentHash(versionContent(guessed), randomBytes(32)));
    expect(annotation.stdout).toBe(keyedContentHash(versionContent(guessed), key));

    // The canary is nowhere: logs, audit log, ledger, status requests, HTTP answers.
    const ledger = await kubectl('-n', `mooring-east-${suffix}`, 'get', 'configmaps', '-o', 'yaml');
    const history = await mooring(
      'history',
      'web',
      '--kubeconfig',
      env.kube.kubeconfig,
      '--agent-namespace',
      `mooring-east-${suffix}`,
      '-o',
      'json',
    );
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toContain('.data: invalid value (not valid base64)');
    const answers = await Promise.all(
      ['/healthz', '/readyz', '/metrics', '/status/api/deployments'].map(async (p) =>
        (await fetch(`http://127.0.0.1:${east.port()}${p}`)).text(),
      ),
    );
    // The Events the agents wrote (on the workloads and the ledgers).
    const events = await kubectl('get', 'events', '--all-namespaces', '-o', 'yaml');
    expect(events.stdout).toContain('reportingComponent: mooring');
    const everything = [
      events.stdout,
      sinks.flat().join('\n'),
      await readFile(east.audit, 'utf8'),
      await readFile(west.audit, 'utf8'),
      ledger.stdout,
      JSON.stringify(captured),
      history.stdout + history.stderr,
      ...answers,
    ];
    for (const text of everything) expect(text).not.toContain(CANARY);
    for (const text of everything) expect(text).not.toContain(SOPS_CANARY);
    // Syncs after the first wrote the unchanged Secret no more: only its creation was logged, once per agent.
    const secretWrites = sinks
      .flat()
      .filter((l) => l.includes('"msg":"applied"') && l.includes('/credentials-v000"'));
    expect(secretWrites.map((l) => (JSON.parse(l) as { action: string }).action)).toEqual([
      'created',
      'created',
    ]);
    // …while the cluster does hold it, so the test would see a leak.
    const stored = await secretField(nsEast(), 'credentials-v000', 'jsonpath={.data.token}');
    expect(Buffer.from(stored.stdout, 'base64').toString()).toBe(CANARY);
    const sealedStored = await secretField(nsEast(), 'sealed', 'jsonpath={.data.token}');
    expect(Buffer.from(sealedStored.stdout, 'base64').toString()).toBe(SOPS_CANARY);
    for (const cluster of ['east', 'west']) {
      await deleteNamespace(`mooring-${cluster}-${suffix}`);
    }
  });
});
