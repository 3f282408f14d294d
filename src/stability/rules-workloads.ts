// Stability of the replicated workloads: Deployment, ReplicaSet/ReplicationController, StatefulSet, DaemonSet.
// The order of checks follows `kubectl rollout status` (polymorphichelpers/rollout_status.go), extended with
// the counts seed 001 requires, so the first unmet condition is the one a user would see from kubectl.
// Apart from a Deployment's terminal ProgressDeadlineExceeded, conditions are read after the counts (as kstatus
// reads Available): the controllers write both in one status update, so a short count names the shortfall
// more precisely, and a condition decides alone only when the counts look complete.
// Generation and deletion are checked before these rules run (rules.ts); docs/stability.md compares these
// rules with kstatus and clouddriver.
import type { KubeObject } from '../render/manifest.ts';
import {
  conditionOf,
  describeCondition,
  integer,
  isFalse,
  namedCondition,
  objectAt,
  plural,
  section,
  text,
  trueCondition,
} from './status-fields.ts';
import { failed, progressing, stable, type Verdict } from './verdict.ts';

/**
 * A failed pod creation or deletion (quota, admission) says more than a count stuck short; the controller keeps
 * retrying, and quota can free up, so it is progressing, not failed (kstatus agrees).
 */
function withReplicaFailure(status: ReturnType<typeof section>, detail: string): string {
  const failure = trueCondition(status, 'ReplicaFailure');
  return failure ? `${detail}; ${namedCondition(failure)}` : detail;
}

/** The conditions that hold a workload whose counts look complete; the controller still has work to do. */
function conditionHold(status: ReturnType<typeof section>, deployment: boolean): Verdict | undefined {
  if (deployment) {
    const available = conditionOf(status, 'Available');
    if (available && isFalse(available)) return progressing(namedCondition(available));
    // The controller writes Progressing=False only with ProgressDeadlineExceeded (failed above); any other
    // reason comes from another writer, and kstatus holds it (its depNotProgressing case): not done, not failed.
    const progress = conditionOf(status, 'Progressing');
    if (progress && isFalse(progress)) return progressing(namedCondition(progress));
  }
  const failure = trueCondition(status, 'ReplicaFailure');
  return failure ? progressing(namedCondition(failure)) : undefined;
}

export function deploymentStability(object: KubeObject): Verdict {
  const spec = section(object, 'spec');
  const status = section(object, 'status');
  const desired = integer(spec, 'replicas', 1);
  const replicas = integer(status, 'replicas');
  const updated = integer(status, 'updatedReplicas');
  const available = integer(status, 'availableReplicas');
  const ready = integer(status, 'readyReplicas');

  // The controller's own verdict of failure, read by its reason as kstatus reads it (the status is False, but
  // the reason is what the controller keys on). Before the pause: pausing a rollout that has timed out keeps
  // the condition (checkPausedConditions does not overwrite it), and the rollout has failed all the same.
  const progress = conditionOf(status, 'Progressing');
  if (progress?.reason === 'ProgressDeadlineExceeded') {
    const paused = spec.paused === true ? '; the rollout is paused' : '';
    return failed(`${describeCondition(progress)} (${available} of ${desired} available${paused})`);
  }
  // A paused rollout will not move until someone resumes it; it has not failed, but waiting on it is futile,
  // so the message says what to do.
  if (spec.paused === true) {
    return progressing(
      `rollout is paused (spec.paused), ${updated} of ${desired} replicas updated; resume it to continue`,
    );
  }
  if (updated < desired) {
    return progressing(withReplicaFailure(status, `${updated} of ${desired} replicas updated`));
  }
  if (replicas > updated) {
    return progressing(`${plural(replicas - updated, 'old replica')} pending termination`);
  }
  // A scale-down without a template change leaves the surplus in the new ReplicaSet, so `updated` still counts
  // it; kubectl and clouddriver stop here, kstatus (and our ReplicaSet rule) wait for the pods to go.
  if (replicas > desired) {
    return progressing(
      withReplicaFailure(status, `${plural(replicas - desired, 'replica')} pending termination`),
    );
  }
  if (available < updated) {
    return progressing(withReplicaFailure(status, `${available} of ${updated} updated replicas available`));
  }
  if (ready < desired) return progressing(`${ready} of ${desired} replicas ready`);
  // Only an Available=False or a Progressing=False holds (clouddriver reads the first, kstatus both): the
  // controller writes the conditions in every status update, so a missing one means a status some other writer
  // made, where waiting for True would never end.
  const held = conditionHold(status, true);
  if (held) return held;
  return stable(`${plural(desired, 'replica')} updated, ready and available`);
}

/** ReplicaSet and ReplicationController share the status model. */
export function replicaSetStability(object: KubeObject): Verdict {
  const spec = section(object, 'spec');
  const status = section(object, 'status');
  const desired = integer(spec, 'replicas', 1);
  const labeled = integer(status, 'fullyLabeledReplicas');
  const available = integer(status, 'availableReplicas');
  const ready = integer(status, 'readyReplicas');
  const replicas = integer(status, 'replicas');

  if (labeled < desired) {
    return progressing(withReplicaFailure(status, `${labeled} of ${desired} replicas fully labeled`));
  }
  if (available < desired) {
    return progressing(withReplicaFailure(status, `${available} of ${desired} replicas available`));
  }
  if (ready < desired) return progressing(`${ready} of ${desired} replicas ready`);
  // Seed 001 stops at the counts above; like kstatus we also wait for a scale-down to finish, since the
  // controller still has work to do. A FailedDelete shows up here.
  if (replicas > desired) {
    return progressing(
      withReplicaFailure(status, `${plural(replicas - desired, 'replica')} pending termination`),
    );
  }
  // ReplicaSets and ReplicationControllers have no Available condition; ReplicaFailure is their only one.
  const held = conditionHold(status, false);
  if (held) return held;
  return stable(`${plural(desired, 'replica')} available and ready`);
}

const ON_DELETE_NOTE =
  'update strategy OnDelete replaces pods only when they are deleted, so the rollout itself is not checked';

export function statefulSetStability(object: KubeObject): Verdict {
  const spec = section(object, 'spec');
  const status = section(object, 'status');
  const desired = integer(spec, 'replicas', 1);
  const ready = integer(status, 'readyReplicas');
  const replicas = integer(status, 'replicas');
  const updated = integer(status, 'updatedReplicas');
  const current = integer(status, 'currentReplicas');
  const strategy = objectAt(spec, 'updateStrategy');

  if (ready < desired) return progressing(`${ready} of ${desired} replicas ready`);
  // With minReadySeconds a ready pod is not yet available, and the controller waits for availability between
  // pods; kstatus and clouddriver stop at ready. Without it availableReplicas adds nothing (and servers from
  // before the field existed, or with its feature gate off, report 0 or nothing).
  const minReady = integer(spec, 'minReadySeconds');
  const available = integer(status, 'availableReplicas');
  if (minReady > 0 && available < desired) {
    return progressing(`${available} of ${desired} replicas available (minReadySeconds ${minReady})`);
  }
  if (replicas > desired) return progressing(`${plural(replicas - desired, 'replica')} pending termination`);
  // kubectl refuses to judge OnDelete rollouts; we call a ready set stable and say what was not checked.
  if (text(strategy, 'type') === 'OnDelete')
    return stable(`${ready} of ${desired} replicas ready; ${ON_DELETE_NOTE}`);

  // apps/v1 defaults the partition to 0, which kubectl and kstatus then treat as a partitioned rollout and so
  // never compare revisions; only a real partition (> 0) gets the partition rule, everything else the
  // revision rule of seed 001, which is what a partition of 0 means.
  const partition = integer(objectAt(strategy, 'rollingUpdate'), 'partition');
  if (partition > 0) {
    const target = Math.max(desired - partition, 0);
    if (updated < target) {
      return progressing(`${updated} of ${target} replicas updated (partition ${partition})`);
    }
    return stable(
      `partitioned rollout complete: ${updated} of ${desired} replicas updated (partition ${partition})`,
    );
  }
  const currentRevision = text(status, 'currentRevision');
  const updateRevision = text(status, 'updateRevision');
  if (currentRevision !== updateRevision) {
    return progressing(`${updated} of ${desired} replicas updated to revision ${updateRevision ?? '(none)'}`);
  }
  if (current < desired) {
    return progressing(`${current} of ${desired} replicas at revision ${currentRevision ?? '(none)'}`);
  }
  return stable(`${plural(desired, 'replica')} ready at revision ${currentRevision ?? '(none)'}`);
}

export function daemonSetStability(object: KubeObject): Verdict {
  const spec = section(object, 'spec');
  const status = section(object, 'status');
  // desiredNumberScheduled is the one count the API server always serializes, even as 0; without it no
  // controller has reported, and reading it as 0 would call a DaemonSet that no node runs yet stable.
  if (typeof status.desiredNumberScheduled !== 'number') {
    return progressing('waiting for the controller to report desiredNumberScheduled');
  }
  const desired = integer(status, 'desiredNumberScheduled');
  const scheduled = integer(status, 'currentNumberScheduled');
  const updated = integer(status, 'updatedNumberScheduled');
  const available = integer(status, 'numberAvailable');
  const ready = integer(status, 'numberReady');

  if (scheduled < desired) return progressing(`${scheduled} of ${desired} nodes running a pod`);
  // OnDelete skips only the update count: a node without a pod still gets one, at the new template.
  if (text(objectAt(spec, 'updateStrategy'), 'type') === 'OnDelete') {
    if (ready < desired) return progressing(`${ready} of ${desired} pods ready`);
    if (available < desired) return progressing(`${available} of ${desired} pods available`);
    return stable(`${ready} of ${desired} pods ready; ${ON_DELETE_NOTE}`);
  }
  if (updated < desired) return progressing(`${updated} of ${desired} pods updated`);
  if (available < desired) return progressing(`${available} of ${desired} pods available`);
  if (ready < desired) return progressing(`${ready} of ${desired} pods ready`);
  if (desired === 0) return stable('no node needs a pod (0 desired)');
  return stable(`${plural(desired, 'pod')} updated, ready and available`);
}
