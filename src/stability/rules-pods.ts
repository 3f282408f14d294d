// Stability of Pods and of the batch kinds that run them to completion (Job, CronJob).
import type { JsonObject, KubeObject } from '../render/manifest.ts';
import {
  conditionOf,
  describeCondition,
  integer,
  isFalse,
  isTrue,
  objectAt,
  objects,
  plural,
  section,
  sentence,
  text,
} from './status-fields.ts';
import { failed, progressing, stable, type Verdict } from './verdict.ts';

/**
 * Waiting reasons that mean the container will not start without someone changing the pod or the cluster.
 * The kubelet keeps retrying them, but the rollout is stuck until then: reporting it early beats a timeout.
 */
export const FAILING_WAIT_REASONS: ReadonlySet<string> = new Set([
  'CrashLoopBackOff',
  'ImagePullBackOff',
  'ErrImagePull',
  'CreateContainerConfigError',
  'InvalidImageName',
  'CreateContainerError',
]);

interface ContainerView {
  /** `container app`, `init container migrate` */
  label: string;
  status: JsonObject;
  /** A sidecar (init container with restartPolicy Always) is restarted whatever the pod's policy. */
  restartsAlways: boolean;
}

function containerViews(spec: JsonObject, status: JsonObject): ContainerView[] {
  const sidecars = new Set(
    objects(spec.initContainers)
      .filter((c) => text(c, 'restartPolicy') === 'Always')
      .map((c) => text(c, 'name')),
  );
  const view = (kind: string, init: boolean) => (s: JsonObject) => ({
    label: `${kind} ${text(s, 'name') ?? '(unnamed)'}`,
    status: s,
    restartsAlways: init && sidecars.has(text(s, 'name')),
  });
  // Init containers first: they run first, and a failing one is why the others are not running.
  return [
    ...objects(status.initContainerStatuses).map(view('init container', true)),
    ...objects(status.containerStatuses).map(view('container', false)),
  ];
}

function stuckContainer(container: ContainerView): Verdict | undefined {
  const waiting = objectAt(container.status, 'state', 'waiting');
  const reason = text(waiting, 'reason');
  if (reason === undefined || !FAILING_WAIT_REASONS.has(reason)) return undefined;
  if (reason === 'CrashLoopBackOff') {
    // The kubelet's back-off message only repeats the names; the restart count and last exit code help.
    const restarts = integer(container.status, 'restartCount');
    const last = objectAt(container.status, 'lastState', 'terminated');
    const exit = typeof last.exitCode === 'number' ? `, last exit code ${last.exitCode}` : '';
    return failed(`${container.label} is in CrashLoopBackOff (restarted ${plural(restarts, 'time')}${exit})`);
  }
  const message = sentence(text(waiting, 'message') ?? '');
  return failed(`${container.label} is in ${reason}${message ? `: ${message}` : ''}`);
}

function exitDescription(terminated: JsonObject): string {
  const reason = text(terminated, 'reason');
  return `exited with code ${integer(terminated, 'exitCode')}${reason ? ` (${reason})` : ''}`;
}

function failedTermination(container: ContainerView): JsonObject | undefined {
  const terminated = objectAt(container.status, 'state', 'terminated');
  return integer(terminated, 'exitCode') !== 0 ? terminated : undefined;
}

export function podStability(object: KubeObject): Verdict {
  const spec = section(object, 'spec');
  const status = section(object, 'status');
  const phase = text(status, 'phase');
  const containers = containerViews(spec, status);

  if (phase === 'Succeeded') return stable('succeeded');
  if (phase === 'Failed') {
    const reason = text(status, 'reason');
    const message = sentence(text(status, 'message') ?? '');
    if (reason || message) return failed(`failed: ${[reason, message].filter(Boolean).join(': ')}`);
    for (const container of containers) {
      const terminated = failedTermination(container);
      if (terminated) return failed(`failed: ${container.label} ${exitDescription(terminated)}`);
    }
    return failed('failed');
  }
  for (const container of containers) {
    const stuck = stuckContainer(container);
    if (stuck) return stuck;
  }
  if ((text(spec, 'restartPolicy') ?? 'Always') === 'Never') {
    for (const container of containers) {
      const terminated = container.restartsAlways ? undefined : failedTermination(container);
      if (terminated) {
        return failed(
          `${container.label} ${exitDescription(terminated)} and the pod's restartPolicy is Never`,
        );
      }
    }
  }
  const scheduled = conditionOf(status, 'PodScheduled');
  if (scheduled && isFalse(scheduled)) return progressing(`not scheduled: ${describeCondition(scheduled)}`);
  const ready = conditionOf(status, 'Ready');
  if (isTrue(ready)) return stable('ready');
  for (const container of containers) {
    const reason = text(objectAt(container.status, 'state', 'waiting'), 'reason');
    if (reason) return progressing(`${container.label} is waiting (${reason})`);
  }
  if (ready) return progressing(`not ready: ${describeCondition(ready)}`);
  return progressing(`phase ${phase ?? 'not reported'}`);
}

export function jobStability(object: KubeObject): Verdict {
  const spec = section(object, 'spec');
  const status = section(object, 'status');
  const succeeded = integer(status, 'succeeded');
  const complete = conditionOf(status, 'Complete');
  if (isTrue(complete)) return stable(`complete (${succeeded} succeeded)`);
  const failure = conditionOf(status, 'Failed');
  if (failure && isTrue(failure)) return failed(`failed: ${describeCondition(failure)}`);
  // FailureTarget is set, never withdrawn, as soon as the controller decides the Job fails; Failed follows only
  // once its pods have terminated, which a long grace period can stretch to minutes.
  const failing = conditionOf(status, 'FailureTarget');
  if (failing && isTrue(failing)) {
    return failed(`failing: ${describeCondition(failing)} (waiting for its pods to terminate)`);
  }

  const completions = spec.completions;
  const target = typeof completions === 'number' ? ` of ${completions}` : '';
  const counts = `${integer(status, 'active')} active, ${succeeded}${target} succeeded, ${integer(status, 'failed')} failed`;
  if (isTrue(conditionOf(status, 'Suspended')) || spec.suspend === true) {
    return progressing(`suspended (${counts})`);
  }
  return progressing(`running: ${counts}`);
}

/**
 * A CronJob's work happens at its schedule; applying it is all there is to wait for. A last run that did not
 * succeed (no active job, lastSuccessfulTime before lastScheduleTime: what Argo CD calls Degraded) is about a
 * run before this sync, not about what was applied, so it is reported in the message and does not hold the sync.
 */
export function cronJobStability(object: KubeObject): Verdict {
  const spec = section(object, 'spec');
  const status = section(object, 'status');
  const schedule = text(spec, 'schedule');
  const zone = text(spec, 'timeZone');
  const suspended = spec.suspend === true ? ', suspended' : '';
  const scheduled = text(status, 'lastScheduleTime');
  const succeeded = text(status, 'lastSuccessfulTime');
  const idle = objects(status.active).length === 0;
  const lastRun =
    scheduled && idle && (!succeeded || Date.parse(succeeded) < Date.parse(scheduled))
      ? `; its last run, scheduled at ${scheduled}, has not succeeded${succeeded ? ` (last success ${succeeded})` : ''}`
      : '';
  const at = schedule ? ` at "${schedule}"${zone ? ` (${zone})` : ''}` : '';
  return stable(`schedules jobs${at}${suspended}${lastRun}`);
}
