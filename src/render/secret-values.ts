// A Secret's data and stringData hold strings: Kubernetes refuses anything else, and its refusal quotes the value
// (`.stringData.pin: expected string, got …{Value:7391027446}`). YAML reads an unquoted `pin: 7391027446` as a
// number, so render refuses it first, naming the file, line and key, never the value.
import { RenderError } from './errors.ts';
import { describeObject, fieldOrigin, isObject, type SourcedObject } from './manifest.ts';

const TYPE_NAMES: Record<string, string> = {
  number: 'a number',
  boolean: 'true or false',
  object: 'a mapping',
};

export function typeName(value: unknown): string {
  if (value === null) return 'empty (null)';
  if (Array.isArray(value)) return 'a list';
  return TYPE_NAMES[typeof value] ?? typeof value;
}

/** One error per value of a Secret's data or stringData that is not a string. */
export function checkSecretValues(item: SourcedObject, errors: RenderError[]): void {
  const { object } = item;
  if (object.kind !== 'Secret' || object.apiVersion !== 'v1') return;
  for (const field of ['data', 'stringData']) {
    const values = object[field];
    if (values === undefined || values === null) continue;
    if (!isObject(values)) {
      errors.push(
        new RenderError(`Secret ${field} must be a mapping of keys to strings, not ${typeName(values)}`, {
          origin: fieldOrigin(item, [field]),
          object: describeObject(object),
        }),
      );
      continue;
    }
    for (const [key, value] of Object.entries(values)) {
      if (typeof value === 'string') continue;
      errors.push(
        new RenderError(
          `${field}.${key} is ${typeName(value)}; Kubernetes requires a string: quote the value`,
          { origin: fieldOrigin(item, [field, key]), object: describeObject(object) },
        ),
      );
    }
  }
}
