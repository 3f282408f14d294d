// Stability of the non-workload kinds: networking, storage, namespaces, API extensions, autoscaling, disruption
// budgets, and the generic rule for everything else (custom resources), which reads the conventional
// Ready/Stalled conditions.
import type { KubeObject } from '../render/manifest.ts';
import {
  type Condition,
  conditionOf,
  describeCondition,
  integer,
  isFalse,
  isTrue,
  objectAt,
  objects,
  plural,
  section,
  text,
} from './status-fields.ts';
import { type ClusterFacts, failed, progressing, stable, type Verdict } from './verdict.ts';

/** Kinds with nothing to converge: the API server's acceptance is the whole of their rollout. */
export function alwaysStable(): Verdict {
  return stable('nothing to wait for once applied');
}

/** `203.0.113.7, lb.example.com`, or undefined while no load balancer is bound. */
function loadBalancerAddresses(object: KubeObject): string | undefined {
  const ingress = objects(objectAt(section(object, 'status'), 'loadBalancer').ingress);
  if (ingress.length === 0) return undefined;
  return ingress.map((entry) => text(entry, 'ip') ?? text(entry, 'hostname') ?? '(no address)').join(', ');
}

export function serviceStability(object: KubeObject): Verdict {
  const type = text(section(object, 'spec'), 'type') ?? 'ClusterIP';
  if (type !== 'LoadBalancer') return stable(`type ${type}, nothing to wait for`);
  const addresses = loadBalancerAddresses(object);
  return addresses ? stable(`load balancer at ${addresses}`) : progressing('waiting for a load balancer');
}

export function ingressStability(object: KubeObject): Verdict {
  const addresses = loadBalancerAddresses(object);
  return addresses
    ? stable(`load balancer at ${addresses}`)
    : progressing('waiting for the ingress controller to bind a load balancer');
}

/** Set on a claim by the scheduler once it has placed a Pod that mounts it: binding is then under way. */
export const SELECTED_NODE_ANNOTATION = 'volume.kubernetes.io/selected-node';

export function persistentVolumeClaimStability(
  object: KubeObject,
  _now?: Date,
  facts?: ClusterFacts,
): Verdict {
  const status = section(object, 'status');
  const phase = text(status, 'phase');
  const spec = section(object, 'spec');
  const volume = text(spec, 'volumeName');
  if (phase === 'Bound') return stable(`bound to PersistentVolume ${volume ?? '(unknown)'}`);
  if (phase === 'Lost') return failed(`lost its PersistentVolume ${volume ?? '(unknown)'}`);
  // A claim whose StorageClass binds on first consumer (kind's, most clouds' default classes) stays Pending, by
  // design, until a Pod that mounts it is scheduled: the scheduler then names the node on the claim and the
  // volume is made there. Until then there is nothing to wait for (its consumer may be a CronJob, a workload
  // scaled to 0, a later deploy); what mounts it waits for the binding in its own verdict. Once a node is
  // selected, the claim waits to be bound like any other. Without the class's mode (not readable), as before.
  const className = text(spec, 'storageClassName');
  const selected: unknown = object.metadata.annotations?.[SELECTED_NODE_ANNOTATION];
  if (
    phase === 'Pending' &&
    !volume &&
    className !== undefined &&
    facts?.volumeBindingModes?.get(className) === 'WaitForFirstConsumer'
  ) {
    if (typeof selected !== 'string' || selected === '')
      return stable(
        `pending until a Pod that mounts it is scheduled (StorageClass ${className}: volumeBindingMode WaitForFirstConsumer)`,
      );
    return progressing(`phase Pending, a volume being made for node ${selected} (StorageClass ${className})`);
  }
  return progressing(`phase ${phase ?? 'not reported'}, waiting to be bound to a volume`);
}

export function namespaceStability(object: KubeObject): Verdict {
  const status = section(object, 'status');
  const phase = text(status, 'phase');
  if (phase === 'Active') return stable('active');
  if (phase === 'Terminating') {
    const remaining = ['NamespaceContentRemaining', 'NamespaceFinalizersRemaining']
      .map((type) => conditionOf(status, type))
      .filter((c) => c !== undefined && isTrue(c))
      .map((c) => (c ? describeCondition(c) : ''));
    return progressing(['terminating', ...remaining].join('; '));
  }
  return progressing(`phase ${phase ?? 'not reported'}`);
}

export function customResourceDefinitionStability(object: KubeObject): Verdict {
  const status = section(object, 'status');
  // Checked before Established: an update whose names conflict leaves the old Established=True in place, yet
  // what we applied was refused.
  const names = conditionOf(status, 'NamesAccepted');
  if (names && isFalse(names)) return failed(`names not accepted: ${describeCondition(names)}`);
  const established = conditionOf(status, 'Established');
  if (isTrue(established)) return stable('established');
  return progressing(
    established ? `not established: ${describeCondition(established)}` : 'not yet established',
  );
}

/**
 * ScalingActive=False reasons that come from the HPA's own spec or its target's selector: waiting does not fix
 * them (Argo CD reads InvalidSelector as Degraded too). AmbiguousSelector: another HPA already scales these pods.
 */
const HPA_CONFIGURATION_FAULTS: ReadonlySet<string> = new Set([
  'InvalidSelector',
  'AmbiguousSelector',
  'InvalidMetricSourceType',
]);

/**
 * An HPA is progressing until the autoscaler has looked at it (it reports AbleToScale once it has read its
 * target's scale; Argo CD waits the same way), so a target that does not exist is not called stable before the
 * controller says so. AbleToScale=False (FailedGetScale: the target or its scale subresource is missing;
 * FailedUpdateScale) is a broken reference that waiting will not fix; its Backoff* reasons (older controllers'
 * forbidden windows) are only a pause. ScalingActive=False fails only for a fault of the spec or the selector
 * (HPA_CONFIGURATION_FAULTS); a metric that cannot be read (FailedGetResourceMetric and the other FailedGet*Metric
 * reasons) is deliberately not a failure, unlike in Argo CD: right after a rollout the metrics pipeline has no
 * samples for the new pods yet, a cluster may run no metrics server at all, and a target scaled to 0 disables
 * scaling by design (ScalingDisabled); all are outside what was applied, so the message reports them without
 * holding the sync.
 */
export function horizontalPodAutoscalerStability(object: KubeObject): Verdict {
  const status = section(object, 'status');
  const able = conditionOf(status, 'AbleToScale');
  if (able && isFalse(able)) {
    const detail = `unable to scale: ${describeCondition(able)}`;
    return able.reason.startsWith('Backoff') ? progressing(detail) : failed(detail);
  }
  const active = conditionOf(status, 'ScalingActive');
  if (active && isFalse(active)) {
    if (HPA_CONFIGURATION_FAULTS.has(active.reason))
      return failed(`cannot compute a replica count: ${describeCondition(active)}`);
    if (able) return stable(`able to scale; scaling inactive: ${describeCondition(active)}`);
  }
  if (!able) return progressing('waiting for the autoscaler to read its target (no AbleToScale condition)');
  return stable('able to scale');
}

/**
 * A PodDisruptionBudget is stable once the disruption controller has counted its pods and the budget is met:
 * `currentHealthy >= desiredHealthy`. DisruptionAllowed=False with reason InsufficientPods is then still stable:
 * a budget that allows no eviction of a single replica (minAvailable 1, maxUnavailable 0) is a choice, as Argo CD
 * reads it. Fewer healthy pods than the budget asks is progressing (the pods it protects are still starting);
 * SyncFailed (the controller cannot compute the budget, e.g. a percentage over pods without a scalable owner) is
 * a fault of the spec: failed.
 */
export function podDisruptionBudgetStability(object: KubeObject): Verdict {
  const status = section(object, 'status');
  const allowed = conditionOf(status, 'DisruptionAllowed');
  if (allowed && isFalse(allowed) && allowed.reason === 'SyncFailed')
    return failed(`the disruption controller cannot compute the budget: ${describeCondition(allowed)}`);
  if (!allowed)
    return progressing(
      'waiting for the disruption controller to count its pods (no DisruptionAllowed condition)',
    );
  const current = integer(status, 'currentHealthy');
  const desired = integer(status, 'desiredHealthy');
  const expected = integer(status, 'expectedPods');
  const counts = `${current} of ${desired} required pods healthy (${plural(expected, 'pod')} selected)`;
  if (current < desired) return progressing(counts);
  const disruptions = integer(status, 'disruptionsAllowed');
  if (isTrue(allowed)) return stable(`${counts}, ${plural(disruptions, 'disruption')} allowed`);
  return stable(`${counts}, no disruption allowed: ${describeCondition(allowed)}`);
}

export function apiServiceStability(object: KubeObject): Verdict {
  const available = conditionOf(section(object, 'status'), 'Available');
  if (isTrue(available)) return stable('available');
  return progressing(
    available ? `not available: ${describeCondition(available)}` : 'availability not reported',
  );
}

/**
 * Any other kind, typically a custom resource, read as kstatus reads one (checkGenericProperties, then
 * checkReadyCondition; the generation is compared before this rule runs, in rules.ts). Stalled=True is failed and
 * Reconciling=True progressing, the kstatus conventions. Then Ready decides: True is stable, False or Unknown
 * progressing (controllers report transient errors there too, and a truly stuck one times out with its message);
 * a status kstatus does not know ('', a typo) is passed over as kstatus passes it. Without Ready, an Available
 * condition decides the same way (mooring's addition: kstatus reads it only on Deployments, yet operators such
 * as OpenShift's and aggregated APIs report availability there). Without either there is nothing to wait for:
 * no status at all is current, as in kstatus.
 */
export function conditionsStability(object: KubeObject): Verdict {
  const status = section(object, 'status');
  const stalled = conditionOf(status, 'Stalled');
  if (stalled && isTrue(stalled)) return failed(`stalled: ${describeCondition(stalled)}`);
  const reconciling = conditionOf(status, 'Reconciling');
  if (reconciling && isTrue(reconciling))
    return progressing(`reconciling: ${describeCondition(reconciling)}`);
  const ready = decided(conditionOf(status, 'Ready'));
  if (ready) return isTrue(ready) ? stable('ready') : progressing(`not ready: ${describeCondition(ready)}`);
  const available = decided(conditionOf(status, 'Available'));
  if (available)
    return isTrue(available)
      ? stable('available (no Ready condition)')
      : progressing(`not available: ${describeCondition(available)}`);
  return stable('no Ready or Available condition to wait for');
}

/** The condition when its status is one kstatus acts on (True, False, Unknown). */
function decided(condition: Condition | undefined): Condition | undefined {
  return condition && ['True', 'False', 'Unknown'].includes(condition.status) ? condition : undefined;
}
