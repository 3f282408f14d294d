// Why a sync was cancelled, in one place: a newer revision of the same deployment replaced it (a commit, an image,
// a changed spec, a reconcile request), or the deployment left the configuration. The queue aborts the running
// sync's signal with a Superseded reason that says what really replaced it, computed from what each sync deploys;
// reporters read it to give the cancelled sync's pending status its end (report/ imports this module, never the
// queue).

/** What a sync deploys and why, as far as telling what superseded it goes. */
export interface SyncTarget {
  /** The manifests' commit; undefined for a local source. */
  commit: string | undefined;
  /** The images the sync binds, by registry source name. */
  images: Readonly<Record<string, { image: string; digest: string }>>;
  /** The generation of the deployment's spec: a reload that changes the spec makes a new one. */
  spec: number;
  /** Why the sync was asked for (the ledger's trigger: commit, image, manual, config, drift, start). */
  trigger: string;
  /** For a local source: the change of its folder the sync is for. */
  change?: number | undefined;
}

/** What replaced a cancelled sync. */
export type SupersededReason =
  /** A newer commit of the deployment's source. */
  | { by: 'commit'; commit: string }
  /** The same commit with a newer image: the images that changed, `image@sha256:0123456789ab`. */
  | { by: 'image'; images: readonly string[] }
  /** A newer change of a local source's files. */
  | { by: 'files' }
  /** A changed spec of the deployment (a reloaded configuration). */
  | { by: 'config' }
  /** `mooring reconcile` of the deployment, at the same commit and images. */
  | { by: 'reconcile' }
  /** The periodic drift correction. */
  | { by: 'drift' }
  /** Another revision, for which no more is known (the queue was told only revisions). */
  | { by: 'revision' };

function imageName(image: { image: string; digest: string }): string {
  // The algorithm and 12 hex digits, as `docker images --digests` abbreviates.
  return `${image.image}@${image.digest.slice(0, 19)}`;
}

/**
 * What a sync of `next` replaces a running sync of `replaced` with: a newer commit first, else the images that
 * changed, else a newer change of a local folder, else a changed spec, else the request that asked for it.
 */
export function supersedingReason(
  replaced: SyncTarget | undefined,
  next: SyncTarget | undefined,
): SupersededReason {
  if (!replaced || !next) return { by: 'revision' };
  if (next.commit !== undefined && next.commit !== replaced.commit)
    return { by: 'commit', commit: next.commit };
  const images = Object.entries(next.images)
    .filter(([source, image]) => replaced.images[source]?.digest !== image.digest)
    .map(([, image]) => imageName(image));
  if (images.length > 0) return { by: 'image', images };
  if (next.change !== undefined && next.change !== replaced.change) return { by: 'files' };
  if (next.spec !== replaced.spec || next.trigger === 'config') return { by: 'config' };
  if (next.trigger === 'manual') return { by: 'reconcile' };
  if (next.trigger === 'drift') return { by: 'drift' };
  return { by: 'revision' };
}

/** The reason in words: `commit abc1234`, `a newer image example/web@sha256:0123456789ab`, … */
export function describeReason(reason: SupersededReason): string {
  switch (reason.by) {
    case 'commit':
      return `commit ${reason.commit.slice(0, 7)}`;
    case 'image':
      return `a newer image ${reason.images.join(', ')}`;
    case 'files':
      return 'a newer change of its files';
    case 'config':
      return 'a configuration change';
    case 'reconcile':
      return 'a reconcile request';
    case 'drift':
      return 'a drift correction';
    case 'revision':
      return 'a newer revision';
  }
}

export class Superseded extends Error {
  readonly reason: SupersededReason;
  constructor(reason: SupersededReason) {
    super(`superseded by ${describeReason(reason)}`);
    this.name = 'Superseded';
    this.reason = reason;
  }
}

/** What replaced a cancelled sync, when a newer sync did. */
export function supersededBy(signal: AbortSignal | undefined): SupersededReason | undefined {
  const reason: unknown = signal?.aborted ? signal.reason : undefined;
  return reason instanceof Superseded ? reason.reason : undefined;
}

/** Why a sync was cancelled by a configuration reload: its deployment is no longer in the configuration. */
export class Withdrawn extends Error {
  constructor(deployment: string) {
    super(`deployment ${deployment} was removed from the configuration`);
    this.name = 'Withdrawn';
  }
}

/** Whether the sync's signal was aborted because its deployment left the configuration. */
export function withdrawn(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && signal.reason instanceof Withdrawn;
}
