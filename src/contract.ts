// The types that cross layers, in one module that report/, server/ and sync/ all import, so that no folder imports
// upward: what a sync is (SyncRequest), what it tells the outside world (SyncReporter) and how it ended
// (DeployReport), what the ledger records of it (Release, with its images and chart dependencies), why a sync was cancelled (SupersededReason: a newer revision of the same deployment, or the
// deployment left the configuration), the logger, and the metrics the orchestrator feeds. Types and pure
// functions only: no I/O, nothing that reaches a server.
import type { Logger } from 'pino';
import type { Deployment, MooringConfig } from './config/schema.ts';
import type { ApplyResult } from './kube/apply.ts';
import type { DriftFinding } from './kube/drift.ts';
import type { HistoryResult } from './kube/history.ts';
import type { ApiWarning } from './kube/warnings.ts';
import type { ManifestFile } from './render/parse.ts';
import type { PreviewDiff } from './render/preview-diff.ts';
import type { WaitResult } from './stability/waiter.ts';

export type { Logger };

// ---- releases: what the ledger (report/ledger.ts) records of each sync ------------------------------------------

/** What started a sync; the list is also what a note read back from the cluster may name (sync/attempts.ts). */
export const TRIGGERS = ['commit', 'image', 'manual', 'rollback', 'drift', 'config', 'start'] as const;
export type Trigger = (typeof TRIGGERS)[number];

export interface ReleaseImage {
  image: string;
  tag?: string | undefined;
  digest: string;
  /** From the image's OCI labels: the application repository and commit it was built from. */
  source?: { repository: string; revision: string } | undefined;
  /**
   * A Helm chart of a chart source (tag: its version) or manifests of an OCI artifact source, rather than a
   * container image: never bound into manifests as an image.
   */
  kind?: 'chart' | 'manifests' | undefined;
  /** Who signed the digest, verified before it was deployed (a source with `verify`): `cosign SHA256:…`. */
  signedBy?: string | undefined;
}

/** A chart dependency fetched from an allowed repository at render (src/sources/charts/dependencies.ts). */
export interface ChartDependency {
  name: string;
  version: string;
  /** `https://charts.example.com/stable` or `oci://host/path`, as Chart.yaml gives it. */
  repository: string;
  /** The package's sha256 as its index gives it, or the OCI manifest's digest. */
  digest: string;
}

export interface Release {
  id: number;
  deployment: string;
  time: string;
  trigger: Trigger;
  commit?: string | undefined;
  /** By registry source name. */
  images: Record<string, ReleaseImage>;
  /** The revision that decides whether a deployment is current: commit plus digests. */
  revision: string;
  /** Versioned objects of the release: `ConfigMap app-config-v003`. */
  versions: string[];
  /** Chart dependencies fetched for it: a later fetch of a version must match, and a rollback restores them. */
  dependencies?: ChartDependency[] | undefined;
  /** Who signed its commit, verified before it was read (a Git source with `verify`; docs/verification.md). */
  signedBy?: string | undefined;
  objects: { object: string; action: string }[];
  /** A drift correction's: the fields it put back, by object. */
  drift?: { object: string; fields: string[] }[] | undefined;
  /** How the sync's hooks ran (docs/hooks.md): never in the inventory, never pruned, recorded here. */
  hooks?:
    | {
        object: string;
        hook: string;
        outcome: 'succeeded' | 'failed' | 'cancelled';
        message: string;
        deleted: boolean;
      }[]
    | undefined;
  result: 'stable' | 'failed' | 'timed-out' | 'cancelled' | 'error' | 'applied';
  durationMs: number;
  messages: string[];
  /** A promotion's: the upstream deployment's release it deploys (docs/clusters.md). */
  promotedFrom?: { deployment: string; cluster: string; release: number; revision: string } | undefined;
  /** The deployment set that made the deployment (docs/deployment-sets.md): what `mooring status` groups by. */
  set?: string | undefined;
  /** The id of the sync's note (src/sync/attempts.ts): the release ends it. */
  attempt?: string | undefined;
}

/** Why a sync is held before it starts: its deployment suspended, a dependency, its rollout step, its promotion. */
export type HoldReason = 'suspended' | 'dependency' | 'rollout' | 'promotion';

/** What a sync tells the outside world; the agent wires commit statuses and the audit log in here. */
export interface SyncReporter {
  started?(sync: SyncRequest): Promise<void> | void;
  /**
   * The sync is held before it starts (sync/holds.ts): `description` says for what and what ends it, `reason`
   * which kind of hold it is.
   */
  waiting?(sync: SyncRequest, description: string, reason: HoldReason): Promise<void> | void;
  /**
   * A new digest of an artifact the deployment follows was refused (its signature does not verify) and not
   * deployed: `commit` (its manifests' commit, when it has one) is the one it keeps running.
   */
  artifactRefused?(
    deployment: Deployment,
    commit: string | undefined,
    description: string,
    /** Where the refused artifact says it was built from (its OCI labels): told too. */
    built?: { repository: string; revision: string } | undefined,
  ): Promise<void> | void;
  /** A drift pass in report mode found objects changed by hand (none: it found nothing). */
  drifted?(sync: SyncRequest, findings: readonly DriftFinding[]): Promise<void> | void;
  finished?(sync: SyncRequest, report: DeployReport, release: Release | undefined): Promise<void> | void;
}

export interface SyncRequest {
  config: MooringConfig;
  deployment: Deployment;
  commit: string | undefined;
  files: readonly ManifestFile[];
  images: Record<string, ReleaseImage>;
  revision: string;
  trigger: Trigger;
  signal?: AbortSignal;
  /** The manifests could not be read or built (a chart that fails, a file that cannot be decrypted). */
  filesError?: unknown;
  /** Gives the sync's worker slot back once it only waits for stability (the queue's release). */
  release?: () => void;
  /** A promotion (docs/clusters.md): the release of the upstream deployment this sync deploys. */
  promotedFrom?: { deployment: string; cluster: string; release: number; revision: string } | undefined;
  /**
   * A rollback's: where the sources were when it started. A stable rollback's release and its fence (the agent
   * leaves the deployment alone until a source moves past these heads) are written in one ledger write, so that no
   * poll finds the rolled-back release without its fence and rolls it forward again.
   */
  fence?: { heads: { commit?: string | undefined; images: Record<string, string> } } | undefined;
  /**
   * A rollback's: the versioned objects its release recorded (`ConfigMap app-config-v003`). A version no longer in
   * the cluster comes back under the name the release gave it, not above every recorded one.
   */
  restore?: readonly string[] | undefined;
}

export interface DeployReport {
  outcome: 'stable' | 'applied' | 'failed' | 'timed-out' | 'cancelled' | 'dry-run' | 'error';
  /** One line for people: `12/12 stable in 42s`, or what failed and why. */
  summary: string;
  applied: ApplyResult[];
  wait: WaitResult | undefined;
  history: HistoryResult | undefined;
  /** What prune deleted (or, in a dry run, would delete) and what it kept and why. */
  prune: PruneReport | undefined;
  /** A drift pass's findings: the objects and fields changed by hand. */
  drift?: DriftFinding[] | undefined;
  /** How each hook ran, in order. */
  hooks?: HookRun[] | undefined;
  /** What the API server warned about (src/kube/warnings.ts), each once per object. */
  warnings?: ApiWarning[] | undefined;
  error: unknown;
  elapsedMs: number;
}

export interface PruneReport {
  deleted: string[];
  /** A dry run's: what a deploy would delete. */
  planned: string[];
  /**
   * Left in place, and why; `markedIn`: the namespace of one an annotation asks to keep (`helm.sh/resource-policy:
   * keep`, `Prune=false`, ...), which a deployment's removal then does not delete.
   */
  kept: { object: string; reason: string; markedIn?: string | undefined }[];
  /** Workloads deleted but still terminating when prune's wait for them ended (the sync's deadline). */
  lingering?: string[];
}

/** How one hook ran, as the release records it. */
export interface HookRun {
  /** `Job shop/migrate` */
  object: string;
  apiVersion: string;
  /** `pre-upgrade`, `PreSync`. */
  hook: string;
  /** `cancelled`: the sync was (superseded, the agent stopping) while the hook still ran; it is left running. */
  outcome: 'succeeded' | 'failed' | 'cancelled';
  message: string;
  /** Deleted after it ran (hook-succeeded, hook-failed). */
  deleted: boolean;
}

/** The metrics the orchestrator feeds (server/metrics.ts's AgentMetrics has them). */
export interface SyncMetrics {
  poll(
    source: string,
    kind: 'git' | 'registry' | 'local',
    result: 'changed' | 'unchanged' | 'error' | 'refused',
  ): void;
  held(deployment: string, since: string | undefined): void;
  readonly suspended: {
    set(labels: { deployment: string }, value: number): void;
    remove(labels: { deployment: string }): void;
  };
}

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
  | { by: 'revision' }
  /** `mooring rollback` of the deployment, by whom. */
  | { by: 'rollback'; who: string };

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
    case 'rollback':
      return `a rollback by ${reason.who}`;
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

/** A deployment's preview between two commits (src/sync/preview.ts), as comments and `mooring diff --base` show it. */
export interface DeploymentPreview {
  deployment: string;
  base: string;
  head: string;
  /** Whether prune is on: objects removed from the manifests would be deleted. */
  prune: boolean;
  diff?: PreviewDiff | undefined;
  /** The head does not render: the preview fails with this (file and line when known). */
  error?: string | undefined;
  /** Warnings of the build (kustomize, helm), and that the base did not render (the head is then all new). */
  notes: string[];
}
