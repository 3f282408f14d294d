// A drift pass: only what drifted is applied again; a pass that finds nothing ends here, stable, having written
// nothing (the loop of src/sync/deploy.ts stops after this stage when it set the wait).
import { judgedByMetadata } from '../../stability/rules.ts';
import { concurrencyOf, fieldManagerOf, type Stage } from './context.ts';

export const checkDrift: Stage = async (run) => {
  const { request, driftRun } = run;
  if (!request.drift || !driftRun || !run.rendered) return;
  const found = await driftRun.check(run.rendered, {
    owner: request.inventory?.owner,
    mode: request.drift,
    fieldManager: fieldManagerOf(request),
    concurrency: concurrencyOf(request),
    metadataOnly: judgedByMetadata,
  });
  run.drift = found.findings;
  run.rendered = found.rendered;
  if (found.findings.length === 0)
    run.wait = { outcome: 'stable', verdicts: [], culprit: undefined, elapsedMs: 0 };
};
