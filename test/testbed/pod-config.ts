// What a real kubelet checks before it starts a Pod's containers: every ConfigMap and Secret the Pod mounts
// (volumes, projected volumes) or reads into its environment (env valueFrom, envFrom) exists and holds the keys it
// names, unless the reference is `optional`. Without this the test bed's kubelet started Pods whose configuration
// was never applied, or pruned, and a dangling version reference passed every test; on a cluster those Pods stay
// ContainerCreating (FailedMount) or wait in CreateContainerConfigError, and the rollout never completes.
// Pure: the kubelet loop (kubelet.ts) reads the objects and turns a problem into a status and an Event.
import type {
  V1Container,
  V1EnvFromSource,
  V1EnvVar,
  V1KeyToPath,
  V1Pod,
  V1PodStatus,
} from '@kubernetes/client-node';

export type ConfigKind = 'ConfigMap' | 'Secret';

export interface ConfigReference {
  kind: ConfigKind;
  name: string;
  /** Keys the reference needs (volume items, a key ref); none for a whole-object reference. */
  keys: string[];
  /** A volume's name (checked at mount) or a container's (checked at its start). */
  volume?: string;
  container?: string;
  /** An init container's: it runs before the others. */
  init?: boolean;
}

/** The keys one ConfigMap or Secret holds, or undefined when it does not exist. */
export type ConfigLookup = (kind: ConfigKind, name: string) => ReadonlySet<string> | undefined;

export interface ConfigProblem {
  /** `mount`: the Pod's volumes cannot be set up; `start`: one container cannot be created. */
  stage: 'mount' | 'start';
  /** The Event's reason, as a kubelet names it. */
  reason: 'FailedMount' | 'Failed';
  /** The Event's message. */
  message: string;
  /** For `start`: the container, and what its status says. */
  container?: string;
  init?: boolean;
  waitingMessage?: string;
}

const keysOf = (items: V1KeyToPath[] | undefined) => (items ?? []).map((i) => i.key);

/** Every non-optional ConfigMap and Secret reference of a Pod, volumes first (mounted before any container runs). */
export function configReferences(pod: V1Pod): ConfigReference[] {
  const refs: ConfigReference[] = [];
  const mounted = (
    kind: ConfigKind,
    source: { name?: string; optional?: boolean; items?: V1KeyToPath[] } | undefined,
    volume: string,
  ) => {
    if (source?.name && !source.optional)
      refs.push({ kind, name: source.name, keys: keysOf(source.items), volume });
  };
  for (const volume of pod.spec?.volumes ?? []) {
    mounted('ConfigMap', volume.configMap, volume.name);
    const secret = volume.secret;
    mounted(
      'Secret',
      secret && { ...secret, ...(secret.secretName ? { name: secret.secretName } : {}) },
      volume.name,
    );
    for (const source of volume.projected?.sources ?? []) {
      mounted('ConfigMap', source.configMap, volume.name);
      mounted('Secret', source.secret, volume.name);
    }
  }
  const containers: [V1Container, boolean][] = [
    ...(pod.spec?.initContainers ?? []).map((c): [V1Container, boolean] => [c, true]),
    ...(pod.spec?.containers ?? []).map((c): [V1Container, boolean] => [c, false]),
  ];
  for (const [container, init] of containers) {
    const at = { container: container.name, ...(init ? { init } : {}) };
    for (const from of container.envFrom ?? ([] as V1EnvFromSource[])) {
      if (from.configMapRef?.name && !from.configMapRef.optional)
        refs.push({ kind: 'ConfigMap', name: from.configMapRef.name, keys: [], ...at });
      if (from.secretRef?.name && !from.secretRef.optional)
        refs.push({ kind: 'Secret', name: from.secretRef.name, keys: [], ...at });
    }
    for (const env of container.env ?? ([] as V1EnvVar[])) {
      const cm = env.valueFrom?.configMapKeyRef;
      if (cm?.name && !cm.optional) refs.push({ kind: 'ConfigMap', name: cm.name, keys: [cm.key], ...at });
      const secret = env.valueFrom?.secretKeyRef;
      if (secret?.name && !secret.optional)
        refs.push({ kind: 'Secret', name: secret.name, keys: [secret.key], ...at });
    }
  }
  return refs;
}

/** The first reason the kubelet would not start this Pod, with a kubelet's words, or undefined. */
export function configProblem(
  namespace: string,
  refs: readonly ConfigReference[],
  lookup: ConfigLookup,
): ConfigProblem | undefined {
  for (const ref of refs) {
    const keys = lookup(ref.kind, ref.name);
    const lower = ref.kind === 'ConfigMap' ? 'configmap' : 'secret';
    const missingKey = keys === undefined ? undefined : ref.keys.find((k) => !keys.has(k));
    if (keys !== undefined && missingKey === undefined) continue;
    if (ref.volume !== undefined) {
      const why =
        keys === undefined
          ? `${lower} "${ref.name}" not found`
          : `${lower} references non-existent ${ref.kind === 'ConfigMap' ? 'config' : 'secret'} key: ${missingKey}`;
      return {
        stage: 'mount',
        reason: 'FailedMount',
        message: `MountVolume.SetUp failed for volume "${ref.volume}" : ${why}`,
      };
    }
    const why =
      keys === undefined
        ? `${lower} "${ref.name}" not found`
        : `couldn't find key ${missingKey} in ${ref.kind} ${namespace}/${ref.name}`;
    return {
      stage: 'start',
      reason: 'Failed',
      message: `Error: ${why}`,
      waitingMessage: why,
      ...(ref.container === undefined ? {} : { container: ref.container }),
      ...(ref.init ? { init: true } : {}),
    };
  }
  return undefined;
}

/**
 * The status of a Pod the kubelet cannot start: at `mount`, every container waits (ContainerCreating, or
 * PodInitializing behind init containers), phase Pending; at `start`, the container named waits in
 * CreateContainerConfigError; containers before it (init containers) completed, others of the Pod running.
 */
export function blockedPodStatus(
  pod: V1Pod,
  problem: ConfigProblem,
  podIP: string,
  qosClass: string,
  now: Date,
): V1PodStatus {
  const inits = pod.spec?.initContainers ?? [];
  const containers = pod.spec?.containers ?? [];
  const image = (c: V1Container) => c.image ?? '';
  const base = (c: V1Container) => ({
    name: c.name,
    image: image(c),
    imageID: '',
    ready: false,
    restartCount: 0,
    started: false,
  });
  const waiting = (c: V1Container, reason: string, message?: string) => ({
    ...base(c),
    state: { waiting: { reason, ...(message ? { message } : {}) } },
  });
  const running = (c: V1Container) => ({
    ...base(c),
    imageID: `testbed://${image(c)}`,
    containerID: `testbed://${pod.metadata?.uid ?? 'pod'}/${c.name}`,
    ready: true,
    started: true,
    state: { running: { startedAt: now } },
  });
  const completed = (c: V1Container) => ({
    ...base(c),
    imageID: `testbed://${image(c)}`,
    containerID: `testbed://${pod.metadata?.uid ?? 'pod'}/${c.name}`,
    state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: now, finishedAt: now } },
  });
  let initStatuses: ReturnType<typeof base>[];
  let statuses: ReturnType<typeof base>[];
  let initialized: boolean;
  if (problem.stage === 'mount') {
    initialized = inits.length === 0;
    const reason = initialized ? 'ContainerCreating' : 'PodInitializing';
    initStatuses = inits.map((c) => waiting(c, 'PodInitializing'));
    statuses = containers.map((c) => waiting(c, reason));
  } else if (problem.init) {
    initialized = false;
    const at = inits.findIndex((c) => c.name === problem.container);
    initStatuses = inits.map((c, i) =>
      i < at
        ? completed(c)
        : i === at
          ? waiting(c, 'CreateContainerConfigError', problem.waitingMessage)
          : waiting(c, 'PodInitializing'),
    );
    statuses = containers.map((c) => waiting(c, 'PodInitializing'));
  } else {
    initialized = true;
    initStatuses = inits.map(completed);
    statuses = containers.map((c) =>
      c.name === problem.container
        ? waiting(c, 'CreateContainerConfigError', problem.waitingMessage)
        : running(c),
    );
  }
  const anyRunning = statuses.some((s) => 'state' in s && (s.state as { running?: unknown }).running);
  const generation = pod.metadata?.generation;
  const observed = generation === undefined ? {} : { observedGeneration: generation };
  const condition = (type: string, status: boolean, reason?: string) => ({
    type,
    ...observed,
    status: status ? 'True' : 'False',
    lastTransitionTime: now,
    ...(reason ? { reason } : {}),
  });
  return {
    ...observed,
    phase: anyRunning ? 'Running' : 'Pending',
    hostIP: '127.0.0.1',
    ...(problem.stage === 'mount' ? {} : { podIP, podIPs: [{ ip: podIP }] }),
    startTime: now,
    qosClass,
    conditions: [
      condition('PodReadyToStartContainers', problem.stage !== 'mount'),
      condition('PodScheduled', true),
      condition('Initialized', initialized, initialized ? undefined : 'ContainersNotInitialized'),
      condition('ContainersReady', false, 'ContainersNotReady'),
      condition('Ready', false, 'ContainersNotReady'),
    ],
    initContainerStatuses: initStatuses,
    containerStatuses: statuses,
  } as V1PodStatus;
}
