// The defaults and bounds of the configuration's `render` section as plain values: the schema (schema.ts) declares
// them, and the CLI's render, deploy and diff of local paths start from them without loading the schema (and zod,
// and the CEL of health rules with it), a third of the start of `mooring render` before helm could run.
// test/unit/cli/read-flags.test.ts checks them against the schema's own result.
import { DEFAULT_YAML_LIMITS } from '../yaml/limits.ts';

/** The smallest toolMaxOutputBytes (and --tool-max-output-bytes): 1 MiB. */
export const MIN_TOOL_OUTPUT_BYTES = 1024 * 1024;

/** `render` as the schema fills it in when the configuration leaves it out. */
export const RENDER_DEFAULTS = Object.freeze({
  imagePaths: [],
  referencePaths: [],
  maxFileBytes: 4 * 1024 * 1024,
  maxDocumentsPerFile: 1000,
  maxAliasCount: DEFAULT_YAML_LIMITS.maxAliasCount,
  maxYamlNodes: DEFAULT_YAML_LIMITS.maxNodes,
  maxYamlFileNodes: DEFAULT_YAML_LIMITS.maxFileNodes ?? 1_000_000,
  maxYamlDepth: DEFAULT_YAML_LIMITS.maxDepth,
  applyAppLabels: true,
  podTemplateLabels: 'auto',
  clusterScoped: [],
  kustomize: { allowRemoteBases: false },
  /** Milliseconds (the schema's duration, 60s). */
  toolTimeout: 60_000,
  toolMaxOutputBytes: 32 * 1024 * 1024,
  toolMemoryBytes: 1024 * 1024 * 1024,
} as const);
