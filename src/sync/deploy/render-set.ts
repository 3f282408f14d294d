// Render (src/render: no I/O), with what the first stage read of the cluster; the health rules stability judges
// by are compiled here, before anything is written, so an invalid CRD annotation stops the deploy at once.
import { render } from '../../render/render.ts';
import { healthRulesFor } from '../../stability/health.ts';
import type { Stage } from './context.ts';

export const renderSet: Stage = async (run) => {
  const { request } = run;
  run.rendered = render({
    files: request.files,
    parsed: run.parsed,
    namespace: request.namespace,
    application: request.application,
    images: request.images,
    snapshot: run.snapshot,
    options: {
      ...request.renderOptions,
      ...(run.clusterScoped ? { clusterScoped: run.clusterScoped } : {}),
      hashKey: run.hashKey,
    },
  });
  run.health = healthRulesFor(request.health, run.rendered.objects);
};
