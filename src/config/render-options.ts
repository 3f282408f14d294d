// The render options of one deployment, from the agent's configuration.
import type { RenderOptions } from '../render/render.ts';
import { yamlLimitsOf } from '../yaml/limits.ts';
import type { Deployment, MooringConfig } from './schema.ts';

export function renderOptionsFor(config: MooringConfig, deployment: Deployment): RenderOptions {
  return {
    limits: {
      maxFileBytes: config.render.maxFileBytes,
      maxDocumentsPerFile: config.render.maxDocumentsPerFile,
      yaml: yamlLimitsOf(config.render),
    },
    imageMatch: deployment.imageMatch,
    requireDigests: deployment.requireDigests,
    versioned: deployment.versioned,
    versioning: deployment.versioning,
    applyAppLabels: config.render.applyAppLabels,
    podTemplateLabels: config.render.podTemplateLabels,
    imageRules: config.render.imagePaths,
    referenceRules: config.render.referencePaths,
    clusterScoped: config.render.clusterScoped,
    boundary: {
      namespaces: [deployment.namespace, ...deployment.allowedNamespaces],
      clusterScoped: deployment.allowClusterScoped,
      advice: {
        namespace: () => `list it in allowedNamespaces of deployment ${deployment.name}`,
        clusterScoped: (object) =>
          `allow it with allowClusterScoped of deployment ${deployment.name} (true, or kinds such as ${object.kind})`,
      },
    },
  };
}
