// What a change to a deployment's manifests would do, from two renders: the base (what is deployed, or the target
// branch) and the head (a pull request), rendered the same way, the head with the base's versions known so that a
// ConfigMap or Secret whose content is unchanged keeps its version and a changed one gets the next. Objects are
// paired by identity (a versioned object by its name without the version), so a new version of a ConfigMap shows as
// the change of its content, not as an added and a removed object, with the workloads whose references move to it.
// Secret values are masked key by key before any text is made (diff-text.ts). Pure: renders in, a preview out.
import { structuredPatch } from 'diff';
import { CONTENT_HASH } from './annotations.ts';
import { comparableForDiff, diffYaml, MASK, maskSecrets } from './diff-text.ts';
import { isObject, type KubeObject } from './manifest.ts';
import type { RenderResult } from './render.ts';

export interface PreviewObject {
  /** `Deployment shop/web`; for a versioned object its name without the version (`ConfigMap shop/app-config`). */
  object: string;
  /** The unified diff, Secret values masked; for an added or removed object, its whole YAML as + or - lines. */
  text: string;
}

export interface PreviewVersion extends PreviewObject {
  /** `app-config-v003` -> `app-config-v004`. */
  from: string;
  to: string;
  /** The objects whose references move to the new version (`Deployment shop/web`). */
  movedIn: string[];
}

export interface PreviewImage {
  object: string;
  from: string;
  to: string;
}

export interface PreviewDiff {
  added: PreviewObject[];
  changed: PreviewObject[];
  /** In the base, not in the head: what prune would delete (or leave behind with prune off). */
  removed: PreviewObject[];
  /** New versions of versioned objects (ConfigMaps, Secrets), as the change of their content. */
  versions: PreviewVersion[];
  images: PreviewImage[];
  unchanged: number;
}

const CONTEXT_LINES = 3;

interface Entry {
  identity: string;
  /** The name without a version. */
  base: string;
  name: string;
  versioned: boolean;
  object: KubeObject;
}

function entries(result: RenderResult): Map<string, Entry> {
  const out = new Map<string, Entry>();
  result.objects.forEach((object, i) => {
    const version = result.plan[i]?.version;
    const ns = object.metadata.namespace ? `${object.metadata.namespace}/` : '';
    const name = version ? version.base : object.metadata.name;
    const identity = `${object.kind} ${ns}${name}`;
    out.set(`${object.apiVersion.split('/').slice(0, -1).join('/')}|${identity}`, {
      identity,
      base: name,
      name: object.metadata.name,
      versioned: version !== undefined,
      object,
    });
  });
  return out;
}

/**
 * What a preview compares of an object: as `mooring diff` compares it, without the content hash (an HMAC under a
 * key made for the preview: it differs between previews and says nothing a reader can use).
 */
function comparable(object: KubeObject): KubeObject {
  const copy = comparableForDiff(object);
  const annotations = copy.metadata.annotations;
  if (annotations?.[CONTENT_HASH] !== undefined) {
    const { [CONTENT_HASH]: _hash, ...rest } = annotations;
    copy.metadata = { ...copy.metadata, annotations: rest };
  }
  return copy;
}

/** The unified diff of two objects' YAML (either may be absent), Secret values masked; empty when equal. */
export function objectDiff(
  label: string,
  before: KubeObject | undefined,
  after: KubeObject | undefined,
): string {
  const masked =
    after !== undefined
      ? maskSecrets(before ? comparable(before) : undefined, comparable(after))
      : { live: before ? removedSecret(comparable(before)) : undefined, desired: undefined };
  const a = diffYaml(masked.live);
  const b = diffYaml(masked.desired);
  if (a === b) return '';
  const patch = structuredPatch('base', 'head', a, b, undefined, undefined, { context: CONTEXT_LINES });
  const lines = [`--- base ${label}`, `+++ head ${label}`];
  for (const h of patch.hunks) {
    const range = (start: number, count: number) => `${count === 0 ? start - 1 : start},${count}`;
    lines.push(`@@ -${range(h.oldStart, h.oldLines)} +${range(h.newStart, h.newLines)} @@`, ...h.lines);
  }
  return `${lines.join('\n')}\n`;
}

/** A removed object as its diff shows it: a Secret's values say `(removed)`, never what they were. */
function removedSecret(object: KubeObject): KubeObject {
  const masked = maskSecrets(undefined, object).desired;
  if (isObject(masked.data))
    masked.data = Object.fromEntries(Object.keys(masked.data).map((k) => [k, MASK.removed]));
  return masked;
}

/** A copy named `name`: two versions of one object compared by content, not by their version suffix. */
function renamed(object: KubeObject, name: string): KubeObject {
  return { ...object, metadata: { ...object.metadata, name } };
}

/** The images of an object's containers (`containers`, `initContainers`, `ephemeralContainers`, at any depth). */
export function imagesOf(object: unknown): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (value: unknown, depth: number) => {
    if (depth > 12) return;
    if (Array.isArray(value)) for (const v of value) walk(v, depth + 1);
    else if (isObject(value))
      for (const [key, v] of Object.entries(value)) {
        if (
          (key === 'containers' || key === 'initContainers' || key === 'ephemeralContainers') &&
          Array.isArray(v)
        ) {
          for (const c of v)
            if (isObject(c) && typeof c.name === 'string' && typeof c.image === 'string')
              found.set(`${key === 'containers' ? '' : `${key}/`}${c.name}`, c.image);
        } else walk(v, depth + 1);
      }
  };
  walk(object, 0);
  return found;
}

/** The preview of moving from `base` to `head` (both rendered; the head with the base's versions known). */
export function previewDiff(base: RenderResult, head: RenderResult): PreviewDiff {
  const before = entries(base);
  const after = entries(head);
  const diff: PreviewDiff = { added: [], changed: [], removed: [], versions: [], images: [], unchanged: 0 };
  for (const [key, now] of after) {
    const was = before.get(key);
    if (!was) {
      diff.added.push({ object: now.identity, text: objectDiff(now.identity, undefined, now.object) });
      continue;
    }
    for (const [container, image] of imagesOf(now.object)) {
      const old = imagesOf(was.object).get(container);
      if (old !== undefined && old !== image)
        diff.images.push({ object: `${now.identity} (${container})`, from: old, to: image });
    }
    if (now.versioned && was.name !== now.name) {
      const text = objectDiff(now.identity, renamed(was.object, now.base), renamed(now.object, now.base));
      const movedIn = head.references.filter((r) => r.to === now.name).map((r) => r.object);
      diff.versions.push({
        object: now.identity,
        from: was.name,
        to: now.name,
        text,
        movedIn: [...new Set(movedIn)].sort(),
      });
      continue;
    }
    const text = objectDiff(now.identity, was.object, now.object);
    if (text === '') diff.unchanged++;
    else diff.changed.push({ object: now.identity, text });
  }
  for (const [key, was] of before)
    if (!after.has(key))
      diff.removed.push({ object: was.identity, text: objectDiff(was.identity, was.object, undefined) });
  return diff;
}

/** Whether the preview changes anything. */
export function previewChanges(diff: PreviewDiff): boolean {
  return diff.added.length + diff.changed.length + diff.removed.length + diff.versions.length > 0;
}
