// Sync waves inside one deploy, as Argo CD users write them: waves applied lowest first, each stable before the
// next is written; a wave that fails stops the deploy there (later waves unwritten, not in the inventory); the
// whole-set dry run still refuses a bad object in a later wave before anything is written.
import { AppsV1Api, BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { BEHAVIOR } from '../testbed/kubelet.ts';
import { api, ledgerOf } from './faults-support.ts';
import {
  deployTo,
  eventually,
  kubeConfig,
  kubectl,
  manifestDir,
  startGitAgent,
  useNamespace,
} from './helpers.ts';

const wave = (n: number) => `{argocd.argoproj.io/sync-wave: "${n}"}`;

/** A three-wave app: a migration Job (wave -1), the app (wave 0), a smoke-test ConfigMap (wave 1). */
function app(migration: 'succeed' | 'fail', extra = ''): string {
  return `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, annotations: ${wave(-1)}}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {${BEHAVIOR}: ${migration}}}
    spec: {restartPolicy: Never, containers: [{name: m, image: migrate:1}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: ${wave(0)}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web:1}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: smoke, annotations: {mooring.io/sync-wave: "1", strategy.spinnaker.io/versioned: "false"}}
data: {after: web}
${extra}`;
}

/** A namespace of its own for each case (their objects share names), and readers of the app's objects. */
function waveCase() {
  const ns = useNamespace('waves');
  const core = () => kubeConfig().makeApiClient(CoreV1Api);
  const apps = () => kubeConfig().makeApiClient(AppsV1Api);
  const created = async () => {
    const job = await kubeConfig()
      .makeApiClient(BatchV1Api)
      .readNamespacedJob({ name: 'migrate', namespace: ns() });
    const web = await apps().readNamespacedDeployment({ name: 'web', namespace: ns() });
    const smoke = await core().readNamespacedConfigMap({ name: 'smoke', namespace: ns() });
    return { job, web, smoke };
  };
  return { ns, core, apps, created };
}

describe('sync waves: in order', () => {
  const { ns, created } = waveCase();

  it('applies waves lowest first, each stable before the next', async () => {
    const result = await deployTo(ns(), await manifestDir({ 'app.yaml': app('succeed') }));
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    const at = (text: string) => lines.findIndex((l) => l.startsWith(text));
    // The job completed before the Deployment was written; the Deployment was stable before the ConfigMap.
    expect(at('job.batch/migrate created')).toBeLessThan(at('deployment.apps/web created'));
    expect(at('deployment.apps/web created')).toBeLessThan(at('configmap/smoke created'));
    const { job, web, smoke } = await created();
    expect(job.status?.succeeded).toBe(1);
    const time = (o: { metadata?: { creationTimestamp?: Date } }) =>
      o.metadata?.creationTimestamp?.getTime() ?? 0;
    expect(
      time(job.status?.completionTime ? { metadata: { creationTimestamp: job.status.completionTime } } : job),
    ).toBeLessThanOrEqual(time(web));
    expect(web.status?.readyReplicas).toBe(1);
    expect(time(web)).toBeLessThanOrEqual(time(smoke));
  });
});

describe('sync waves: a wave that fails', () => {
  const { ns, core, apps } = waveCase();

  it('stops at a wave that fails: later waves are not written, and the report names the wave', async () => {
    const result = await deployTo(ns(), await manifestDir({ 'app.yaml': app('fail') }), '--timeout', '60s');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /error: deploy failed: .*migrate.*\(sync wave -1; 2 later waves not applied\)/,
    );
    await expect(apps().readNamespacedDeployment({ name: 'web', namespace: ns() })).rejects.toMatchObject({
      code: 404,
    });
    await expect(core().readNamespacedConfigMap({ name: 'smoke', namespace: ns() })).rejects.toMatchObject({
      code: 404,
    });
  });
});

describe('sync waves: all or nothing', () => {
  const { ns } = waveCase();

  it('refuses a bad object in a later wave before anything is written', async () => {
    const bad = `---\napiVersion: v1\nkind: Service\nmetadata: {name: broken, annotations: ${wave(2)}}\nspec: {ports: [{port: 99999}]}\n`;
    const result = await deployTo(ns(), await manifestDir({ 'app.yaml': app('succeed', bad) }));
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('broken');
    await expect(
      kubeConfig().makeApiClient(BatchV1Api).readNamespacedJob({ name: 'migrate', namespace: ns() }),
    ).rejects.toMatchObject({ code: 404 });
  });
});

describe('sync waves: an invalid wave', () => {
  const { ns } = waveCase();

  it('refuses a wave that is not an integer, naming the file and line', async () => {
    const text = app('succeed').replace('mooring.io/sync-wave: "1"', 'mooring.io/sync-wave: "one"');
    const result = await deployTo(ns(), await manifestDir({ 'app.yaml': text }));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /app\.yaml:\d+:\d+: ConfigMap .*smoke.*mooring\.io\/sync-wave must be an integer, not "one"/,
    );
  });
});

describe('sync waves: a write refused in a later wave', () => {
  const ns = useNamespace('waves-quota');
  const agentNs = useNamespace('waves-quota-agent');

  it('records the versions written before the refusal in the release', async () => {
    // Two ConfigMaps at most besides the cluster's kube-root-ca.crt: the settings' version (wave 0) and one of
    // wave 1; the quota refuses the second real create of wave 1.
    const quota = `apiVersion: v1
kind: ResourceQuota
metadata: {name: configmaps}
spec: {hard: {count/configmaps: "3"}}
`;
    const files = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, annotations: {strategy.spinnaker.io/versioned: "true", argocd.argoproj.io/sync-wave: "0"}}
data: {mode: quota}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: extra-a, annotations: {strategy.spinnaker.io/versioned: "false", argocd.argoproj.io/sync-wave: "1"}}
data: {n: "a"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: extra-b, annotations: {strategy.spinnaker.io/versioned: "false", argocd.argoproj.io/sync-wave: "1"}}
data: {n: "b"}
`;
    const dir = await manifestDir({ 'quota.yaml': quota });
    const made = await kubectl('-n', ns(), 'apply', '-f', `${dir}/quota.yaml`);
    expect(made.code, made.stderr).toBe(0);
    await quotaCounted(ns(), 'count/configmaps');
    const { agent, receiver, first } = await startGitAgent({
      repo: `waves-quota-${Date.now().toString(36)}/app`,
      files: { 'app.yaml': files },
      cluster: { namespace: agentNs() },
      deployments: [{ name: 'crowded', namespace: ns(), paths: ['.'] }],
      // One object at a time: each dry run passes on its own (dry runs sent together are counted together by the
      // quota's admission, and the set would be refused whole before anything is written).
      extra: { apply: { concurrency: 1 } },
    });
    const kube = api();
    try {
      const ended = await eventually('the commit ended', async () => receiver.ended(first), 60_000);
      expect(ended.state).not.toBe('success');
      const release = (await ledgerOf(kube, agentNs(), 'crowded')).releases[0];
      expect(release?.result).not.toBe('stable');
      // What was written before the refusal is the release's: a rollback and the version history know it.
      expect(release?.versions).toEqual(['ConfigMap settings-v000']);
      expect(release?.objects.map((o) => o.object)).toContain(`ConfigMap ${ns()}/settings-v000`);
    } finally {
      kube.close();
      await agent.stop();
    }
  });
});

describe('a deploy refused halfway by a quota', () => {
  const ns = useNamespace('quota-cli');

  it('exits 1 naming the refusal and prints what it applied, as a deploy that failed (not 2: something was written)', async () => {
    // Room for two besides kube-root-ca.crt, which the cluster publishes in every namespace.
    const made = await kubectl('-n', ns(), 'create', 'quota', 'configmaps', '--hard=count/configmaps=3');
    expect(made.code, made.stderr).toBe(0);
    // The quota's usage is counted by its controller before it refuses anything.
    await quotaCounted(ns(), 'count/configmaps');
    const settings = (name: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}, annotations: {strategy.spinnaker.io/versioned: "false"}}\ndata: {n: ${name}}\n`;
    const dir = await manifestDir({
      'a.yaml': settings('one'),
      'b.yaml': settings('two'),
      'c.yaml': settings('three'),
    });
    // One object at a time: each dry run passes on its own (three at once are refused together, before anything
    // is written, which is exit code 2), and the third write is refused.
    const result = await deployTo(ns(), dir, '--concurrency', '1');
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain('exceeded quota: configmaps');
    expect(result.stdout.match(/^configmap\/\S+ created$/gm)).toHaveLength(2);
    // Again with -o json, from an empty namespace: the report is printed, with what was written.
    const cleared = await kubectl(
      '-n',
      ns(),
      'delete',
      'configmaps',
      'one',
      'two',
      'three',
      '--ignore-not-found',
    );
    expect(cleared.code, cleared.stderr).toBe(0);
    await quotaCounted(ns(), '"count/configmaps":"1"');
    const json = await deployTo(ns(), dir, '-o', 'json', '--concurrency', '1');
    expect(json.code, json.stdout + json.stderr).toBe(1);
    const report = JSON.parse(json.stdout) as { outcome: string; objects: { action: string }[] };
    expect(report.outcome).toBe('error');
    expect(report.objects.filter((o) => o.action === 'created')).toHaveLength(2);
  });
});

/** Until the quota `configmaps` of `namespace` is counted by its controller (its usage says `what`): admission refuses
 * only what a counted quota holds. */
async function quotaCounted(namespace: string, what: string): Promise<void> {
  await eventually(`the quota counted (${what})`, async () =>
    (
      await kubectl('-n', namespace, 'get', 'quota', 'configmaps', '-o', 'jsonpath={.status.used}')
    ).stdout.includes(what)
      ? true
      : undefined,
  );
}
