// The one way mooring writes YAML for people and tools (`render -o yaml`, diff text, values handed to helm, files
// handed to kustomize): with the tags it reads with (schema.ts), so that a number, a boolean and null are written as
// Kubernetes reads them, and a string that any YAML 1.1 reader could take for something else (`no`, `on`, `y`,
// `0755`, `1:20`, `2001-12-14`, `<<`) is quoted. What this writes, parse.ts reads back as the same value.
import { stringify } from 'yaml';
import { schemaOptions, WRITE_COMPAT } from './schema.ts';

/** `value` as YAML (one document), long lines unfolded. */
export function stringifyYaml(value: unknown): string {
  return stringify(value, { ...schemaOptions('kubernetes'), compat: WRITE_COMPAT, lineWidth: 0 });
}
