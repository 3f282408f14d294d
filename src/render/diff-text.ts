// The text of `mooring diff`: which part of an object is compared, Secret values masked key by key before any
// text is made of them, and the unified diff of two objects as YAML with stable key order. Pure: objects in,
// text out (the live objects and dry-run answers are read by src/kube/diff.ts).
import { structuredPatch } from 'diff';
import { stringifyYaml } from '../yaml/write.ts';
import { canonical } from './canonical.ts';
import { isObject, type JsonValue, type KubeObject } from './manifest.ts';

/** Bookkeeping the server keeps in metadata: never part of what a deploy changes. */
const SERVER_METADATA = [
  'managedFields',
  'resourceVersion',
  'generation',
  'uid',
  'creationTimestamp',
  'selfLink',
];
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const CONTEXT_LINES = 3;

/** What a masked Secret value says in place of the value. */
export const MASK = {
  unchanged: '(unchanged)',
  /** The live side of a changed value. */
  old: '(old value)',
  changed: '(changed)',
  added: '(added)',
  removed: '(removed)',
} as const;

export type ObjectChange = 'added' | 'changed' | 'unchanged' | 'recreated';

export interface ObjectDiff {
  /** `Deployment shop/web`. */
  object: string;
  change: ObjectChange;
  /** The unified diff (headers and hunks), empty when unchanged. */
  text: string;
}

/** A copy of `obj` without status and the metadata only the server sets. */
export function comparableForDiff(obj: KubeObject): KubeObject {
  const { status: _status, ...rest } = structuredClone(obj);
  const metadata: Record<string, unknown> = { ...rest.metadata };
  for (const key of SERVER_METADATA) delete metadata[key];
  return { ...rest, metadata: metadata as KubeObject['metadata'] };
}

function isSecret(obj: KubeObject | undefined): obj is KubeObject {
  return obj?.kind === 'Secret' && obj.apiVersion === 'v1';
}

function stringsOf(value: unknown): Record<string, JsonValue> {
  return isObject(value) ? value : {};
}

/** A Secret's stringData as the server stores it: base64 in data (a dry run's answer has no stringData left). */
function folded(secret: KubeObject): KubeObject {
  const strings = secret.stringData;
  if (!isObject(strings)) return secret;
  const { stringData: _s, ...rest } = secret;
  const data: Record<string, JsonValue> = { ...stringsOf(secret.data) };
  for (const [k, v] of Object.entries(strings))
    data[k] = typeof v === 'string' ? Buffer.from(v, 'utf8').toString('base64') : v;
  return { ...rest, data } as KubeObject;
}

/**
 * Copies of a live and a desired object in which every value of a Secret's data (stringData folded into it) and
 * kubectl's last-applied annotation, which holds them all, is replaced by what happens to it, compared key by
 * key: equal values give equal lines, a changed one `(old value)` against `(changed)`, added and removed keys
 * show on their side only. Objects that are not Secrets come back as they are.
 */
export function maskSecrets(
  live: KubeObject | undefined,
  desired: KubeObject,
): { live: KubeObject | undefined; desired: KubeObject } {
  if (!isSecret(desired) && !isSecret(live)) return { live, desired };
  const before = live ? structuredClone(folded(live)) : undefined;
  const after = structuredClone(folded(desired));
  const old = stringsOf(before?.data);
  const now = stringsOf(after.data);
  if (before && before.data !== undefined && before.data !== null) {
    before.data = Object.fromEntries(
      Object.keys(old).map((k) => [
        k,
        !(k in now) ? MASK.removed : old[k] === now[k] ? MASK.unchanged : MASK.old,
      ]),
    );
  }
  if (after.data !== undefined && after.data !== null) {
    after.data = Object.fromEntries(
      Object.keys(now).map((k) => [
        k,
        !before || !(k in old) ? MASK.added : old[k] === now[k] ? MASK.unchanged : MASK.changed,
      ]),
    );
  }
  const oldApplied = before?.metadata.annotations?.[LAST_APPLIED];
  const newApplied = after.metadata.annotations?.[LAST_APPLIED];
  const same = oldApplied === newApplied;
  if (before && oldApplied !== undefined) {
    before.metadata.annotations = {
      ...before.metadata.annotations,
      [LAST_APPLIED]: same ? MASK.unchanged : MASK.old,
    };
  }
  if (newApplied !== undefined) {
    after.metadata.annotations = {
      ...after.metadata.annotations,
      [LAST_APPLIED]: same ? MASK.unchanged : before ? MASK.changed : MASK.added,
    };
  }
  return { live: before, desired: after };
}

export function diffYaml(obj: KubeObject | undefined): string {
  return obj ? stringifyYaml(canonical(obj)) : '';
}

/** `@@ -1,3 +1,4 @@`, an empty range starting before its first line, as diff(1) writes it. */
function hunkHeader(h: { oldStart: number; oldLines: number; newStart: number; newLines: number }): string {
  const range = (start: number, lines: number) => `${lines === 0 ? start - 1 : start},${lines}`;
  return `@@ -${range(h.oldStart, h.oldLines)} +${range(h.newStart, h.newLines)} @@`;
}

/**
 * The change a deploy would make to one object: `live` as the server holds it (undefined: a new object) against
 * `desired`, the server's dry-run answer. Secret values are masked before any text is made.
 */
export function diffObject(object: string, live: KubeObject | undefined, desired: KubeObject): ObjectDiff {
  const masked = maskSecrets(live ? comparableForDiff(live) : undefined, comparableForDiff(desired));
  const before = diffYaml(masked.live);
  const after = diffYaml(masked.desired);
  if (live && before === after) return { object, change: 'unchanged', text: '' };
  const patch = structuredPatch('live', 'desired', before, after, undefined, undefined, {
    context: CONTEXT_LINES,
  });
  const lines = [`--- live ${object}`, `+++ desired ${object}`];
  for (const hunk of patch.hunks) lines.push(hunkHeader(hunk), ...hunk.lines);
  return { object, change: live ? 'changed' : 'added', text: `${lines.join('\n')}\n` };
}

/** `3 objects changed, 1 added, 12 unchanged` (and what prune would delete). */
export function diffSummary(diffs: readonly ObjectDiff[], pruned = 0): string {
  const count = (change: ObjectChange) => diffs.filter((d) => d.change === change).length;
  const changed = count('changed');
  const parts = [`${changed} ${changed === 1 ? 'object' : 'objects'} changed`, `${count('added')} added`];
  if (count('recreated') > 0) parts.push(`${count('recreated')} recreated`);
  parts.push(`${count('unchanged')} unchanged`);
  if (pruned > 0) parts.push(`${pruned} to prune`);
  return parts.join(', ');
}
