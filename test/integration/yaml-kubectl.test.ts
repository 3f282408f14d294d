// YAML as Kubernetes reads it, checked against kubectl on the test bed rather than against our own idea of it: each
// plain scalar of the table (test/fixtures/yaml/scalar-cases.ts) is written as a ConfigMap key and as a ConfigMap
// value; `kubectl create --dry-run=server -o json` says what the API server was sent for each, `mooring render`
// what mooring reads. A value kubectl refuses (not a string) is refused by render too, naming its file and line.
// Then the shape of a database chart's workload: `defaultMode: 0400` and `0755` deployed by mooring are 256 and
// 493 on the cluster, as kubectl sends them.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NON_FINITE_CASES, SCALAR_CASES } from '../fixtures/yaml/scalar-cases.ts';
import { deployTo, kubectl, manifestDir, mooring, useNamespace } from './helpers.ts';

interface Obj {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  items?: Obj[];
  spec?: { template: { spec: PodSpec } };
}

interface PodSpec {
  securityContext?: { runAsUser?: number; fsGroup?: number };
  containers: { ports?: { containerPort: number }[] }[];
  volumes?: { name: string; secret?: { defaultMode?: number }; configMap?: { defaultMode?: number } }[];
}

/** The objects of kubectl's `-o json`: one object, a List, or (when some were refused) one object after another. */
function objectsOf(stdout: string): Obj[] {
  const found: Obj[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < stdout.length; i++) {
    const c = stdout[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') {
      if (depth++ === 0) start = i;
    } else if (c === '}' && --depth === 0) found.push(JSON.parse(stdout.slice(start, i + 1)) as Obj);
  }
  return found.flatMap((o) => (o.kind === 'List' ? (o.items ?? []) : [o]));
}

// A null key stops kubectl's reading of the whole file ("unsupported map key"): null is not probed as a key.
function probes(): string {
  return SCALAR_CASES.flatMap(([text, value], i) => [
    value === null
      ? `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: key-${i}\n  labels: {case: "${i}"}\n`
      : `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: key-${i}\n  labels: {case: "${i}"}\ndata:\n  ${text}: k\n`,
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: value-${i}\n  labels: {case: "${i}"}\ndata:\n  v: ${text}\n`,
  ]).join('---\n');
}

const byCase = (objects: Obj[], prefix: string) =>
  new Map(objects.filter((o) => o.metadata.name.startsWith(prefix)).map((o) => [o.metadata.labels?.case, o]));

describe('YAML 1.1 as kubectl reads it', () => {
  const ns = useNamespace('yaml11');

  it('reads every scalar of the table as kubectl sends it', async () => {
    const dir = await manifestDir({ 'keys.yaml': probes() });
    const file = join(dir, 'keys.yaml');
    const sent = await kubectl('create', '--dry-run=server', '-o', 'json', '-n', ns(), '-f', file);
    const kube = objectsOf(sent.stdout);
    // Refused by kubectl: the values that are not strings, and keys that are not valid (`1:20`, an empty key).
    expect(kube.length, sent.stderr).toBeGreaterThan(SCALAR_CASES.length);

    // The keys: rendered alone, as each value probe would stop the render if it is not a string.
    const keyDir = await manifestDir({
      'keys.yaml': probes()
        .split('---\n')
        .filter((_, i) => i % 2 === 0)
        .join('---\n'),
    });
    const keys = await mooring('render', keyDir, '--offline', '-n', ns(), '-o', 'json');
    expect(keys.code, keys.stderr).toBe(0);
    const ours = byCase(objectsOf(keys.stdout), 'key-');
    let compared = 0;
    for (const [i, theirs] of byCase(kube, 'key-')) {
      expect(Object.keys(ours.get(i)?.data ?? {}), `key ${SCALAR_CASES[Number(i)]?.[0]}`).toEqual(
        Object.keys(theirs.data ?? {}),
      );
      compared++;
    }
    expect(compared).toBeGreaterThan(SCALAR_CASES.length / 2);

    // The values: what kubectl accepted is the string mooring reads; what it refused, render refuses at its line.
    const accepted = byCase(kube, 'value-');
    for (const [i, [text, value]] of SCALAR_CASES.entries()) {
      const one = join(dir, `value-${i}.yaml`);
      await writeFile(one, probes().split('---\n')[2 * i + 1] ?? '');
      const ours = await mooring('render', one, '--offline', '-n', ns(), '-o', 'json');
      const theirs = accepted.get(String(i));
      if (theirs) {
        expect(ours.code, `value ${text}: ${ours.stderr}`).toBe(0);
        const [read] = byCase(objectsOf(ours.stdout), 'value-').values();
        // kubectl sends a null as null too; the API server stores it as "".
        expect(read?.data?.v, `value ${text}`).toBe(value === null ? null : theirs.data?.v);
        expect(theirs.data?.v, `value ${text}`).toBe(value === null ? '' : text);
      } else {
        expect(ours.code, `value ${text}`).not.toBe(0);
        expect(ours.stderr, `value ${text}`).toContain(`${one}:7:6: ConfigMap ${ns()}/value-${i}: data.v is`);
        expect(ours.stderr).toContain('quote the value');
      }
    }
  }, 180_000);

  it('reads .inf and .nan as kubectl does: the keys it sends, and values it refuses, refused at their line', async () => {
    const keys = NON_FINITE_CASES.map(
      ([text], i) =>
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nonfinite-${i}\ndata:\n  ${text}: k\n`,
    ).join('---\n');
    const dir = await manifestDir({ 'keys.yaml': keys });
    const sent = await kubectl(
      'create',
      '--dry-run=server',
      '-o',
      'json',
      '-n',
      ns(),
      '-f',
      join(dir, 'keys.yaml'),
    );
    expect(sent.code, sent.stderr).toBe(0);
    const theirs = objectsOf(sent.stdout).map((o) => Object.keys(o.data ?? {}));
    expect(theirs).toEqual(NON_FINITE_CASES.map(([, key]) => [key]));
    const ours = await mooring('render', dir, '--offline', '-n', ns(), '-o', 'json');
    expect(ours.code, ours.stderr).toBe(0);
    expect(objectsOf(ours.stdout).map((o) => Object.keys(o.data ?? {}))).toEqual(theirs);

    for (const [i, [text]] of NON_FINITE_CASES.entries()) {
      const file = join(dir, `replicas-${i}.yaml`);
      await writeFile(
        file,
        `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nonfinite-${i}\nspec:\n  replicas: ${text}\n` +
          `  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n` +
          `    spec: {containers: [{name: x, image: x}]}\n`,
      );
      const refused = await kubectl('create', '--dry-run=server', '-o', 'json', '-n', ns(), '-f', file);
      expect(refused.code, `${text}: ${refused.stdout}`).not.toBe(0);
      expect(refused.stderr).toMatch(/unsupported value/);
      // mooring once sent replicas: null, which the API server defaults to 1.
      const rendered = await mooring('render', file, '--offline', '-n', ns());
      expect(rendered.code, `${text}: ${rendered.stdout}`).not.toBe(0);
      expect(rendered.stderr).toContain(`${file}:6:13: ${text} is not a number Kubernetes can read`);
    }
  }, 120_000);

  const workload = `apiVersion: v1
kind: Secret
metadata: {name: db-credentials}
stringData: {password: "not-a-number"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: db-scripts}
data: {init.sh: "echo ready"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      securityContext: {runAsUser: 0x3E9, fsGroup: 1_001}
      containers:
        - name: db
          image: database:16
          ports: [{containerPort: 05432}]
          volumeMounts:
            - {name: credentials, mountPath: /etc/db/credentials}
            - {name: scripts, mountPath: /docker-entrypoint-initdb.d}
      volumes:
        - name: credentials
          secret:
            secretName: db-credentials
            defaultMode: 0400
        - name: scripts
          configMap:
            name: db-scripts
            defaultMode: 0755
`;

  const fields = (spec: PodSpec | undefined) => ({
    runAsUser: spec?.securityContext?.runAsUser,
    fsGroup: spec?.securityContext?.fsGroup,
    port: spec?.containers[0]?.ports?.[0]?.containerPort,
    modes: spec?.volumes?.map((v) => v.secret?.defaultMode ?? v.configMap?.defaultMode),
  });

  it('deploys defaultMode 0400 and 0755 as the 256 and 493 kubectl sends', async () => {
    const dir = await manifestDir({ 'db.yaml': workload });
    const dry = await kubectl(
      'create',
      '--dry-run=server',
      '-o',
      'json',
      '-n',
      ns(),
      '-f',
      join(dir, 'db.yaml'),
    );
    expect(dry.code, dry.stderr).toBe(0);
    const kubectlSent = fields(
      objectsOf(dry.stdout).find((o) => o.kind === 'Deployment')?.spec?.template.spec,
    );
    expect(kubectlSent).toEqual({ runAsUser: 1001, fsGroup: 1001, port: 2842, modes: [256, 493] });

    const deployed = await deployTo(ns(), dir);
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    const live = await kubectl('get', 'deployment', 'db', '-o', 'json', '-n', ns());
    expect(fields((JSON.parse(live.stdout) as Obj).spec?.template.spec)).toEqual(kubectlSent);
  }, 240_000);
});
