// Rules that read conditions and empty statuses where the replica counts of seed 001 miss them, and the
// changes made after comparing the rules with kstatus and clouddriver (docs/stability.md). Some statuses below
// pair complete counts with a holding condition: the controllers never write that pair in one update, but a
// rule must not depend on it, so the condition alone has to decide.
import { describe, expect, it } from 'vitest';
import type { JsonObject, KubeObject } from '../../../src/render/manifest.ts';
import { stabilityOf } from '../../../src/stability/rules.ts';
import { condition, EARLIER, type StabilityCase } from './cases.ts';

const NOW = new Date('2025-06-01T12:00:00Z');

/** Its message is the whole message, object name included, so a reworded reason fails. */
type Case = StabilityCase;

/** A live object; `generation: null` builds one that did not come from an API server. */
function live(
  apiVersion: string,
  kind: string,
  name: string,
  spec: JsonObject,
  status: JsonObject | undefined,
  generation: number | null = 1,
): KubeObject {
  const object: KubeObject = {
    apiVersion,
    kind,
    metadata: {
      name,
      namespace: 'prod',
      uid: '0b6c0f43',
      resourceVersion: '4711',
      creationTimestamp: EARLIER,
    },
    spec,
  };
  if (generation !== null) object.metadata.generation = generation;
  if (status) object.status = status;
  return object;
}

const template: JsonObject = {
  metadata: { labels: { app: 'web' } },
  spec: { containers: [{ name: 'app', image: 'registry.example.com/web:1.2.3' }] },
};

// --- Deployment ---------------------------------------------------------------------------------------------

const available = condition(
  'Available',
  'True',
  'MinimumReplicasAvailable',
  'Deployment has minimum availability.',
);
const unavailable = condition(
  'Available',
  'False',
  'MinimumReplicasUnavailable',
  'Deployment does not have minimum availability.',
);
const progressed = condition(
  'Progressing',
  'True',
  'NewReplicaSetAvailable',
  'ReplicaSet "web-5d8" has successfully progressed.',
);
const quota = condition(
  'ReplicaFailure',
  'True',
  'FailedCreate',
  'pods "web-5d8-x2x7k" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10',
);
const quotaMessage =
  'ReplicaFailure True FailedCreate: pods "web-5d8-x2x7k" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10';

function deployment(status: JsonObject | undefined, replicas = 3, generation: number | null = 1) {
  const spec = {
    replicas,
    selector: { matchLabels: { app: 'web' } },
    progressDeadlineSeconds: 600,
    template,
  };
  return live('apps/v1', 'Deployment', 'web', spec, status, generation);
}

const counts = (n: number): JsonObject => ({
  observedGeneration: 1,
  replicas: n,
  updatedReplicas: n,
  readyReplicas: n,
  availableReplicas: n,
});

const deploymentCases: Case[] = [
  {
    name: 'Available=False holds a Deployment whose counts look complete',
    object: deployment({ ...counts(3), conditions: [unavailable, progressed] }),
    state: 'progressing',
    message:
      'Deployment prod/web: Available False MinimumReplicasUnavailable: Deployment does not have minimum availability',
  },
  {
    name: 'Available=False without reason or message still names the condition',
    object: deployment({ ...counts(3), conditions: [condition('Available', 'False'), progressed] }),
    state: 'progressing',
    message: 'Deployment prod/web: Available False',
  },
  {
    name: 'with counts short, the count is the message even when Available=False',
    object: deployment({
      observedGeneration: 1,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 1,
      availableReplicas: 1,
      unavailableReplicas: 2,
      conditions: [unavailable, condition('Progressing', 'True', 'ReplicaSetUpdated')],
    }),
    state: 'progressing',
    message: 'Deployment prod/web: 1 of 3 updated replicas available',
  },
  {
    name: 'Available=Unknown does not hold complete counts (only False does)',
    object: deployment({ ...counts(3), conditions: [condition('Available', 'Unknown'), progressed] }),
    state: 'stable',
    message: 'Deployment prod/web: 3 replicas updated, ready and available',
  },
  {
    name: 'no Available condition at all: the counts decide (kstatus would wait for one)',
    object: deployment(counts(3)),
    state: 'stable',
    message: 'Deployment prod/web: 3 replicas updated, ready and available',
  },
  {
    name: 'ReplicaFailure=True holds a Deployment whose counts look complete',
    object: deployment({ ...counts(3), conditions: [available, progressed, quota] }),
    state: 'progressing',
    message: `Deployment prod/web: ${quotaMessage}`,
  },
  {
    name: 'scaled down without a template change: the surplus pod is in the new ReplicaSet',
    object: deployment({ ...counts(4), conditions: [available, progressed] }),
    state: 'progressing',
    message: 'Deployment prod/web: 1 replica pending termination',
  },
  {
    name: 'Available=False and ProgressDeadlineExceeded: failed, by the deadline',
    object: deployment({
      observedGeneration: 1,
      replicas: 3,
      updatedReplicas: 3,
      unavailableReplicas: 3,
      conditions: [
        unavailable,
        condition(
          'Progressing',
          'False',
          'ProgressDeadlineExceeded',
          'ReplicaSet "web-5d8" has timed out progressing.',
        ),
      ],
    }),
    state: 'failed',
    message:
      'Deployment prod/web: ProgressDeadlineExceeded: ReplicaSet "web-5d8" has timed out progressing (0 of 3 available)',
  },
  {
    name: 'scaled to 0 with no status and no generation: no controller has reported',
    object: deployment(undefined, 0, null),
    state: 'progressing',
    message:
      'Deployment prod/web: waiting for the controller to report a status (no status.observedGeneration)',
  },
  {
    name: 'no generation but an observed status: the rule decides',
    object: deployment({ observedGeneration: 1, conditions: [available, progressed] }, 0, null),
    state: 'stable',
    message: 'Deployment prod/web: 0 replicas updated, ready and available',
  },
];

// --- ReplicaSet, ReplicationController ----------------------------------------------------------------------

function replicaSet(status: JsonObject, replicas = 3, apiVersion = 'apps/v1', kind = 'ReplicaSet') {
  const spec = { replicas, selector: { matchLabels: { app: 'web' } }, template };
  return live(apiVersion, kind, 'web-5d8', spec, status);
}

const rsCounts = (n: number): JsonObject => ({
  observedGeneration: 1,
  replicas: n,
  fullyLabeledReplicas: n,
  readyReplicas: n,
  availableReplicas: n,
});

const replicaSetCases: Case[] = [
  {
    name: 'ReplicaFailure=True holds a ReplicaSet whose counts look complete',
    object: replicaSet({ ...rsCounts(3), conditions: [quota] }),
    state: 'progressing',
    message: `ReplicaSet prod/web-5d8: ${quotaMessage}`,
  },
  {
    name: 'ReplicaFailure=False does not hold it',
    object: replicaSet({
      ...rsCounts(3),
      conditions: [condition('ReplicaFailure', 'False', 'FailedCreate')],
    }),
    state: 'stable',
    message: 'ReplicaSet prod/web-5d8: 3 replicas available and ready',
  },
  {
    name: 'pods cannot be created: the count, then the reason',
    object: replicaSet({ observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, conditions: [quota] }),
    state: 'progressing',
    message: `ReplicaSet prod/web-5d8: 2 of 3 replicas fully labeled; ${quotaMessage}`,
  },
  {
    name: 'pods cannot be deleted on scale-down',
    object: replicaSet(
      {
        ...rsCounts(3),
        conditions: [
          condition('ReplicaFailure', 'True', 'FailedDelete', 'pods "web-5d8-x2x7k" is forbidden'),
        ],
      },
      2,
    ),
    state: 'progressing',
    message:
      'ReplicaSet prod/web-5d8: 1 replica pending termination; ReplicaFailure True FailedDelete: pods "web-5d8-x2x7k" is forbidden',
  },
  {
    name: 'ReplicationController with ReplicaFailure=True',
    object: replicaSet({ ...rsCounts(2), conditions: [quota] }, 2, 'v1', 'ReplicationController'),
    state: 'progressing',
    message: `ReplicationController prod/web-5d8: ${quotaMessage}`,
  },
];

// --- DaemonSet ----------------------------------------------------------------------------------------------

function daemonSet(
  status: JsonObject | undefined,
  strategy = 'RollingUpdate',
  generation: number | null = 1,
) {
  const spec = { selector: { matchLabels: { app: 'web' } }, updateStrategy: { type: strategy }, template };
  return live('apps/v1', 'DaemonSet', 'node-agent', spec, status, generation);
}

const dsCounts: JsonObject = {
  observedGeneration: 1,
  desiredNumberScheduled: 2,
  currentNumberScheduled: 2,
  numberMisscheduled: 0,
  numberReady: 2,
  numberAvailable: 2,
};

const daemonSetCases: Case[] = [
  {
    name: 'observed, but desiredNumberScheduled not reported',
    object: daemonSet({ observedGeneration: 1, numberReady: 0 }),
    state: 'progressing',
    message: 'DaemonSet prod/node-agent: waiting for the controller to report desiredNumberScheduled',
  },
  {
    name: 'desiredNumberScheduled of another type is not reported either',
    object: daemonSet({ observedGeneration: 1, desiredNumberScheduled: '2' }),
    state: 'progressing',
    message: 'DaemonSet prod/node-agent: waiting for the controller to report desiredNumberScheduled',
  },
  {
    name: 'no status and no generation',
    object: daemonSet(undefined, 'RollingUpdate', null),
    state: 'progressing',
    message:
      'DaemonSet prod/node-agent: waiting for the controller to report a status (no status.observedGeneration)',
  },
  {
    name: 'OnDelete: a node still without its pod',
    object: daemonSet(
      { ...dsCounts, currentNumberScheduled: 1, numberReady: 1, numberAvailable: 1 },
      'OnDelete',
    ),
    state: 'progressing',
    message: 'DaemonSet prod/node-agent: 1 of 2 nodes running a pod',
  },
  {
    name: 'OnDelete: ready but not yet available (minReadySeconds)',
    object: daemonSet({ ...dsCounts, numberAvailable: 1, numberUnavailable: 1 }, 'OnDelete'),
    state: 'progressing',
    message: 'DaemonSet prod/node-agent: 1 of 2 pods available',
  },
  {
    name: 'OnDelete: old pods, all ready and available',
    object: daemonSet(dsCounts, 'OnDelete'),
    state: 'stable',
    message:
      'DaemonSet prod/node-agent: 2 of 2 pods ready; update strategy OnDelete replaces pods only when they are deleted, so the rollout itself is not checked',
  },
];

// --- StatefulSet --------------------------------------------------------------------------------------------

function statefulSet(status: JsonObject | undefined, extra: JsonObject = {}, generation: number | null = 1) {
  const spec = {
    replicas: 3,
    serviceName: 'db',
    selector: { matchLabels: { app: 'web' } },
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
    template,
    ...extra,
  };
  return live('apps/v1', 'StatefulSet', 'db', spec, status, generation);
}

const rolledOut = (availableReplicas: number): JsonObject => ({
  observedGeneration: 1,
  replicas: 3,
  readyReplicas: 3,
  currentReplicas: 3,
  updatedReplicas: 3,
  availableReplicas,
  currentRevision: 'db-7c9f8d',
  updateRevision: 'db-7c9f8d',
});

const statefulSetCases: Case[] = [
  {
    name: 'minReadySeconds: ready but not yet available',
    object: statefulSet(rolledOut(2), { minReadySeconds: 30 }),
    state: 'progressing',
    message: 'StatefulSet prod/db: 2 of 3 replicas available (minReadySeconds 30)',
  },
  {
    name: 'minReadySeconds: available',
    object: statefulSet(rolledOut(3), { minReadySeconds: 30 }),
    state: 'stable',
    message: 'StatefulSet prod/db: 3 replicas ready at revision db-7c9f8d',
  },
  {
    name: 'no minReadySeconds: a server that reports availableReplicas 0 does not hold it',
    object: statefulSet(rolledOut(0)),
    state: 'stable',
    message: 'StatefulSet prod/db: 3 replicas ready at revision db-7c9f8d',
  },
  {
    name: 'OnDelete with minReadySeconds: not yet available',
    object: statefulSet(rolledOut(1), { minReadySeconds: 10, updateStrategy: { type: 'OnDelete' } }),
    state: 'progressing',
    message: 'StatefulSet prod/db: 1 of 3 replicas available (minReadySeconds 10)',
  },
  {
    name: 'scaled to 0 with no status and no generation',
    object: statefulSet(undefined, { replicas: 0 }, null),
    state: 'progressing',
    message:
      'StatefulSet prod/db: waiting for the controller to report a status (no status.observedGeneration)',
  },
];

// --- Job, other kinds ---------------------------------------------------------------------------------------

const job = (status: JsonObject): KubeObject =>
  live('batch/v1', 'Job', 'migrate', { backoffLimit: 0, completions: 1, template }, status);

const otherCases: Case[] = [
  {
    name: 'Job with FailureTarget=True fails before its pods have terminated',
    object: job({
      startTime: EARLIER,
      active: 0,
      failed: 1,
      terminating: 1,
      conditions: [
        condition(
          'FailureTarget',
          'True',
          'BackoffLimitExceeded',
          'Job has reached the specified backoff limit',
        ),
      ],
    }),
    state: 'failed',
    message:
      'Job prod/migrate: failing: BackoffLimitExceeded: Job has reached the specified backoff limit (waiting for its pods to terminate)',
  },
  {
    name: 'Job with FailureTarget=False is still running',
    object: job({ startTime: EARLIER, active: 1, conditions: [condition('FailureTarget', 'False')] }),
    state: 'progressing',
    message: 'Job prod/migrate: running: 1 active, 0 of 1 succeeded, 0 failed',
  },
  {
    name: 'a custom resource without generation or status is not held by the workload check',
    object: live('example.com/v1', 'Widget', 'w', {}, undefined, null),
    state: 'stable',
    message: 'Widget prod/w: no Ready or Available condition to wait for',
  },
];

const tables: [string, Case[]][] = [
  ['Deployment', deploymentCases],
  ['ReplicaSet and ReplicationController', replicaSetCases],
  ['DaemonSet', daemonSetCases],
  ['StatefulSet', statefulSetCases],
  ['Job and other kinds', otherCases],
];

describe.each(tables)('stabilityOf, conditions and empty statuses: %s', (_, cases) => {
  it.each(cases)('$name', ({ object, state, message }) => {
    expect(stabilityOf(object, NOW)).toEqual({ state, message });
  });
});
