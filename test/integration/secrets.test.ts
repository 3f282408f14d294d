// Secrets on the real control plane: a redeploy of unchanged manifests writes nothing (Secrets from data and from
// stringData included), versioned Secrets carry a hash keyed by the installation's key (made once, agreed on by
// racers), and the API server's refusals of a Secret reach no output with the values it quotes.
import { randomBytes } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { Applier, ApplyRejectedError } from '../../src/kube/apply.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { ensureHashKey, HASH_KEY_SECRET, readHashKey } from '../../src/kube/hash-key.ts';
import { CONTENT_HASH } from '../../src/render/annotations.ts';
import { render } from '../../src/render/render.ts';
import { webDeployment } from './build-helpers.ts';
import {
  clusterConfig,
  deployTo,
  kubeConfig,
  kubectl,
  manifestDir,
  mooring,
  testbed,
  useNamespace,
} from './helpers.ts';

const PIN = '7391027446';

const APP = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {port: "8080"}
---
apiVersion: v1
kind: Secret
metadata: {name: from-data}
data: {password: c2VjcmV0}
---
apiVersion: v1
kind: Secret
metadata: {name: from-string-data}
stringData: {pin: "${PIN}", user: admin}
---
apiVersion: v1
kind: Secret
metadata: {name: both}
data: {a: YQ==}
stringData: {b: bee}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
${webDeployment('web:1', [
  'ports: [{containerPort: 8080}]',
  'envFrom:',
  '  - configMapRef: {name: settings}',
  '  - secretRef: {name: from-data}',
  '  - secretRef: {name: from-string-data}',
  '  - secretRef: {name: both}',
])}`;

/** `kind/name` -> resourceVersion of everything mooring deployed in the namespace. */
async function resourceVersions(namespace: string): Promise<Record<string, string>> {
  const got = await kubectl(
    '-n',
    namespace,
    'get',
    'configmaps,secrets,services,deployments',
    '-l',
    'app.kubernetes.io/managed-by=mooring',
    '-o',
    'json',
  );
  expect(got.code, got.stderr).toBe(0);
  const items = (
    JSON.parse(got.stdout) as {
      items: { kind: string; metadata: { name: string; resourceVersion: string } }[];
    }
  ).items;
  return Object.fromEntries(items.map((i) => [`${i.kind}/${i.metadata.name}`, i.metadata.resourceVersion]));
}

describe('Secrets', () => {
  const ns = useNamespace('secrets');
  const agentNamespaces: string[] = [];
  afterAll(async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    for (const name of agentNamespaces) await core.deleteNamespace({ name }).catch(() => undefined);
  });
  const agentNamespace = () => {
    const name = `mooring-keys-${randomBytes(3).toString('hex')}`;
    agentNamespaces.push(name);
    return name;
  };

  it('redeploys unchanged manifests without a write: every object unchanged, no resourceVersion moved', async () => {
    const keys = agentNamespace();
    const dir = await manifestDir({ 'app.yaml': APP });
    const first = await deployTo(ns(), dir, '--agent-namespace', keys, '-o', 'json');
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const created = JSON.parse(first.stdout) as { objects: { object: string; action: string }[] };
    expect(created.objects.map((o) => o.action)).toEqual(Array(6).fill('created'));
    const before = await resourceVersions(ns());
    expect(Object.keys(before).sort()).toEqual([
      'ConfigMap/settings-v000',
      'Deployment/web',
      'Secret/both-v000',
      'Secret/from-data-v000',
      'Secret/from-string-data-v000',
      'Service/web',
    ]);

    const again = await deployTo(ns(), dir, '--agent-namespace', keys, '-o', 'json');
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const report = JSON.parse(again.stdout) as { objects: { object: string; action: string }[] };
    expect(report.objects.map((o) => `${o.object} ${o.action}`).sort()).toEqual(
      [
        'configmap/settings-v000',
        'deployment.apps/web',
        'secret/both-v000',
        'secret/from-data-v000',
        'secret/from-string-data-v000',
        'service/web',
      ].map((o) => `${o} unchanged`),
    );
    expect(await resourceVersions(ns())).toEqual(before);

    // `mooring render` reads the same key (it makes none), so its plan shows the Secrets' versions reused; offline
    // it has no key and says so.
    const plan = await mooring(
      'render',
      dir,
      '--kubeconfig',
      testbed().kube.kubeconfig,
      '-n',
      ns(),
      '--agent-namespace',
      keys,
      '-o',
      'table',
    );
    expect(plan.code, plan.stderr).toBe(0);
    const planned = plan.stdout.split('\n').filter((l) => l.startsWith('Secret '));
    expect(planned).toHaveLength(3);
    for (const line of planned) expect(line).toContain('v000 (existing)');
    const offline = await mooring('render', dir, '--offline', '-n', ns());
    expect(offline.stderr).toContain('offline, there is no hash key (give --hash-key-file)');

    // The Secrets' hashes are keyed by the key the first deploy made in the agent's namespace.
    const api = new KubeApi(clusterConfig());
    try {
      expect(await readHashKey(api, keys)).toHaveLength(32);
    } finally {
      api.close();
    }
    const secret = await kubeConfig()
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: 'from-string-data-v000', namespace: ns() });
    expect(secret.metadata?.annotations?.[CONTENT_HASH]).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
  });

  it('makes one key when several racers ask at once, with its namespace', async () => {
    const keys = agentNamespace();
    const apis = [0, 1, 2, 3].map(() => new KubeApi(clusterConfig()));
    try {
      const got = await Promise.all(apis.map((api) => ensureHashKey(api, keys)));
      for (const key of got) expect(key.equals(got[0] as Buffer)).toBe(true);
      expect(got[0]).toHaveLength(32);
      expect((await readHashKey(apis[0] as KubeApi, keys))?.equals(got[0] as Buffer)).toBe(true);
      const stored = await kubectl(
        '-n',
        keys,
        'get',
        'secret',
        HASH_KEY_SECRET,
        '-o',
        'jsonpath={.data.key}',
      );
      expect(Buffer.from(stored.stdout, 'base64').equals(got[0] as Buffer)).toBe(true);
    } finally {
      for (const api of apis) api.close();
    }
  });

  it("reduces the API server's refusal of a Secret to paths and reasons (apply and replace, whole-set dry run)", async () => {
    // Render accepts only strings; the values are made numbers after it, as a manifest from elsewhere could be.
    const rendered = render({
      files: [
        {
          path: 'db.yaml',
          text: `apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {pin: "${PIN}", user: admin}
---
apiVersion: v1
kind: Secret
metadata: {name: db-replaced, annotations: {strategy.spinnaker.io/replace: "true"}}
stringData: {pin: "${PIN}"}
`,
        },
      ],
      namespace: ns(),
      application: 'secrets',
      options: { hashKey: randomBytes(32) },
    });
    for (const object of rendered.objects) (object.stringData as Record<string, unknown>).pin = Number(PIN);
    const targets = rendered.objects.map((object, i) => ({ object, plan: rendered.plan[i] as never }));
    // No retries: server-side apply answers this refusal with a 500.
    const api = new KubeApi(clusterConfig(), { retryForMs: 0 });
    try {
      const error = await new Applier(api, new Discovery(api), { fieldManager: 'mooring', concurrency: 2 })
        .apply(targets)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApplyRejectedError);
      const message = (error as Error).message;
      expect(message).toContain(
        `db.yaml:1:1: Secret ${ns()}/db: 500 .stringData.pin: invalid value (expected string)`,
      );
      expect(message).toContain(
        `db.yaml:6:1: Secret ${ns()}/db-replaced: 400 .stringData: invalid value (expected string)`,
      );
      expect(message).not.toContain(PIN);
      expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain(PIN);
    } finally {
      api.close();
    }
  });

  it('keeps values out of the CLI: a number refused at render, bad base64 refused by the server', async () => {
    const keys = agentNamespace();
    const number = await deployTo(
      ns(),
      await manifestDir({
        'pin.yaml': `apiVersion: v1\nkind: Secret\nmetadata: {name: pin}\nstringData: {pin: ${PIN}}\n`,
      }),
      '--agent-namespace',
      keys,
    );
    expect(number.code).toBe(2);
    expect(number.stderr).toContain(
      `pin.yaml:4:19: Secret ${ns()}/pin: stringData.pin is a number; Kubernetes requires a string: quote the value`,
    );
    expect(number.stdout + number.stderr).not.toContain(PIN);

    const base64 = await deployTo(
      ns(),
      await manifestDir({
        'pin.yaml': `apiVersion: v1
kind: Secret
metadata: {name: pin, annotations: {strategy.spinnaker.io/replace: "true"}}
data: {pin: "pin=${PIN}!"}
`,
      }),
      '--agent-namespace',
      keys,
    );
    expect(base64.code).toBe(2);
    expect(base64.stderr).toContain(`Secret ${ns()}/pin: 400 .data: invalid value (not valid base64)`);
    expect(base64.stdout + base64.stderr).not.toContain(PIN);
  });
});
