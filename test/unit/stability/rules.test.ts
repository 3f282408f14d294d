import { describe, expect, it } from 'vitest';
import type { JsonObject, KubeObject, Metadata } from '../../../src/render/manifest.ts';
import {
  ALWAYS_STABLE_KINDS,
  OBSERVED_GENERATION_KINDS,
  ruleKey,
  STABILITY_RULES,
  stabilityOf,
} from '../../../src/stability/rules.ts';
import { namespaceStability } from '../../../src/stability/rules-other.ts';
import { cronJobMoreCases, hpaMoreCases, pdbCases } from './availability-cases.ts';
import { condition, EARLIER, type StabilityCase } from './cases.ts';
import { ecosystemCases } from './ecosystem-cases.ts';

// Status objects below are shaped as the API server returns them: zero counts omitted (omitempty), conditions
// with the reasons and messages the controllers write.

const NOW = new Date('2025-06-01T12:00:00Z');
const LATER = '2025-06-01T12:00:30Z';

/** Its message is a key phrase of the message (after the object's name). */
type Case = StabilityCase;

function live(
  apiVersion: string,
  kind: string,
  name: string,
  namespace: string | undefined,
  body: { metadata?: Partial<Metadata>; spec?: JsonObject; status?: JsonObject },
): KubeObject {
  const object: KubeObject = {
    apiVersion,
    kind,
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      uid: '0b6c0f43-6a4e-4f1e-9d8b-7f6f3c2d1a00',
      resourceVersion: '4711',
      creationTimestamp: EARLIER,
      ...body.metadata,
    },
  };
  if (body.spec) object.spec = body.spec;
  if (body.status) object.status = body.status;
  return object;
}

const podTemplate: JsonObject = {
  metadata: { labels: { app: 'web' } },
  spec: { containers: [{ name: 'app', image: 'registry.example.com/web:1.2.3' }] },
};

// --- Deployment ---------------------------------------------------------------------------------------------

function deployment(
  status: JsonObject,
  spec: JsonObject = {},
  metadata: Partial<Metadata> = {},
  apiVersion = 'apps/v1',
): KubeObject {
  return live(apiVersion, 'Deployment', 'web', 'prod', {
    metadata: { generation: 2, ...metadata },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: 'web' } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
      progressDeadlineSeconds: 600,
      revisionHistoryLimit: 10,
      template: podTemplate,
      ...spec,
    },
    status,
  });
}

const deploymentComplete: JsonObject = {
  observedGeneration: 2,
  replicas: 3,
  updatedReplicas: 3,
  readyReplicas: 3,
  availableReplicas: 3,
  conditions: [
    condition('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.'),
    condition(
      'Progressing',
      'True',
      'NewReplicaSetAvailable',
      'ReplicaSet "web-5d8" has successfully progressed.',
    ),
  ],
};

const deploymentRolling = (counts: JsonObject): JsonObject => ({
  observedGeneration: 2,
  ...counts,
  conditions: [
    condition('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.'),
    condition('Progressing', 'True', 'ReplicaSetUpdated', 'ReplicaSet "web-5d8" is progressing.'),
  ],
});

const deploymentTimedOut: JsonObject = {
  observedGeneration: 2,
  replicas: 3,
  updatedReplicas: 3,
  unavailableReplicas: 3,
  conditions: [
    condition(
      'Available',
      'False',
      'MinimumReplicasUnavailable',
      'Deployment does not have minimum availability.',
    ),
    condition(
      'Progressing',
      'False',
      'ProgressDeadlineExceeded',
      'ReplicaSet "web-5d8" has timed out progressing.',
    ),
  ],
};

const deploymentCases: Case[] = [
  {
    name: 'complete rollout',
    object: deployment(deploymentComplete),
    state: 'stable',
    message: '3 replicas',
  },
  {
    name: 'new replicas not all created yet',
    object: deployment(
      deploymentRolling({ replicas: 4, updatedReplicas: 1, readyReplicas: 3, availableReplicas: 3 }),
    ),
    state: 'progressing',
    message: '1 of 3 replicas updated',
  },
  {
    name: 'all updated but an old replica still present (kubectl: old replicas pending termination)',
    object: deployment(
      deploymentRolling({ replicas: 4, updatedReplicas: 3, readyReplicas: 4, availableReplicas: 4 }),
    ),
    state: 'progressing',
    message: '1 old replica pending termination',
  },
  {
    name: 'updated replicas not yet available',
    object: deployment(
      deploymentRolling({
        replicas: 3,
        updatedReplicas: 3,
        readyReplicas: 1,
        availableReplicas: 1,
        unavailableReplicas: 2,
      }),
    ),
    state: 'progressing',
    message: '1 of 3 updated replicas available',
  },
  {
    name: 'spec change not yet observed, even though the old status looks complete',
    object: deployment(deploymentComplete, {}, { generation: 3 }),
    state: 'progressing',
    message: 'waiting for the controller to observe generation 3 (observed 2)',
  },
  {
    name: 'just created: no status at all',
    object: deployment({}, {}, { generation: 1 }),
    state: 'progressing',
    message: 'waiting for the controller to observe generation 1',
  },
  {
    name: 'paused mid-rollout',
    object: deployment(
      {
        observedGeneration: 2,
        replicas: 4,
        updatedReplicas: 1,
        readyReplicas: 4,
        availableReplicas: 4,
        conditions: [
          condition('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.'),
          condition('Progressing', 'Unknown', 'DeploymentPaused', 'Deployment is paused'),
        ],
      },
      { paused: true },
    ),
    state: 'progressing',
    message: 'rollout is paused',
  },
  {
    name: 'paused with everything up to date is still not done (paused, not failed)',
    object: deployment(deploymentComplete, { paused: true }),
    state: 'progressing',
    message: 'paused',
  },
  {
    name: 'ProgressDeadlineExceeded with 0 ready replicas',
    object: deployment(deploymentTimedOut),
    state: 'failed',
    message: 'ProgressDeadlineExceeded: ReplicaSet "web-5d8" has timed out progressing (0 of 3 available)',
  },
  {
    name: 'ProgressDeadlineExceeded from the previous generation does not fail the new one',
    object: deployment(deploymentTimedOut, {}, { generation: 3 }),
    state: 'progressing',
    message: 'observe generation 3',
  },
  {
    name: 'pods cannot be created (quota): progressing, with the reason',
    object: deployment({
      observedGeneration: 2,
      conditions: [
        condition(
          'Available',
          'False',
          'MinimumReplicasUnavailable',
          'Deployment does not have minimum availability.',
        ),
        condition(
          'ReplicaFailure',
          'True',
          'FailedCreate',
          'pods "web-5d8-x2x7k" is forbidden: exceeded quota: pods',
        ),
        condition('Progressing', 'True', 'ReplicaSetUpdated', 'ReplicaSet "web-5d8" is progressing.'),
      ],
    }),
    state: 'progressing',
    message:
      '0 of 3 replicas updated; ReplicaFailure True FailedCreate: pods "web-5d8-x2x7k" is forbidden: exceeded quota: pods',
  },
  {
    name: 'scaled to zero',
    object: deployment(
      {
        observedGeneration: 2,
        conditions: [
          condition('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.'),
          condition(
            'Progressing',
            'True',
            'NewReplicaSetAvailable',
            'ReplicaSet "web-5d8" has successfully progressed.',
          ),
        ],
      },
      { replicas: 0 },
    ),
    state: 'stable',
    message: '0 replicas updated',
  },
  {
    name: 'scaling to zero with pods still running',
    object: deployment(deploymentRolling({ replicas: 2, readyReplicas: 2, availableReplicas: 2 }), {
      replicas: 0,
    }),
    state: 'progressing',
    message: '2 old replicas pending termination',
  },
  {
    name: 'being deleted',
    object: deployment(
      deploymentComplete,
      {},
      { deletionTimestamp: EARLIER, finalizers: ['foregroundDeletion'] },
    ),
    state: 'progressing',
    message: `being deleted (since ${EARLIER}, waiting for finalizers foregroundDeletion)`,
  },
];

// --- ReplicaSet, ReplicationController ----------------------------------------------------------------------

function replicaSet(
  status: JsonObject,
  replicas = 3,
  apiVersion = 'apps/v1',
  kind = 'ReplicaSet',
): KubeObject {
  return live(apiVersion, kind, 'web-5d8', 'prod', {
    metadata: { generation: 1, labels: { app: 'web', 'pod-template-hash': '5d8' } },
    spec: { replicas, selector: { matchLabels: { app: 'web' } }, template: podTemplate },
    status,
  });
}

const replicaSetCases: Case[] = [
  {
    name: 'all replicas available',
    object: replicaSet({
      observedGeneration: 1,
      replicas: 3,
      fullyLabeledReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
    }),
    state: 'stable',
    message: '3 replicas available and ready',
  },
  {
    name: 'ready but not yet available (minReadySeconds)',
    object: replicaSet({
      observedGeneration: 1,
      replicas: 3,
      fullyLabeledReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 1,
    }),
    state: 'progressing',
    message: '1 of 3 replicas available',
  },
  {
    name: 'pods not yet labeled',
    object: replicaSet({ observedGeneration: 1, replicas: 3, fullyLabeledReplicas: 2 }),
    state: 'progressing',
    message: '2 of 3 replicas fully labeled',
  },
  {
    name: 'scale-down pending',
    object: replicaSet(
      { observedGeneration: 1, replicas: 3, fullyLabeledReplicas: 3, readyReplicas: 3, availableReplicas: 3 },
      2,
    ),
    state: 'progressing',
    message: '1 replica pending termination',
  },
  {
    name: 'not yet observed by the controller',
    object: replicaSet({}),
    state: 'progressing',
    message: 'observe generation 1',
  },
  {
    name: 'ReplicationController available',
    object: replicaSet(
      { observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2 },
      2,
      'v1',
      'ReplicationController',
    ),
    state: 'stable',
    message: '2 replicas available',
  },
  {
    name: 'ReplicationController not ready',
    object: replicaSet(
      { observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 1, availableReplicas: 1 },
      2,
      'v1',
      'ReplicationController',
    ),
    state: 'progressing',
    message: '1 of 2 replicas available',
  },
];

// --- StatefulSet --------------------------------------------------------------------------------------------

function statefulSet(status: JsonObject, updateStrategy?: JsonObject, generation = 1): KubeObject {
  return live('apps/v1', 'StatefulSet', 'db', 'prod', {
    metadata: { generation },
    spec: {
      replicas: 3,
      serviceName: 'db',
      podManagementPolicy: 'OrderedReady',
      selector: { matchLabels: { app: 'db' } },
      // apps/v1 defaults this to RollingUpdate with partition 0.
      updateStrategy: updateStrategy ?? { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      template: podTemplate,
    },
    status,
  });
}

const statefulSetCases: Case[] = [
  {
    name: 'rolled out',
    object: statefulSet({
      observedGeneration: 1,
      replicas: 3,
      readyReplicas: 3,
      currentReplicas: 3,
      updatedReplicas: 3,
      availableReplicas: 3,
      currentRevision: 'db-7c9f8d',
      updateRevision: 'db-7c9f8d',
      collisionCount: 0,
    }),
    state: 'stable',
    message: '3 replicas ready at revision db-7c9f8d',
  },
  {
    name: 'rolling update under way',
    object: statefulSet({
      observedGeneration: 1,
      replicas: 3,
      readyReplicas: 3,
      currentReplicas: 2,
      updatedReplicas: 1,
      availableReplicas: 3,
      currentRevision: 'db-7c9f8d',
      updateRevision: 'db-6f4b21',
    }),
    state: 'progressing',
    message: '1 of 3 replicas updated to revision db-6f4b21',
  },
  {
    name: 'pods not ready',
    object: statefulSet({
      observedGeneration: 1,
      replicas: 2,
      readyReplicas: 1,
      currentReplicas: 2,
      updatedReplicas: 2,
      availableReplicas: 1,
      currentRevision: 'db-7c9f8d',
      updateRevision: 'db-7c9f8d',
    }),
    state: 'progressing',
    message: '1 of 3 replicas ready',
  },
  {
    name: 'partition 2: the one pod above the partition is updated',
    object: statefulSet(
      {
        observedGeneration: 2,
        replicas: 3,
        readyReplicas: 3,
        currentReplicas: 2,
        updatedReplicas: 1,
        availableReplicas: 3,
        currentRevision: 'db-7c9f8d',
        updateRevision: 'db-6f4b21',
      },
      { type: 'RollingUpdate', rollingUpdate: { partition: 2 } },
      2,
    ),
    state: 'stable',
    message: 'partitioned rollout complete: 1 of 3 replicas updated (partition 2)',
  },
  {
    name: 'partition 2: nothing updated yet',
    object: statefulSet(
      {
        observedGeneration: 2,
        replicas: 3,
        readyReplicas: 3,
        currentReplicas: 3,
        availableReplicas: 3,
        currentRevision: 'db-7c9f8d',
        updateRevision: 'db-6f4b21',
      },
      { type: 'RollingUpdate', rollingUpdate: { partition: 2 } },
      2,
    ),
    state: 'progressing',
    message: '0 of 1 replicas updated (partition 2)',
  },
  {
    name: 'OnDelete: ready pods are stable even at the old revision',
    object: statefulSet(
      {
        observedGeneration: 1,
        replicas: 3,
        readyReplicas: 3,
        currentReplicas: 3,
        availableReplicas: 3,
        currentRevision: 'db-7c9f8d',
        updateRevision: 'db-6f4b21',
      },
      { type: 'OnDelete' },
    ),
    state: 'stable',
    message: 'update strategy OnDelete',
  },
  {
    name: 'OnDelete: not ready',
    object: statefulSet(
      { observedGeneration: 1, replicas: 3, readyReplicas: 2, currentReplicas: 3, availableReplicas: 2 },
      { type: 'OnDelete' },
    ),
    state: 'progressing',
    message: '2 of 3 replicas ready',
  },
  {
    name: 'scale-down pending',
    object: statefulSet({
      observedGeneration: 1,
      replicas: 4,
      readyReplicas: 4,
      currentReplicas: 4,
      updatedReplicas: 4,
      availableReplicas: 4,
      currentRevision: 'db-7c9f8d',
      updateRevision: 'db-7c9f8d',
    }),
    state: 'progressing',
    message: '1 replica pending termination',
  },
  {
    name: 'new, not yet observed',
    object: statefulSet({ replicas: 0, availableReplicas: 0 }),
    state: 'progressing',
    message: 'observe generation 1',
  },
];

// --- DaemonSet ----------------------------------------------------------------------------------------------

function daemonSet(status: JsonObject, strategy = 'RollingUpdate', apiVersion = 'apps/v1'): KubeObject {
  return live(apiVersion, 'DaemonSet', 'node-agent', 'kube-system', {
    metadata: { generation: 1 },
    spec: {
      selector: { matchLabels: { app: 'node-agent' } },
      updateStrategy:
        strategy === 'RollingUpdate'
          ? { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } }
          : { type: strategy },
      template: podTemplate,
    },
    status,
  });
}

const daemonSetCases: Case[] = [
  {
    name: 'on every node',
    object: daemonSet({
      currentNumberScheduled: 2,
      desiredNumberScheduled: 2,
      numberAvailable: 2,
      numberMisscheduled: 0,
      numberReady: 2,
      observedGeneration: 1,
      updatedNumberScheduled: 2,
    }),
    state: 'stable',
    message: '2 pods updated, ready and available',
  },
  {
    name: 'no nodes match: 0 desired is stable',
    object: daemonSet({
      currentNumberScheduled: 0,
      desiredNumberScheduled: 0,
      numberMisscheduled: 0,
      numberReady: 0,
      observedGeneration: 1,
    }),
    state: 'stable',
    message: '0 desired',
  },
  {
    name: 'rolling out to nodes',
    object: daemonSet({
      currentNumberScheduled: 2,
      desiredNumberScheduled: 2,
      numberAvailable: 1,
      numberMisscheduled: 0,
      numberReady: 1,
      numberUnavailable: 1,
      observedGeneration: 1,
      updatedNumberScheduled: 1,
    }),
    state: 'progressing',
    message: '1 of 2 pods updated',
  },
  {
    name: 'updated but not available',
    object: daemonSet({
      currentNumberScheduled: 2,
      desiredNumberScheduled: 2,
      numberAvailable: 1,
      numberMisscheduled: 0,
      numberReady: 2,
      numberUnavailable: 1,
      observedGeneration: 1,
      updatedNumberScheduled: 2,
    }),
    state: 'progressing',
    message: '1 of 2 pods available',
  },
  {
    name: 'a node is still missing its pod',
    object: daemonSet({
      currentNumberScheduled: 1,
      desiredNumberScheduled: 2,
      numberAvailable: 1,
      numberMisscheduled: 0,
      numberReady: 1,
      numberUnavailable: 1,
      observedGeneration: 1,
      updatedNumberScheduled: 1,
    }),
    state: 'progressing',
    message: '1 of 2 nodes running a pod',
  },
  {
    name: 'OnDelete: ready pods at the old template',
    object: daemonSet(
      {
        currentNumberScheduled: 2,
        desiredNumberScheduled: 2,
        numberAvailable: 2,
        numberMisscheduled: 0,
        numberReady: 2,
        observedGeneration: 1,
      },
      'OnDelete',
    ),
    state: 'stable',
    message: 'update strategy OnDelete',
  },
  {
    name: 'OnDelete: not ready',
    object: daemonSet(
      {
        currentNumberScheduled: 2,
        desiredNumberScheduled: 2,
        numberAvailable: 1,
        numberMisscheduled: 0,
        numberReady: 1,
        observedGeneration: 1,
      },
      'OnDelete',
    ),
    state: 'progressing',
    message: '1 of 2 pods ready',
  },
  {
    name: 'not yet observed',
    object: daemonSet({
      currentNumberScheduled: 0,
      desiredNumberScheduled: 0,
      numberMisscheduled: 0,
      numberReady: 0,
    }),
    state: 'progressing',
    message: 'observe generation 1',
  },
];

// --- Pod ----------------------------------------------------------------------------------------------------

function pod(status: JsonObject, spec: JsonObject = {}, metadata: Partial<Metadata> = {}): KubeObject {
  return live('v1', 'Pod', 'p', 'prod', {
    metadata: { generation: 1, ...metadata },
    spec: {
      containers: [{ name: 'app', image: 'registry.example.com/web:1.2.3' }],
      restartPolicy: 'Always',
      ...spec,
    },
    status,
  });
}

function containerStatus(name: string, state: JsonObject, extra: JsonObject = {}): JsonObject {
  return {
    name,
    image: 'registry.example.com/web:1.2.3',
    imageID: '',
    ready: false,
    restartCount: 0,
    started: false,
    state,
    ...extra,
  };
}

const scheduled = condition('PodScheduled', 'True');
const notReady = condition('Ready', 'False', 'ContainersNotReady', 'containers with unready status: [app]');

const crashLoop = (name: string, restarts: number): JsonObject =>
  containerStatus(
    name,
    {
      waiting: {
        reason: 'CrashLoopBackOff',
        message: `back-off 40s restarting failed container=${name} pod=p_prod(0b6c0f43-6a4e-4f1e-9d8b-7f6f3c2d1a00)`,
      },
    },
    {
      restartCount: restarts,
      lastState: {
        terminated: {
          exitCode: 1,
          reason: 'Error',
          startedAt: EARLIER,
          finishedAt: EARLIER,
          containerID: 'x',
        },
      },
    },
  );

const waitingPod = (reason: string, message: string): KubeObject =>
  pod({
    phase: 'Pending',
    conditions: [scheduled, notReady],
    containerStatuses: [containerStatus('app', { waiting: { reason, message } })],
  });

const podCases: Case[] = [
  {
    name: 'running and ready',
    object: pod({
      phase: 'Running',
      podIP: '10.244.0.12',
      startTime: EARLIER,
      conditions: [
        condition('PodReadyToStartContainers', 'True'),
        condition('Initialized', 'True'),
        condition('Ready', 'True'),
        condition('ContainersReady', 'True'),
        scheduled,
      ],
      containerStatuses: [
        containerStatus('app', { running: { startedAt: EARLIER } }, { ready: true, started: true }),
      ],
    }),
    state: 'stable',
    message: 'ready',
  },
  {
    name: 'succeeded',
    object: pod(
      {
        phase: 'Succeeded',
        conditions: [condition('Ready', 'False', 'PodCompleted'), scheduled],
        containerStatuses: [containerStatus('app', { terminated: { exitCode: 0, reason: 'Completed' } })],
      },
      { restartPolicy: 'Never' },
    ),
    state: 'stable',
    message: 'succeeded',
  },
  {
    name: 'evicted',
    object: pod({
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi.',
    }),
    state: 'failed',
    message: 'failed: Evicted: The node was low on resource: memory',
  },
  {
    name: 'failed without a pod-level reason names the container',
    object: pod(
      {
        phase: 'Failed',
        conditions: [condition('Ready', 'False', 'PodFailed'), scheduled],
        containerStatuses: [containerStatus('app', { terminated: { exitCode: 3, reason: 'Error' } })],
      },
      { restartPolicy: 'Never' },
    ),
    state: 'failed',
    message: 'failed: container app exited with code 3 (Error)',
  },
  {
    name: 'CrashLoopBackOff',
    object: pod({
      phase: 'Running',
      conditions: [scheduled, notReady],
      containerStatuses: [crashLoop('app', 3)],
    }),
    state: 'failed',
    message: 'container app is in CrashLoopBackOff (restarted 3 times, last exit code 1)',
  },
  {
    name: 'CrashLoopBackOff in an init container',
    object: pod(
      {
        phase: 'Pending',
        conditions: [
          condition(
            'Initialized',
            'False',
            'ContainersNotInitialized',
            'containers with incomplete status: [migrate]',
          ),
          notReady,
          scheduled,
        ],
        initContainerStatuses: [crashLoop('migrate', 2)],
        containerStatuses: [containerStatus('app', { waiting: { reason: 'PodInitializing' } })],
      },
      { initContainers: [{ name: 'migrate', image: 'registry.example.com/web:1.2.3' }] },
    ),
    state: 'failed',
    message: 'init container migrate is in CrashLoopBackOff (restarted 2 times',
  },
  ...[
    ['ImagePullBackOff', 'Back-off pulling image "registry.example.com/web:nope"'],
    ['ErrImagePull', 'failed to pull and unpack image "registry.example.com/web:nope": not found'],
    ['CreateContainerConfigError', 'configmap "web-config" not found'],
    ['InvalidImageName', 'Failed to apply default image tag "Registry/Web": invalid reference format'],
    ['CreateContainerError', 'context deadline exceeded'],
  ].map(
    ([reason = '', message = '']): Case => ({
      name: `waiting with ${reason}`,
      object: waitingPod(reason, message),
      state: 'failed',
      message: `container app is in ${reason}: ${message}`,
    }),
  ),
  {
    name: 'a container exited non-zero under restartPolicy Never',
    object: pod(
      {
        phase: 'Running',
        conditions: [scheduled, notReady],
        containerStatuses: [
          containerStatus('app', { terminated: { exitCode: 2, reason: 'Error' } }),
          containerStatus('proxy', { running: { startedAt: EARLIER } }, { ready: true, started: true }),
        ],
      },
      { restartPolicy: 'Never' },
    ),
    state: 'failed',
    message: "container app exited with code 2 (Error) and the pod's restartPolicy is Never",
  },
  {
    name: 'a sidecar exited non-zero under restartPolicy Never: it is restarted, not fatal',
    object: pod(
      {
        phase: 'Running',
        conditions: [scheduled, notReady],
        initContainerStatuses: [containerStatus('proxy', { terminated: { exitCode: 137, reason: 'Error' } })],
        containerStatuses: [containerStatus('app', { running: { startedAt: EARLIER } }, { started: true })],
      },
      {
        restartPolicy: 'Never',
        initContainers: [{ name: 'proxy', image: 'envoy:1.30', restartPolicy: 'Always' }],
      },
    ),
    state: 'progressing',
    message: 'not ready: ContainersNotReady',
  },
  {
    name: 'a container exited non-zero under restartPolicy OnFailure: it will be restarted',
    object: pod(
      {
        phase: 'Running',
        conditions: [scheduled, notReady],
        containerStatuses: [containerStatus('app', { terminated: { exitCode: 1, reason: 'Error' } })],
      },
      { restartPolicy: 'OnFailure' },
    ),
    state: 'progressing',
    message: 'not ready',
  },
  {
    name: 'unschedulable',
    object: pod({
      phase: 'Pending',
      conditions: [
        condition(
          'PodScheduled',
          'False',
          'Unschedulable',
          '0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.',
        ),
      ],
      qosClass: 'Burstable',
    }),
    state: 'progressing',
    message: 'not scheduled: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu',
  },
  {
    name: 'containers being created',
    object: waitingPod('ContainerCreating', ''),
    state: 'progressing',
    message: 'container app is waiting (ContainerCreating)',
  },
  {
    name: 'running, readiness probe not passing yet',
    object: pod({
      phase: 'Running',
      conditions: [condition('Initialized', 'True'), notReady, scheduled],
      containerStatuses: [containerStatus('app', { running: { startedAt: EARLIER } }, { started: true })],
    }),
    state: 'progressing',
    message: 'not ready: ContainersNotReady: containers with unready status: [app]',
  },
  {
    name: 'just created: no conditions yet',
    object: pod({ phase: 'Pending', qosClass: 'BestEffort' }),
    state: 'progressing',
    message: 'phase Pending',
  },
  {
    name: 'terminating within its grace period',
    object: pod(
      { phase: 'Running', conditions: [condition('Ready', 'True'), scheduled] },
      {},
      { deletionTimestamp: LATER, deletionGracePeriodSeconds: 30 },
    ),
    state: 'progressing',
    message: `being deleted (graceful until ${LATER})`,
  },
  {
    name: 'still present after its grace period',
    object: pod(
      { phase: 'Running', conditions: [condition('Ready', 'True'), scheduled] },
      {},
      { deletionTimestamp: EARLIER, deletionGracePeriodSeconds: 30 },
    ),
    state: 'progressing',
    message: `being deleted (since ${EARLIER})`,
  },
];

// --- Job, CronJob -------------------------------------------------------------------------------------------

function job(status: JsonObject, spec: JsonObject = {}): KubeObject {
  return live('batch/v1', 'Job', 'migrate', 'prod', {
    // Jobs have no status.observedGeneration: the generation must not hold them back.
    metadata: { generation: 1 },
    spec: {
      backoffLimit: 6,
      completionMode: 'NonIndexed',
      completions: 1,
      parallelism: 1,
      suspend: false,
      template: { ...podTemplate, spec: { ...(podTemplate.spec as JsonObject), restartPolicy: 'Never' } },
      ...spec,
    },
    status,
  });
}

const jobCases: Case[] = [
  {
    name: 'complete',
    object: job({
      conditions: [
        condition(
          'SuccessCriteriaMet',
          'True',
          'CompletionsReached',
          'Reached expected number of succeeded pods',
        ),
        condition('Complete', 'True', 'CompletionsReached', 'Reached expected number of succeeded pods'),
      ],
      startTime: EARLIER,
      completionTime: EARLIER,
      succeeded: 1,
      ready: 0,
      terminating: 0,
    }),
    state: 'stable',
    message: 'complete (1 succeeded)',
  },
  {
    name: 'backoff limit exceeded',
    object: job({
      conditions: [
        condition(
          'FailureTarget',
          'True',
          'BackoffLimitExceeded',
          'Job has reached the specified backoff limit',
        ),
        condition('Failed', 'True', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
      ],
      startTime: EARLIER,
      failed: 7,
      ready: 0,
      terminating: 0,
    }),
    state: 'failed',
    message: 'failed: BackoffLimitExceeded: Job has reached the specified backoff limit',
  },
  {
    name: 'running',
    object: job({ startTime: EARLIER, active: 1, ready: 1, failed: 1, terminating: 0 }, { completions: 3 }),
    state: 'progressing',
    message: 'running: 1 active, 0 of 3 succeeded, 1 failed',
  },
  {
    name: 'suspended',
    object: job(
      {
        conditions: [condition('Suspended', 'True', 'JobSuspended', 'Job suspended')],
        ready: 0,
        terminating: 0,
      },
      { suspend: true },
    ),
    state: 'progressing',
    message: 'suspended',
  },
];

const cronJobCases: Case[] = [
  {
    name: 'CronJob schedules later',
    object: live('batch/v1', 'CronJob', 'nightly', 'prod', {
      metadata: { generation: 1 },
      spec: {
        schedule: '0 3 * * *',
        concurrencyPolicy: 'Forbid',
        jobTemplate: { spec: { template: podTemplate } },
      },
      status: { lastScheduleTime: EARLIER },
    }),
    state: 'stable',
    message: 'schedules jobs at "0 3 * * *"',
  },
];

// --- Service, Ingress ---------------------------------------------------------------------------------------

function service(type: string, status: JsonObject): KubeObject {
  return live('v1', 'Service', 'web', 'prod', {
    spec: {
      type,
      clusterIP: '10.96.14.7',
      clusterIPs: ['10.96.14.7'],
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      selector: { app: 'web' },
    },
    status,
  });
}

function ingress(status: JsonObject, apiVersion = 'networking.k8s.io/v1'): KubeObject {
  return live(apiVersion, 'Ingress', 'web', 'prod', {
    metadata: { generation: 1 },
    spec: { ingressClassName: 'nginx', rules: [{ host: 'web.example.com' }] },
    status,
  });
}

const networkingCases: Case[] = [
  {
    name: 'ClusterIP service',
    object: service('ClusterIP', { loadBalancer: {} }),
    state: 'stable',
    message: 'type ClusterIP',
  },
  {
    name: 'LoadBalancer service with an address',
    object: service('LoadBalancer', { loadBalancer: { ingress: [{ ip: '203.0.113.7', ipMode: 'VIP' }] } }),
    state: 'stable',
    message: 'load balancer at 203.0.113.7',
  },
  {
    name: 'LoadBalancer service without an address',
    object: service('LoadBalancer', { loadBalancer: {} }),
    state: 'progressing',
    message: 'waiting for a load balancer',
  },
  {
    name: 'Ingress bound',
    object: ingress({ loadBalancer: { ingress: [{ hostname: 'lb-123.elb.example.com' }] } }),
    state: 'stable',
    message: 'load balancer at lb-123.elb.example.com',
  },
  {
    name: 'Ingress not bound',
    object: ingress({ loadBalancer: {} }),
    state: 'progressing',
    message: 'waiting for the ingress controller',
  },
  {
    name: 'extensions Ingress not bound',
    object: ingress({ loadBalancer: {} }, 'extensions/v1beta1'),
    state: 'progressing',
    message: 'waiting for the ingress controller',
  },
];

// --- PersistentVolumeClaim, Namespace -----------------------------------------------------------------------

function claim(phase: string, volumeName?: string): KubeObject {
  return live('v1', 'PersistentVolumeClaim', 'data', 'prod', {
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
      storageClassName: 'standard',
      volumeMode: 'Filesystem',
      ...(volumeName ? { volumeName } : {}),
    },
    status:
      phase === 'Bound' ? { phase, accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } } : { phase },
  });
}

const storageCases: Case[] = [
  {
    name: 'claim bound',
    object: claim('Bound', 'pvc-3f2a'),
    state: 'stable',
    message: 'bound to PersistentVolume pvc-3f2a',
  },
  { name: 'claim pending', object: claim('Pending'), state: 'progressing', message: 'phase Pending' },
  {
    name: 'claim lost',
    object: claim('Lost', 'pvc-3f2a'),
    state: 'failed',
    message: 'lost its PersistentVolume pvc-3f2a',
  },
];

function namespace(phase: string, metadata: Partial<Metadata> = {}): KubeObject {
  return live('v1', 'Namespace', 'prod', undefined, {
    metadata: { labels: { 'kubernetes.io/metadata.name': 'prod' }, ...metadata },
    spec: { finalizers: ['kubernetes'] },
    status: { phase },
  });
}

const namespaceCases: Case[] = [
  { name: 'active namespace', object: namespace('Active'), state: 'stable', message: 'active' },
  {
    name: 'terminating namespace',
    object: namespace('Terminating', { deletionTimestamp: EARLIER }),
    state: 'progressing',
    message: 'being deleted',
  },
];

// --- CustomResourceDefinition, APIService -------------------------------------------------------------------

function crd(conditions: JsonObject[]): KubeObject {
  return live('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'widgets.example.com', undefined, {
    metadata: { generation: 1 },
    spec: {
      group: 'example.com',
      names: { kind: 'Widget', listKind: 'WidgetList', plural: 'widgets', singular: 'widget' },
      scope: 'Namespaced',
      versions: [{ name: 'v1', served: true, storage: true }],
    },
    status: {
      acceptedNames: { kind: 'Widget', listKind: 'WidgetList', plural: 'widgets', singular: 'widget' },
      conditions,
      storedVersions: ['v1'],
    },
  });
}

function apiService(available: JsonObject): KubeObject {
  return live('apiregistration.k8s.io/v1', 'APIService', 'v1beta1.metrics.k8s.io', undefined, {
    spec: {
      group: 'metrics.k8s.io',
      version: 'v1beta1',
      service: { name: 'metrics-server', namespace: 'kube-system', port: 443 },
      groupPriorityMinimum: 100,
      versionPriority: 100,
    },
    status: { conditions: [available] },
  });
}

const apiCases: Case[] = [
  {
    name: 'CRD established',
    object: crd([
      condition('NamesAccepted', 'True', 'NoConflicts', 'no conflicts found'),
      condition('Established', 'True', 'InitialNamesAccepted', 'the initial names have been accepted'),
    ]),
    state: 'stable',
    message: 'established',
  },
  {
    name: 'CRD installing',
    object: crd([
      condition('NamesAccepted', 'True', 'NoConflicts', 'no conflicts found'),
      condition('Established', 'False', 'Installing', 'the initial names have been accepted'),
    ]),
    state: 'progressing',
    message: 'not established: Installing',
  },
  {
    name: 'CRD names in conflict',
    object: crd([
      condition('NamesAccepted', 'False', 'PluralConflict', '"widgets" is already in use'),
      condition('Established', 'False', 'NotAccepted', 'not all names are accepted'),
    ]),
    state: 'failed',
    message: 'names not accepted: PluralConflict: "widgets" is already in use',
  },
  {
    name: 'APIService available',
    object: apiService(condition('Available', 'True', 'Passed', 'all checks passed')),
    state: 'stable',
    message: 'available',
  },
  {
    name: 'APIService without endpoints',
    object: apiService(
      condition(
        'Available',
        'False',
        'MissingEndpoints',
        'endpoints for service/metrics-server in "kube-system" have no addresses with port name "https"',
      ),
    ),
    state: 'progressing',
    message: 'not available: MissingEndpoints',
  },
];

// --- HorizontalPodAutoscaler --------------------------------------------------------------------------------

function hpa(conditions: JsonObject[], status: JsonObject = {}): KubeObject {
  return live('autoscaling/v2', 'HorizontalPodAutoscaler', 'web', 'prod', {
    metadata: { generation: 1 },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
      minReplicas: 2,
      maxReplicas: 10,
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } },
        },
      ],
    },
    status: { currentReplicas: 3, desiredReplicas: 3, conditions, ...status },
  });
}

const ableToScale = condition(
  'AbleToScale',
  'True',
  'ReadyForNewScale',
  'recommended size matches current size',
);

const hpaCases: Case[] = [
  {
    name: 'HPA scaling on metrics',
    object: hpa([
      ableToScale,
      condition(
        'ScalingActive',
        'True',
        'ValidMetricFound',
        'the HPA was able to successfully calculate a replica count',
      ),
      condition(
        'ScalingLimited',
        'False',
        'DesiredWithinRange',
        'the desired count is within the acceptable range',
      ),
    ]),
    state: 'stable',
    message: 'able to scale',
  },
  {
    name: 'HPA without metrics yet is still stable',
    object: hpa([
      ableToScale,
      condition(
        'ScalingActive',
        'False',
        'FailedGetResourceMetric',
        'the HPA was unable to compute the replica count: failed to get cpu utilization',
      ),
    ]),
    state: 'stable',
    message: 'scaling inactive: FailedGetResourceMetric',
  },
  {
    name: 'HPA whose target does not exist',
    object: hpa([
      condition(
        'AbleToScale',
        'False',
        'FailedGetScale',
        'the HPA controller was unable to get the target\'s current scale: deployments/scale.apps "web" not found',
      ),
    ]),
    state: 'failed',
    message: 'unable to scale: FailedGetScale',
  },
  {
    name: 'HPA in a scaling back-off window',
    object: hpa([
      condition(
        'AbleToScale',
        'False',
        'BackoffBoth',
        'the time since the previous scale is still within both the downscale and upscale forbidden windows',
      ),
    ]),
    state: 'progressing',
    message: 'unable to scale: BackoffBoth',
  },
  {
    name: 'HPA reporting an older observedGeneration',
    object: hpa([ableToScale], { observedGeneration: 0 }),
    state: 'progressing',
    message: 'observe generation 1 (observed 0)',
  },
];

// --- Other kinds (custom resources) -------------------------------------------------------------------------

// A kind of no known project: cert-manager's Certificate, once the example here, has a rule of its own.
function custom(status: JsonObject | undefined, generation = 2): KubeObject {
  return live('example.com/v1', 'Widget', 'web-tls', 'prod', {
    metadata: { generation },
    spec: {
      secretName: 'web-tls',
      dnsNames: ['web.example.com'],
      issuerRef: { name: 'le', kind: 'ClusterIssuer' },
    },
    ...(status ? { status } : {}),
  });
}

const genericCases: Case[] = [
  {
    name: 'Ready=True',
    object: custom({
      conditions: [condition('Ready', 'True', 'Ready', 'Certificate is up to date and has not expired')],
    }),
    state: 'stable',
    message: 'ready',
  },
  {
    name: 'Ready=False is progressing, with its message',
    object: custom({
      conditions: [
        condition('Issuing', 'True', 'DoesNotExist', 'Issuing certificate as Secret does not exist'),
        condition('Ready', 'False', 'DoesNotExist', 'Issuing certificate as Secret does not exist'),
      ],
    }),
    state: 'progressing',
    message: 'not ready: DoesNotExist: Issuing certificate as Secret does not exist',
  },
  {
    name: 'Stalled=True (kstatus)',
    object: live('kustomize.toolkit.fluxcd.io/v1', 'Kustomization', 'apps', 'flux-system', {
      metadata: { generation: 1 },
      status: {
        observedGeneration: 1,
        conditions: [
          condition('Ready', 'False', 'BuildFailed', 'kustomize build failed: accumulating resources'),
          condition('Stalled', 'True', 'BuildFailed', 'kustomize build failed: accumulating resources'),
        ],
      },
    }),
    state: 'failed',
    message: 'stalled: BuildFailed: kustomize build failed',
  },
  {
    name: 'Reconciling=True (kstatus)',
    object: live('kustomize.toolkit.fluxcd.io/v1', 'Kustomization', 'apps', 'flux-system', {
      metadata: { generation: 1 },
      status: {
        observedGeneration: 1,
        conditions: [
          condition('Reconciling', 'True', 'Progressing', 'Reconciliation in progress'),
          condition('Ready', 'Unknown', 'Progressing', 'Reconciliation in progress'),
        ],
      },
    }),
    state: 'progressing',
    message: 'reconciling: Progressing: Reconciliation in progress',
  },
  {
    name: 'reports an older observedGeneration',
    object: custom({ observedGeneration: 1, conditions: [condition('Ready', 'True')] }),
    state: 'progressing',
    message: 'observe generation 2 (observed 1)',
  },
  {
    name: 'no status at all, no observedGeneration reported: nothing to wait for',
    object: custom(undefined),
    state: 'stable',
    message: 'no Ready or Available condition',
  },
];

const tables: [string, Case[]][] = [
  ['Deployment', deploymentCases],
  ['ReplicaSet and ReplicationController', replicaSetCases],
  ['StatefulSet', statefulSetCases],
  ['DaemonSet', daemonSetCases],
  ['Pod', podCases],
  ['Job', jobCases],
  ['CronJob', [...cronJobCases, ...cronJobMoreCases]],
  ['Service and Ingress', networkingCases],
  ['PersistentVolumeClaim', storageCases],
  ['Namespace', namespaceCases],
  ['CustomResourceDefinition and APIService', apiCases],
  ['HorizontalPodAutoscaler', [...hpaCases, ...hpaMoreCases]],
  ['PodDisruptionBudget', pdbCases],
  ['other kinds', genericCases],
  ['custom resources of known projects', ecosystemCases],
];

describe.each(tables)('stabilityOf: %s', (_, cases) => {
  it.each(cases)('$name', ({ object, state, message }) => {
    const verdict = stabilityOf(object, NOW);
    expect(verdict.state).toBe(state);
    expect(verdict.message).toContain(message);
  });
});

describe('stabilityOf: a claim of a StorageClass that binds on first consumer', () => {
  const modes = new Map([
    ['standard', 'Immediate'],
    ['local-path', 'WaitForFirstConsumer'],
  ]);
  const pending = (storageClassName: string, annotations?: Record<string, string>): KubeObject => {
    const object = claim('Pending');
    (object.spec as Record<string, unknown>).storageClassName = storageClassName;
    if (annotations) object.metadata.annotations = annotations;
    return object;
  };

  it('is stable while no Pod that mounts it was scheduled: binding waits for one by design', () => {
    const verdict = stabilityOf(pending('local-path'), NOW, undefined, { volumeBindingModes: modes });
    expect(verdict).toEqual({
      state: 'stable',
      message:
        'PersistentVolumeClaim prod/data: pending until a Pod that mounts it is scheduled (StorageClass local-path: volumeBindingMode WaitForFirstConsumer)',
    });
  });

  it('waits to be bound once the scheduler selected a node for it', () => {
    const object = pending('local-path', { 'volume.kubernetes.io/selected-node': 'node-1' });
    const verdict = stabilityOf(object, NOW, undefined, { volumeBindingModes: modes });
    expect(verdict.state).toBe('progressing');
    expect(verdict.message).toContain('a volume being made for node node-1 (StorageClass local-path)');
  });

  it('waits as before for a class that binds at once, an unknown class, or when the classes could not be read', () => {
    for (const [object, facts] of [
      [pending('standard'), { volumeBindingModes: modes }],
      [pending('elsewhere'), { volumeBindingModes: modes }],
      [pending('local-path'), {}],
      [pending('local-path'), undefined],
    ] as const) {
      const verdict = stabilityOf(object, NOW, undefined, facts);
      expect(verdict.state).toBe('progressing');
      expect(verdict.message).toContain('phase Pending, waiting to be bound to a volume');
    }
  });

  it('keeps Bound stable and Lost failed whatever the class', () => {
    const bound = claim('Bound', 'pvc-1');
    const lost = claim('Lost', 'pvc-1');
    for (const object of [bound, lost])
      (object.spec as Record<string, unknown>).storageClassName = 'local-path';
    expect(stabilityOf(bound, NOW, undefined, { volumeBindingModes: modes }).state).toBe('stable');
    expect(stabilityOf(lost, NOW, undefined, { volumeBindingModes: modes }).state).toBe('failed');
  });
});

describe('stabilityOf: a CronJob running now', () => {
  it('says nothing of a last run that is still going', () => {
    const running = cronJobMoreCases.find((c) => c.name.startsWith('CronJob running now'));
    expect(running && stabilityOf(running.object, NOW).message).not.toContain('has not succeeded');
  });
});

describe('stabilityOf: messages', () => {
  it('name the object, then the rule', () => {
    const rolling = deployment(
      deploymentRolling({ replicas: 3, updatedReplicas: 3, readyReplicas: 1, availableReplicas: 1 }),
    );
    expect(stabilityOf(rolling, NOW).message).toBe('Deployment prod/web: 1 of 3 updated replicas available');
    expect(stabilityOf(deployment(deploymentTimedOut), NOW).message).toBe(
      'Deployment prod/web: ProgressDeadlineExceeded: ReplicaSet "web-5d8" has timed out progressing (0 of 3 available)',
    );
    expect(stabilityOf(crd([]), NOW).message).toBe(
      'CustomResourceDefinition widgets.example.com: not yet established',
    );
  });

  it('default `now` to the present', () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const terminating = pod({ phase: 'Running' }, {}, { deletionTimestamp: future });
    expect(stabilityOf(terminating).message).toContain('graceful until');
  });
});

describe('stabilityOf: every kind of workload in the extensions group', () => {
  const asExtensions = (object: KubeObject): KubeObject => ({ ...object, apiVersion: 'extensions/v1beta1' });
  const workloads = [
    ...deploymentCases,
    ...replicaSetCases.filter((c) => c.object.kind === 'ReplicaSet'),
    ...daemonSetCases,
  ];
  it.each(workloads)('$object.kind: $name', ({ object, state, message }) => {
    const verdict = stabilityOf(asExtensions(object), NOW);
    expect(verdict.state).toBe(state);
    expect(verdict.message).toContain(message);
  });
});

function apiVersionOf(key: string): string {
  const group = key.slice(0, key.indexOf('/'));
  return group ? `${group}/v1` : 'v1';
}

describe('stabilityOf: kinds with nothing to wait for', () => {
  it.each(ALWAYS_STABLE_KINDS)('%s is stable, even with a Ready=False condition', (key) => {
    const kind = key.slice(key.indexOf('/') + 1);
    const object = live(apiVersionOf(key), kind, 'x', 'prod', {
      metadata: { generation: 1 },
      status: { conditions: [condition('Ready', 'False', 'Whatever')] },
    });
    expect(stabilityOf(object, NOW)).toEqual({
      state: 'stable',
      message: `${kind} prod/x: nothing to wait for once applied`,
    });
  });

  it('a ConfigMap being deleted is progressing', () => {
    const object = live('v1', 'ConfigMap', 'cfg', 'prod', { metadata: { deletionTimestamp: EARLIER } });
    expect(stabilityOf(object, NOW)).toEqual({
      state: 'progressing',
      message: `ConfigMap prod/cfg: being deleted (since ${EARLIER})`,
    });
  });
});

describe('stabilityOf: robustness', () => {
  it('reads mistyped status fields as missing instead of throwing', () => {
    const garbled = deployment({
      observedGeneration: 2,
      replicas: '3',
      updatedReplicas: null,
      conditions: 'none',
    });
    expect(stabilityOf(garbled, NOW)).toEqual({
      state: 'progressing',
      message: 'Deployment prod/web: 0 of 3 replicas updated',
    });
    const weirdPod = pod({ phase: 'Running', containerStatuses: [null, 'x', { name: 'app', state: [] }] });
    expect(stabilityOf(weirdPod, NOW).state).toBe('progressing');
  });

  it('a Namespace reports what blocks its termination', () => {
    const object = namespace('Terminating');
    (object.status as JsonObject).conditions = [
      condition(
        'NamespaceContentRemaining',
        'True',
        'SomeResourcesRemain',
        'Some resources are remaining: pods. has 2 resource instances',
      ),
      condition('NamespaceDeletionDiscoveryFailure', 'False', 'ResourcesDiscovered'),
    ];
    expect(namespaceStability(object)).toEqual({
      state: 'progressing',
      detail:
        'terminating; SomeResourcesRemain: Some resources are remaining: pods. has 2 resource instances',
    });
  });
});

describe('the rule table', () => {
  // The extensions variants are covered by re-running the apps cases, the always-stable kinds by their loop.
  const tested = new Set([
    ...tables.flatMap(([, cases]) => cases.map((c) => ruleKey(c.object))),
    ...['Deployment', 'ReplicaSet', 'DaemonSet'].map((kind) => `extensions/${kind}`),
    ...ALWAYS_STABLE_KINDS,
  ]);

  it('has a test case for every key', () => {
    expect([...STABILITY_RULES.keys()].filter((key) => !tested.has(key))).toEqual([]);
  });

  it('waits for observedGeneration only on kinds it has rules for', () => {
    expect([...OBSERVED_GENERATION_KINDS].filter((key) => !STABILITY_RULES.has(key))).toEqual([]);
  });
});
