// The decision whether a deployment needs a sync, taken from its release ledger: current when its last stable
// release has this revision; held while a rollback fence stands and its sources have not moved past it (the fence
// gate, gates.ts, says it); otherwise a sync, with its trigger and the queue key that names what it
// deploys (never why it was asked for: requests of the same revision join one sync). No I/O: the agent reads the
// ledger and acts on the decision.

import type { Release, Trigger } from '../contract.ts';
import { current, type Fence, type LedgerData, syncRevision } from '../report/ledger.ts';

export interface ReconcileInput {
  ledger: LedgerData;
  /** The manifests' commit; undefined for a local source. */
  commit: string | undefined;
  /** The current image digests, by registry source name. */
  digests: Record<string, string>;
  /**
   * Set for a periodic drift correction, a requested sync (`mooring reconcile`) or a changed spec: each syncs even
   * when current, yet joins a sync of the same revision that runs or waits rather than starting another.
   */
  reason?: 'drift' | 'manual' | 'config' | undefined;
  /** A local source's files are compared when its sync runs, so it is never current by revision alone. */
  local: boolean;
  /** The generation of the deployment's spec (a reload that changes it makes a new one). */
  spec?: number | undefined;
  /**
   * Leaving its deployment set (`removing`): its last sync prunes what it deployed, whatever fence stands and however
   * current its revision, and runs again until it has ended stable (its namespace deleted too).
   */
  removing?: boolean | undefined;
  /** A local source's folder change this sync is for (it has no commit to name its revision). */
  change?: number | undefined;
  /**
   * A revision known to deploy exactly what the ledger's revision `ledger` deployed: a later commit that changes
   * none of the deployment's paths. The deployment is current at `revision` as it is at `ledger`.
   */
  sameAs?: { ledger: string; revision: string } | undefined;
}

export type Decision =
  | { action: 'current'; revision: string }
  | { action: 'held'; revision: string; fence: Fence }
  | {
      action: 'sync';
      revision: string;
      trigger: Trigger;
      /**
       * The queue key: everything the sync deploys (commit, images, spec, the ledger's release and fence) and
       * nothing of why it was asked for, so that a start-up pass, a poll, a webhook and a reconcile request of
       * the same revision give one sync.
       */
      key: string;
      /** The release the deployment is at, if any. */
      release: Release | undefined;
      /** The fence this sync lifts, if any. */
      fence: Fence | undefined;
    };

export function reconcile(input: ReconcileInput): Decision {
  const { commit, digests, reason } = input;
  const revision = syncRevision(commit, digests);
  const now = current(input.ledger);
  const fence = input.ledger.fence;
  if (fence && !input.removing) {
    const moved =
      (commit !== undefined && commit !== fence.heads.commit) ||
      Object.entries(digests).some(([source, digest]) => fence.heads.images[source] !== digest);
    if (!moved) return { action: 'held', revision, fence };
  } else if (!reason && !input.local && !input.removing && now !== undefined) {
    const same = input.sameAs;
    if (now.revision === revision || (same?.ledger === now.revision && same.revision === revision))
      return { action: 'current', revision };
  }
  const newImage = Object.entries(digests).some(([source, digest]) => now?.images[source]?.digest !== digest);
  const trigger: Trigger = reason ?? (now === undefined ? 'start' : newImage ? 'image' : 'commit');
  // The key names the ledger's state too: after a rollback or a resume the same revision is synced again.
  const key = `${revision}|release ${now?.id ?? 0}|fence ${fence?.release ?? 0}|spec ${input.spec ?? 0}${input.change !== undefined ? `|change ${input.change}` : ''}`;
  return { action: 'sync', revision, trigger, key, release: now, fence };
}
