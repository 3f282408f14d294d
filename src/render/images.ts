// Image binding (deploy by digest): image artifacts replace the matching image references of every container of
// every pod template, as `name:tag@sha256:…` so the tag stays readable. The places are IMAGE_RULES plus config.
import { RenderError } from './errors.ts';
import { repositoryOf, tryParseImageRef } from './image-ref.ts';
import { describeObject, fieldOrigin, groupOf, type JsonValue, type SourcedObject } from './manifest.ts';
import { type Selected, select, setSelected } from './path.ts';
import type { KindRule } from './tables.ts';

export interface ImageArtifact {
  /** The repository, as written in manifests or fully qualified: `nginx`, `registry:5000/team/app`. */
  name: string;
  /** The tag the digest was resolved from, when there is one. */
  tag?: string | undefined;
  digest: string;
}

export type ImageMatch = 'match-name-and-tag' | 'match-name-only';

export interface BoundImage {
  object: string;
  path: string;
  from: string;
  to: string;
}

export interface ImageBinding {
  bound: BoundImage[];
  /** Artifacts that matched no image in the render set (usually a misspelt name: worth a warning). */
  unused: ImageArtifact[];
}

const DIGEST = /^sha256:[0-9a-f]{64}$|^sha512:[0-9a-f]{128}$/;

interface PreparedArtifact {
  artifact: ImageArtifact;
  repository: string;
  tag: string | undefined;
}

export function prepareArtifacts(
  artifacts: readonly ImageArtifact[],
  errors: RenderError[],
): PreparedArtifact[] {
  const prepared: PreparedArtifact[] = [];
  for (const artifact of artifacts) {
    const ref = tryParseImageRef(artifact.tag ? `${artifact.name}:${artifact.tag}` : artifact.name);
    if (ref instanceof Error) {
      errors.push(new RenderError(`image artifact "${artifact.name}": ${ref.message}`));
      continue;
    }
    if (!DIGEST.test(artifact.digest)) {
      errors.push(
        new RenderError(`image artifact "${artifact.name}": "${artifact.digest}" is not a sha256 digest`),
      );
      continue;
    }
    prepared.push({ artifact, repository: repositoryOf(ref), tag: ref.tag });
  }
  return prepared;
}

/** The name part of an image as the user wrote it (no tag, no digest), so output keeps their spelling. */
function writtenName(image: string): string {
  const at = image.indexOf('@');
  const name = at === -1 ? image : image.slice(0, at);
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? name.slice(0, colon) : name;
}

export function bindImages(
  objects: readonly SourcedObject[],
  artifacts: readonly ImageArtifact[],
  options: {
    match: ImageMatch;
    requireDigests: boolean;
    rules: (group: string, kind: string) => readonly KindRule[];
  },
  errors: RenderError[],
): ImageBinding {
  const prepared = prepareArtifacts(artifacts, errors);
  const byRepository = new Map<string, PreparedArtifact[]>();
  for (const p of prepared) byRepository.set(p.repository, [...(byRepository.get(p.repository) ?? []), p]);
  const used = new Set<PreparedArtifact>();
  const bound: BoundImage[] = [];

  for (const item of objects) {
    const { object } = item;
    const rules = options.rules(groupOf(object.apiVersion), object.kind);
    for (const rule of rules) {
      for (const selected of select(object as unknown as JsonValue, rule.path)) {
        // Only a problem needs the field's position: looking it up re-reads the file (parse.ts).
        const where = () => ({ origin: fieldOrigin(item, selected.path), object: describeObject(object) });
        const result = bindOne(selected, byRepository, options.match);
        if (result instanceof RenderError) {
          errors.push(new RenderError(`${selected.path}: ${result.message}`, where()));
          continue;
        }
        if (result) {
          used.add(result.artifact);
          bound.push({
            object: describeObject(object),
            path: selected.path,
            from: result.from,
            to: result.to,
          });
        } else if (
          options.requireDigests &&
          typeof selected.value === 'string' &&
          !selected.value.includes('@')
        ) {
          errors.push(
            new RenderError(
              `${selected.path}: image "${selected.value}" has no digest and no image artifact matches it (requireDigests is on)`,
              where(),
            ),
          );
        }
      }
    }
  }
  return { bound, unused: prepared.filter((p) => !used.has(p)).map((p) => p.artifact) };
}

function bindOne(
  selected: Selected,
  byRepository: Map<string, PreparedArtifact[]>,
  match: ImageMatch,
): { artifact: PreparedArtifact; from: string; to: string } | RenderError | undefined {
  const image = selected.value;
  if (typeof image !== 'string') return new RenderError('image must be a string');
  const ref = tryParseImageRef(image);
  if (ref instanceof Error) return new RenderError(ref.message);
  // A digest written in the manifest is a deliberate pin: it is kept.
  if (ref.digest) return undefined;
  const candidates = byRepository.get(repositoryOf(ref)) ?? [];
  let chosen: PreparedArtifact | undefined;
  if (match === 'match-name-and-tag') {
    const tag = ref.tag ?? 'latest';
    chosen = candidates.find((c) => (c.tag ?? 'latest') === tag);
  } else if (candidates.length > 1) {
    const names = candidates.map((c) => `${c.artifact.name}${c.tag ? `:${c.tag}` : ''}`).join(', ');
    return new RenderError(`image "${image}" matches several image artifacts by name (${names})`);
  } else {
    chosen = candidates[0];
  }
  if (!chosen) return undefined;
  const tag = match === 'match-name-only' ? (chosen.tag ?? ref.tag) : ref.tag;
  const to = `${writtenName(image)}${tag ? `:${tag}` : ''}@${chosen.artifact.digest}`;
  setSelected(selected, to);
  return { artifact: chosen, from: image, to };
}
