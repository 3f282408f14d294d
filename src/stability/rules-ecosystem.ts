// Built-in rules for custom resources of widely deployed projects, whose status the generic rule reads too
// loosely: a cert-manager Certificate, Flux's HelmRelease and Kustomization, an Argo Rollout. Each stands where
// the generic rule would say "nothing to wait for" before its controller has written anything, and reads the
// signals its project documents. A health rule configured for one of these kinds takes its place.
import type { KubeObject } from '../render/manifest.ts';
import {
  conditionOf,
  describeCondition,
  integer,
  isFalse,
  isTrue,
  objects,
  section,
  sentence,
  text,
} from './status-fields.ts';
import { failed, progressing, stable, type Verdict } from './verdict.ts';

/**
 * cert-manager.io Certificate: Issuing=True is an issuance under way; Ready=True (for this generation) is done;
 * Issuing=False with reason Failed is a failed issuance, retried only after a back-off of an hour or more, so
 * waiting for it within a deploy is futile. A Ready condition written for an older generation is stale.
 */
export function certificateStability(object: KubeObject): Verdict {
  const status = section(object, 'status');
  const issuing = conditionOf(status, 'Issuing');
  if (issuing && isTrue(issuing)) return progressing(`issuing: ${describeCondition(issuing)}`);
  const generation = object.metadata.generation;
  const readyRaw = objects(status.conditions).find((c) => text(c, 'type') === 'Ready');
  const ready = conditionOf(status, 'Ready');
  if (
    ready &&
    readyRaw &&
    typeof generation === 'number' &&
    integer(readyRaw, 'observedGeneration', generation) < generation
  )
    return progressing(`waiting for cert-manager to check generation ${generation}`);
  if (ready && isTrue(ready)) return stable(`ready: ${describeCondition(ready)}`);
  if (issuing && isFalse(issuing) && issuing.reason === 'Failed')
    return failed(`issuance failed: ${describeCondition(issuing)}`);
  if (!ready) return progressing('waiting for cert-manager to report Ready');
  return progressing(`not ready: ${describeCondition(ready)}`);
}

/**
 * Flux's HelmRelease and Kustomization (kstatus-compliant): suspended is progressing with what to do; no
 * observedGeneration yet means the controller has not reconciled it (rules.ts compares one that is reported);
 * Stalled=True is failed (retries exhausted, or an error retrying cannot fix); Reconciling=True is in progress;
 * then Ready decides, and a missing Ready is waited for, since Flux always writes it.
 */
export function fluxStability(object: KubeObject): Verdict {
  const spec = section(object, 'spec');
  const status = section(object, 'status');
  if (spec.suspend === true) return progressing('suspended (spec.suspend): resume it to reconcile');
  if (typeof status.observedGeneration !== 'number')
    return progressing('waiting for the controller to reconcile it (no status.observedGeneration)');
  const stalled = conditionOf(status, 'Stalled');
  if (stalled && isTrue(stalled)) return failed(`stalled: ${describeCondition(stalled)}`);
  const reconciling = conditionOf(status, 'Reconciling');
  if (reconciling && isTrue(reconciling))
    return progressing(`reconciling: ${describeCondition(reconciling)}`);
  const ready = conditionOf(status, 'Ready');
  if (!ready) return progressing('waiting for the controller to report Ready');
  if (isTrue(ready)) return stable(`ready: ${describeCondition(ready)}`);
  return progressing(`not ready: ${describeCondition(ready)}`);
}

/**
 * argoproj.io Rollout, as Argo Rollouts' own health check reads it: status.observedGeneration is a string and
 * must equal metadata.generation; then status.phase: Healthy is stable, Degraded (aborted, or past its
 * progressDeadlineSeconds) failed, Paused and Progressing in progress.
 */
export function argoRolloutStability(object: KubeObject): Verdict {
  const spec = section(object, 'spec');
  const status = section(object, 'status');
  const generation = object.metadata.generation;
  const observed = status.observedGeneration;
  const observedText = typeof observed === 'number' ? String(observed) : text(status, 'observedGeneration');
  if (typeof generation === 'number' && observedText !== String(generation)) {
    const was = observedText === undefined ? '' : ` (observed ${observedText})`;
    return progressing(`waiting for the controller to observe generation ${generation}${was}`);
  }
  const phase = text(status, 'phase');
  const message = text(status, 'message');
  const said = message ? `: ${sentence(message)}` : '';
  if (spec.paused === true && phase !== 'Degraded')
    return progressing(`paused (spec.paused)${said}; resume it to continue`);
  switch (phase) {
    case 'Healthy':
      return stable(`healthy${said}`);
    case 'Degraded':
      return failed(`degraded${said}`);
    case 'Paused':
      return progressing(`paused${said}; promote it to continue`);
    case 'Progressing':
      return progressing(`progressing${said}`);
    case undefined:
      return progressing('waiting for the controller to report a phase');
    default:
      return progressing(`phase ${phase}${said}`);
  }
}
