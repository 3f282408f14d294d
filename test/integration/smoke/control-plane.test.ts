// The control plane is real: Deployments get ReplicaSets and Pods from the real controllers, the test-bed
// kubelet makes them ready (or not, as told), and kubectl agrees with what the API reports.
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  NetworkingV1Api,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { resolveKubeVersion } from '../../testbed/control-plane.ts';
import { BEHAVIOR, LOAD_BALANCER, lbHostname, NODE_NAME } from '../../testbed/kubelet.ts';
import { eventually, kubeConfig, runTool, testbed, useNamespace } from '../helpers.ts';

function deployment(name: string, replicas: number, annotations: Record<string, string> = {}): V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, annotations },
        spec: { containers: [{ name: 'web', image: 'registry.example/web:1.0.0' }] },
      },
    },
  };
}

describe('control plane and test-bed kubelet', () => {
  const ns = useNamespace('smoke-kube');

  it('lists the test-bed node through kubectl', async () => {
    const env = testbed();
    const out = await runTool(env.tools.kubectl, [
      '--kubeconfig',
      env.kube.kubeconfig,
      'get',
      'nodes',
      '-o',
      'name',
    ]);
    expect(out.stderr).not.toMatch(/error/i);
    expect(out.stdout.trim()).toBe(`node/${NODE_NAME}`);
  });

  it('runs the Kubernetes version asked for, and says so to kubectl and in its node', async () => {
    const env = testbed();
    const wanted = await resolveKubeVersion();
    expect(env.kube.version).toBe(wanted);
    const out = await runTool(env.tools.kubectl, [
      '--kubeconfig',
      env.kube.kubeconfig,
      'version',
      '-o',
      'json',
    ]);
    expect(JSON.parse(out.stdout).serverVersion.gitVersion).toBe(`v${wanted}`);
    const node = await kubeConfig().makeApiClient(CoreV1Api).readNode({ name: NODE_NAME });
    expect(node.status?.nodeInfo?.kubeletVersion).toBe(`v${wanted}-testbed`);
  });

  it('admits as a real cluster does: ServiceAccount and PodSecurity admission are on', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const pod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'admitted' },
      spec: { containers: [{ name: 'web', image: 'registry.example/web:1.0.0' }] },
    };
    const created = await eventually('a pod admitted once the namespace has its service account', () =>
      core.createNamespacedPod({ namespace: ns(), body: pod }).catch(() => undefined),
    );
    // ServiceAccount admission: the default account and its projected token volume.
    expect(created.spec?.serviceAccountName).toBe('default');
    expect(created.spec?.volumes?.some((v) => v.name.startsWith('kube-api-access-'))).toBe(true);
    const ready = await eventually('the pod reported ready', async () => {
      const p = await core.readNamespacedPod({ name: 'admitted', namespace: ns() });
      return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
    });
    // What a 1.29+ kubelet writes beside Ready.
    expect(ready.status?.conditions?.find((c) => c.type === 'PodReadyToStartContainers')?.status).toBe(
      'True',
    );
    // The generation it acted on, as a 1.33+ server counts a Pod's generations and a kubelet of today reports it.
    expect(ready.metadata?.generation).toBe(1);
    expect(ready.status?.observedGeneration).toBe(1);
    expect(ready.status?.conditions?.every((c) => c.observedGeneration === 1)).toBe(true);

    // PodSecurity admission: a namespace enforcing `restricted` refuses a privileged Pod, naming the rule.
    const strict = `${ns()}-restricted`;
    await core.createNamespace({
      body: { metadata: { name: strict, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    });
    try {
      const privileged: V1Pod = {
        ...pod,
        spec: {
          containers: [
            { name: 'web', image: 'registry.example/web:1.0.0', securityContext: { privileged: true } },
          ],
        },
      };
      const refused = await core.createNamespacedPod({ namespace: strict, body: privileged }).then(
        () => 'admitted',
        (error: Error) => error.message.replaceAll('\\', ''),
      );
      expect(refused).toMatch(/violates PodSecurity "restricted:latest": privileged/);
    } finally {
      await core.deleteNamespace({ name: strict }).catch(() => undefined);
    }
  });

  it('rolls out a Deployment through the real controllers, and kubectl rollout status agrees', async () => {
    const kc = kubeConfig();
    const apps = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    await apps.createNamespacedDeployment({ namespace: ns(), body: deployment('web', 3) });

    const status = await eventually('deployment web available', async () => {
      const d = await apps.readNamespacedDeployment({ name: 'web', namespace: ns() });
      const s = d.status;
      return s?.readyReplicas === 3 && s.availableReplicas === 3 && s.updatedReplicas === 3 ? s : undefined;
    });
    expect(status.observedGeneration).toBe(1);

    const replicaSets = await apps.listNamespacedReplicaSet({ namespace: ns() });
    expect(replicaSets.items).toHaveLength(1);
    expect(replicaSets.items[0]?.metadata?.ownerReferences?.[0]?.name).toBe('web');
    const pods = await core.listNamespacedPod({ namespace: ns(), labelSelector: 'app=web' });
    expect(pods.items).toHaveLength(3);
    for (const pod of pods.items) {
      expect(pod.spec?.nodeName).toBe(NODE_NAME);
      expect(pod.status?.phase).toBe('Running');
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    }

    const rollout = await rolloutStatus(ns(), 'web', '60s');
    expect(rollout.code, rollout.stderr).toBe(0);
    expect(rollout.stdout).toContain('successfully rolled out');
  });

  it('keeps a Deployment whose pods never become ready unavailable', async () => {
    const kc = kubeConfig();
    const apps = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    await apps.createNamespacedDeployment({
      namespace: ns(),
      body: deployment('stuck', 2, { [BEHAVIOR]: 'never-ready' }),
    });
    // Wait until the kubelet has reported on both pods, so that "unavailable" is its verdict, not slowness.
    await eventually('pods of stuck running', async () => {
      const pods = await core.listNamespacedPod({ namespace: ns(), labelSelector: 'app=stuck' });
      return pods.items.length === 2 && pods.items.every((p) => p.status?.phase === 'Running')
        ? true
        : undefined;
    });
    const d = await eventually('stuck observed', async () => {
      const dep = await apps.readNamespacedDeployment({ name: 'stuck', namespace: ns() });
      return dep.status?.unavailableReplicas === 2 ? dep : undefined;
    });
    expect(d.status?.availableReplicas ?? 0).toBe(0);
    expect(d.status?.readyReplicas ?? 0).toBe(0);

    const rollout = await rolloutStatus(ns(), 'stuck', '3s');
    expect(rollout.code).not.toBe(0);
    expect(rollout.stdout + rollout.stderr).toMatch(/0 of 2 updated replicas are available|timed out/);
  });

  it('reports crash-looping and failed pods as a real kubelet would', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    for (const behavior of ['crash-loop', 'fail'] as const) {
      await core.createNamespacedPod({
        namespace: ns(),
        body: {
          metadata: { name: behavior, annotations: { [BEHAVIOR]: behavior } },
          spec: { restartPolicy: 'Always', containers: [{ name: 'app', image: 'registry.example/app:1' }] },
        },
      });
    }
    const crash = await eventually('crash-loop pod', async () => {
      const pod = await core.readNamespacedPod({ name: 'crash-loop', namespace: ns() });
      return pod.status?.containerStatuses?.[0]?.state?.waiting ? pod : undefined;
    });
    expect(crash.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('CrashLoopBackOff');
    expect(crash.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    const failed = await eventually('failed pod', async () => {
      const pod = await core.readNamespacedPod({ name: 'fail', namespace: ns() });
      return pod.status?.phase === 'Failed' ? pod : undefined;
    });
    expect(failed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(1);
  });

  it('completes a Job through the real Job controller', async () => {
    const batch = kubeConfig().makeApiClient(BatchV1Api);
    await batch.createNamespacedJob({
      namespace: ns(),
      body: {
        metadata: { name: 'once' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: { restartPolicy: 'Never', containers: [{ name: 'job', image: 'registry.example/job:1' }] },
          },
        },
      },
    });
    const job = await eventually('job once complete', async () => {
      const j = await batch.readNamespacedJob({ name: 'once', namespace: ns() });
      return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ? j : undefined;
    });
    expect(job.status?.succeeded).toBe(1);
  });

  it('binds LoadBalancer Services unless told never to', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const service = (name: string, annotations: Record<string, string> = {}) => ({
      metadata: { name, annotations },
      spec: { type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ port: 80 }] },
    });
    await core.createNamespacedService({ namespace: ns(), body: service('public') });
    await core.createNamespacedService({
      namespace: ns(),
      body: service('unbound', { [LOAD_BALANCER]: 'never' }),
    });
    const bound = await eventually('public bound', async () => {
      const s = await core.readNamespacedService({ name: 'public', namespace: ns() });
      return s.status?.loadBalancer?.ingress?.length ? s : undefined;
    });
    expect(bound.status?.loadBalancer?.ingress?.[0]?.hostname).toBe(lbHostname('public', ns()));
    // The kubelet handles events in order per object; both services exist, so a short wait is a fair check.
    await new Promise((r) => setTimeout(r, 1500));
    const unbound = await core.readNamespacedService({ name: 'unbound', namespace: ns() });
    expect(unbound.status?.loadBalancer?.ingress ?? []).toHaveLength(0);
  });

  it('runs a DaemonSet pod on the test-bed node, with no toleration needed', async () => {
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDaemonSet({
      namespace: ns(),
      body: {
        metadata: { name: 'agent' },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: {
            metadata: { labels: { app: 'agent' } },
            spec: { containers: [{ name: 'agent', image: 'registry.example/agent:1' }] },
          },
        },
      },
    });
    const ds = await eventually('daemonset ready', async () => {
      const d = await apps.readNamespacedDaemonSet({ name: 'agent', namespace: ns() });
      return d.status?.numberReady === 1 ? d : undefined;
    });
    expect(ds.status?.desiredNumberScheduled).toBe(1);
  });

  it('binds Ingresses to a load balancer', async () => {
    const networking = kubeConfig().makeApiClient(NetworkingV1Api);
    await networking.createNamespacedIngress({
      namespace: ns(),
      body: {
        metadata: { name: 'site' },
        spec: { defaultBackend: { service: { name: 'public', port: { number: 80 } } } },
      },
    });
    const bound = await eventually('ingress site bound', async () => {
      const ing = await networking.readNamespacedIngress({ name: 'site', namespace: ns() });
      return ing.status?.loadBalancer?.ingress?.length ? ing : undefined;
    });
    expect(bound.status?.loadBalancer?.ingress?.[0]?.hostname).toBe(lbHostname('site', ns()));
  });
});

/** `kubectl rollout status deployment/NAME` on the test bed, as a person checks a rollout. */
function rolloutStatus(namespace: string, name: string, timeout: string) {
  const env = testbed();
  return runTool(env.tools.kubectl, [
    '--kubeconfig',
    env.kube.kubeconfig,
    '-n',
    namespace,
    'rollout',
    'status',
    `deployment/${name}`,
    `--timeout=${timeout}`,
  ]);
}
