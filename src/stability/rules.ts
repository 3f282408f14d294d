// The stability rules: for one live object read from the API server, is the controller done with it
// (stable), still working (progressing), or stuck until someone acts (failed)? Pure: plain JSON in, a verdict
// out. Per-kind rules are a table keyed by `group/Kind`, so new kinds are added as data; checks that apply to
// every kind (deletion, an unobserved generation) run first.
import { describeObject, groupOf, type KubeObject } from '../render/manifest.ts';
import { ALWAYS_STABLE_KINDS } from './always-stable.ts';
import { type HealthRules, healthRuleStability } from './health.ts';
import { argoRolloutStability, certificateStability, fluxStability } from './rules-ecosystem.ts';
import {
  alwaysStable,
  apiServiceStability,
  conditionsStability,
  customResourceDefinitionStability,
  horizontalPodAutoscalerStability,
  ingressStability,
  namespaceStability,
  persistentVolumeClaimStability,
  podDisruptionBudgetStability,
  serviceStability,
} from './rules-other.ts';
import { cronJobStability, jobStability, podStability } from './rules-pods.ts';
import {
  daemonSetStability,
  deploymentStability,
  replicaSetStability,
  statefulSetStability,
} from './rules-workloads.ts';
import { integer, section } from './status-fields.ts';
import {
  type ClusterFacts,
  progressing,
  type Stability,
  type StabilityRule,
  type Verdict,
} from './verdict.ts';

export { ALWAYS_STABLE_KINDS } from './always-stable.ts';
export type { ClusterFacts, Stability, StabilityRule, StabilityState, Verdict } from './verdict.ts';

/** Workload groups: `extensions` served Deployment, ReplicaSet and DaemonSet before `apps` (never StatefulSet). */
const WORKLOAD_GROUPS = ['apps', 'extensions'] as const;

/** The per-kind rules, keyed by `group/Kind` (group '' for core). Kinds not listed get `conditionsStability`. */
export const STABILITY_RULES: ReadonlyMap<string, StabilityRule> = new Map<string, StabilityRule>([
  ...WORKLOAD_GROUPS.flatMap((group): [string, StabilityRule][] => [
    [`${group}/Deployment`, deploymentStability],
    [`${group}/ReplicaSet`, replicaSetStability],
    [`${group}/DaemonSet`, daemonSetStability],
  ]),
  ['apps/StatefulSet', statefulSetStability],
  ['/ReplicationController', replicaSetStability],
  ['/Pod', podStability],
  ['batch/Job', jobStability],
  ['batch/CronJob', cronJobStability],
  ['/Service', serviceStability],
  ['networking.k8s.io/Ingress', ingressStability],
  ['extensions/Ingress', ingressStability],
  ['/PersistentVolumeClaim', persistentVolumeClaimStability],
  ['/Namespace', namespaceStability],
  ['apiextensions.k8s.io/CustomResourceDefinition', customResourceDefinitionStability],
  ['autoscaling/HorizontalPodAutoscaler', horizontalPodAutoscalerStability],
  ['policy/PodDisruptionBudget', podDisruptionBudgetStability],
  ['apiregistration.k8s.io/APIService', apiServiceStability],
  ...ALWAYS_STABLE_KINDS.map((key): [string, StabilityRule] => [key, alwaysStable]),
  // Custom resources of widely deployed projects (rules-ecosystem.ts).
  ['cert-manager.io/Certificate', certificateStability],
  ['helm.toolkit.fluxcd.io/HelmRelease', fluxStability],
  ['kustomize.toolkit.fluxcd.io/Kustomization', fluxStability],
  ['argoproj.io/Rollout', argoRolloutStability],
]);

/**
 * Kinds whose controllers always write status.observedGeneration: a missing one means the controller has not
 * seen the object yet (kubectl waits the same way). Other kinds are checked only when they report it, since
 * some never do (the HPA controller leaves it unset).
 */
export const OBSERVED_GENERATION_KINDS: ReadonlySet<string> = new Set([
  ...WORKLOAD_GROUPS.flatMap((group) => [`${group}/Deployment`, `${group}/ReplicaSet`, `${group}/DaemonSet`]),
  'apps/StatefulSet',
  '/ReplicationController',
]);

export function ruleKey(object: Pick<KubeObject, 'apiVersion' | 'kind'>): string {
  return `${groupOf(object.apiVersion)}/${object.kind}`;
}

function deletion(object: KubeObject, now: Date): Verdict | undefined {
  const timestamp = object.metadata.deletionTimestamp;
  if (typeof timestamp !== 'string') return undefined;
  // For a pod the timestamp is the end of its grace period; an object still present after it waits on
  // finalizers (or, for a pod, on a kubelet that may be gone). Timestamps, not durations, keep the message
  // unchanged from one poll to the next.
  const finalizers = object.metadata.finalizers;
  const pending = Array.isArray(finalizers) ? finalizers.filter((f) => typeof f === 'string') : [];
  if (Date.parse(timestamp) > now.getTime())
    return progressing(`being deleted (graceful until ${timestamp})`);
  const waiting = pending.length > 0 ? `, waiting for finalizers ${pending.join(', ')}` : '';
  return progressing(`being deleted (since ${timestamp}${waiting})`);
}

function unobservedGeneration(object: KubeObject): Verdict | undefined {
  const generation = object.metadata.generation;
  const observed = section(object, 'status').observedGeneration;
  if (typeof observed !== 'number' && !OBSERVED_GENERATION_KINDS.has(ruleKey(object))) return undefined;
  if (typeof generation !== 'number') {
    // The API server always sets a generation on these kinds; an object without one did not come from it, and
    // its counts (all 0 when the status is empty) would call a workload scaled to 0 stable before any
    // controller has looked at it. kstatus checks the same for DaemonSets; clouddriver for all four.
    return typeof observed === 'number'
      ? undefined
      : progressing('waiting for the controller to report a status (no status.observedGeneration)');
  }
  const seen = integer(section(object, 'status'), 'observedGeneration');
  if (seen >= generation) return undefined;
  const was = typeof observed === 'number' ? ` (observed ${observed})` : '';
  return progressing(`waiting for the controller to observe generation ${generation}${was}`);
}

/**
 * True when a kind's verdict reads nothing but metadata (deletion): such objects can be watched as metadata only,
 * so their contents (Secret values above all) are never read to judge them.
 */
export function judgedByMetadata(object: Pick<KubeObject, 'apiVersion' | 'kind'>): boolean {
  return STABILITY_RULES.get(ruleKey(object)) === alwaysStable;
}

/**
 * The verdict for one live object as read from the API server (with status). `now` for age-based rules; `health`
 * the programmable rules in force, which take the place of the built-in rule of their kinds; `facts` what the
 * deploy read of the cluster for the rules that need it (ClusterFacts).
 */
export function stabilityOf(
  object: KubeObject,
  now: Date = new Date(),
  health?: HealthRules,
  facts?: ClusterFacts,
): Stability {
  const key = ruleKey(object);
  const programmed = health?.get(key);
  const rule: StabilityRule = programmed
    ? (o) => healthRuleStability(programmed, o)
    : (STABILITY_RULES.get(key) ?? conditionsStability);
  const verdict = deletion(object, now) ?? unobservedGeneration(object) ?? rule(object, now, facts);
  const stability: Stability = {
    state: verdict.state,
    message: `${describeObject(object)}: ${verdict.detail}`,
  };
  if (verdict.againMs !== undefined) stability.againMs = verdict.againMs;
  return stability;
}
