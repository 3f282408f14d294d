// Notifications of the CNCF distribution registry (the `notifications.endpoints` of its config): an envelope of
// events, sent with the headers configured for the endpoint, which is how it authenticates (a bearer token).
// Only pushes of manifests matter: a tag moved or a new image appeared. Blob and layer pushes come first and
// in numbers, and pulls, mounts and deletes change nothing a registry source would pick.
import { z } from 'zod';
import { normaliseImage } from './source-match.ts';
import {
  accepted,
  header,
  nothingToDo,
  type PollTarget,
  parsePayload,
  tokensEqual,
  unauthorized,
  type WebhookRequest,
  type WebhookResult,
} from './webhook-request.ts';

// Images and indexes in both the Docker and the OCI spelling, schema 1 included: a push of any of these can
// change what a tag points at.
const MANIFEST_MEDIA_TYPES: ReadonlySet<string> = new Set([
  'application/vnd.docker.distribution.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v1+prettyjws',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.artifact.manifest.v1+json',
]);

const envelope = z.object({ events: z.array(z.object({ action: z.string() }).loose()) });
const pushEvent = z.object({
  target: z.object({
    repository: z.string().min(1).max(255),
    mediaType: z.string().max(255).optional(),
  }),
  request: z.object({ host: z.string().min(1).max(255) }),
});

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function handleRegistry(request: WebhookRequest, token: string): WebhookResult {
  const authorization = header(request.headers, 'Authorization');
  if (authorization === undefined) return unauthorized('Authorization header is missing');
  const given = BEARER.exec(authorization)?.[1];
  if (given === undefined) return unauthorized('Authorization must be "Bearer <token>"');
  if (!tokensEqual(given, token)) return unauthorized('bearer token does not match');

  const parsed = parsePayload(request, envelope);
  if (!parsed.ok) return parsed.result;
  const images = new Set<string>();
  let unreadable = 0;
  for (const event of parsed.value.events) {
    if (event.action !== 'push') continue;
    // The registry resends an envelope until it gets a 2xx, so one odd event must not make it refuse the
    // whole envelope forever: it is skipped and counted in the reason.
    const push = pushEvent.safeParse(event);
    if (!push.success) {
      unreadable++;
      continue;
    }
    const { target, request: origin } = push.data;
    if (!isManifest(target.mediaType)) continue;
    const image = imageOf(origin.host, target.repository);
    if (image === undefined) unreadable++;
    else images.add(image);
  }
  const skipped = unreadable > 0 ? ` (${unreadable} unreadable push events skipped)` : '';
  if (images.size === 0) return nothingToDo(`no manifest pushes${skipped}`);
  const targets: PollTarget[] = [...images].map((image) => ({ kind: 'registry', image }));
  return accepted(`manifest push${skipped}`, targets);
}

function isManifest(mediaType: string | undefined): boolean {
  const bare = mediaType?.split(';')[0]?.trim().toLowerCase();
  return bare !== undefined && MANIFEST_MEDIA_TYPES.has(bare);
}

/**
 * `host/repository` normalised as image references are. The host is the one the pushing client used, so it is
 * the name users write in their image references. A host the reference grammar would read as a path component
 * (`registry/app` means docker.io/registry/app) names no image anyone can pull, so it yields nothing.
 */
function imageOf(host: string, repository: string): string | undefined {
  const domain = host.toLowerCase();
  const image = normaliseImage(`${domain}/${repository}`);
  const expected = domain === 'index.docker.io' ? 'docker.io' : domain;
  return image?.startsWith(`${expected}/`) ? image : undefined;
}
