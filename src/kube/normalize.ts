// Defaults the API server would fill in anyway, set before a server-side apply. Server-side apply merges
// lists like Service ports and container ports by (port, protocol); an element without `protocol` has no
// complete key, and the server refuses the whole patch ("associative list with keys has an element that omits
// key field protocol"). Flux's ssa package sets the same defaults for the same reason.
import { groupOf, isObject, type JsonValue, type KubeObject } from '../render/manifest.ts';
import { select } from '../render/path.ts';
import { POD_TEMPLATE_RULES } from '../render/tables.ts';

function lacksProtocol(ports: JsonValue | undefined): boolean {
  return Array.isArray(ports) && ports.some((port) => isObject(port) && port.protocol === undefined);
}

function defaultProtocol(ports: JsonValue | undefined): void {
  if (!Array.isArray(ports)) return;
  for (const port of ports) if (isObject(port) && port.protocol === undefined) port.protocol = 'TCP';
}

/** The port lists of `object` that take a protocol default: a Service's, and its pod template's containers'. */
function portLists(object: KubeObject): JsonValue[] {
  const group = groupOf(object.apiVersion);
  const lists: JsonValue[] = [];
  if (group === '' && object.kind === 'Service' && isObject(object.spec) && object.spec.ports !== undefined)
    lists.push(object.spec.ports);
  for (const rule of POD_TEMPLATE_RULES) {
    if (rule.group !== group || rule.kind !== object.kind) continue;
    const specPath = rule.path ? `${rule.path}.spec` : 'spec';
    for (const list of ['containers', 'initContainers'])
      for (const ports of select(object as unknown as JsonValue, `${specPath}.${list}[*].ports`))
        lists.push(ports.value);
  }
  return lists;
}

/**
 * `object` with protocol defaults on Service ports and container ports: a copy with them set where one is missing,
 * `object` itself where none is (a ConfigMap, a Secret, ports that name their protocol). Never changed in place;
 * what it returns is only read (sent, compared), so a large ConfigMap is not copied for nothing.
 */
export function withApplyDefaults(object: KubeObject): KubeObject {
  if (!portLists(object).some(lacksProtocol)) return object;
  const copy = structuredClone(object);
  for (const ports of portLists(copy)) defaultProtocol(ports);
  return copy;
}
