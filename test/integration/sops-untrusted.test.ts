// SOPS files written by whoever can push, on the test bed. A file made with only the public age recipient whose
// encrypted_regex is `^(a+)+$` and whose key is forty `a`s and a `!` (a backtracking engine would block the event
// loop for hours): the agent, as its own process, answers /healthz all along and fails the commit with a clear
// status, then does the same for a rule RE2 refuses and for one whose compiled program would be huge. A chart
// whose templates do `fail`, `required` and `tpl` over a SOPS-encrypted values file, that puts it where render
// refuses and quotes it, or copies it into a ConfigMap: the decrypted password appears in no commit status,
// ledger, Event, status page answer, audit record or log line. A plain SOPS file whose decrypted value render refuses and quotes: hidden from the agent's
// status and ledger, and from mooring deploy and render. `mooring render` hides decrypted values used as a
// Secret's type or copied into a ConfigMap.
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encryptSops, newAgeKey } from '../unit/sources/sops-fixture.ts';
import { assertAlive } from './fault-helpers.ts';
import {
  eventually,
  kubectl,
  manifestDir,
  mooring,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const PASSWORD = `sops-pw-${Math.random().toString(36).slice(2)}-canary`;

const QUOTED = `quoted-${Math.random().toString(36).slice(2)}-canary`;

/** A ConfigMap whose (encrypted) strategy annotation is no boolean: render refuses it, quoting the value. */
const quotedConfigMap = () => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'quoted', annotations: { 'strategy.spinnaker.io/versioned': QUOTED } },
  data: { a: 'b' },
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('SOPS files from an untrusted commit', () => {
  const ns = useNamespace('sops-evil');
  const agentNs = useNamespace('sops-evil-agent');
  const chartNs = useNamespace('sops-chart');
  const chartAgentNs = useNamespace('sops-chart-agent');
  const env = testbed();
  process.env.MOORING_KUBECTL = env.tools.kubectl;
  process.env.MOORING_HELM = env.tools.helm;
  const stops: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  it('a pathological rule does not freeze the agent: /healthz answers and the commit fails clearly', async () => {
    const suffix = Date.now().toString(36);
    const ours = await newAgeKey();
    // The author knows only the public recipient: the file is theirs from its data key to its MAC.
    const evil = await encryptSops(
      [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'evil' },
          [`${'a'.repeat(40)}!`]: 'x',
          aaaa: 'y',
        },
      ],
      { recipients: [ours.recipient], encryptedRegex: '^(a+)+$', tamperMac: true },
    );
    const files = await manifestDir({
      'keys.txt': `${ours.secret}\n`,
    });
    const port = await freePort();
    const { repo, receiver, agent } = await startGitAgent({
      repo: `sops-evil-${suffix}/app`,
      cluster: { name: 'evil', namespace: agentNs() },
      deployments: [{ name: 'app', namespace: ns(), stability: { timeout: '1m' } }],
      extra: { decryption: { ageKeyFile: `${files}/keys.txt` }, server: { port } },
      start: { process: true },
    });
    stops.push(async () => {
      agent.child.kill('SIGTERM');
      await agent.exited;
    });
    // /healthz polled from the first moment to the last: every answer counted, a missing one remembered.
    const health = { answered: 0, failed: [] as string[] };
    let polling = true;
    const poller = (async () => {
      while (polling) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
          if (res.status === 200) health.answered++;
          else health.failed.push(`HTTP ${res.status}`);
        } catch (error) {
          // Before the server listens, a refused connection is expected; a timeout never is.
          if (health.answered > 0 || (error as Error).name === 'TimeoutError')
            health.failed.push(String(error));
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const ended = (sha: string) => receiver.statuses().find((s) => s.sha === sha && s.state !== 'pending');
    try {
      await eventually(
        'the agent answers /healthz',
        async () => (health.answered > 0 ? true : undefined),
        60_000,
      );
      const first = await repo.commit({ 'evil.yaml': evil });
      const status = await eventually('the pathological commit reported', async () => ended(first), 60_000);
      expect(status.state).toBe('failure');
      expect(status.description).toBe(
        'evil.yaml: cannot decrypt (sops): MAC mismatch: the file was changed after it was encrypted',
      );
      // A rule RE2 refuses (a lookahead): named with its file and field.
      const refused = evil.replace('encrypted_regex: ^(a+)+$', 'encrypted_regex: "^(?=a)a+$"');
      expect(refused).not.toBe(evil);
      const second = await repo.commit({ 'evil.yaml': refused });
      const status2 = await eventually('the refused rule reported', async () => ended(second), 60_000);
      expect(status2.state).toBe('failure');
      expect(status2.description).toMatch(
        /^evil\.yaml: cannot decrypt \(sops\): sops\.encrypted_regex: "\^\(\?=a\)a\+\$" is not an RE2 \(Go\) expression/,
      );
      // A rule whose program would be huge (146,002 instructions from 1,022 characters: compiling it blocked the
      // event loop for 2 s per file and sync): refused from its text, naming the field, /healthz answering.
      const huge = 'a{1000}'.repeat(146);
      const second2 = await repo.commit({
        'evil.yaml': evil.replace('encrypted_regex: ^(a+)+$', `encrypted_regex: ${JSON.stringify(huge)}`),
      });
      const status2b = await eventually('the huge rule reported', async () => ended(second2), 60_000);
      expect(status2b.state).toBe('failure');
      expect(status2b.description).toMatch(
        /^evil\.yaml: cannot decrypt \(sops\): sops\.encrypted_regex: "a\{1000\}a\{1000\}/,
      );
      const tooLarge = 'is too large (it may compile to 146004 RE2 instructions, at most 2000)';
      await eventually('the huge rule in the ledger', async () =>
        (await kubectl('-n', agentNs(), 'get', 'configmaps', '-o', 'yaml')).stdout.includes(tooLarge)
          ? true
          : undefined,
      );
      // A file that decrypts, whose decrypted annotation render refuses and quotes: the finalizer hides it.
      const quoted = await repo.commit({
        'evil.yaml': await encryptSops([quotedConfigMap()], { recipients: [ours.recipient] }),
      });
      const status3 = await eventually('the quoted value reported', async () => ended(quoted), 60_000);
      expect(status3.state).toBe('failure');
      expect(status3.description).toContain('must be "true" or "false", not "<redacted>"');
      const ledger = await kubectl('-n', agentNs(), 'get', 'configmaps', '-o', 'yaml');
      for (const text of [JSON.stringify(receiver.captured), ledger.stdout, agent.output()])
        expect(text).not.toContain(QUOTED);
      const answeredBefore = health.answered;
      await eventually('/healthz still answers', async () =>
        health.answered > answeredBefore + 3 ? true : undefined,
      );
      assertAlive(agent);
    } finally {
      polling = false;
      await poller;
    }
    expect(health.failed).toEqual([]);
    expect(health.answered).toBeGreaterThan(5);
    const got = await kubectl('-n', ns(), 'get', 'configmap', 'evil');
    expect(got.code, 'nothing of the file is applied').not.toBe(0);
  });

  it('mooring deploy and render print no decrypted value that render quotes in an error', async () => {
    const key = await newAgeKey();
    const keys = await manifestDir({ 'keys.txt': `${key.secret}\n` });
    const dir = await manifestDir({
      'quoted.yaml': await encryptSops([quotedConfigMap()], { recipients: [key.recipient] }),
    });
    for (const command of ['render', 'deploy']) {
      const out = await mooring(
        command,
        dir,
        '-n',
        chartNs(),
        '--kubeconfig',
        env.kube.kubeconfig,
        '--age-key-file',
        `${keys}/keys.txt`,
      );
      expect(out.code, command).toBe(2);
      expect(out.stderr, command).toContain('not "<redacted>"');
      expect(out.stdout + out.stderr, command).not.toContain(QUOTED);
    }
  });

  it('mooring render hides decrypted values used as a Secret type or copied into another object', async () => {
    const key = await newAgeKey();
    const keys = await manifestDir({ 'keys.txt': `${key.secret}\n` });
    const dir = await manifestDir({
      'secret.yaml': await encryptSops(
        [
          {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: 'typed' },
            type: `example.com/${PASSWORD}`,
            stringData: { password: PASSWORD },
          },
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'dsn' },
            data: { url: `pg://app:${PASSWORD}@db` },
          },
        ],
        { recipients: [key.recipient] },
      ),
    });
    const args = ['render', dir, '--offline', '-n', chartNs(), '--age-key-file', `${keys}/keys.txt`];
    const shown = await mooring(...args);
    expect(shown.code, shown.stderr).toBe(0);
    // Both values were decrypted whole (the password alone is among them too).
    expect(shown.stdout).toContain('type: <redacted>');
    expect(shown.stdout).toContain('url: <redacted>');
    expect(shown.stdout + shown.stderr).not.toContain(PASSWORD);
    // --show-secrets shows them: the redaction above is what hid them.
    const all = await mooring(...args, '--show-secrets');
    expect(all.stdout).toContain(`example.com/${PASSWORD}`);
  });

  it('a chart that prints SOPS-decrypted values in its errors: the password is in no output', async () => {
    const suffix = Date.now().toString(36);
    const key = await newAgeKey();
    const values = await encryptSops(
      [{ password: PASSWORD, greeting: '{{ fail (printf "tpl says %s" .Values.password) }}' }],
      { recipients: [key.recipient] },
    );
    const chart = (template: string) => ({
      'charts/app/Chart.yaml': 'apiVersion: v2\nname: app\nversion: 0.1.0\n',
      'charts/app/values.yaml': 'password: none\n',
      'charts/app/secrets.yaml': values,
      'charts/app/templates/secret.yaml': `apiVersion: v1
kind: Secret
metadata: {name: creds, annotations: {strategy.spinnaker.io/versioned: "false"}}
stringData:
  password: ${template}
`,
    });
    const files = await manifestDir({
      'keys.txt': `${key.secret}\n`,
    });
    const { repo, receiver, agent } = await startGitAgent({
      repo: `sops-chart-${suffix}/app`,
      cluster: { name: 'chart', namespace: chartAgentNs() },
      deployments: [
        {
          name: 'app',
          namespace: chartNs(),
          helm: { chart: 'charts/app', valuesFiles: ['charts/app/secrets.yaml'] },
          stability: { timeout: '1m' },
        },
      ],
      extra: {
        decryption: { ageKeyFile: `${files}/keys.txt` },
        audit: { file: `${files}/audit.jsonl` },
        server: { statusPage: { enabled: true, anonymous: true } },
      },
    });
    stops.push(agent.stop);
    const ended = (sha: string) => receiver.statuses().find((s) => s.sha === sha && s.state !== 'pending');
    const templates = [
      ['fail', '{{ fail .Values.password }}'],
      ['required', '{{ required (printf "no value, the password is %s" .Values.password) .Values.nothing }}'],
      ['tpl', '{{ tpl .Values.greeting . }}'],
    ];
    const descriptions: string[] = [];
    for (const [name, template] of templates) {
      const sha = await repo.commit(chart(template as string));
      const status = await eventually(`the ${name} commit reported`, async () => ended(sha), 90_000);
      expect(status.state, name).toBe('failure');
      expect(status.description, name).toMatch(/^charts\/app: helm template failed: /);
      expect(status.description, name).toContain('<redacted>');
      descriptions.push(status.description);
    }
    // The chart renders, but puts the password where mooring's render refuses it and quotes it (a name): the
    // finalizer hides it, knowing the values the chart's build decrypted.
    const named = await repo.commit({
      ...chart('x'),
      'charts/app/templates/named.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "{{ .Values.password }}_x"}\n',
    });
    const refused = await eventually('the badly named object reported', async () => ended(named), 90_000);
    expect(refused.state).toBe('failure');
    expect(refused.description).toContain('<redacted>');
    descriptions.push(refused.description);
    // The chart rendered with the password where it belongs: deployed, the value in the cluster only; a copy of it
    // in a ConfigMap is hidden from the audit log.
    const good = await repo.commit({
      ...chart('{{ .Values.password | quote }}'),
      'charts/app/templates/named.yaml': null,
      'charts/app/templates/copy.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: copy, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {dsn: "pg://app:{{ .Values.password }}@db"}
`,
    });
    expect((await eventually('the good chart reported', async () => ended(good), 90_000)).state).toBe(
      'success',
    );
    const stored = await kubectl(
      '-n',
      chartNs(),
      'get',
      'secret',
      'creds',
      '-o',
      'jsonpath={.data.password}',
    );
    expect(Buffer.from(stored.stdout, 'base64').toString()).toBe(PASSWORD);

    // The audit record is appended after the commit status is posted: waited for, not read at once.
    const audited = await eventually('the good chart audited', async () => {
      const text = await readFile(join(files, 'audit.jsonl'), 'utf8').catch(() => '');
      return text.includes('"dsn":"pg://app:<redacted>@db"') ? text : undefined;
    });
    expect(audited).toContain('"dsn":"pg://app:<redacted>@db"');
    const ledger = await kubectl('-n', chartAgentNs(), 'get', 'configmaps', '-o', 'yaml');
    expect(ledger.stdout).toContain('helm template failed');
    const events = await kubectl('get', 'events', '--all-namespaces', '-o', 'yaml');
    const page = await (await fetch(`http://127.0.0.1:${agent.port()}/status/api/deployments`)).text();
    const everything = [
      JSON.stringify(receiver.captured),
      ledger.stdout,
      events.stdout,
      page,
      agent.lines.join('\n'),
      audited,
      ...descriptions,
    ];
    const forms = [PASSWORD, Buffer.from(PASSWORD).toString('base64'), PASSWORD.slice(0, 20)];
    for (const text of everything) for (const form of forms) expect(text).not.toContain(form);
  });
});
