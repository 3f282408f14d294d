// A drift pass: only what drifted is applied again. The check runs right after render, before the namespaces and
// the inventory are read, so a pass that finds nothing ends there, stable, having sent no request of its own (the
// loop of src/sync/deploy.ts stops after this stage when it set the wait). What it found is cut out of the set
// once the inventory stage has taken the hooks out (cutToDrift).

import { isHookObject } from '../../render/hooks.ts';
import type { KubeObject } from '../../render/manifest.ts';
import type { PlanEntry } from '../../render/render.ts';
import { judgedByMetadata } from '../../stability/rules.ts';
import { concurrencyOf, type DeployRun, fieldManagerOf, type Stage } from './context.ts';

/** What a drift check found to apply again, with the plan to apply each with (a replace where fields were added). */
const toApply = new WeakMap<DeployRun, Map<KubeObject, PlanEntry>>();

export const checkDrift: Stage = async (run) => {
  const { request, driftRun } = run;
  if (!request.drift || !driftRun || !run.rendered) return;
  // Hooks are no part of a drift pass (it runs none): they are neither checked nor applied.
  const rendered = run.rendered;
  // Nor is what is written at most once (Flux's ssa: IfNotPresent, Ignore): whatever it holds now is meant.
  const release = rendered.objects.flatMap((o, i) =>
    isHookObject(o.metadata.annotations) || rendered.plan[i]?.strategy.writeOnce !== undefined ? [] : [i],
  );
  const found = await driftRun.check(
    {
      ...rendered,
      objects: release.map((i) => rendered.objects[i] as KubeObject),
      plan: release.map((i) => rendered.plan[i] as PlanEntry),
    },
    {
      owner: request.inventory?.owner,
      mode: request.drift,
      fieldManager: fieldManagerOf(request),
      concurrency: concurrencyOf(request),
      metadataOnly: judgedByMetadata,
    },
  );
  run.drift = found.findings;
  toApply.set(run, new Map(found.rendered.objects.map((o, i) => [o, found.rendered.plan[i] as PlanEntry])));
  if (found.findings.length === 0)
    run.wait = { outcome: 'stable', verdicts: [], culprit: undefined, elapsedMs: 0 };
};

/** A drift pass applies only what its check found drifted, with the plan the check gave each. */
export const cutToDrift: Stage = async (run) => {
  const cut = toApply.get(run);
  const rendered = run.rendered;
  if (!cut || !rendered) return;
  const kept = rendered.objects.flatMap((o) => (cut.has(o) ? [o] : []));
  run.rendered = { ...rendered, objects: kept, plan: kept.map((o) => cut.get(o) as PlanEntry) };
};
