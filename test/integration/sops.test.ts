// SOPS/age-encrypted manifests on the test bed: `mooring deploy --age-key-file` creates the Secret with its
// plaintext values (read back with kubectl) and prints none of them; a file that cannot be decrypted exits 2
// naming the file, and nothing of the set is applied; the agent deploys an encrypted Secret from the test bed's
// Git server with `decryption.ageKeyFile`, its log holds no plaintext, and it refuses a commit whose file it
// cannot decrypt, naming the file and applying nothing of that commit. The encrypted files are made by the
// spec-following helper of the unit tests (the sops binary cannot be installed here).
import { spawn } from 'node:child_process';
import { readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encryptSops, newAgeKey } from '../unit/sources/sops-fixture.ts';
import { liveObject, pushStable, stableImageSources } from './build-helpers.ts';
import { api, ledgerOf } from './faults-support.ts';
import {
  deploymentYaml,
  deployTo,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const PLAIN = `sops-plain-${Math.random().toString(36).slice(2)}`;

const secret = (name: string, value: string) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, annotations: { 'strategy.spinnaker.io/versioned': 'false' } },
  type: 'Opaque',
  stringData: { password: value, user: 'app' },
});

const configMap = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {mode: sops}
`;

describe('SOPS-encrypted manifests', () => {
  const ns = useNamespace('sops');
  const agentNs = useNamespace('sops-agent');
  const env = testbed();
  // The CLI and the agent find the build tools as the product does: MOORING_KUBECTL / MOORING_HELM, else PATH.
  process.env.MOORING_KUBECTL = env.tools.kubectl;
  process.env.MOORING_HELM = env.tools.helm;
  const secretValue = async (namespace: string, name: string) => {
    const out = await kubectl('-n', namespace, 'get', 'secret', name, '-o', 'jsonpath={.data.password}');
    return out.code === 0 ? Buffer.from(out.stdout, 'base64').toString() : undefined;
  };
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it('deploy --age-key-file applies the decrypted Secret and prints no plaintext; render redacts it', async () => {
    const key = await newAgeKey();
    const keys = await manifestDir({ 'keys.txt': `# test identity\n${key.secret}\n` });
    const dir = await manifestDir({
      'app.yaml': configMap,
      'db.yaml': await encryptSops([secret('db', PLAIN)], {
        recipients: [key.recipient],
        encryptedRegex: '^(data|stringData)$',
      }),
    });
    const result = await deployTo(ns(), dir, '--age-key-file', `${keys}/keys.txt`);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(result.stdout).toContain('secret/db created');
    expect(await secretValue(ns(), 'db')).toBe(PLAIN);
    const stored = await kubectl('-n', ns(), 'get', 'secret', 'db', '-o', 'yaml');
    expect(stored.stdout).not.toMatch(/^\s*(sops|mac|lastmodified):/m);
    expect(stored.stdout).not.toContain('ENC[');
    const rendered = await mooring(
      'render',
      dir,
      '--offline',
      '-n',
      ns(),
      '--age-key-file',
      `${keys}/keys.txt`,
    );
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(rendered.stdout).toContain('name: db');
    for (const text of [result.stdout, result.stderr, rendered.stdout, rendered.stderr])
      expect(text).not.toContain(PLAIN);
  });

  it('diff of a decrypted ConfigMap does not show its value', async () => {
    const key = await newAgeKey();
    const keys = await manifestDir({ 'keys.txt': `# test identity\n${key.secret}\n` });
    const hidden = `${PLAIN}-diff`;
    const dir = await manifestDir({
      'settings.yaml': await encryptSops(
        [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'feature-flags', annotations: { 'strategy.spinnaker.io/versioned': 'false' } },
            data: { token: hidden },
          },
        ],
        { recipients: [key.recipient], encryptedRegex: '^data$' },
      ),
    });
    const diff = await mooring(
      'diff',
      dir,
      '-n',
      ns(),
      '--kubeconfig',
      env.kube.kubeconfig,
      '--age-key-file',
      `${keys}/keys.txt`,
    );
    // Exit 1: there is a difference (the ConfigMap is new), shown without its value.
    expect(diff.code, diff.stderr).toBe(1);
    expect(diff.stdout).toContain('feature-flags');
    expect(diff.stdout + diff.stderr).not.toContain(hidden);
  });

  it('Ctrl-C or SIGTERM while kustomize builds decrypted files removes them and stops the build', async () => {
    const key = await newAgeKey();
    const keys = await manifestDir({ 'keys.txt': `${key.secret}\n` });
    const dir = await manifestDir({
      'kustomization.yaml': 'resources: [secret.yaml]\n',
      'secret.yaml': await encryptSops([secret('slow', PLAIN)], {
        recipients: [key.recipient],
        encryptedRegex: '^(data|stringData)$',
      }),
    });
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      // kubectl as a slow build: it notes its pid, then sleeps before the real build.
      const temp = await manifestDir({});
      const pidFile = join(temp, 'kubectl.pid');
      const tools = await manifestDir({});
      const slow = join(tools, 'kubectl');
      await writeFile(
        slow,
        `#!/bin/sh\necho $$ > '${pidFile}'\nsleep 60\nexec '${env.tools.kubectl}' "$@"\n`,
        {
          mode: 0o755,
        },
      );
      const child = spawn(
        process.execPath,
        [
          join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts'),
          'render',
          '--offline',
          dir,
          '--age-key-file',
          `${keys}/keys.txt`,
        ],
        { env: { ...process.env, MOORING_KUBECTL: slow, TMPDIR: temp }, stdio: 'ignore' },
      );
      const exited = new Promise<{ code: number | null; signal: string | null }>((done) =>
        child.once('exit', (exitCode, exitSignal) => done({ code: exitCode, signal: exitSignal })),
      );
      const pid = Number(
        await eventually(
          'the build started',
          async () => (await readFile(pidFile, 'utf8').catch(() => '')).trim() || undefined,
        ),
      );
      const copies = async () => (await readdir(temp)).filter((n) => n.startsWith('mooring-sops-'));
      expect(await copies()).toHaveLength(1);
      child.kill(signal);
      expect(await exited).toEqual({ code, signal: null });
      // No plaintext left on disk, and the build's process group is stopped with the command.
      expect(await copies()).toEqual([]);
      await eventually('the build stopped', async () => {
        try {
          process.kill(pid, 0);
          return undefined;
        } catch {
          return true;
        }
      });
    }
  });

  it('a file that cannot be decrypted exits 2 naming it, and nothing is applied', async () => {
    const mine = await newAgeKey();
    const theirs = await newAgeKey();
    const keys = await manifestDir({ 'keys.txt': `${mine.secret}\n` });
    const dir = await manifestDir({
      'app.yaml': configMap.replace('name: settings', 'name: untouched'),
      'other.yaml': await encryptSops([secret('other', PLAIN)], { recipients: [theirs.recipient] }),
    });
    const result = await deployTo(ns(), dir, '--age-key-file', `${keys}/keys.txt`);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `${dir}/other.yaml: cannot decrypt (sops): no age identity for recipient ${theirs.recipient}`,
    );
    // Without any key, the same refusal says where a key would come from.
    const keyless = await deployTo(ns(), dir);
    expect(keyless.code).toBe(2);
    expect(keyless.stderr).toContain('no age key given');
    for (const name of ['untouched']) {
      const got = await kubectl('-n', ns(), 'get', 'configmap', name);
      expect(got.code, `${name} must not exist`).not.toBe(0);
    }
    expect(await secretValue(ns(), 'other')).toBeUndefined();
  });

  it('decrypts SOPS files that kustomize and helm read, in a private copy, leaving the files encrypted', async () => {
    // A temporary folder of this test's own, to see that every decrypted copy is removed.
    const temp = await manifestDir({});
    const savedTmp = process.env.TMPDIR;
    process.env.TMPDIR = temp;
    stops.push(async () => {
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
    });
    const key = await newAgeKey();
    const keys = await manifestDir({ 'keys.txt': `${key.secret}\n` });
    const encrypted = await encryptSops([secret('kdb', PLAIN)], {
      recipients: [key.recipient],
      encryptedRegex: '^(data|stringData)$',
    });
    // The overlay changes what the MAC covers (a name prefix, labels): decrypting the build's output would fail.
    const dir = await manifestDir({
      'base/kustomization.yaml': 'resources: [secret.yaml]\n',
      'base/secret.yaml': encrypted,
      'overlay/kustomization.yaml': 'resources: [../base]\nnamePrefix: k-\ncommonLabels: {tier: db}\n',
    });
    const kustomized = await deployTo(ns(), join(dir, 'overlay'), '--age-key-file', `${keys}/keys.txt`);
    expect(kustomized.code, kustomized.stderr + kustomized.stdout).toBe(0);
    expect(await secretValue(ns(), 'k-kdb')).toBe(PLAIN);
    expect(await readFile(join(dir, 'base/secret.yaml'), 'utf8')).toBe(encrypted);
    // A chart folder given as a path, its secrets in a SOPS values file (as helm-secrets users keep them).
    const values = await encryptSops([{ password: PLAIN }], { recipients: [key.recipient] });
    const chart = await manifestDir({
      'Chart.yaml': 'apiVersion: v2\nname: vault-app\nversion: 0.1.0\n',
      'values.yaml': 'password: none\n',
      'templates/secret.yaml': `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-creds
  annotations: {strategy.spinnaker.io/versioned: "false"}
stringData:
  password: {{ .Values.password | quote }}
`,
      'secrets.yaml': values,
    });
    const charted = await deployTo(
      ns(),
      chart,
      '--values',
      join(chart, 'secrets.yaml'),
      '--age-key-file',
      `${keys}/keys.txt`,
    );
    expect(charted.code, charted.stderr + charted.stdout).toBe(0);
    expect(charted.stdout).toContain('secret/vault-app-creds');
    expect(await secretValue(ns(), 'vault-app-creds')).toBe(PLAIN);
    expect(await readFile(join(chart, 'secrets.yaml'), 'utf8')).toBe(values);
    // Chart flags without a chart are refused.
    const stray = await deployTo(ns(), join(dir, 'overlay'), '--values', join(chart, 'secrets.yaml'));
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('--values and --release-name apply to a Helm chart folder');
    for (const text of [kustomized.stdout, kustomized.stderr, charted.stdout, charted.stderr])
      expect(text).not.toContain(PLAIN);
    expect(tmpdir()).toBe(temp);
    expect((await readdir(temp)).filter((n) => n.startsWith('mooring-sops-'))).toEqual([]);
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
  });

  it('a chart whose helper and SOPS values are links within the repository deploys from the decrypted copy', async () => {
    const key = await newAgeKey();
    const keys = await manifestDir({ 'keys.txt': `${key.secret}\n` });
    const repo = await manifestDir({
      '.git/HEAD': 'ref: refs/heads/main\n',
      'shared/_helpers.tpl': '{{- define "linked.name" }}linked-creds{{ end }}\n',
      'shared/prod.enc.yaml': await encryptSops([{ password: PLAIN }], { recipients: [key.recipient] }),
      'chart/Chart.yaml': 'apiVersion: v2\nname: linked\nversion: 0.1.0\n',
      'chart/values.yaml': 'password: none\n',
      'chart/templates/secret.yaml': `apiVersion: v1
kind: Secret
metadata:
  name: {{ include "linked.name" . }}
  annotations: {strategy.spinnaker.io/versioned: "false"}
stringData:
  password: {{ .Values.password | quote }}
`,
    });
    const chart = join(repo, 'chart');
    await symlink('../../shared/_helpers.tpl', join(chart, 'templates', '_helpers.tpl'));
    await symlink('../shared/prod.enc.yaml', join(chart, 'prod.yaml'));
    const result = await deployTo(
      ns(),
      chart,
      '--values',
      join(chart, 'prod.yaml'),
      '--age-key-file',
      `${keys}/keys.txt`,
    );
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(result.stdout).toContain('secret/linked-creds');
    expect(await secretValue(ns(), 'linked-creds')).toBe(PLAIN);
    expect(result.stdout + result.stderr).not.toContain(PLAIN);
    expect(await readFile(join(repo, 'shared/prod.enc.yaml'), 'utf8')).toContain('sops:');
  });

  it('the agent deploys an encrypted Secret from Git with decryption.ageKeyFile', async () => {
    const suffix = Date.now().toString(36);
    const key = await newAgeKey();
    const { image, digest } = await pushStable(`sops-${suffix}/vault`);
    const firstFiles = {
      'app.yaml': configMap,
      'secrets/db.yaml': await encryptSops([secret('agent-db', PLAIN)], { recipients: [key.recipient] }),
      // A kustomization whose base holds an encrypted Secret: decrypted in the checkout's copy before the build.
      // Its Secret is versioned and its Deployment's image bound to the registry's digest, after the build.
      'kustom/base/kustomization.yaml': 'resources: [secret.yaml, vault.yaml]\n',
      'kustom/base/secret.yaml': await encryptSops(
        [
          {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: 'base-db' },
            type: 'Opaque',
            stringData: { password: PLAIN },
          },
        ],
        { recipients: [key.recipient], encryptedRegex: '^(data|stringData)$' },
      ),
      'kustom/base/vault.yaml': deploymentYaml({
        name: 'vault',
        container: 'vault',
        image: `${image}:stable`,
        secret: 'base-db',
      }),
      'kustom/overlay/kustomization.yaml': 'resources: [../base]\nnamePrefix: k-\ncommonLabels: {tier: db}\n',
    };
    const files = await manifestDir({
      user: env.git.username,
      password: env.git.password,
      token: 't',
      'keys.txt': `${key.secret}\n`,
    });
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `sops-${suffix}/app`,
      files: firstFiles,
      cluster: { name: 'sops', namespace: agentNs() },
      deployments: [{ name: 'app', namespace: ns(), images: ['vault-image'] }],
      extra: {
        sources: stableImageSources('vault-image', image),
        decryption: { ageKeyFile: `${files}/keys.txt` },
      },
    });
    stops.push(async () => receiver.close());
    const ended = (sha: string) => receiver.statuses().find((s) => s.sha === sha && s.state !== 'pending');
    stops.push(agent.stop);
    const kube = api();
    try {
      await eventually(
        'the encrypted Secret deployed',
        async () =>
          (await ledgerOf(kube, agentNs(), 'app')).releases.some((r) => r.result === 'stable')
            ? true
            : undefined,
        120_000,
      );
      expect(await secretValue(ns(), 'agent-db')).toBe(PLAIN);
      expect(await secretValue(ns(), 'k-base-db-v000')).toBe(PLAIN);
      const vault = await liveObject<{
        spec: {
          template: { spec: { containers: { image: string; envFrom: { secretRef: { name: string } }[] }[] } };
        };
      }>(ns(), 'deployment', 'k-vault');
      const container = vault?.spec.template.spec.containers[0];
      expect(container?.image).toBe(`${image}:stable@${digest}`);
      expect(container?.envFrom[0]?.secretRef.name).toBe('k-base-db-v000');
      await eventually('the first commit reported', async () => ended(first));
      expect(ended(first)?.state).toBe('success');
      // A commit whose encrypted file is for another recipient: refused naming the file, nothing of it applied.
      const other = await newAgeKey();
      const second = await repo.commit({
        'app.yaml': configMap.replace('mode: sops', 'mode: changed'),
        'secrets/db.yaml': await encryptSops([secret('agent-db', 'next')], { recipients: [other.recipient] }),
      });
      const refused = await eventually('the undecryptable commit refused', async () =>
        agent.logged('cannot read the manifests').find((r) => String(r.err).includes('secrets/db.yaml')),
      );
      expect(String(refused.err)).toBe(
        `secrets/db.yaml: cannot decrypt (sops): no age identity for recipient ${other.recipient}`,
      );
      // The commit fails, its status naming the file.
      await eventually('the undecryptable commit reported', async () => ended(second));
      expect(ended(second)?.state).toBe('failure');
      expect(ended(second)?.description).toMatch(
        /^secrets\/db\.yaml: cannot decrypt \(sops\): no age identity/,
      );
      for (const request of receiver.captured) expect(JSON.stringify(request.body)).not.toContain(PLAIN);
      const mode = await kubectl('-n', ns(), 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.mode}');
      expect(mode.stdout).toBe('sops');
      expect(await secretValue(ns(), 'agent-db')).toBe(PLAIN);
      const ledger = await kubectl('-n', agentNs(), 'get', 'configmaps', '-o', 'yaml');
      for (const text of [agent.lines.join('\n'), ledger.stdout]) expect(text).not.toContain(PLAIN);
    } finally {
      kube.close();
    }
  });
});
