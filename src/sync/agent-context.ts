// What the agent's parts share: the agent's dependencies (AgentDeps), what it lends the decision, the gates and
// the jobs (JobContext), and the sync a decision plans (Planned). Types only, so that agent.ts, agent-decide.ts,
// gates.ts and agent-job.ts import each other in one direction.
import type { MooringConfig } from '../config/schema.ts';
import type { Found } from '../config/sets.ts';
import type { Logger, SyncMetrics, SyncReporter, Trigger } from '../contract.ts';
import type { KubeApi } from '../kube/api.ts';
import type { ClusterCache } from '../kube/cache.ts';
import type { Discovery } from '../kube/discovery.ts';
import type { Ledger, LedgerData } from '../report/ledger.ts';
import type { DeploymentState, manifestFiles, SourceState } from './agent-sources.ts';
import type { Control, ReconcileRequest } from './control.ts';
import type { Fleet, PromotedFrom, Promotion } from './fleet.ts';
import type { Decision } from './reconcile.ts';
import type { SharedSources } from './shared-sources.ts';
import type { SyncDeps } from './sync-deployment.ts';

export interface AgentDeps {
  config: MooringConfig;
  api: KubeApi;
  discovery: Discovery;
  /** One cluster cache for every sync the agent runs: the stability waits of all deployments share its streams. */
  cache?: ClusterCache;
  log: Logger;
  /** Where Git sources keep their object caches. */
  cacheDir: string;
  reporters?: readonly SyncReporter[];
  metrics?: SyncMetrics;
  /**
   * Replicas sharing the work (docs/replicas.md): this replica's identity, and whether another is a live member. A
   * sync first takes its deployment in the ledger (`Ledger.claim`), so that at most one replica syncs it at once.
   */
  shard?:
    | {
        identity: string;
        live: (identity: string) => boolean;
        /** Whether `identity` is no live member, read afresh (a holder the live list lacks may have just joined). */
        gone: (identity: string) => Promise<boolean>;
        /** A deployment of the configuration that another replica syncs now. */
        elsewhere: (deployment: string) => boolean;
      }
    | undefined;
  /**
   * The agents of several clusters in one process (docs/clusters.md): rollout steps and promotions are decided
   * with the ledgers of every cluster; `sources`: their sources' clients and schedules (shared-sources.ts).
   */
  fleet?: Fleet | undefined;
  sources?: SharedSources | undefined;
  /**
   * Deployment sets (docs/deployment-sets.md): the folders a Git-directories set matches at each commit its source's
   * poll reads, told to the process's keeper of sets, which makes the deployments and reloads the agents with them.
   */
  sets?: SetFolders | undefined;
}

/** Where the folders of Git-directories deployment sets go once read. */
export interface SetFolders {
  /**
   * What a set's Git generator found at `commit`: folders (gitDirectories) or files read as inputs (gitFiles), and
   * the files refused (each naming the file and why).
   */
  found(set: string, commit: string, found: readonly Found[], refused?: readonly string[]): void;
  /** A deployment leaving its set (removal.prune) ended its last sync stable: its objects are gone, and it may go. */
  removed(deployment: string): void;
  /**
   * Why `deployment` (of deployment set `set`, as the agent has it) is held by its set: the set's inputs changed
   * and the deployments it makes are not taken yet (`waitMs`: looked at again then: it may be removed), or the set is held by its removal budget and the change
   * would remove it (held at its last release). Undefined: not held.
   */
  holding?(deployment: string, set?: string): { message: string; waitMs?: number | undefined } | undefined;
}

/** What the agent lends a job: its dependencies, and the state and steps that stay the agent's. */
export interface JobContext {
  deps: AgentDeps;
  state: SourceState;
  control: Control;
  /** The agent's ledger now (a reload may replace it). */
  ledger(): Ledger;
  /** The poll round of the source of deployment `name` under way or last started (SourcePolls.started). */
  pollRound(name: string): number;
  /** Whether the deployment `name` is being synced now, or its source's poll round `round` has not ended. */
  busy(name: string, round: number): boolean;
  retryInterval(d: DeploymentState): number;
  syncDeps(): SyncDeps;
}

/** What the decision (agent-decide.ts) hands the gates and the job. */
export interface Planned {
  /** A sync, or what holds it (a rollback's fence); `current` only for a promotion that waits. */
  decision: Decision;
  /** What asked for it (the decision's trigger, or the drift pass). */
  trigger: Trigger;
  /** A promoted deployment whose upstream is not ready: what it waits for. */
  promotion: Extract<Promotion, { state: 'waiting' }> | undefined;
  /** The deployment's ledger as the decision read it. */
  ledger: LedgerData;
  /** The poll round of each dependency's source when the sync was planned (JobContext.pollRound). */
  rounds: ReadonlyMap<string, number>;
  commit: string | undefined;
  images: Parameters<typeof manifestFiles>[3];
  /** The `mooring reconcile` request this sync took, if any. */
  request: ReconcileRequest | undefined;
  /** How many changes of a local folder it follows (undefined for other sources). */
  change: number | undefined;
  promotedFrom: PromotedFrom | undefined;
  log: Logger;
}
