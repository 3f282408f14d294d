// Cases for the kinds charts ship beside their workloads to keep them available and scaled: PodDisruptionBudget
// (policy/v1), HorizontalPodAutoscaler (autoscaling/v2) and CronJob (batch/v1), statuses shaped as the disruption,
// autoscaling and cronjob controllers of Kubernetes 1.37 write them; run by rules.test.ts with the other tables.
import type { JsonObject, KubeObject } from '../../../src/render/manifest.ts';
import { type StabilityCase as Case, condition, EARLIER } from './cases.ts';

const BEFORE = '2025-06-01T03:00:00Z';

function object(apiVersion: string, kind: string, spec: JsonObject, status?: JsonObject): KubeObject {
  return {
    apiVersion,
    kind,
    metadata: { name: 'web', namespace: 'prod', generation: 1, creationTimestamp: EARLIER },
    spec,
    ...(status ? { status } : {}),
  };
}

// --- PodDisruptionBudget ------------------------------------------------------------------------------------

function pdb(counts: JsonObject, conditions: JsonObject[] = []): KubeObject {
  return object(
    'policy/v1',
    'PodDisruptionBudget',
    { minAvailable: 2, selector: { matchLabels: { app: 'web' } } },
    { observedGeneration: 1, ...counts, ...(conditions.length > 0 ? { conditions } : {}) },
  );
}

const sufficient = condition('DisruptionAllowed', 'True', 'SufficientPods', '');
const insufficient = condition('DisruptionAllowed', 'False', 'InsufficientPods', '');

export const pdbCases: Case[] = [
  {
    name: 'PDB met, with room for a disruption',
    object: pdb({ currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptionsAllowed: 1 }, [
      sufficient,
    ]),
    state: 'stable',
    message: '3 of 2 required pods healthy (3 pods selected), 1 disruption allowed',
  },
  {
    name: 'PDB met that allows no eviction (one replica, minAvailable 1)',
    object: pdb({ currentHealthy: 1, desiredHealthy: 1, expectedPods: 1 }, [insufficient]),
    state: 'stable',
    message: 'no disruption allowed: InsufficientPods',
  },
  {
    name: 'PDB whose pods are still starting',
    object: pdb({ currentHealthy: 1, desiredHealthy: 2, expectedPods: 3 }, [insufficient]),
    state: 'progressing',
    message: '1 of 2 required pods healthy (3 pods selected)',
  },
  {
    name: 'PDB not yet counted by the disruption controller',
    object: pdb({}),
    state: 'progressing',
    message: 'waiting for the disruption controller',
  },
  {
    name: 'PDB the disruption controller cannot compute',
    object: pdb({ expectedPods: 0 }, [
      condition('DisruptionAllowed', 'False', 'SyncFailed', 'found no controllers for pod "web-0"'),
    ]),
    state: 'failed',
    message: 'cannot compute the budget: SyncFailed: found no controllers for pod "web-0"',
  },
];

// --- HorizontalPodAutoscaler (beyond rules.test.ts) -----------------------------------------------------------

function hpa(conditions: JsonObject[]): KubeObject {
  return object(
    'autoscaling/v2',
    'HorizontalPodAutoscaler',
    {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
      minReplicas: 2,
      maxReplicas: 6,
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 75 } },
        },
      ],
      behavior: { scaleDown: { stabilizationWindowSeconds: 300 } },
    },
    { currentReplicas: 2, desiredReplicas: 2, ...(conditions.length > 0 ? { conditions } : {}) },
  );
}

const gotScale = condition(
  'AbleToScale',
  'True',
  'SucceededGetScale',
  "the HPA controller was able to get the target's current scale",
);

export const hpaMoreCases: Case[] = [
  {
    name: 'HPA the autoscaler has not looked at yet',
    object: hpa([]),
    state: 'progressing',
    message: 'waiting for the autoscaler to read its target',
  },
  {
    name: 'HPA on a cluster without a metrics server',
    object: hpa([
      gotScale,
      condition(
        'ScalingActive',
        'False',
        'FailedGetResourceMetric',
        'the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)',
      ),
    ]),
    state: 'stable',
    message: 'able to scale; scaling inactive: FailedGetResourceMetric',
  },
  {
    name: 'HPA whose target has a selector it cannot use',
    object: hpa([
      gotScale,
      condition('ScalingActive', 'False', 'InvalidSelector', "the HPA target's scale is missing a selector"),
    ]),
    state: 'failed',
    message: "cannot compute a replica count: InvalidSelector: the HPA target's scale is missing a selector",
  },
  {
    name: 'HPA whose pods another HPA already scales',
    object: hpa([
      gotScale,
      condition(
        'ScalingActive',
        'False',
        'AmbiguousSelector',
        'pods by selector app=web are controlled by multiple HPAs: [prod/web prod/web-old]',
      ),
    ]),
    state: 'failed',
    message: 'AmbiguousSelector',
  },
  {
    name: 'HPA of a target scaled to 0',
    object: hpa([
      gotScale,
      condition(
        'ScalingActive',
        'False',
        'ScalingDisabled',
        'scaling is disabled since the replica count of the target is zero',
      ),
    ]),
    state: 'stable',
    message: 'scaling inactive: ScalingDisabled',
  },
];

// --- CronJob (beyond rules.test.ts) -----------------------------------------------------------------------------

function cronJob(status: JsonObject): KubeObject {
  return object(
    'batch/v1',
    'CronJob',
    {
      schedule: '30 2 * * *',
      timeZone: 'Europe/Lisbon',
      concurrencyPolicy: 'Forbid',
      jobTemplate: { spec: { template: { spec: { containers: [{ name: 'backup', image: 'backup:1' }] } } } },
    },
    status,
  );
}

export const cronJobMoreCases: Case[] = [
  {
    name: 'CronJob in a time zone, never run yet',
    object: cronJob({}),
    state: 'stable',
    message: 'schedules jobs at "30 2 * * *" (Europe/Lisbon)',
  },
  {
    name: 'CronJob whose last run failed is still stable, and says so',
    object: cronJob({ lastScheduleTime: EARLIER, lastSuccessfulTime: BEFORE }),
    state: 'stable',
    message: `its last run, scheduled at ${EARLIER}, has not succeeded (last success ${BEFORE})`,
  },
  {
    name: 'CronJob running now says nothing of its last run',
    object: cronJob({
      lastScheduleTime: EARLIER,
      lastSuccessfulTime: BEFORE,
      active: [{ kind: 'Job', name: 'web-29152350', namespace: 'prod' }],
    }),
    state: 'stable',
    message: 'schedules jobs at "30 2 * * *" (Europe/Lisbon)',
  },
];
