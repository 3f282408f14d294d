// What the agents of several clusters in one process decide together (docs/clusters.md): whether a deployment's
// rollout step may start a revision (every cluster of the step before is stable at it; a failure there stops it;
// at most `maxParallel` clusters of a step sync at once), and which revision a promoted deployment may deploy
// (the one its upstream has had stable in every cluster for `after`, approved when approval is manual). Each
// cluster's agent registers how its ledgers are read; the answers are read from those ledgers, so they hold across
// restarts.
import type { Deployment, MooringConfig } from '../config/schema.ts';
import { rolloutStep, stepClusters, targetsOf } from '../config/targets.ts';
import type { Release, ReleaseImage } from '../contract.ts';
import { errorMessage } from '../errors.ts';

/** How the fleet reads one cluster's agent. */
export interface FleetMember {
  /** The deployment's releases in this cluster, newest first (its ledger). */
  releases(deployment: string): Promise<readonly Release[]>;
}

/** Why a sync may not start now. `failed`: it will not start at this revision until what failed is fixed. */
export interface FleetHold {
  message: string;
  failed: boolean;
}

/** Where a promoted release comes from, as its release records it. */
export interface PromotedFrom {
  deployment: string;
  cluster: string;
  release: number;
  revision: string;
}

export type Promotion =
  | { state: 'ready'; commit: string | undefined; images: Record<string, ReleaseImage>; from: PromotedFrom }
  | { state: 'waiting'; message: string; commit?: string | undefined };

/** A manual approval (`mooring promote`): the commit (or its prefix) approved. */
export interface Approval {
  revision: string;
  by: string;
}

function shortRevision(release: Release): string {
  return release.commit?.slice(0, 12) ?? release.revision.slice(0, 24);
}

function formatAfter(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return `${Math.round(ms / 1000)}s`;
}

export class Fleet {
  private readonly members = new Map<string, FleetMember>();
  /** The clusters of each rollout step syncing now, by `deployment/step`. */
  private readonly running = new Map<string, Set<string>>();

  private readonly config: () => MooringConfig;
  private readonly now: () => number;

  constructor(config: () => MooringConfig, now: () => number = Date.now) {
    this.config = config;
    this.now = now;
  }

  join(cluster: string, member: FleetMember): void {
    this.members.set(cluster, member);
  }

  leave(cluster: string, member: FleetMember): void {
    if (this.members.get(cluster) === member) this.members.delete(cluster);
  }

  private async releasesIn(cluster: string, deployment: string): Promise<readonly Release[]> {
    const member = this.members.get(cluster);
    if (!member) throw new Error(`cluster ${cluster} is not connected`);
    return member.releases(deployment);
  }

  /**
   * Whether the deployment's target in `cluster` may sync `revision` now. Let through, it holds a place in its
   * step until `release` is called (maxParallel); only looked at (`take` false: judged before the queue), it takes
   * none.
   */
  async enter(
    cluster: string,
    spec: Deployment,
    revision: string,
    take = true,
  ): Promise<{ hold: FleetHold } | { release: () => void }> {
    const config = this.config();
    const steps = spec.rollout;
    if (!steps) return { release: () => undefined };
    const step = rolloutStep(config, spec, cluster);
    // Every step before, in order: the first one not stable at this revision holds this one (a failure stops it).
    for (let before = 0; before < step; before++) {
      for (const other of stepClusters(config, spec, before)) {
        let releases: readonly Release[];
        try {
          releases = await this.releasesIn(other, spec.name);
        } catch (error) {
          return {
            hold: {
              message: `waiting for rollout step ${before + 1} (${other}): ${errorMessage(error)}`,
              failed: false,
            },
          };
        }
        const at = releases.find((r) => r.revision === revision);
        if (at === undefined || at.result === 'applied' || at.result === 'cancelled')
          return {
            hold: {
              message: `waiting for rollout step ${before + 1}: ${other} is not stable at this revision yet`,
              failed: false,
            },
          };
        if (at.result !== 'stable')
          return {
            hold: {
              message: `rollout stopped: step ${before + 1} ${at.result} in cluster ${other} (release ${at.id})${at.messages[0] ? `: ${at.messages[0]}` : ''}`,
              failed: true,
            },
          };
      }
    }
    const key = `${spec.name}/${step}`;
    const max = steps[step]?.maxParallel;
    const running = this.running.get(key) ?? new Set<string>();
    if (max !== undefined && running.size >= max && !running.has(cluster))
      return {
        hold: {
          message: `waiting for a place in rollout step ${step + 1} (${[...running].join(', ')} syncing; maxParallel ${max})`,
          failed: false,
        },
      };
    if (!take) return { release: () => undefined };
    running.add(cluster);
    this.running.set(key, running);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        running.delete(cluster);
      },
    };
  }

  /**
   * The revision a promoted deployment may deploy: its upstream's, once stable in every one of its clusters at one
   * revision for `promote.after`, and approved when `approval: manual`. Never a newer one.
   */
  async promotion(spec: Deployment, approval: Approval | undefined): Promise<Promotion> {
    const promote = spec.promote;
    const config = this.config();
    const upstream = config.deployments.find((d) => d.name === promote?.from);
    if (!promote || !upstream)
      return { state: 'waiting', message: `no deployment ${promote?.from} to promote from` };
    let current: Release | undefined;
    let origin = '';
    let stableSince = 0;
    for (const cluster of targetsOf(config, upstream)) {
      let releases: readonly Release[];
      try {
        releases = await this.releasesIn(cluster, upstream.name);
      } catch (error) {
        return {
          state: 'waiting',
          message: `waiting for ${upstream.name} in ${cluster}: ${errorMessage(error)}`,
        };
      }
      const newest = releases[0];
      if (!newest)
        return { state: 'waiting', message: `waiting for ${upstream.name}: no release in ${cluster} yet` };
      if (newest.result !== 'stable')
        return {
          state: 'waiting',
          message: `waiting for ${upstream.name} to be stable in ${cluster} (release ${newest.id} ${newest.result})`,
          commit: newest.commit,
        };
      if (current && current.revision !== newest.revision)
        return {
          state: 'waiting',
          message: `waiting for ${upstream.name} to be at one revision in all its clusters`,
          commit: newest.commit,
        };
      current ??= newest;
      if (!origin) origin = cluster;
      stableSince = Math.max(stableSince, Date.parse(newest.time) + newest.durationMs);
    }
    if (!current) return { state: 'waiting', message: `waiting for ${upstream.name}: it has no cluster` };
    const after = promote.after ?? 0;
    if (after > 0 && this.now() - stableSince < after)
      return {
        state: 'waiting',
        message: `waiting until ${upstream.name} has been stable for ${formatAfter(after)} (stable since ${new Date(stableSince).toISOString()})`,
        commit: current.commit,
      };
    if (promote.approval === 'manual') {
      const approved = approval?.revision;
      const matches =
        approved !== undefined &&
        approved.length > 0 &&
        (current.commit?.startsWith(approved) === true || current.revision === approved);
      if (!matches)
        return {
          state: 'waiting',
          message: `waiting for approval: mooring promote ${spec.name} --revision ${shortRevision(current)}`,
          commit: current.commit,
        };
    }
    return {
      state: 'ready',
      commit: current.commit,
      images: current.images,
      from: { deployment: upstream.name, cluster: origin, release: current.id, revision: current.revision },
    };
  }
}
