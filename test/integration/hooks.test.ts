// Hooks as Helm and Argo CD users write them, on the test bed (its kubelet makes a pod succeed or fail by
// annotation): Helm's pre-upgrade migration runs before the Deployment changes and goes per its delete policy, a
// failing one stops the deploy with nothing written; Argo CD's PreSync, PostSync and SyncFail run around a
// three-wave app; a hook written with generateName gets a fresh name each sync.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api, BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { Ledger } from '../../src/report/ledger.ts';
import { BEHAVIOR } from '../testbed/kubelet.ts';

import {
  clusterConfig,
  deploymentYaml,
  deployTo,
  eventually,
  kubeConfig,
  manifestDir,
  mooring,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const job = (name: string, annotations: string, behavior = '{{ .Values.migration }}') => `apiVersion: batch/v1
kind: Job
metadata:
  name: ${name}
  annotations: {${annotations}}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {${BEHAVIOR}: "${behavior}"}}
    spec: {restartPolicy: Never, containers: [{name: m, image: "migrate:{{ .Values.version }}"}]}
`;

/** A chart with a pre-upgrade migration (deleted once it succeeded) and a post-install notice. */
function chart(): Record<string, string> {
  return {
    'Chart.yaml': 'apiVersion: v2\nname: shop\nversion: 1.0.0\n',
    'values.yaml': 'version: "1"\nmigration: succeed\n',
    'templates/migrate.yaml': job(
      'migrate',
      '"helm.sh/hook": pre-upgrade, "helm.sh/hook-weight": "-5", "helm.sh/hook-delete-policy": hook-succeeded',
    ),
    'templates/welcome.yaml': job('welcome', '"helm.sh/hook": post-install', 'succeed'),
    'templates/web.yaml': deploymentYaml({ image: 'web:{{ .Values.version }}' }),
  };
}

describe('Helm hooks', () => {
  const ns = useNamespace('helm-hooks');
  beforeAll(() => {
    process.env.MOORING_HELM = testbed().tools.helm;
  });
  const batch = () => kubeConfig().makeApiClient(BatchV1Api);
  const image = async () =>
    (await kubeConfig().makeApiClient(AppsV1Api).readNamespacedDeployment({ name: 'web', namespace: ns() }))
      .spec?.template.spec?.containers[0]?.image;
  const jobs = async () =>
    (await batch().listNamespacedJob({ namespace: ns() })).items.map((j) => j.metadata?.name);

  it('install runs post-install only; upgrade runs pre-upgrade first and deletes it; a failing hook writes nothing', async () => {
    const dir = await manifestDir(chart());
    const install = await deployTo(ns(), dir);
    expect(install.code, install.stdout + install.stderr).toBe(0);
    expect(install.stdout).toContain('job.batch/welcome (post-install hook) succeeded');
    expect(install.stdout).not.toContain('migrate');
    expect(await jobs()).toEqual(['welcome']);
    expect(await image()).toBe('web:1');

    // The upgrade: the migration runs and completes before the Deployment is written, then is deleted.
    await writeFile(join(dir, 'values.yaml'), 'version: "2"\nmigration: succeed\n');
    const upgrade = await deployTo(ns(), dir);
    expect(upgrade.code, upgrade.stdout + upgrade.stderr).toBe(0);
    const lines = upgrade.stdout.split('\n');
    const hookLine = lines.findIndex((l) =>
      l.startsWith('job.batch/migrate (pre-upgrade hook) succeeded, deleted'),
    );
    const webLine = lines.findIndex((l) => l.startsWith('deployment.apps/web configured'));
    expect(hookLine, upgrade.stdout).toBeGreaterThanOrEqual(0);
    expect(hookLine).toBeLessThan(webLine);
    expect(upgrade.stdout).not.toContain('welcome');
    expect(await jobs()).toEqual(['welcome']);
    expect(await image()).toBe('web:2');

    // A migration that fails stops the upgrade before any release object is written, and says which hook.
    await writeFile(join(dir, 'values.yaml'), 'version: "3"\nmigration: fail\n');
    const failed = await deployTo(ns(), dir, '--timeout', '60s');
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/job\.batch\/migrate \(pre-upgrade hook\) failed/);
    expect(failed.stderr).toMatch(/^error: deploy failed: pre-upgrade hook Job .*\/migrate failed/m);
    expect(failed.stdout).not.toContain('deployment.apps/web configured');
    expect(await image()).toBe('web:2');
    // hook-succeeded only: the failed Job stays for its logs.
    expect(await jobs()).toContain('migrate');
  });
});

const argoApp = (presync: 'succeed' | 'fail', web: 'ready' | 'never-ready' = 'ready') => `apiVersion: v1
kind: Pod
metadata:
  generateName: presync-
  annotations: {argocd.argoproj.io/hook: PreSync, argocd.argoproj.io/hook-delete-policy: HookSucceeded, ${BEHAVIOR}: succeed}
spec:
  restartPolicy: Never
  containers: [{name: check, image: "check:1"}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: gate
  annotations: {argocd.argoproj.io/hook: PreSync}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {${BEHAVIOR}: ${presync}}}
    spec: {restartPolicy: Never, containers: [{name: g, image: "gate:1"}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, annotations: {argocd.argoproj.io/sync-wave: "-1", strategy.spinnaker.io/versioned: "false"}}
data: {a: b}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {${BEHAVIOR}: ${web}}}
    spec: {containers: [{name: web, image: "web:1"}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: after, annotations: {argocd.argoproj.io/sync-wave: "1", strategy.spinnaker.io/versioned: "false"}}
data: {a: b}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: smoke
  annotations: {argocd.argoproj.io/hook: PostSync}
spec:
  template:
    metadata: {annotations: {${BEHAVIOR}: succeed}}
    spec: {restartPolicy: Never, containers: [{name: s, image: "smoke:1"}]}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: page-someone
  annotations: {argocd.argoproj.io/hook: SyncFail}
spec:
  template:
    metadata: {annotations: {${BEHAVIOR}: succeed}}
    spec: {restartPolicy: Never, containers: [{name: p, image: "pager:1"}]}
`;

describe('Argo CD hooks and waves', () => {
  const ns = useNamespace('argo-hooks');
  const jobs = async () =>
    (await kubeConfig().makeApiClient(BatchV1Api).listNamespacedJob({ namespace: ns() })).items
      .map((j) => j.metadata?.name)
      .sort();
  const pods = async () =>
    (await kubeConfig().makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns() })).items.map(
      (p) => p.metadata?.name ?? '',
    );

  it('runs PreSync, the waves, then PostSync; never SyncFail when all goes well', async () => {
    const result = await deployTo(ns(), await manifestDir({ 'app.yaml': argoApp('succeed') }));
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    const at = (prefix: string) => lines.findIndex((l) => l.startsWith(prefix));
    expect(at('job.batch/gate (PreSync hook) succeeded')).toBeLessThan(at('configmap/settings created'));
    // Argo CD deletes hooks when the sync ends, not when their phase does: the PreSync Pod is there until then.
    expect(result.stdout).toMatch(/^pod\/presync-[a-z0-9]{5} \(PreSync hook\) succeeded$/m);
    const deleted = lines.findIndex((l) => /^pod\/presync-[a-z0-9]{5} \(PreSync hook\) deleted$/.test(l));
    expect(deleted, result.stdout).toBeGreaterThan(at('job.batch/smoke (PostSync hook) succeeded'));
    expect(at('configmap/settings created')).toBeLessThan(at('deployment.apps/web created'));
    expect(at('deployment.apps/web created')).toBeLessThan(at('configmap/after created'));
    expect(at('configmap/after created')).toBeLessThan(at('job.batch/smoke (PostSync hook) succeeded'));
    expect(result.stdout).not.toContain('page-someone');
    expect(await jobs()).toEqual(['gate', 'smoke']);
    // Deleted once it succeeded: no presync pod is left.
    expect((await pods()).filter((p) => p.startsWith('presync-'))).toEqual([]);

    // Again: the named hooks are replaced (BeforeHookCreation), the generateName one gets a fresh name.
    const again = await deployTo(ns(), await manifestDir({ 'app.yaml': argoApp('succeed') }));
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const fresh = /pod\/(presync-[a-z0-9]{5})/.exec(again.stdout)?.[1];
    const first = /pod\/(presync-[a-z0-9]{5})/.exec(result.stdout)?.[1];
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(first);
  });

  // After the shape of Argo CD's own sync-waves example: a maintenance page put up by a Sync hook of wave 1 once the
  // backend (wave 0) is stable and before the frontend (wave 2) is written, and taken down by one of wave 3 once the
  // frontend is stable. Sync hooks and objects share the waves of the Sync phase.
  const maintenance = (frontend: 'ready' | 'never-ready') => {
    const deployment = (name: string, wave: number, behavior: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, annotations: {argocd.argoproj.io/sync-wave: "${wave}"}}
spec:
  replicas: 1
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}, annotations: {${BEHAVIOR}: ${behavior}}}
    spec: {containers: [{name: ${name}, image: "${name}:1"}]}
`;
    const page = (name: string, wave: number) => `apiVersion: batch/v1
kind: Job
metadata:
  name: ${name}
  annotations: {argocd.argoproj.io/hook: Sync, argocd.argoproj.io/hook-delete-policy: BeforeHookCreation, argocd.argoproj.io/sync-wave: "${wave}"}
spec:
  template:
    metadata: {annotations: {${BEHAVIOR}: succeed}}
    spec: {restartPolicy: Never, containers: [{name: page, image: "page:1"}]}
`;
    return [
      deployment('backend', 0, 'ready'),
      page('maint-up', 1),
      deployment('frontend', 2, frontend),
      page('maint-down', 3),
    ].join('---\n');
  };

  it('runs Sync hooks in their waves between the waves of the objects', async () => {
    const result = await deployTo(ns(), await manifestDir({ 'app.yaml': maintenance('ready') }));
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    const first = (text: string) => lines.findIndex((l) => l.includes(text));
    const last = (text: string) => lines.findLastIndex((l) => l.includes(text));
    expect(first('deployment.apps/backend created')).toBeGreaterThanOrEqual(0);
    // The backend stable (its progress ended) before the page goes up; the page up before the frontend is written.
    expect(last('/backend:')).toBeLessThan(first('/maint-up'));
    expect(last(`Job ${ns()}/maint-up:`)).toBeLessThan(first('deployment.apps/frontend created'));
    expect(last('/frontend:')).toBeLessThan(first('/maint-down'));
    expect(result.stdout).toContain('job.batch/maint-up (Sync hook) succeeded');
    expect(result.stdout).toContain('job.batch/maint-down (Sync hook) succeeded');
  });

  it('runs no Sync hook of a later wave when the objects of a wave do not become stable', async () => {
    const namespace = `${ns()}`;
    await kubeConfig()
      .makeApiClient(BatchV1Api)
      .deleteCollectionNamespacedJob({ namespace, propagationPolicy: 'Background' });
    const result = await deployTo(
      namespace,
      await manifestDir({ 'app.yaml': maintenance('never-ready') }),
      '--timeout',
      '20s',
    );
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toMatch(/Deployment [\w-]+\/frontend/);
    // The page went up and is reported; it never came down, as the frontend never became stable.
    expect(result.stdout).toContain('job.batch/maint-up (Sync hook) succeeded');
    expect(result.stdout).not.toContain('maint-down');
    expect(await jobs()).toEqual(['maint-up']);
  });

  // A hook the API server refuses (its dry run) after the release objects were written is a failed hook (exit 1),
  // named with its file; not a set refused whole, whose exit 2 says nothing was applied.
  it('fails the sync on a PostSync hook the API server refuses, saying the release objects were written', async () => {
    const result = await deployTo(
      ns(),
      await manifestDir({
        'app.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: before-refusal, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {a: b}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: refused
  annotations: {argocd.argoproj.io/hook: PostSync}
spec:
  backoffLimit: -1
  template:
    spec: {restartPolicy: Never, containers: [{name: r, image: "r:1"}]}
`,
      }),
      '--timeout',
      '30s',
    );
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stdout).toContain('configmap/before-refusal created');
    expect(result.stdout).toMatch(
      /job\.batch\/refused \(PostSync hook\) failed: refused: .*app\.yaml:\d+:\d+: Job [\w-]+\/refused/,
    );
    expect(result.stderr).toMatch(
      /^error: deploy failed: PostSync hook Job [\w-]+\/refused failed: refused:/m,
    );
    expect(result.stderr).not.toContain('nothing was applied');
  });

  it('runs SyncFail when the sync fails, and no PostSync', async () => {
    const result = await deployTo(
      ns(),
      await manifestDir({ 'app.yaml': argoApp('fail') }),
      '--timeout',
      '60s',
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: deploy failed: PreSync hook Job .*\/gate failed/m);
    expect(result.stdout).toContain('job.batch/page-someone (SyncFail hook) succeeded');
    expect(result.stdout).not.toContain('(PostSync hook)');
  });

  // Argo CD deletes its hooks when the sync operation ends, per its outcome, not when their phase ends: a
  // ServiceAccount made by a PreSync hook (HookSucceeded) is there for the PostSync Job that runs under it (the bed's
  // ServiceAccount admission refuses the Job's pod without it), and goes once the sync succeeded. When the sync fails,
  // the hooks with HookFailed go, the one that succeeded too (the policy names the operation's outcome).
  const withAccount = (web: 'ready' | 'never-ready') => `apiVersion: v1
kind: ServiceAccount
metadata:
  name: migrator
  annotations: {argocd.argoproj.io/hook: PreSync, argocd.argoproj.io/hook-delete-policy: HookSucceeded}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: notes
  annotations: {argocd.argoproj.io/hook: PreSync, argocd.argoproj.io/hook-delete-policy: HookFailed}
data: {a: b}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}, annotations: {${BEHAVIOR}: ${web}}}
    spec: {containers: [{name: api, image: "api:1"}]}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: report
  annotations: {argocd.argoproj.io/hook: PostSync, argocd.argoproj.io/hook-delete-policy: HookSucceeded}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {${BEHAVIOR}: succeed}}
    spec: {serviceAccountName: migrator, restartPolicy: Never, containers: [{name: r, image: "report:1"}]}
`;

  it('keeps a PreSync ServiceAccount for a PostSync Job, and deletes hooks when the sync ends, per its outcome', async () => {
    const accounts = async () =>
      (await kubeConfig().makeApiClient(CoreV1Api).listNamespacedServiceAccount({ namespace: ns() })).items
        .map((a) => a.metadata?.name ?? '')
        .filter((n) => n !== 'default');
    const notes = async () =>
      (await kubeConfig().makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: ns() })).items.some(
        (c) => c.metadata?.name === 'notes',
      );
    const result = await deployTo(
      ns(),
      await manifestDir({ 'app.yaml': withAccount('ready') }),
      '--timeout',
      '60s',
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    const at = (line: string) => lines.indexOf(line);
    expect(at('job.batch/report (PostSync hook) succeeded'), result.stdout).toBeGreaterThan(0);
    expect(at('serviceaccount/migrator (PreSync hook) deleted')).toBeGreaterThan(
      at('job.batch/report (PostSync hook) succeeded'),
    );
    expect(at('job.batch/report (PostSync hook) deleted')).toBeGreaterThan(0);
    expect(await accounts()).toEqual([]);
    // HookFailed, and the sync succeeded: it stays.
    expect(await notes()).toBe(true);

    // A sync that fails (the Deployment never ready): the HookFailed one goes, the HookSucceeded one stays.
    const failed = await deployTo(
      ns(),
      await manifestDir({ 'app.yaml': withAccount('never-ready') }),
      '--timeout',
      '15s',
    );
    expect(failed.code, failed.stdout + failed.stderr).toBe(1);
    expect(failed.stdout).toContain('configmap/notes (PreSync hook) deleted');
    expect(failed.stdout).not.toContain('(PostSync hook)');
    expect(await notes()).toBe(false);
    expect(await accounts()).toEqual(['migrator']);
  });
});

describe('hooks in the agent', () => {
  const ns = useNamespace('agent-hooks');
  const agentNs = useNamespace('agent-hooks-mooring');

  it('reports the hook that failed in the commit status and the release, and runs pre-rollback hooks on rollback', async () => {
    process.env.MOORING_HELM = testbed().tools.helm;
    const files = Object.fromEntries(Object.entries(chart()).map(([path, text]) => [`chart/${path}`, text]));
    files['chart/templates/undo.yaml'] = job('undo', '"helm.sh/hook": pre-rollback', 'succeed');
    const { repo, receiver, configFile, first, agent } = await startGitAgent({
      repo: `hooks-${Date.now().toString(36)}/shop`,
      files,
      cluster: { namespace: agentNs() },
      deployments: [{ name: 'shop', namespace: ns(), helm: { chart: 'chart' } }],
      start: { level: 'info' },
    });
    const api = new KubeApi(clusterConfig());
    try {
      expect(await eventually('install', async () => receiver.ended(first))).toMatchObject({
        state: 'success',
      });
      const upgraded = await repo.commit({ 'chart/values.yaml': 'version: "2"\nmigration: succeed\n' });
      expect(await eventually('upgrade', async () => receiver.ended(upgraded), 90_000)).toMatchObject({
        state: 'success',
      });
      const failing = await repo.commit({ 'chart/values.yaml': 'version: "3"\nmigration: fail\n' });
      const ended = await eventually('failed upgrade', async () => receiver.ended(failing), 90_000);
      expect(ended.state).toBe('failure');
      expect(ended.description).toMatch(/pre-upgrade hook Job .*\/migrate failed/);
      const releases = (await new Ledger(api, agentNs()).read('shop')).releases;
      expect(releases[0]?.hooks).toEqual([
        expect.objectContaining({ object: `Job ${ns()}/migrate`, hook: 'pre-upgrade', outcome: 'failed' }),
      ]);
      expect(releases.at(-1)?.hooks).toEqual([
        expect.objectContaining({
          object: `Job ${ns()}/welcome`,
          hook: 'post-install',
          outcome: 'succeeded',
        }),
      ]);
      const image = async () =>
        (
          await kubeConfig()
            .makeApiClient(AppsV1Api)
            .readNamespacedDeployment({ name: 'web', namespace: ns() })
        ).spec?.template.spec?.containers[0]?.image;
      expect(await image()).toBe('web:2');

      // A rollback to the first release runs its pre-rollback hook, and nothing of install or upgrade.
      const back = await mooring('rollback', 'shop', '--config', configFile);
      expect(back.code, back.stdout + back.stderr).toBe(0);
      const rolled = (await new Ledger(api, agentNs()).read('shop')).releases[0];
      expect(rolled).toMatchObject({ trigger: 'rollback', result: 'stable' });
      expect(await image()).toBe('web:1');
      expect(rolled?.hooks?.map((h) => `${h.hook} ${h.object} ${h.outcome}`)).toEqual([
        `pre-rollback Job ${ns()}/undo succeeded`,
      ]);
    } finally {
      api.close();
      await agent.stop();
    }
  });
});

describe('a hook named like an object that is no hook', () => {
  const ns = useNamespace('hook-collide');

  it('is refused, and the object another tool made is not deleted', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: ns(),
      body: { metadata: { name: 'precious' }, data: { keep: 'me' } },
    });
    const hook = `apiVersion: v1
kind: ConfigMap
metadata:
  name: precious
  annotations: {argocd.argoproj.io/hook: PreSync}
data: {from: hook}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {a: b}
`;
    const result = await deployTo(ns(), await manifestDir({ 'app.yaml': hook }));
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain(
      `hook ConfigMap ${ns()}/precious: a ConfigMap of that name exists and was not created by this hook of deployment`,
    );
    const kept = await core.readNamespacedConfigMap({ name: 'precious', namespace: ns() });
    expect(kept.data).toEqual({ keep: 'me' });
    await expect(core.readNamespacedConfigMap({ name: 'app', namespace: ns() })).rejects.toMatchObject({
      code: 404,
    });
  });
});
