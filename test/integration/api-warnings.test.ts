// The API server's warnings on the real 1.37 test bed, shown where a person looks: a Deployment whose privileged
// container a namespace labelled `pod-security.kubernetes.io/warn: restricted` warns about, a Deployment with an
// unknown field (written by replace: server-side apply refuses an unknown field outright, and that refusal is an
// error naming the file already), and `v1 Endpoints`, deprecated since 1.33 and still served. `mooring deploy` and
// `mooring diff` print each once, with its file and line; `mooring render`, which writes nothing, names the
// deprecated kind of each object; the agent logs each and its commit status says so.
import { afterAll, describe, expect, it } from 'vitest';
import { webDeployment } from './build-helpers.ts';
import {
  deployTo,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const PRIVILEGED = `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {GREETING: hello}
---
${webDeployment('web:1', ['securityContext: {privileged: true}'])}`;

const UNKNOWN_FIELD = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: typo
  annotations: {strategy.spinnaker.io/replace: "true"}
spec:
  replicas: 1
  selector: {matchLabels: {app: typo}}
  template:
    metadata: {labels: {app: typo}}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: typo
          image: typo:1
          imagePullPolicyy: Always
          securityContext:
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
`;

const ENDPOINTS = `apiVersion: v1
kind: Service
metadata: {name: external}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: external}
subsets:
  - addresses: [{ip: 10.0.0.10}]
    ports: [{port: 80}]
`;

const FILES = { 'web.yaml': PRIVILEGED, 'typo.yaml': UNKNOWN_FIELD, 'external.yaml': ENDPOINTS };

/** The three warnings, as `file:line:column: Kind namespace/name: words` (the file as `file` names it). */
function expected(ns: string, file: (name: string) => string): RegExp[] {
  const at = (name: string, line: number) => `${file(name)}:${line}:1`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return [
    new RegExp(
      `${at('web.yaml', 6)}: Deployment ${ns}/web: would violate PodSecurity "restricted:latest": privileged \\(container "web" must not set securityContext\\.privileged=true\\)`,
    ),
    new RegExp(
      `${at('typo.yaml', 1)}: Deployment ${ns}/typo: unknown field "spec\\.template\\.spec\\.containers\\[0\\]\\.imagePullPolicyy"`,
    ),
    new RegExp(
      `${at('external.yaml', 7)}: Endpoints ${ns}/external: v1 Endpoints is deprecated in v1\\.33\\+`,
    ),
  ];
}

async function restrictedWarn(ns: string): Promise<void> {
  const labelled = await kubectl('label', 'namespace', ns, 'pod-security.kubernetes.io/warn=restricted');
  expect(labelled.code, labelled.stderr).toBe(0);
}

describe("the API server's warnings", () => {
  const nsCli = useNamespace('warn-cli');
  const nsAgent = useNamespace('warn-agent');
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it('mooring deploy and diff print each once, with file and line, on stderr', async () => {
    const ns = nsCli();
    await restrictedWarn(ns);
    const dir = await manifestDir(FILES);
    const got = await deployTo(ns, dir);
    expect(got.code, got.stdout + got.stderr).toBe(0);
    const lines = got.stderr.split('\n').filter((l) => l.startsWith('warning: '));
    const patterns = expected(ns, (name) => `${dir}/${name}`);
    // The dry run and the write (and the read of the Endpoints) each heard them: each is one line.
    for (const pattern of patterns)
      expect(
        lines.filter((l) => pattern.test(l)),
        got.stderr,
      ).toHaveLength(1);
    expect(lines, got.stderr).toHaveLength(patterns.length);
    expect(got.stdout).not.toContain('warning: ');

    // The diff's dry run of a changed set hears them again.
    const changed = await manifestDir({ ...FILES, 'web.yaml': PRIVILEGED.replace('hello', 'hi') });
    const diff = await mooring('diff', changed, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns);
    expect(diff.code, diff.stderr).toBe(1);
    const diffLines = diff.stderr.split('\n').filter((l) => l.startsWith('warning: '));
    for (const pattern of expected(ns, (name) => `${changed}/${name}`))
      expect(
        diffLines.filter((l) => pattern.test(l)),
        diff.stderr,
      ).toHaveLength(1);
  });

  it('mooring render, which writes nothing, names the deprecated kind of each object with file and line', async () => {
    const ns = nsCli();
    const dir = await manifestDir({
      'external.yaml': ENDPOINTS,
      'more.yaml': 'apiVersion: v1\nkind: Endpoints\nmetadata: {name: more}\n',
    });
    const got = await mooring('render', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns);
    expect(got.code, got.stderr).toBe(0);
    const lines = got.stderr.split('\n').filter((l) => l.startsWith('warning: '));
    expect(lines, got.stderr).toEqual([
      `warning: ${dir}/external.yaml:7:1: Endpoints ${ns}/external: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice`,
      `warning: ${dir}/more.yaml:1:1: Endpoints ${ns}/more: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice`,
    ]);
    expect(got.stdout).toContain('kind: Endpoints');
  });

  it('the agent logs each with its deployment, object and source, and its success status says so', async () => {
    const ns = nsAgent();
    await restrictedWarn(ns);
    const suffix = Date.now().toString(36);
    const {
      receiver,
      first: commit,
      agent,
    } = await startGitAgent({
      repo: `warn-${suffix}/app`,
      files: FILES,
      cluster: { namespace: `mooring-warn-${suffix}` },
      deployments: [{ name: 'web', namespace: ns }],
    });
    stops.push(() => agent.stop());
    const ended = await eventually('the status of the sync', async () => receiver.ended(commit), 90_000);
    expect(ended.state, ended.description).toBe('success');
    // Within GitHub's 140 characters: the count, and each by file, line and topic.
    expect(ended.description).toMatch(
      /^\d+\/\d+ stable in \d+s \(3 warnings: external\.yaml:7 deprecated API, typo\.yaml:1 unknown field, web\.yaml:6 PodSecurity\)$/,
    );

    const logged = agent.logged('API server warning');
    const patterns = expected(ns, (name) => name);
    for (const pattern of patterns) {
      const records = logged.filter((r) => pattern.test(`${r.source}: ${r.object}: ${r.warning}`));
      expect(records, JSON.stringify(logged)).toHaveLength(1);
      expect(records[0]).toMatchObject({ deployment: 'web', level: 40 });
    }
  });
});
