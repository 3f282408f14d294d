// Reading spec and status fields of live objects defensively: the API server omits zero values (omitempty),
// so a missing count is 0 and a missing section is empty, never an exception.
import { isObject, type JsonObject, type JsonValue, type KubeObject } from '../render/manifest.ts';

const EMPTY: JsonObject = Object.freeze({}) as JsonObject;

export function section(object: KubeObject, name: 'spec' | 'status'): JsonObject {
  const value = object[name];
  return isObject(value) ? value : EMPTY;
}

/** The object at a path of nested fields, or an empty object. */
export function objectAt(from: JsonObject, ...path: string[]): JsonObject {
  let current: JsonObject = from;
  for (const key of path) {
    const next = current[key];
    if (!isObject(next)) return EMPTY;
    current = next;
  }
  return current;
}

export function integer(from: JsonObject, key: string, fallback = 0): number {
  const value = from[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

export function text(from: JsonObject, key: string): string | undefined {
  const value = from[key];
  return typeof value === 'string' ? value : undefined;
}

export function objects(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export function conditions(status: JsonObject): Condition[] {
  return objects(status.conditions).map((c) => ({
    type: text(c, 'type') ?? '',
    status: text(c, 'status') ?? '',
    reason: text(c, 'reason') ?? '',
    message: text(c, 'message') ?? '',
  }));
}

export function conditionOf(status: JsonObject, type: string): Condition | undefined {
  return conditions(status).find((c) => c.type === type);
}

export function isTrue(condition: Condition | undefined): boolean {
  return condition?.status === 'True';
}

export function isFalse(condition: Condition | undefined): boolean {
  return condition?.status === 'False';
}

/** Controllers end their messages with a period; ours continue after them. */
export function sentence(message: string): string {
  return message.trim().replace(/\.+$/, '');
}

/** `ProgressDeadlineExceeded: ReplicaSet "web-5d8" has timed out progressing`, or whichever half exists. */
export function describeCondition(condition: Condition): string {
  const message = sentence(condition.message);
  if (condition.reason && message) return `${condition.reason}: ${message}`;
  return condition.reason || message || `${condition.type} is ${condition.status}`;
}

/**
 * `Available False MinimumReplicasUnavailable: Deployment does not have minimum availability`: the condition
 * named with its status, for rules that hold an object on a condition rather than on a count.
 */
export function namedCondition(condition: Condition): string {
  const head = `${condition.type} ${condition.status}`;
  return condition.reason || condition.message ? `${head} ${describeCondition(condition)}` : head;
}

/** The condition of this type when its status is True. */
export function trueCondition(status: JsonObject, type: string): Condition | undefined {
  const condition = conditionOf(status, type);
  return isTrue(condition) ? condition : undefined;
}

export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : pluralForm}`;
}
