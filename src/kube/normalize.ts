// Defaults the API server would fill in anyway, set before a server-side apply. Server-side apply merges
// lists like Service ports and container ports by (port, protocol); an element without `protocol` has no
// complete key, and the server refuses the whole patch ("associative list with keys has an element that omits
// key field protocol"). Flux's ssa package sets the same defaults for the same reason.
import { groupOf, isObject, type JsonValue, type KubeObject } from '../render/manifest.ts';
import { select } from '../render/path.ts';
import { POD_TEMPLATE_RULES } from '../render/tables.ts';

function defaultProtocol(ports: JsonValue | undefined): void {
  if (!Array.isArray(ports)) return;
  for (const port of ports) if (isObject(port) && port.protocol === undefined) port.protocol = 'TCP';
}

/** Returns a copy of `object` with protocol defaults on Service ports and container ports. */
export function withApplyDefaults(object: KubeObject): KubeObject {
  const copy = structuredClone(object);
  const group = groupOf(copy.apiVersion);
  if (group === '' && copy.kind === 'Service' && isObject(copy.spec)) defaultProtocol(copy.spec.ports);
  for (const rule of POD_TEMPLATE_RULES) {
    if (rule.group !== group || rule.kind !== copy.kind) continue;
    const specPath = rule.path ? `${rule.path}.spec` : 'spec';
    for (const list of ['containers', 'initContainers']) {
      for (const ports of select(copy as unknown as JsonValue, `${specPath}.${list}[*].ports`)) {
        defaultProtocol(ports.value);
      }
    }
  }
  return copy;
}
