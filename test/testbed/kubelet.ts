// The test bed's kubelet: there is no scheduler or kubelet on the test bed, so this loop plays both, the way
// kwok does. It registers one fake Node, binds every Pod to it and reports the Pod Running and Ready, so that the
// real controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job) complete their rollouts. Tests steer it
// per Pod with an annotation or label on the pod template:
//   testbed.mooring.io/behavior: ready (default) | never-ready | crash-loop | fail | succeed
// Pods owned by a Job succeed by default. LoadBalancer Services and Ingresses get status.loadBalancer, unless
// annotated `testbed.mooring.io/load-balancer: never`.
// As a real kubelet, it starts no Pod whose ConfigMaps and Secrets (volumes, env) are missing (pod-config.ts): the
// Pod waits (ContainerCreating or CreateContainerConfigError) with a warning Event, and is tried again with a
// backoff (500 ms doubling to the resync interval) until they exist.
// As kube-scheduler, it binds no Pod whose PersistentVolumeClaims are missing or unbound (pod-claims.ts): the Pod
// stays Pending and unscheduled with a FailedScheduling Event. As a cluster's storage provisioner, it keeps a
// default StorageClass (`standard`, binding at once) and makes a PersistentVolume for each claim of it, which the
// controller manager's persistentvolume-binder binds; a volume released by its deleted claim is deleted.
import { randomBytes } from 'node:crypto';
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  makeInformer,
  NetworkingV1Api,
  PatchStrategy,
  StorageV1Api,
  setHeaderOptions,
  type V1Container,
  type V1ContainerStatus,
  type V1Ingress,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1Pod,
  type V1PodStatus,
  type V1Service,
  type V1StorageClass,
  VersionApi,
} from '@kubernetes/client-node';
import {
  claimNames,
  claimProblem,
  type ScheduleProblem,
  SELECTED_NODE,
  storageClasses,
  unschedulableStatus,
  type VolumeBinding,
  volumeFor,
  volumeToDelete,
} from './pod-claims.ts';
import {
  blockedPodStatus,
  type ConfigKind,
  type ConfigProblem,
  configProblem,
  configReferences,
} from './pod-config.ts';

export const BEHAVIOR = 'testbed.mooring.io/behavior';
export const LOAD_BALANCER = 'testbed.mooring.io/load-balancer';
export const NODE_NAME = 'testbed-node';
const RESYNC_MS = 10_000;
/** How long a ConfigMap or Secret found is taken as there without reading it again. */
const FOUND_MS = 2000;
export const BEHAVIORS = ['ready', 'never-ready', 'crash-loop', 'fail', 'succeed'] as const;
export type Behavior = (typeof BEHAVIORS)[number];

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

type Log = (message: string, fields?: Record<string, unknown>) => void;

export function behaviorOf(pod: V1Pod): Behavior {
  const value = pod.metadata?.annotations?.[BEHAVIOR] ?? pod.metadata?.labels?.[BEHAVIOR];
  if (value && (BEHAVIORS as readonly string[]).includes(value)) return value as Behavior;
  const ownedByJob = pod.metadata?.ownerReferences?.some((o) => o.kind === 'Job') ?? false;
  return ownedByJob ? 'succeed' : 'ready';
}

/**
 * The pod's QoS class as the API server computes it at creation (only cpu and memory count): a kubelet never
 * changes it, and a 1.37 server refuses a status that does (status.qosClass is immutable).
 */
export function qosClassOf(pod: V1Pod): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const compute = ['cpu', 'memory'];
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const requests = c.resources?.requests ?? {};
    const limits = c.resources?.limits ?? {};
    if (compute.some((r) => r in requests || r in limits)) any = true;
    // Requests left out default to the limits; Guaranteed needs both limits, with requests equal to them.
    for (const r of compute)
      if (!(r in limits) || (r in requests && String(requests[r]) !== String(limits[r]))) guaranteed = false;
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** The status a real kubelet would report for a pod with this behavior. Pure, so tests can read it. */
export function podStatusFor(pod: V1Pod, behavior: Behavior, podIP: string, now: Date): V1PodStatus {
  const containers = pod.spec?.containers ?? [];
  const started = now;
  const imageOf = (c: V1Container) => c.image ?? '';
  const base = (c: V1Container): V1ContainerStatus => ({
    name: c.name,
    image: imageOf(c),
    imageID: `testbed://${imageOf(c)}`,
    containerID: `testbed://${pod.metadata?.uid ?? 'pod'}/${c.name}`,
    ready: false,
    restartCount: 0,
    started: false,
  });
  let phase: string;
  let statuses: V1ContainerStatus[];
  switch (behavior) {
    case 'ready':
    case 'never-ready':
      phase = 'Running';
      statuses = containers.map((c) => ({
        ...base(c),
        ready: behavior === 'ready',
        started: true,
        state: { running: { startedAt: started } },
      }));
      break;
    case 'crash-loop':
      phase = 'Running';
      statuses = containers.map((c) => ({
        ...base(c),
        restartCount: 3,
        state: {
          waiting: {
            reason: 'CrashLoopBackOff',
            message: `back-off 40s restarting failed container=${c.name}`,
          },
        },
        lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: started, finishedAt: started } },
      }));
      break;
    case 'fail':
    case 'succeed': {
      const ok = behavior === 'succeed';
      phase = ok ? 'Succeeded' : 'Failed';
      statuses = containers.map((c) => ({
        ...base(c),
        state: {
          terminated: {
            exitCode: ok ? 0 : 1,
            reason: ok ? 'Completed' : 'Error',
            startedAt: started,
            finishedAt: started,
          },
        },
      }));
      break;
    }
  }
  const ready = behavior === 'ready';
  const condition = (type: string, status: boolean, reason?: string) => ({
    type,
    ...(pod.metadata?.generation === undefined ? {} : { observedGeneration: pod.metadata.generation }),
    status: status ? 'True' : 'False',
    lastTransitionTime: now,
    ...(reason ? { reason } : {}),
  });
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  // What a kubelet of today writes: the sandbox condition (1.29+), and the generation it acted on where the server
  // counts a Pod's generations (1.33+).
  const generation = pod.metadata?.generation;
  const observed = generation === undefined ? {} : { observedGeneration: generation };
  return {
    ...observed,
    phase,
    hostIP: '127.0.0.1',
    podIP,
    podIPs: [{ ip: podIP }],
    startTime: now,
    qosClass: pod.status?.qosClass ?? qosClassOf(pod),
    conditions: [
      condition('PodReadyToStartContainers', !terminal),
      condition('PodScheduled', true),
      condition('Initialized', true),
      condition(
        'ContainersReady',
        ready,
        ready ? undefined : terminal ? 'PodCompleted' : 'ContainersNotReady',
      ),
      condition('Ready', ready, ready ? undefined : terminal ? 'PodCompleted' : 'ContainersNotReady'),
    ],
    initContainerStatuses: (pod.spec?.initContainers ?? []).map((c) => ({
      ...base(c),
      state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: started, finishedAt: started } },
    })),
    containerStatuses: statuses,
  };
}

export class TestbedKubelet {
  private readonly core: CoreV1Api;
  private readonly networking: NetworkingV1Api;
  private readonly storage: StorageV1Api;
  private readonly kc: KubeConfig;
  private readonly log: Log;
  /** What we last reported per pod uid, so our own status updates do not loop. */
  private readonly reported = new Map<string, string>();
  /** One chain of work per object: events for the same object never race each other. */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly stops: (() => void)[] = [];
  /** Pods that cannot start for want of their configuration: what was reported, the Event, the next try. */
  private readonly blocked = new Map<
    string,
    { message: string; event: string; count: number; delayMs: number; timer?: NodeJS.Timeout }
  >();
  private enqueuePod: ((pod: V1Pod) => void) | undefined;
  /** ConfigMaps and Secrets found lately, by `namespace/kind/name`. */
  private readonly found = new Map<string, { keys: ReadonlySet<string>; at: number }>();
  private nextIp = 2;
  private stopped = false;

  constructor(kc: KubeConfig, log: Log) {
    this.kc = kc;
    this.log = log;
    this.core = kc.makeApiClient(CoreV1Api);
    this.networking = kc.makeApiClient(NetworkingV1Api);
    this.storage = kc.makeApiClient(StorageV1Api);
  }

  async start(): Promise<void> {
    await this.registerNode();
    this.enqueuePod = await this.watch(
      '/api/v1/pods',
      () => this.core.listPodForAllNamespaces(),
      (pod: V1Pod) => this.syncPod(pod),
    );
    await this.watch(
      '/api/v1/services',
      () => this.core.listServiceForAllNamespaces(),
      (svc: V1Service) => this.syncService(svc),
    );
    await this.watch(
      '/apis/networking.k8s.io/v1/ingresses',
      () => this.networking.listIngressForAllNamespaces(),
      (ing: V1Ingress) => this.syncIngress(ing),
    );
    await this.registerStorageClass();
    await this.watch(
      '/api/v1/persistentvolumeclaims',
      () => this.core.listPersistentVolumeClaimForAllNamespaces(),
      (claim: V1PersistentVolumeClaim) => this.syncClaim(claim),
    );
    await this.watch(
      '/api/v1/persistentvolumes',
      () => this.core.listPersistentVolume(),
      (volume: V1PersistentVolume) => this.syncVolume(volume),
    );
  }

  /**
   * The StorageClasses a cluster's installer leaves: the default `standard`, binding at once, and `local-path`,
   * binding on first consumer (kind's and most clouds' default classes bind so).
   */
  private async registerStorageClass(): Promise<void> {
    for (const body of storageClasses()) {
      try {
        await this.storage.createStorageClass({ body });
      } catch (error) {
        if (statusCode(error) !== 409) throw error;
      }
    }
  }

  /** A StorageClass as the API server has it now; undefined when there is none of that name. */
  private async storageClassOf(name: string | undefined): Promise<V1StorageClass | undefined> {
    if (!name) return undefined;
    try {
      return await this.storage.readStorageClass({ name });
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
      return undefined;
    }
  }

  /** A claim of one of the bed's StorageClasses without a volume gets one made for it; the binder binds the two. */
  private async syncClaim(claim: V1PersistentVolumeClaim): Promise<void> {
    if (claim.status?.phase === 'Bound' || claim.metadata?.deletionTimestamp) return;
    const volume = volumeFor(claim, await this.storageClassOf(claim.spec?.storageClassName));
    if (!volume) return;
    try {
      await this.core.createPersistentVolume({ body: volume });
      this.log('volume provisioned', {
        namespace: claim.metadata?.namespace,
        claim: claim.metadata?.name,
        volume: volume.metadata?.name,
      });
    } catch (error) {
      if (statusCode(error) !== 409) throw error;
    }
  }

  /** A volume the provisioner made, released by its deleted claim, is deleted (reclaimPolicy Delete). */
  private async syncVolume(volume: V1PersistentVolume): Promise<void> {
    if (!volumeToDelete(volume)) return;
    await this.core.deletePersistentVolume({ name: volume.metadata?.name ?? '' });
    this.log('volume deleted', { volume: volume.metadata?.name });
  }

  /**
   * Why the scheduler would not bind the Pod for want of its claims, reading each and its StorageClass (undefined:
   * it can). Claims of a class that binds on first consumer are given this node, as the scheduler's PreBind does.
   */
  private async scheduleProblemOf(
    pod: V1Pod,
    namespace: string,
  ): Promise<ScheduleProblem | VolumeBinding | undefined> {
    const names = claimNames(pod);
    if (names.length === 0) return undefined;
    const claims = new Map<string, V1PersistentVolumeClaim | undefined>();
    const modes = new Map<string, string | undefined>();
    for (const name of names) {
      try {
        const claim = await this.core.readNamespacedPersistentVolumeClaim({ name, namespace });
        claims.set(name, claim);
        const className = claim.spec?.storageClassName;
        if (className && !modes.has(className))
          modes.set(className, (await this.storageClassOf(className))?.volumeBindingMode ?? undefined);
      } catch (error) {
        if (statusCode(error) !== 404) throw error;
        claims.set(name, undefined);
      }
    }
    const problem = claimProblem(
      pod,
      (name) => claims.get(name),
      (className) => modes.get(className),
    );
    if (problem?.stage === 'bind')
      for (const name of problem.select) {
        await this.core.patchNamespacedPersistentVolumeClaim(
          { name, namespace, body: { metadata: { annotations: { [SELECTED_NODE]: NODE_NAME } } } },
          mergePatch,
        );
        this.log('node selected for claim', { namespace, claim: name, pod: pod.metadata?.name });
      }
    return problem;
  }

  stop(): void {
    this.stopped = true;
    for (const stop of this.stops) stop();
    for (const b of this.blocked.values()) clearTimeout(b.timer);
  }

  private async registerNode(): Promise<void> {
    // The node says it runs the server's own version, as a kubelet of the same release would.
    const server = await this.kc
      .makeApiClient(VersionApi)
      .getCode()
      .catch(() => undefined);
    const kubeletVersion = `${server?.gitVersion ?? 'v0.0.0'}-testbed`;
    const capacity = { cpu: '64', memory: '256Gi', pods: '1000', 'ephemeral-storage': '500Gi' };
    const now = new Date();
    const status = {
      capacity,
      allocatable: capacity,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'testbed kubelet is posting ready status',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
        {
          type: 'MemoryPressure',
          status: 'False',
          reason: 'KubeletHasSufficientMemory',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
        {
          type: 'DiskPressure',
          status: 'False',
          reason: 'KubeletHasNoDiskPressure',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
        {
          type: 'PIDPressure',
          status: 'False',
          reason: 'KubeletHasSufficientPID',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
      addresses: [
        { type: 'InternalIP', address: '127.0.0.1' },
        { type: 'Hostname', address: NODE_NAME },
      ],
      nodeInfo: {
        architecture: 'amd64',
        operatingSystem: 'linux',
        kubeletVersion,
        // Deprecated since 1.31 and left empty by kubelets; the client's type still asks for it.
        kubeProxyVersion: '',
        containerRuntimeVersion: 'testbed://1',
        bootID: '',
        kernelVersion: '',
        machineID: '',
        osImage: 'mooring test bed',
        systemUUID: '',
      },
    };
    const metadata = {
      name: NODE_NAME,
      labels: {
        'kubernetes.io/hostname': NODE_NAME,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'node.kubernetes.io/instance-type': 'testbed',
      },
    };
    try {
      await this.core.createNode({ body: { apiVersion: 'v1', kind: 'Node', metadata, spec: {}, status } });
    } catch (error) {
      if (statusCode(error) !== 409) throw error;
    }
    // Creation may drop status on some versions: set it explicitly.
    await this.core.patchNodeStatus({ name: NODE_NAME, body: { status } }, mergePatch);
    // The apiserver's TaintNodesByCondition admission taints every new node not-ready; the node lifecycle
    // controller would lift it once the node reports Ready, but the test bed runs none. Without this, DaemonSet
    // pods (which do not tolerate it) are never created.
    await this.core.patchNode({ name: NODE_NAME, body: { spec: { taints: null } } }, mergePatch);
  }

  private async watch<T extends KubernetesObject>(
    path: string,
    list: () => Promise<{ items: T[] }>,
    sync: (obj: T) => Promise<void>,
  ): Promise<(obj: T) => void> {
    const informer = makeInformer<T>(this.kc, path, list as never);
    const enqueue = (obj: T) => {
      const key = obj.metadata?.uid ?? `${obj.metadata?.namespace}/${obj.metadata?.name}`;
      const previous = this.chains.get(key) ?? Promise.resolve();
      const next = previous
        .then(() => sync(obj))
        .catch((error: unknown) => {
          const code = statusCode(error);
          if (code !== 404 && code !== 409) {
            this.log('sync failed', { path, name: obj.metadata?.name, error: describe(error) });
          }
        })
        .finally(() => {
          if (this.chains.get(key) === next) this.chains.delete(key);
        });
      this.chains.set(key, next);
    };
    informer.on('add', enqueue);
    informer.on('update', enqueue);
    informer.on('error', (error: unknown) => {
      if (this.stopped) return;
      this.log('watch failed, restarting', { path, error: describe(error) });
      setTimeout(() => {
        if (!this.stopped) void informer.start().catch(() => undefined);
      }, 1000);
    });
    await informer.start();
    // A periodic resync, as a real kubelet's: an event lost while the API server was down or stopped (a pod marked
    // for deletion, a sync that failed) is acted on at the next one instead of never.
    const resync = setInterval(() => {
      if (this.stopped) return;
      list()
        .then((result) => {
          for (const obj of result.items) {
            const key = obj.metadata?.uid ?? `${obj.metadata?.namespace}/${obj.metadata?.name}`;
            if (!this.chains.has(key)) enqueue(obj);
          }
        })
        .catch(() => undefined);
    }, RESYNC_MS);
    this.stops.push(() => {
      clearInterval(resync);
      void informer.stop();
    });
    return enqueue;
  }

  private async syncPod(pod: V1Pod): Promise<void> {
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? 'default';
    const uid = pod.metadata?.uid ?? '';
    if (pod.metadata?.deletionTimestamp) {
      // A real kubelet stops the containers and then removes the pod; without it pods stay Terminating forever.
      this.reported.delete(uid);
      clearTimeout(this.blocked.get(uid)?.timer);
      this.blocked.delete(uid);
      await this.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
      return;
    }
    if (!pod.spec?.nodeName) {
      const unschedulable = await this.scheduleProblemOf(pod, namespace);
      if (unschedulable) {
        await this.block(pod, unschedulable, '');
        return;
      }
      clearTimeout(this.blocked.get(uid)?.timer);
      this.blocked.delete(uid);
      await this.core.createNamespacedPodBinding({
        name,
        namespace,
        body: {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name, namespace },
          target: { apiVersion: 'v1', kind: 'Node', name: NODE_NAME },
        },
      });
      return; // the binding's update event brings the pod back here
    }
    if (pod.spec.nodeName !== NODE_NAME) return;
    const behavior = behaviorOf(pod);
    if (this.reported.get(uid) === behavior) return;
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return; // terminal phases are final
    const ip = pod.status?.podIP ?? `10.244.${Math.floor(this.nextIp / 250)}.${(this.nextIp++ % 250) + 2}`;
    const problem = await this.configProblemOf(pod, namespace);
    if (problem) {
      await this.block(pod, problem, ip);
      return;
    }
    clearTimeout(this.blocked.get(uid)?.timer);
    this.blocked.delete(uid);
    const status = podStatusFor(pod, behavior, ip, new Date());
    await this.core.patchNamespacedPodStatus({ name, namespace, body: { status } }, mergePatch);
    this.reported.set(uid, behavior);
    this.log('pod status set', { namespace, name, behavior });
  }

  /** Reads what the Pod mounts and reads into its environment, as the kubelet does before starting it. */
  private async configProblemOf(pod: V1Pod, namespace: string): Promise<ConfigProblem | undefined> {
    const refs = configReferences(pod);
    if (refs.length === 0) return undefined;
    const found = new Map<string, ReadonlySet<string> | undefined>();
    for (const ref of refs) {
      const key = `${ref.kind}/${ref.name}`;
      if (found.has(key)) continue;
      found.set(key, await this.keysOf(ref.kind, ref.name, namespace));
    }
    return configProblem(namespace, refs, (kind: ConfigKind, name: string) => found.get(`${kind}/${name}`));
  }

  /**
   * The keys of a ConfigMap or Secret, or undefined when it is missing. What was found is kept for a moment (the
   * Pods of one rollout, and the kube-root-ca.crt every Pod mounts, cost one read), as a kubelet's watch-fed cache
   * would; what was missing is read again at every try.
   */
  private async keysOf(
    kind: ConfigKind,
    name: string,
    namespace: string,
  ): Promise<ReadonlySet<string> | undefined> {
    const key = `${namespace}/${kind}/${name}`;
    const now = Date.now();
    const cached = this.found.get(key);
    if (cached && now - cached.at < FOUND_MS) return cached.keys;
    let keys: ReadonlySet<string>;
    try {
      if (kind === 'ConfigMap') {
        const cm = await this.core.readNamespacedConfigMap({ name, namespace });
        keys = new Set([...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})]);
      } else {
        const secret = await this.core.readNamespacedSecret({ name, namespace });
        keys = new Set(Object.keys(secret.data ?? {}));
      }
    } catch (error) {
      if (statusCode(error) === 404) {
        this.found.delete(key);
        return undefined;
      }
      throw error;
    }
    if (this.found.size >= 10_000)
      for (const [k, v] of this.found) if (now - v.at >= FOUND_MS) this.found.delete(k);
    this.found.set(key, { keys, at: now });
    return keys;
  }

  /**
   * Reports a Pod that cannot start (its status and a warning Event, counted up while it stays so) and tries it
   * again after a backoff, reading the Pod afresh.
   */
  private async block(
    pod: V1Pod,
    problem: ConfigProblem | ScheduleProblem | VolumeBinding,
    ip: string,
  ): Promise<void> {
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? 'default';
    const uid = pod.metadata?.uid ?? '';
    const now = new Date();
    const previous = this.blocked.get(uid);
    let entry = previous;
    if (problem.stage === 'bind') {
      // Waiting for volumes to be bound says nothing (the scheduler's PreBind waits so): only tried again.
      if (!previous || previous.message !== problem.message) {
        clearTimeout(previous?.timer);
        entry = { message: problem.message, event: '', count: 1, delayMs: 250 };
        this.blocked.set(uid, entry);
      } else if (!previous.timer) previous.delayMs = Math.min(previous.delayMs * 2, RESYNC_MS);
    } else if (!previous || previous.message !== problem.message) {
      clearTimeout(previous?.timer);
      const status =
        problem.stage === 'schedule'
          ? unschedulableStatus(pod, problem, now)
          : blockedPodStatus(pod, problem, ip, pod.status?.qosClass ?? qosClassOf(pod), now);
      await this.core.patchNamespacedPodStatus({ name, namespace, body: { status } }, mergePatch);
      const component = problem.stage === 'schedule' ? 'default-scheduler' : 'kubelet';
      const event = `${name.slice(0, 200)}.${randomBytes(8).toString('hex')}`;
      await this.core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { name: event, namespace },
          involvedObject: { apiVersion: 'v1', kind: 'Pod', name, namespace, uid },
          reason: problem.reason,
          message: problem.message,
          type: 'Warning',
          source: component === 'kubelet' ? { component, host: NODE_NAME } : { component },
          reportingComponent: component,
          reportingInstance: component === 'kubelet' ? NODE_NAME : component,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
      entry = { message: problem.message, event, count: 1, delayMs: 500 };
      this.blocked.set(uid, entry);
      this.log('pod blocked', { namespace, name, reason: problem.reason, why: problem.message });
    } else if (!previous.timer) {
      // Tried again and still so: the Event is counted up, as a kubelet's recorder does.
      previous.count += 1;
      previous.delayMs = Math.min(previous.delayMs * 2, RESYNC_MS);
      await this.core
        .patchNamespacedEvent(
          { name: previous.event, namespace, body: { count: previous.count, lastTimestamp: now } },
          mergePatch,
        )
        .catch(() => undefined);
    }
    if (!entry || entry.timer || this.stopped) return;
    const current = entry;
    current.timer = setTimeout(() => {
      current.timer = undefined;
      if (this.stopped || this.blocked.get(uid) !== current) return;
      this.core
        .readNamespacedPod({ name, namespace })
        .then((fresh) => {
          if (fresh.metadata?.uid === uid) this.enqueuePod?.(fresh);
          else this.blocked.delete(uid);
        })
        .catch((error: unknown) => {
          if (statusCode(error) === 404) this.blocked.delete(uid);
          else this.enqueuePod?.(pod);
        });
    }, current.delayMs);
  }

  private async syncService(svc: V1Service): Promise<void> {
    if (svc.spec?.type !== 'LoadBalancer') return;
    if (svc.metadata?.annotations?.[LOAD_BALANCER] === 'never') return;
    if ((svc.status?.loadBalancer?.ingress?.length ?? 0) > 0) return;
    const name = svc.metadata?.name ?? '';
    const namespace = svc.metadata?.namespace ?? 'default';
    await this.core.patchNamespacedServiceStatus(
      {
        name,
        namespace,
        body: { status: { loadBalancer: { ingress: [{ hostname: lbHostname(name, namespace) }] } } },
      },
      mergePatch,
    );
    this.log('load balancer bound', { kind: 'Service', namespace, name });
  }

  private async syncIngress(ing: V1Ingress): Promise<void> {
    if (ing.metadata?.annotations?.[LOAD_BALANCER] === 'never') return;
    if ((ing.status?.loadBalancer?.ingress?.length ?? 0) > 0) return;
    const name = ing.metadata?.name ?? '';
    const namespace = ing.metadata?.namespace ?? 'default';
    await this.networking.patchNamespacedIngressStatus(
      {
        name,
        namespace,
        body: { status: { loadBalancer: { ingress: [{ hostname: lbHostname(name, namespace) }] } } },
      },
      mergePatch,
    );
    this.log('load balancer bound', { kind: 'Ingress', namespace, name });
  }
}

/** A name under the reserved .invalid top-level domain: status data only, never resolvable. */
export function lbHostname(name: string, namespace: string): string {
  return `${name}.${namespace}.lb.testbed.invalid`;
}

function statusCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message.slice(0, 500);
  return String(error).slice(0, 500);
}
