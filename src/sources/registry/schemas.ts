// What we read from registry answers, validated with zod: only the fields the client uses.
import { z } from 'zod';
import { parseJson } from '../../json.ts';

export const MEDIA_TYPES = {
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
} as const;

/** Every image type we understand; without it a registry may convert to schema 1 or pick one platform. */
export const MANIFEST_ACCEPT = Object.values(MEDIA_TYPES).join(', ');

export const DIGEST = /^sha256:[a-f0-9]{64}$/;

const digest = z.string().regex(DIGEST);

export const tagListSchema = z.object({
  name: z.string(),
  // Some registries send null for a repository without tags.
  tags: z
    .array(z.string().max(128))
    .nullish()
    .transform((tags) => tags ?? []),
});

const descriptor = z.object({ mediaType: z.string().optional(), digest, size: z.number().optional() });

/** An image index or Docker manifest list: the same shape for what we need. */
export const indexSchema = z.object({
  mediaType: z.string().optional(),
  manifests: z
    .array(
      descriptor.extend({
        platform: z
          .object({ os: z.string(), architecture: z.string(), variant: z.string().optional() })
          .optional(),
      }),
    )
    .max(1000),
});

/** An OCI 1.1 referrers list (the referrers API's answer, or the index under the fallback tag `sha256-<hex>`). */
export const referrersSchema = z.object({
  manifests: z
    .array(
      descriptor.extend({
        artifactType: z.string().max(200).optional(),
      }),
    )
    .max(1000),
});

export const imageManifestSchema = z.object({
  mediaType: z.string().optional(),
  config: descriptor,
});

/** An OCI manifest of an artifact (a Helm chart, a `flux push artifact` or ORAS push): its layers and annotations. */
export const artifactManifestSchema = z.object({
  mediaType: z.string().max(200).optional(),
  artifactType: z.string().max(200).optional(),
  config: z.object({ mediaType: z.string().max(200).optional(), digest }),
  layers: z
    .array(
      z.object({
        mediaType: z.string().max(200),
        digest,
        size: z.number().int().nonnegative(),
        annotations: z.record(z.string(), z.string()).optional(),
      }),
    )
    .max(100),
  annotations: z.record(z.string(), z.string()).optional(),
});

export const imageConfigSchema = z.object({
  config: z.object({ Labels: z.record(z.string(), z.string()).nullish() }).nullish(),
});

/** The distribution spec's error body: `{errors: [{code, message}]}`. */
export const errorBodySchema = z.object({
  errors: z.array(z.object({ code: z.string().max(100), message: z.string().optional() })).max(20),
});

export function isIndex(mediaType: string | undefined): boolean {
  return mediaType === MEDIA_TYPES.ociIndex || mediaType === MEDIA_TYPES.dockerList;
}

/** The body as JSON, or undefined when it is not JSON (the schema check then reports it). */
export function bodyJson(body: Buffer): unknown {
  try {
    return parseJson(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
