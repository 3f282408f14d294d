// scale, pause, resume and undo against the real control plane: the real Deployment, StatefulSet and DaemonSet
// controllers act on what mooring changed, the test-bed kubelet runs the pods, and kubectl cross-checks.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1DaemonSet,
  type V1Deployment,
  type V1StatefulSet,
  type V1StatefulSetUpdateStrategy,
} from '@kubernetes/client-node';
import { Command, CommanderError } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { parseWorkloadArg, resourceName, rolloutCommand } from '../../src/cli/commands/rollout.ts';
import { scaleCommand } from '../../src/cli/commands/scale.ts';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, ExitError } from '../../src/cli/exit-codes.ts';
import { errorMessage, StalledError } from '../../src/errors.ts';
import { KubeApi } from '../../src/kube/api.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { STRATEGIC_MERGE_PATCH } from '../../src/kube/rollout/common.ts';
import {
  PAUSED_PARTITION,
  PAUSED_UPDATE_STRATEGY,
  pause,
  resume,
  scale,
  undo,
  type WorkloadRef,
} from '../../src/kube/rollout.ts';
import { NODE_NAME } from '../testbed/kubelet.ts';
import {
  clusterConfig,
  eventually,
  kubeConfig,
  runTool,
  testbed,
  useNamespace,
  writeKubeconfig,
} from './helpers.ts';

const ns = useNamespace('rollout');
const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const image = (tag: string) => `registry.example/app:${tag}`;

// The client under test is mooring's own; client-node's typed clients below set up and cross-check.
let shared: KubeApi | undefined;
function kubeApi(): KubeApi {
  shared ??= new KubeApi(clusterConfig());
  return shared;
}
afterAll(() => shared?.close());

function apps(): AppsV1Api {
  return kubeConfig().makeApiClient(AppsV1Api);
}

function core(): CoreV1Api {
  return kubeConfig().makeApiClient(CoreV1Api);
}

function ref(kind: string, name: string): WorkloadRef {
  return { kind, name, namespace: ns() };
}

function podTemplate(name: string, tag: string) {
  return {
    metadata: { labels: { app: name } },
    spec: { containers: [{ name: 'app', image: image(tag) }] },
  };
}

async function createDeployment(name: string, tag: string, replicas = 1): Promise<V1Deployment> {
  return apps().createNamespacedDeployment({
    namespace: ns(),
    body: {
      metadata: { name },
      spec: { replicas, selector: { matchLabels: { app: name } }, template: podTemplate(name, tag) },
    },
  });
}

async function createStatefulSet(
  name: string,
  tag: string,
  replicas: number,
  updateStrategy?: V1StatefulSetUpdateStrategy,
): Promise<V1StatefulSet> {
  return apps().createNamespacedStatefulSet({
    namespace: ns(),
    body: {
      metadata: { name },
      spec: {
        serviceName: name,
        replicas,
        selector: { matchLabels: { app: name } },
        template: podTemplate(name, tag),
        ...(updateStrategy ? { updateStrategy } : {}),
      },
    },
  });
}

async function createDaemonSet(name: string, tag: string): Promise<V1DaemonSet> {
  const template = podTemplate(name, tag);
  // The test bed's Node keeps the not-ready taint that Kubernetes 1.20's NodeTaint admission puts on every new
  // Node (no node-lifecycle controller runs to lift it), and DaemonSet pods do not tolerate it by default.
  const tolerations = [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }];
  return apps().createNamespacedDaemonSet({
    namespace: ns(),
    body: {
      metadata: { name },
      spec: {
        selector: { matchLabels: { app: name } },
        template: { ...template, spec: { ...template.spec, tolerations } },
      },
    },
  });
}

/** One pod on the one node, of the newest template: `kubectl rollout status` also passes with 0 scheduled. */
async function daemonSetRolledOut(name: string): Promise<void> {
  await eventually(
    `daemonset ${name} rolled out on ${NODE_NAME}`,
    async () => {
      const d = await apps().readNamespacedDaemonSet({ name, namespace: ns() });
      const s = d.status;
      const done =
        s?.observedGeneration === d.metadata?.generation &&
        s?.desiredNumberScheduled === 1 &&
        s.updatedNumberScheduled === 1 &&
        s.numberReady === 1;
      return done ? true : undefined;
    },
    60_000,
  );
  await rolledOut(`daemonset/${name}`);
}

/** Changes the image as `kubectl set image` does: a strategic merge patch keyed by container name. */
async function setImage(kind: 'Deployment' | 'StatefulSet' | 'DaemonSet', name: string, tag: string) {
  const body = { spec: { template: { spec: { containers: [{ name: 'app', image: image(tag) }] } } } };
  const params = { name, namespace: ns(), body };
  if (kind === 'Deployment') await apps().patchNamespacedDeployment(params, strategic);
  else if (kind === 'StatefulSet') await apps().patchNamespacedStatefulSet(params, strategic);
  else await apps().patchNamespacedDaemonSet(params, strategic);
}

async function kubectl(...args: string[]) {
  const env = testbed();
  return runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, '-n', ns(), ...args]);
}

/** `kubectl rollout status` (the real client's verdict on a rollout), bounded. */
async function rolledOut(target: string): Promise<void> {
  const out = await kubectl('rollout', 'status', target, '--timeout=60s');
  expect(out.code, `${target}: ${out.stdout}${out.stderr}`).toBe(0);
}

/** The revision numbers `kubectl rollout history` lists. */
async function history(target: string): Promise<number[]> {
  const out = await kubectl('rollout', 'history', target);
  expect(out.code, out.stderr).toBe(0);
  return out.stdout
    .split('\n')
    .map((line) => /^(\d+)\s/.exec(line)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number);
}

async function podImages(app: string): Promise<string[]> {
  const pods = await core().listNamespacedPod({ namespace: ns(), labelSelector: `app=${app}` });
  return pods.items
    .filter((p) => !p.metadata?.deletionTimestamp)
    .map((p) => `${p.metadata?.name}=${p.spec?.containers[0]?.image}`)
    .sort();
}

async function readyDeployment(name: string, replicas: number): Promise<V1Deployment> {
  return eventually(
    `deployment ${name} ready with ${replicas}`,
    async () => {
      const d = await apps().readNamespacedDeployment({ name, namespace: ns() });
      const s = d.status;
      const done =
        s?.observedGeneration === d.metadata?.generation &&
        (s?.replicas ?? 0) === replicas &&
        (s?.readyReplicas ?? 0) === replicas &&
        (s?.updatedReplicas ?? 0) === replicas;
      return done ? d : undefined;
    },
    60_000,
  );
}

async function expectStalled(promise: Promise<unknown>, pattern: RegExp): Promise<StalledError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StalledError);
  expect(errorMessage(error)).toMatch(pattern);
  return error as StalledError;
}

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The two commands on a program of their own, with runCli's mapping of outcomes to exit codes (program.ts does
 * not register them yet).
 */
async function cli(...argv: string[]): Promise<CliRun> {
  const run = { code: EXIT_OK, stdout: '', stderr: '' };
  const io = { writeOut: (t: string) => (run.stdout += t), writeErr: (t: string) => (run.stderr += t) };
  const program = new Command('mooring').exitOverride().configureOutput(io);
  scaleCommand(program, (t) => (run.stdout += `${t}\n`));
  rolloutCommand(program, (t) => (run.stdout += `${t}\n`));
  for (const command of program.commands) {
    command.exitOverride().configureOutput(io);
    for (const sub of command.commands) sub.exitOverride().configureOutput(io);
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) run.code = error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    else if (error instanceof ExitError) {
      run.stderr += error.message;
      run.code = error.exitCode;
    } else {
      run.stderr += `error: ${errorMessage(error)}`;
      run.code = error instanceof StalledError ? EXIT_USAGE : EXIT_FAILED;
    }
  }
  return run;
}

function clusterArgs(): string[] {
  return ['--kubeconfig', testbed().kube.kubeconfig, '-n', ns()];
}

describe('KIND/NAME as kubectl spells it', () => {
  it.each([
    ['deployment/web', 'Deployment'],
    ['deployments/web', 'Deployment'],
    ['deploy/web', 'Deployment'],
    ['Deployment/web', 'Deployment'],
    ['deployments.apps/web', 'Deployment'],
    ['statefulset/web', 'StatefulSet'],
    ['STS/web', 'StatefulSet'],
    ['daemonsets/web', 'DaemonSet'],
    ['ds/web', 'DaemonSet'],
    ['replicaset/web', 'ReplicaSet'],
    ['rs/web', 'ReplicaSet'],
    ['po/web', 'Pod'],
  ])('%s is a %s', (text, kind) => {
    expect(parseWorkloadArg(text)).toEqual({ kind, name: 'web' });
  });

  it.each(['web', '/web', 'deploy/', 'deploy/a/b', 'cronjob/web', 'deploy.extensions/web'])(
    'refuses %s',
    (text) => {
      expect(() => parseWorkloadArg(text)).toThrow(StalledError);
    },
  );

  it('names objects as kubectl prints them', () => {
    expect(resourceName('Deployment', 'web')).toBe('deployment.apps/web');
    expect(resourceName('StatefulSet', 'db')).toBe('statefulset.apps/db');
    expect(resourceName('Pod', 'web-0')).toBe('pod/web-0');
  });
});

describe('scale', () => {
  it('scales a Deployment, and its ready pods follow', async () => {
    await createDeployment('scaled', 'v1', 1);
    await readyDeployment('scaled', 1);
    expect(await scale(kubeApi(), ref('Deployment', 'scaled'), 3)).toEqual({ from: 1, to: 3 });
    const d = await readyDeployment('scaled', 3);
    expect(d.spec?.replicas).toBe(3);
    const pods = await core().listNamespacedPod({ namespace: ns(), labelSelector: 'app=scaled' });
    expect(
      pods.items.filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
    ).toHaveLength(3);

    expect(await scale(kubeApi(), ref('Deployment', 'scaled'), 0)).toEqual({ from: 3, to: 0 });
    await eventually('scaled down to no pods', async () =>
      (await podImages('scaled')).length === 0 ? true : undefined,
    );
  });

  it('scales a StatefulSet, whose pods come one by one', async () => {
    await createStatefulSet('counted', 'v1', 1);
    expect(await scale(kubeApi(), ref('StatefulSet', 'counted'), 3)).toEqual({ from: 1, to: 3 });
    const sts = await eventually('counted has 3 ready', async () => {
      const s = await apps().readNamespacedStatefulSet({ name: 'counted', namespace: ns() });
      return s.status?.readyReplicas === 3 ? s : undefined;
    });
    expect(sts.spec?.replicas).toBe(3);
    expect(await podImages('counted')).toEqual([0, 1, 2].map((i) => `counted-${i}=${image('v1')}`));
  });

  it('refuses a DaemonSet and a Pod, naming the kind, and changes nothing', async () => {
    const ds = await createDaemonSet('fixed', 'v1');
    const pod = await core().createNamespacedPod({
      namespace: ns(),
      body: { metadata: { name: 'lonely' }, spec: { containers: [{ name: 'app', image: image('v1') }] } },
    });
    await expectStalled(
      scale(kubeApi(), ref('DaemonSet', 'fixed'), 2),
      /^DaemonSet .*\/fixed: scale is not supported for DaemonSet/,
    );
    await expectStalled(
      scale(kubeApi(), ref('Pod', 'lonely'), 2),
      /^Pod .*\/lonely: scale is not supported for Pod/,
    );

    // Refused before any request: a client pointing nowhere gets the same answer, not a connection error.
    const nowhere = loadKubeConfig({
      kubeconfig: await writeKubeconfig(
        { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true },
        {},
      ),
    });
    await expectStalled(
      scale(new KubeApi(nowhere), ref('DaemonSet', 'fixed'), 2),
      /scale is not supported for DaemonSet/,
    );

    const dsAfter = await apps().readNamespacedDaemonSet({ name: 'fixed', namespace: ns() });
    expect(dsAfter.metadata?.generation).toBe(ds.metadata?.generation);
    expect(dsAfter.spec).toEqual(ds.spec);
    const podAfter = await core().readNamespacedPod({ name: 'lonely', namespace: ns() });
    expect(podAfter.spec?.containers).toEqual(pod.spec?.containers);
    expect(podAfter.metadata?.annotations).toEqual(pod.metadata?.annotations);
  });

  it('refuses negative replicas and names a missing object', async () => {
    await expectStalled(
      scale(kubeApi(), ref('Deployment', 'scaled'), -1),
      /Deployment .*\/scaled: replicas must be/,
    );
    await expectStalled(
      scale(kubeApi(), ref('Deployment', 'ghost'), 1),
      /Deployment .*\/ghost: cannot read the scale: 404/,
    );
  });
});

describe('pause and resume a Deployment', () => {
  it('holds a new template back while paused and rolls it out on resume', async () => {
    await createDeployment('held', 'v1', 2);
    await readyDeployment('held', 2);
    expect(await pause(kubeApi(), ref('Deployment', 'held'))).toEqual({ mechanism: 'paused' });
    await expectStalled(pause(kubeApi(), ref('Deployment', 'held')), /Deployment .*\/held: already paused/);

    await setImage('Deployment', 'held', 'v2');
    const paused = await eventually('paused change observed', async () => {
      const d = await apps().readNamespacedDeployment({ name: 'held', namespace: ns() });
      return d.status?.observedGeneration === d.metadata?.generation ? d : undefined;
    });
    expect(paused.spec?.paused).toBe(true);
    expect(paused.status?.conditions?.find((c) => c.type === 'Progressing')?.reason).toBe('DeploymentPaused');
    const replicaSets = await apps().listNamespacedReplicaSet({ namespace: ns(), labelSelector: 'app=held' });
    expect(replicaSets.items).toHaveLength(1);
    expect(await podImages('held')).toEqual([
      expect.stringContaining(image('v1')),
      expect.stringContaining(image('v1')),
    ]);

    expect(await resume(kubeApi(), ref('Deployment', 'held'))).toEqual({ mechanism: 'paused' });
    await rolledOut('deployment/held');
    const after = await apps().readNamespacedDeployment({ name: 'held', namespace: ns() });
    expect(after.spec?.paused ?? false).toBe(false);
    expect(
      (await apps().listNamespacedReplicaSet({ namespace: ns(), labelSelector: 'app=held' })).items,
    ).toHaveLength(2);
    await eventually('held runs v2 only', async () => {
      const images = await podImages('held');
      return images.length === 2 && images.every((i) => i.endsWith(image('v2'))) ? true : undefined;
    });
    await expectStalled(resume(kubeApi(), ref('Deployment', 'held')), /Deployment .*\/held: not paused/);
  });
});

describe('undo a Deployment', () => {
  it('rolls back to the previous revision and to --to-revision, as kubectl rollout history sees it', async () => {
    const kc = kubeApi();
    const web = ref('Deployment', 'hist');
    await createDeployment('hist', 'v1', 1);
    await rolledOut('deployment/hist');
    await setImage('Deployment', 'hist', 'v2');
    await rolledOut('deployment/hist');
    await setImage('Deployment', 'hist', 'v3');
    await rolledOut('deployment/hist');
    expect(await history('deployment/hist')).toEqual([1, 2, 3]);

    expect(await undo(kc, web)).toEqual({ revision: 2, changed: true });
    let d = await apps().readNamespacedDeployment({ name: 'hist', namespace: ns() });
    expect(d.spec?.template.spec?.containers[0]?.image).toBe(image('v2'));
    expect(d.spec?.template.metadata?.labels).toEqual({ app: 'hist' }); // no pod-template-hash
    await rolledOut('deployment/hist');
    // The restored ReplicaSet becomes the newest revision, as with kubectl rollout undo.
    expect(await history('deployment/hist')).toEqual([1, 3, 4]);

    expect(await undo(kc, web, 1)).toEqual({ revision: 1, changed: true });
    d = await apps().readNamespacedDeployment({ name: 'hist', namespace: ns() });
    expect(d.spec?.template.spec?.containers[0]?.image).toBe(image('v1'));
    await rolledOut('deployment/hist');
    expect(await history('deployment/hist')).toEqual([3, 4, 5]);
    const shown = await kubectl('rollout', 'history', 'deployment/hist', '--revision=5');
    expect(shown.stdout).toContain(image('v1'));
    expect(await podImages('hist')).toEqual([expect.stringContaining(image('v1'))]);

    // The newest revision is what runs: nothing to do, as kubectl's "skipped rollback".
    expect(await undo(kc, web, 5)).toEqual({ revision: 5, changed: false });
    await expectStalled(
      undo(kc, web, 2),
      /Deployment .*\/hist: revision 2 not found \(known revisions: 3, 4, 5\)/,
    );
  });

  it('says when there is no history, and refuses a paused Deployment', async () => {
    await createDeployment('fresh', 'v1', 1);
    await rolledOut('deployment/fresh');
    await expectStalled(
      undo(kubeApi(), ref('Deployment', 'fresh')),
      /^Deployment .*\/fresh: no rollout history$/,
    );
    await setImage('Deployment', 'fresh', 'v2');
    await rolledOut('deployment/fresh');
    await pause(kubeApi(), ref('Deployment', 'fresh'));
    await expectStalled(undo(kubeApi(), ref('Deployment', 'fresh')), /fresh: paused: resume it first/);
    await resume(kubeApi(), ref('Deployment', 'fresh'));
  });
});

describe('undo a StatefulSet and a DaemonSet through ControllerRevisions', () => {
  it('rolls a StatefulSet back', async () => {
    await createStatefulSet('db', 'v1', 2);
    await rolledOut('statefulset/db');
    await setImage('StatefulSet', 'db', 'v2');
    await rolledOut('statefulset/db');
    expect(await history('statefulset/db')).toEqual([1, 2]);

    expect(await undo(kubeApi(), ref('StatefulSet', 'db'))).toEqual({ revision: 1, changed: true });
    const sts = await apps().readNamespacedStatefulSet({ name: 'db', namespace: ns() });
    expect(sts.spec?.template.spec?.containers[0]?.image).toBe(image('v1'));
    await rolledOut('statefulset/db');
    expect(await history('statefulset/db')).toEqual([2, 3]);
    await eventually('db runs v1', async () => {
      const images = await podImages('db');
      return images.join() === [`db-0=${image('v1')}`, `db-1=${image('v1')}`].join() ? true : undefined;
    });
    expect(await undo(kubeApi(), ref('StatefulSet', 'db'), 3)).toEqual({ revision: 3, changed: false });
    await expectStalled(
      undo(kubeApi(), ref('StatefulSet', 'db'), 7),
      /revision 7 not found \(known revisions: 2, 3\)/,
    );
  });

  it('rolls a DaemonSet back, and says when there is no history', async () => {
    await createDaemonSet('agent', 'v1');
    await daemonSetRolledOut('agent');
    await expectStalled(
      undo(kubeApi(), ref('DaemonSet', 'agent')),
      /^DaemonSet .*\/agent: no rollout history$/,
    );
    await setImage('DaemonSet', 'agent', 'v2');
    await daemonSetRolledOut('agent');
    expect(await history('daemonset/agent')).toEqual([1, 2]);

    expect(await undo(kubeApi(), ref('DaemonSet', 'agent'), 1)).toEqual({ revision: 1, changed: true });
    const ds = await apps().readNamespacedDaemonSet({ name: 'agent', namespace: ns() });
    expect(ds.spec?.template.spec?.containers[0]?.image).toBe(image('v1'));
    await daemonSetRolledOut('agent');
    expect(await history('daemonset/agent')).toEqual([2, 3]);
    await eventually('agent runs v1', async () => {
      const images = await podImages('agent');
      return images.length === 1 && images[0]?.endsWith(image('v1')) ? true : undefined;
    });
  });
});

/**
 * Runs `operation` while the workload's status is written without a pause, as its controller does many times a
 * second while a large workload rolls: every write changes the resourceVersion, never the generation.
 */
async function whileStatusChurns<T>(
  kind: string,
  name: string,
  operation: () => Promise<T>,
): Promise<[T, number]> {
  const plural = `${kind.toLowerCase()}s`;
  const path = `/apis/apps/v1/namespaces/${ns()}/${plural}/${name}/status`;
  let done = false;
  let writes = 0;
  const churn = (async () => {
    while (!done) {
      const body = { status: { conditions: [{ type: 'Churn', status: 'True', message: String(writes) }] } };
      await kubeApi().request('PATCH', path, { body, contentType: STRATEGIC_MERGE_PATCH });
      writes++;
    }
  })();
  try {
    const result = await operation();
    return [result, writes];
  } finally {
    done = true;
    await churn;
  }
}

describe('undo and resume while the controller writes the status', () => {
  it('roll back a StatefulSet, a Deployment and resume a DaemonSet, none refused as a conflict', async () => {
    await createStatefulSet('busy-db', 'v1', 1);
    await createDeployment('busy-web', 'v1', 1);
    await createDaemonSet('busy-agent', 'v1');
    await rolledOut('statefulset/busy-db');
    await rolledOut('deployment/busy-web');
    await setImage('StatefulSet', 'busy-db', 'v2');
    await setImage('Deployment', 'busy-web', 'v2');
    await rolledOut('statefulset/busy-db');
    await rolledOut('deployment/busy-web');

    const [db, dbWrites] = await whileStatusChurns('StatefulSet', 'busy-db', () =>
      undo(kubeApi(), ref('StatefulSet', 'busy-db')),
    );
    expect(db).toEqual({ revision: 1, changed: true });
    expect(dbWrites).toBeGreaterThan(0);
    const [web, webWrites] = await whileStatusChurns('Deployment', 'busy-web', () =>
      undo(kubeApi(), ref('Deployment', 'busy-web')),
    );
    expect(web).toEqual({ revision: 1, changed: true });
    expect(webWrites).toBeGreaterThan(0);
    const sts = await apps().readNamespacedStatefulSet({ name: 'busy-db', namespace: ns() });
    expect(sts.spec?.template.spec?.containers[0]?.image).toBe(image('v1'));
    const d = await apps().readNamespacedDeployment({ name: 'busy-web', namespace: ns() });
    expect(d.spec?.template.spec?.containers[0]?.image).toBe(image('v1'));
    await rolledOut('statefulset/busy-db');
    await rolledOut('deployment/busy-web');
    // Already at the revision: the generation stays, so the answer is "skipped", churn or not.
    const [again] = await whileStatusChurns('StatefulSet', 'busy-db', () =>
      undo(kubeApi(), ref('StatefulSet', 'busy-db'), 3),
    );
    expect(again).toEqual({ revision: 3, changed: false });

    const agent = ref('DaemonSet', 'busy-agent');
    await pause(kubeApi(), agent);
    const [resumed] = await whileStatusChurns('DaemonSet', 'busy-agent', () => resume(kubeApi(), agent));
    expect(resumed).toMatchObject({ mechanism: 'on-delete', updateStrategy: { type: 'RollingUpdate' } });
    const ds = await apps().readNamespacedDaemonSet({ name: 'busy-agent', namespace: ns() });
    expect(ds.spec?.updateStrategy?.type).toBe('RollingUpdate');
    expect(ds.metadata?.annotations?.[PAUSED_UPDATE_STRATEGY]).toBeUndefined();
  });

  it('keeps an annotation written to the Deployment between the read and the patch: the undo starts again', async () => {
    await createDeployment('raced', 'v1', 1);
    await rolledOut('deployment/raced');
    await setImage('Deployment', 'raced', 'v2');
    await rolledOut('deployment/raced');
    // kubectl apply writes its last-applied annotation between the read and the patch: undo keeps the Deployment's
    // own (as kubectl's undo does), so it must keep the one written since, not the one it read.
    const api = kubeApi();
    let raced = false;
    const racing = new Proxy(api, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key !== 'request') return typeof value === 'function' ? value.bind(target) : value;
        return async (method: string, path: string, options?: unknown) => {
          if (method === 'PATCH' && !raced) {
            raced = true;
            await apps().patchNamespacedDeployment(
              {
                name: 'raced',
                namespace: ns(),
                body: { metadata: { annotations: { [LAST_APPLIED]: '{"written":"since"}' } } },
              },
              strategic,
            );
          }
          return (value as (...args: unknown[]) => Promise<unknown>).call(target, method, path, options);
        };
      },
    });
    expect(await undo(racing, ref('Deployment', 'raced'))).toEqual({ revision: 1, changed: true });
    expect(raced).toBe(true);
    const d = await apps().readNamespacedDeployment({ name: 'raced', namespace: ns() });
    expect(d.spec?.template.spec?.containers[0]?.image).toBe(image('v1'));
    expect(d.metadata?.annotations?.[LAST_APPLIED]).toBe('{"written":"since"}');
  });
});

describe('pause and resume a StatefulSet (partition) and a DaemonSet (OnDelete)', () => {
  it('holds a StatefulSet at its partition, also when scaled up, and restores the partition exactly', async () => {
    const kc = kubeApi();
    const db = ref('StatefulSet', 'held-db');
    const created = await createStatefulSet('held-db', 'v1', 2);
    // Defaults differ by version (1.35+ adds maxUnavailable: 1): the partition is what matters here.
    expect(created.spec?.updateStrategy).toMatchObject({
      type: 'RollingUpdate',
      rollingUpdate: { partition: 0 },
    });
    await rolledOut('statefulset/held-db');

    expect(await pause(kc, db)).toEqual({ mechanism: 'partition', partition: 2, previous: 0 });
    await expectStalled(pause(kc, db), /StatefulSet .*\/held-db: already paused \(partition 2\)/);
    let sts = await apps().readNamespacedStatefulSet({ name: 'held-db', namespace: ns() });
    expect(sts.metadata?.annotations?.[PAUSED_PARTITION]).toBe('0');

    await setImage('StatefulSet', 'held-db', 'v2');
    sts = await eventually('new template observed', async () => {
      const s = await apps().readNamespacedStatefulSet({ name: 'held-db', namespace: ns() });
      const seen = s.status?.observedGeneration === s.metadata?.generation;
      return seen && s.status?.updateRevision !== s.status?.currentRevision ? s : undefined;
    });
    expect(await podImages('held-db')).toEqual([`held-db-0=${image('v1')}`, `held-db-1=${image('v1')}`]);

    // The new pod would start from the new template beyond the partition: scale raises it.
    expect(await scale(kc, db, 3)).toEqual({ from: 2, to: 3 });
    sts = await eventually('held-db has 3 ready', async () => {
      const s = await apps().readNamespacedStatefulSet({ name: 'held-db', namespace: ns() });
      return s.status?.readyReplicas === 3 ? s : undefined;
    });
    expect(sts.spec?.updateStrategy?.rollingUpdate?.partition).toBe(3);
    expect(await podImages('held-db')).toEqual([0, 1, 2].map((i) => `held-db-${i}=${image('v1')}`));
    await expectStalled(undo(kc, db), /held-db: paused: resume it first/);

    expect(await resume(kc, db)).toEqual({ mechanism: 'partition', partition: 0 });
    sts = await apps().readNamespacedStatefulSet({ name: 'held-db', namespace: ns() });
    expect(sts.spec?.updateStrategy).toEqual(created.spec?.updateStrategy);
    expect(sts.metadata?.annotations?.[PAUSED_PARTITION]).toBeUndefined();
    await rolledOut('statefulset/held-db');
    await eventually('held-db runs v2', async () => {
      const images = await podImages('held-db');
      return images.length === 3 && images.every((i) => i.endsWith(image('v2'))) ? true : undefined;
    });
    await expectStalled(resume(kc, db), /StatefulSet .*\/held-db: not paused/);
  });

  it('removes the partition again when there was none, and refuses OnDelete', async () => {
    const kc = kubeApi();
    const created = await createStatefulSet('bare-db', 'v1', 1, { type: 'RollingUpdate' });
    // The server defaults no partition when the type is given without rollingUpdate.
    expect(created.spec?.updateStrategy).toEqual({ type: 'RollingUpdate' });
    expect(await pause(kc, ref('StatefulSet', 'bare-db'))).toEqual({
      mechanism: 'partition',
      partition: 1,
      previous: null,
    });
    let sts = await apps().readNamespacedStatefulSet({ name: 'bare-db', namespace: ns() });
    expect(sts.spec?.updateStrategy).toMatchObject({
      type: 'RollingUpdate',
      rollingUpdate: { partition: 1 },
    });
    expect(sts.metadata?.annotations?.[PAUSED_PARTITION]).toBe('null');
    expect(await resume(kc, ref('StatefulSet', 'bare-db'))).toEqual({
      mechanism: 'partition',
      partition: null,
    });
    sts = await apps().readNamespacedStatefulSet({ name: 'bare-db', namespace: ns() });
    // No partition as before (none, or the 0 the server defaults once rollingUpdate exists: 1.35+ keeps the
    // rollingUpdate it defaulted when the pause set one).
    expect(sts.spec?.updateStrategy?.type).toBe('RollingUpdate');
    expect(sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0).toBe(0);
    expect(sts.metadata?.annotations ?? {}).toEqual({});

    await createStatefulSet('manual-db', 'v1', 1, { type: 'OnDelete' });
    await expectStalled(pause(kc, ref('StatefulSet', 'manual-db')), /manual-db: updateStrategy is OnDelete/);
  });

  it('holds a DaemonSet with OnDelete and restores its update strategy exactly', async () => {
    const kc = kubeApi();
    const agent = ref('DaemonSet', 'held-agent');
    const created = await createDaemonSet('held-agent', 'v1');
    const original = created.spec?.updateStrategy;
    // 1.21+ defaults maxSurge: 0 beside maxUnavailable: 1.
    expect(original).toMatchObject({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
    await daemonSetRolledOut('held-agent');

    expect(await pause(kc, agent)).toEqual({
      mechanism: 'on-delete',
      previous: JSON.parse(JSON.stringify(original)),
    });
    await expectStalled(pause(kc, agent), /DaemonSet .*\/held-agent: already paused/);
    let ds = await apps().readNamespacedDaemonSet({ name: 'held-agent', namespace: ns() });
    expect(ds.spec?.updateStrategy).toEqual({ type: 'OnDelete' });
    expect(JSON.parse(ds.metadata?.annotations?.[PAUSED_UPDATE_STRATEGY] ?? '')).toEqual(
      JSON.parse(JSON.stringify(original)),
    );

    await setImage('DaemonSet', 'held-agent', 'v2');
    await eventually('new template observed', async () => {
      const d = await apps().readNamespacedDaemonSet({ name: 'held-agent', namespace: ns() });
      return d.status?.observedGeneration === d.metadata?.generation ? d : undefined;
    });
    expect(await podImages('held-agent')).toEqual([expect.stringContaining(image('v1'))]);

    expect(await resume(kc, agent)).toEqual({
      mechanism: 'on-delete',
      updateStrategy: JSON.parse(JSON.stringify(original)),
    });
    ds = await apps().readNamespacedDaemonSet({ name: 'held-agent', namespace: ns() });
    expect(ds.spec?.updateStrategy).toEqual(original);
    expect(ds.metadata?.annotations?.[PAUSED_UPDATE_STRATEGY]).toBeUndefined();
    await daemonSetRolledOut('held-agent');
    await eventually('held-agent runs v2', async () => {
      const images = await podImages('held-agent');
      return images.length === 1 && images[0]?.endsWith(image('v2')) ? true : undefined;
    });
    await expectStalled(resume(kc, agent), /DaemonSet .*\/held-agent: not paused/);
  });
});

describe('mooring scale and mooring rollout', () => {
  it('scale prints one line like kubectl, or the result as JSON', async () => {
    await createDeployment('cli-web', 'v1', 1);
    let run = await cli('scale', 'deploy/cli-web', '--replicas', '2', ...clusterArgs());
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('deployment.apps/cli-web scaled\n');
    run = await cli('scale', 'Deployments/cli-web', '--replicas=1', ...clusterArgs(), '-o', 'json');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      kind: 'Deployment',
      name: 'cli-web',
      namespace: ns(),
      action: 'scale',
      from: 2,
      to: 1,
    });
  });

  it('takes the namespace from the kubeconfig context when -n is not given', async () => {
    const config = parse(await readFile(testbed().kube.kubeconfig, 'utf8')) as {
      contexts: { context: { namespace?: string } }[];
    };
    for (const context of config.contexts) context.context.namespace = ns();
    const file = join(await mkdtemp(join(tmpdir(), 'mooring-rollout-')), 'kubeconfig');
    await writeFile(file, stringify(config), { mode: 0o600 });
    const run = await cli('scale', 'deployment/cli-web', '--replicas', '3', '--kubeconfig', file);
    expect(run.code, run.stderr).toBe(0);
    const d = await apps().readNamespacedDeployment({ name: 'cli-web', namespace: ns() });
    expect(d.spec?.replicas).toBe(3);
  });

  it('exits 2 for usage mistakes and unsupported kinds, 1 when the operation fails', async () => {
    const usage = [
      ['scale', 'ds/fixed', '--replicas', '1'],
      ['scale', 'pod/lonely', '--replicas', '1'],
      ['scale', 'cronjob/x', '--replicas', '1'],
      ['scale', 'web', '--replicas', '1'],
      ['scale', 'deploy/cli-web', '--replicas', 'two'],
      ['scale', 'deploy/cli-web'],
      ['rollout', 'undo', 'rs/x'],
      ['rollout', 'pause', 'deploy/cli-web', '--bogus'],
      ['rollout', 'undo', 'deploy/cli-web', '--to-revision', '-3'],
    ];
    for (const argv of usage) {
      const run = await cli(...argv, ...clusterArgs());
      expect(run.code, `${argv.join(' ')}: ${run.stderr}`).toBe(2);
    }
    const unsupported = await cli('scale', 'daemonset/fixed', '--replicas', '1', ...clusterArgs());
    expect(unsupported.stderr).toContain('scale is not supported for DaemonSet');

    const missing = await cli('scale', 'deploy/ghost', '--replicas', '1', ...clusterArgs());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: Deployment .*\/ghost: cannot read the scale: 404/);
    const noHistory = await cli('rollout', 'undo', 'deploy/cli-web', ...clusterArgs());
    expect(noHistory.code).toBe(1);
    expect(noHistory.stderr).toMatch(/cli-web: no rollout history/);
  });

  it('rollout pause, resume and undo print what they did', async () => {
    await createStatefulSet('cli-db', 'v1', 2);
    await rolledOut('statefulset/cli-db');
    let run = await cli('rollout', 'pause', 'sts/cli-db', ...clusterArgs());
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('statefulset.apps/cli-db paused (partition 2)\n');
    run = await cli('rollout', 'pause', 'sts/cli-db', ...clusterArgs());
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.stderr).toMatch(/already paused/);
    run = await cli('rollout', 'resume', 'statefulsets/cli-db', ...clusterArgs(), '-o', 'yaml');
    expect(run.code, run.stderr).toBe(0);
    expect(parse(run.stdout)).toMatchObject({
      kind: 'StatefulSet',
      action: 'resume',
      mechanism: 'partition',
      partition: 0,
    });

    await setImage('StatefulSet', 'cli-db', 'v2');
    await rolledOut('statefulset/cli-db');
    run = await cli('rollout', 'undo', 'sts/cli-db', '--to-revision', '1', ...clusterArgs());
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('statefulset.apps/cli-db rolled back to revision 1\n');
    await rolledOut('statefulset/cli-db'); // the controller renumbers revision 1 as 3
    run = await cli('rollout', 'undo', 'sts/cli-db', '--to-revision', '3', ...clusterArgs());
    expect(run.stdout, `${run.stderr}revisions: ${(await history('statefulset/cli-db')).join(', ')}`).toBe(
      'statefulset.apps/cli-db skipped rollback (current template already matches revision 3)\n',
    );

    await createDaemonSet('cli-agent', 'v1');
    run = await cli('rollout', 'pause', 'ds/cli-agent', ...clusterArgs());
    expect(run.stdout, run.stderr).toBe('daemonset.apps/cli-agent paused (updateStrategy OnDelete)\n');
    run = await cli('rollout', 'resume', 'ds/cli-agent', ...clusterArgs());
    expect(run.stdout, run.stderr).toBe('daemonset.apps/cli-agent resumed (updateStrategy RollingUpdate)\n');
  });
});
