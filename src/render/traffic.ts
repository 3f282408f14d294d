// traffic.spinnaker.io/load-balancers: '["service web", "service web-canary"]' attaches a workload to Services
// by giving its pod template the Services' selector labels. The Services come from the render set, else from
// the cluster snapshot; conflicts, malformed entries and unknown Services are errors that say which.

import { parseJson } from '../json.ts';
import { TRAFFIC_LOAD_BALANCERS } from './annotations.ts';
import { RenderError } from './errors.ts';
import {
  describeObject,
  fieldOrigin,
  groupOf,
  isObject,
  type JsonValue,
  type KubeObject,
  type SourcedObject,
} from './manifest.ts';
import { select } from './path.ts';
import type { KindRule } from './tables.ts';

function parseLoadBalancers(value: string): string[] | string {
  let parsed: unknown;
  try {
    parsed = parseJson(value);
  } catch {
    return `must be a JSON list such as '["service my-service"]', not ${JSON.stringify(value)}`;
  }
  if (!Array.isArray(parsed) || !parsed.every((e) => typeof e === 'string')) {
    return `must be a JSON list of strings such as '["service my-service"]'`;
  }
  const names: string[] = [];
  for (const entry of parsed as string[]) {
    const match = /^\s*service\s+([a-z0-9]([-a-z0-9]*[a-z0-9])?)\s*$/i.exec(entry);
    if (!match?.[1]) return `entry "${entry}" must be "service <name>" (only Services are load balancers)`;
    names.push(match[1]);
  }
  return names;
}

export function applyTraffic(
  item: SourcedObject,
  services: (namespace: string | undefined, name: string) => KubeObject | undefined,
  podTemplates: (group: string, kind: string) => readonly KindRule[],
  errors: RenderError[],
): void {
  const { object } = item;
  const value = object.metadata.annotations?.[TRAFFIC_LOAD_BALANCERS];
  if (value === undefined) return;
  // Only a problem needs the annotation's position: looking it up re-reads the file (parse.ts).
  const where = () => ({
    origin: fieldOrigin(item, ['metadata', 'annotations', TRAFFIC_LOAD_BALANCERS]),
    object: describeObject(object),
  });
  const names = parseLoadBalancers(value);
  if (typeof names === 'string') {
    errors.push(new RenderError(`${TRAFFIC_LOAD_BALANCERS} ${names}`, where()));
    return;
  }
  const rules = podTemplates(groupOf(object.apiVersion), object.kind);
  if (rules.length === 0) {
    errors.push(
      new RenderError(
        `${TRAFFIC_LOAD_BALANCERS} applies to workloads with pods, not to ${object.kind}`,
        where(),
      ),
    );
    return;
  }
  for (const name of names) {
    const service = services(object.metadata.namespace, name);
    if (!service) {
      errors.push(
        new RenderError(
          `${TRAFFIC_LOAD_BALANCERS}: Service ${object.metadata.namespace}/${name} is neither in the manifests nor in the cluster`,
          where(),
        ),
      );
      continue;
    }
    const spec = service.spec;
    const selector = isObject(spec) && isObject(spec.selector) ? spec.selector : undefined;
    if (!selector || Object.keys(selector).length === 0) {
      errors.push(
        new RenderError(
          `${TRAFFIC_LOAD_BALANCERS}: Service ${name} has no selector to match pods by`,
          where(),
        ),
      );
      continue;
    }
    for (const rule of rules) {
      const templates =
        rule.path === ''
          ? [{ value: object as unknown as JsonValue }]
          : select(object as unknown as JsonValue, rule.path);
      for (const template of templates) {
        if (!isObject(template.value)) continue;
        const metadata = isObject(template.value.metadata) ? template.value.metadata : {};
        const labels = { ...(isObject(metadata.labels) ? (metadata.labels as Record<string, string>) : {}) };
        for (const [key, v] of Object.entries(selector)) {
          const existing = labels[key];
          if (existing !== undefined && existing !== v) {
            errors.push(
              new RenderError(
                `${TRAFFIC_LOAD_BALANCERS}: Service ${name} selects ${key}=${String(v)}, but the pod template has ${key}=${existing}`,
                where(),
              ),
            );
            continue;
          }
          labels[key] = String(v);
        }
        template.value.metadata = { ...metadata, labels };
      }
    }
  }
}
