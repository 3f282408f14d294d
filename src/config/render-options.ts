// The render options of one deployment, from the agent's configuration.
import type { RenderOptions } from '../render/render.ts';
import type { Deployment, MooringConfig } from './schema.ts';

export function renderOptionsFor(config: MooringConfig, deployment: Deployment): RenderOptions {
  return {
    limits: {
      maxFileBytes: config.render.maxFileBytes,
      maxDocumentsPerFile: config.render.maxDocumentsPerFile,
      maxAliasCount: config.render.maxAliasCount,
    },
    imageMatch: deployment.imageMatch,
    requireDigests: deployment.requireDigests,
    versioned: deployment.versioned,
    applyAppLabels: config.render.applyAppLabels,
    imageRules: config.render.imagePaths,
    referenceRules: config.render.referencePaths,
    clusterScoped: config.render.clusterScoped,
  };
}
