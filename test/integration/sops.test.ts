// SOPS/age-encrypted manifests on the test bed: `mooring deploy --age-key-file` creates the Secret with its
// plaintext values (read back with kubectl) and prints none of them; a file that cannot be decrypted exits 2
// naming the file, and nothing of the set is applied; the agent deploys an encrypted Secret from the test bed's
// Git server with `decryption.ageKeyFile`, its log holds no plaintext, and it refuses a commit whose file it
// cannot decrypt, naming the file and applying nothing of that commit. The encrypted files are made by the
// spec-following helper of the unit tests (the sops binary cannot be installed here).
import { afterAll, describe, expect, it } from 'vitest';
import { statusReceiver } from '../contract/github-openapi.ts';
import { commitFiles, createBareRepo } from '../testbed/git-repos.ts';
import { encryptSops, newAgeKey } from '../unit/sources/sops-fixture.ts';
import { api, ledgerOf, postedStatuses, startAgent } from './faults-support.ts';
import { deployTo, eventually, manifestDir, mooring, runTool, testbed, useNamespace } from './helpers.ts';

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
  const kubectl = (...args: string[]) =>
    runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, ...args]);
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

  it('the agent deploys an encrypted Secret from Git with decryption.ageKeyFile', async () => {
    const suffix = Date.now().toString(36);
    const repoPath = `sops-${suffix}/app`;
    const repo = await createBareRepo(env.git.root, repoPath);
    const key = await newAgeKey();
    const first = await commitFiles(repo, {
      'app.yaml': configMap,
      'secrets/db.yaml': await encryptSops([secret('agent-db', PLAIN)], { recipients: [key.recipient] }),
    });
    const files = await manifestDir({
      user: env.git.username,
      password: env.git.password,
      token: 't',
      'keys.txt': `${key.secret}\n`,
    });
    const receiver = await statusReceiver();
    stops.push(async () => receiver.close());
    const ended = (sha: string) =>
      postedStatuses(receiver.captured).find((s) => s.sha === sha && s.state !== 'pending');
    const agent = startAgent(`
cluster: {name: sops, kubeconfig: ${env.kube.kubeconfig}, namespace: ${agentNs()}}
sources:
  git:
    - {name: app, url: "${env.git.url}/${repoPath}.git", interval: 1s, credentials: {username: {file: ${files}/user}, password: {file: ${files}/password}}}
deployments:
  - {name: app, namespace: ${ns()}, source: app, stability: {timeout: 2m}, commitStatus: {provider: github, apiUrl: "${receiver.url}", token: {file: ${files}/token}}}
decryption: {ageKeyFile: ${files}/keys.txt}
server: {port: 0, address: 127.0.0.1}
`);
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
      await eventually('the first commit reported', async () => ended(first));
      expect(ended(first)?.state).toBe('success');
      // A commit whose encrypted file is for another recipient: refused naming the file, nothing of it applied.
      const other = await newAgeKey();
      const second = await commitFiles(repo, {
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
