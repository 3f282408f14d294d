// Fields Kubernetes types as strings, and that YAML 1.1 (which Kubernetes reads manifests with) turns into something
// else when left unquoted: `value: no` is the boolean false, `version: 0755` the number 493. kubectl refuses such a
// manifest before sending it ("cannot unmarshal bool into Go struct field ... of type string"), and the API server's
// refusal of the same names no line ("expected string, got &value.valueUnstructured{Value:false}"). Render refuses it
// first, naming the file, line and field, never the value (an env value may be a secret). The fields are a table.
import { RenderError } from './errors.ts';
import { describeObject, fieldOrigin, isObject, type SourcedObject } from './manifest.ts';
import { typeName } from './secret-values.ts';
import { POD_TEMPLATE_RULES, rulesFor } from './tables.ts';

type Path = readonly (string | number)[];

/** Mappings whose every value is a string (an object's own are checked where it is parsed: render/parse.ts). */
const STRING_MAPS: readonly Path[] = [
  ['metadata', 'labels'],
  ['metadata', 'annotations'],
];

/** In a pod template (relative to it): its own labels and annotations, and each container's strings. */
const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'];

const HINT =
  'Kubernetes requires a string: quote the value (YAML 1.1, which Kubernetes reads, takes an unquoted yes, no, on, off, y or n for true or false, and 0755 for a number)';

function at(value: unknown, path: Path): unknown {
  let here = value;
  for (const key of path) {
    if (typeof key === 'number') here = Array.isArray(here) ? here[key] : undefined;
    else here = isObject(here) ? here[key] : undefined;
  }
  return here;
}

/**
 * Every field that must be a string, with its value: `visit(value, path)` for each, where `path()` makes its path (made
 * only for a value that is not a string: a ConfigMap of 20,000 keys made 20,000 paths to read each value back).
 */
function stringFields(
  object: unknown,
  kind: string,
  group: string,
  visit: (value: unknown, path: () => Path) => void,
): void {
  const mapValues = (path: Path) => {
    const map = at(object, path);
    if (isObject(map)) for (const key in map) visit(map[key], () => [...path, key]);
  };
  const listItems = (path: Path, each: (item: Path, value: unknown) => void) => {
    const list = at(object, path);
    if (Array.isArray(list)) for (let i = 0; i < list.length; i++) each([...path, i], list[i]);
  };
  if (group === '' && kind === 'ConfigMap') mapValues(['data']);
  for (const rule of rulesFor(POD_TEMPLATE_RULES, group, kind)) {
    const template: Path = rule.path === '' ? [] : rule.path.split('.');
    if (template.length > 0) for (const map of STRING_MAPS) mapValues([...template, ...map]);
    for (const list of CONTAINER_LISTS)
      listItems([...template, 'spec', list], (container) => {
        listItems([...container, 'env'], (env, item) =>
          visit(isObject(item) ? item.value : undefined, () => [...env, 'value']),
        );
        listItems([...container, 'args'], (arg, value) => visit(value, () => arg));
        listItems([...container, 'command'], (arg, value) => visit(value, () => arg));
      });
  }
}

function describePath(path: Path): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? key : `.${key}`)).join('');
}

/** One error per field of the table that holds something else than a string (null and absent are left alone). */
export function checkStringValues(item: SourcedObject, errors: RenderError[]): void {
  const { object } = item;
  const slash = object.apiVersion.indexOf('/');
  const group = slash === -1 ? '' : object.apiVersion.slice(0, slash);
  stringFields(object, object.kind, group, (value, pathOf) => {
    if (typeof value === 'string' || value === null || value === undefined) return;
    const path = pathOf();
    errors.push(
      new RenderError(`${describePath(path)} is ${typeName(value)}; ${HINT}`, {
        origin: fieldOrigin(item, path),
        object: describeObject(object),
      }),
    );
  });
}
