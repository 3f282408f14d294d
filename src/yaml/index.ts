// Bounded YAML parsing (CONVENTIONS.md: one module for every YAML text mooring reads).
export { checkYaml, type YamlCounts } from './count.ts';
export { YamlLimitError } from './errors.ts';
export type { Shape } from './keep.ts';
export {
  DEFAULT_YAML_LIMITS,
  LIMIT_KEYS,
  useYamlLimits,
  type YamlLimits,
  yamlLimits,
  yamlLimitsOf,
} from './limits.ts';
export {
  composeYaml,
  parseYaml,
  parseYamlAll,
  parseYamlDocument,
  parseYamlDocuments,
  toValue,
  type YamlOptions,
} from './parse.ts';
export { type AsyncYamlOptions, checkYamlAsync, parseYamlAllAsync, WORKER_THRESHOLD } from './parse-async.ts';
export type { YamlRules } from './schema.ts';
export { stringifyYaml } from './write.ts';
