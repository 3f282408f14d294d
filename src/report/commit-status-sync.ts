// Commit statuses for syncs: `pending` when a sync of a commit starts, then `success` when every object is
// stable, `failure` naming the first failing object and rule, `error` for agent-side problems, or `cancelled`
// when something newer replaced the sync (naming what: a commit, an image, a configuration change, a reconcile
// request) or the agent stopped. One reporter per deployment, so each
// has its own context (`mooring/<cluster>/<deployment>` by default). Every status request has a timeout, and a
// final status the API does not take is kept in the outbox (outbox.ts) and posted later, so a failing status API
// costs a sync at most one request timeout at each end.
import type { Deployment, MooringConfig } from '../config/schema.ts';
import type { Release } from '../contract.ts';
import {
  type DeployReport,
  describeReason,
  type Logger,
  type SupersededReason,
  type SyncReporter,
  type SyncRequest,
  supersededBy,
  withdrawn,
} from '../contract.ts';
import { classify, errorHeadline, errorMessage, type MooringError } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import { briefWarning, describeWarning } from '../kube/warnings.ts';
import { briefVerdict } from '../stability/warning-notes.ts';
import {
  describeUnconfigured,
  type GitOrigins,
  gitOrigins,
  settingsFor,
  UnconfiguredForgeHost,
} from './forges/forge-hosts.ts';
import { describeRepo } from './forges/repo-url.ts';
import { providerFor } from './forges/select.ts';
import type { CommitState, HttpOptions } from './forges/types.ts';
import { StatusOutbox } from './outbox.ts';
import { entryKey, type OutboxEntry } from './outbox-policy.ts';
import { ConfigMapOutboxStore } from './outbox-store.ts';
import { CommitStatusReporter, type StatusReport } from './status-reporter.ts';

/** Per status request: a hung status API holds a sync no longer than this. */
export const STATUS_TIMEOUT_MS = 10_000;
/** Tries of a pending status (a sync waits for them); a final status gets one and then the outbox. */
const PENDING_ATTEMPTS = 2;
/** Refused repositories remembered (so that each is logged once). */
const MAX_REFUSED = 1000;

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return undefined;
  }
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}

/** The state and description a finished sync is reported with. */
export function describeOutcome(
  report: DeployReport,
  release: Release | undefined,
  trigger: string,
  signal?: AbortSignal,
): { state: CommitState; description: string } {
  const prefix = trigger === 'rollback' ? `Rollback${release ? ` (release ${release.id})` : ''}: ` : '';
  const watched = report.wait?.verdicts.length ?? report.applied.length;
  switch (report.outcome) {
    case 'stable':
    case 'applied':
      return {
        state: 'success',
        description: `${prefix}${watched}/${watched} stable in ${seconds(report.elapsedMs)}${report.prune?.deleted.length ? `, ${report.prune.deleted.length} pruned` : ''}${trigger === 'rollback' ? '; held until a new commit or image' : ''}${warningNote(report)}`,
      };
    case 'failed':
    case 'timed-out': {
      // The rule's words and the newest warning Event, in fewer words than the whole message (the ledger has it).
      const culprit = report.wait?.culprit;
      const message = culprit && briefVerdict(culprit.stability.message, culprit.warnings ?? []);
      return { state: 'failure', description: `${prefix}${message ?? report.summary}` };
    }
    case 'error':
      // Bad manifests are the commit's failure; an unreachable cluster or registry is the agent's error.
      return classify(report.error).action === 'stop'
        ? { state: 'failure', description: `${prefix}${errorHeadline(report.error)}` }
        : { state: 'error', description: `${prefix}${errorHeadline(report.error)}` };
    case 'cancelled':
      if (withdrawn(signal))
        return {
          state: 'cancelled',
          description: 'Cancelled: the deployment was removed from the configuration (nothing was deleted)',
        };
      return describeCancelled(supersededBy(signal));
    default:
      return { state: 'error', description: `${prefix}${report.summary}` };
  }
}

/**
 * A success the API server warned about says so: one warning whole (` (1 warning: web.yaml:6:1: Deployment shop/web:
 * would violate PodSecurity …)`), several by file, line and topic (` (3 warnings: ep.yaml:7 deprecated API, web.yaml:6
 * PodSecurity, …)`), so that the provider's cut of the description (140 characters on GitHub) keeps the count and
 * the places; the log and `mooring history` have the server's words.
 */
export function warningNote(report: Pick<DeployReport, 'warnings'>): string {
  const warnings = report.warnings ?? [];
  const first = warnings[0];
  if (!first) return '';
  if (warnings.length === 1) return ` (1 warning: ${describeWarning(first)})`;
  return ` (${warnings.length} warnings: ${warnings.map(briefWarning).join(', ')})`;
}

/**
 * The end of a sync that was cut short: by what really replaced it (a newer commit, a newer image, a changed
 * configuration, a reconcile request; src/contract.ts), or by the agent stopping, which syncs the deployment again
 * when it starts.
 */
export function describeCancelled(by: SupersededReason | undefined): {
  state: CommitState;
  description: string;
} {
  if (by === undefined) {
    return {
      state: 'cancelled',
      description: 'Agent stopped before the deployment was stable; it resumes on restart',
    };
  }
  return { state: 'cancelled', description: `Superseded by ${describeReason(by)} before it was stable` };
}

/** ` (chart podinfo 1.2.3)`: the chart versions a sync deploys, for its statuses; empty without one. */
export function artifactNote(sync: Pick<SyncRequest, 'images'>): string {
  const charts = Object.values(sync.images)
    .filter((i) => i.kind === 'chart')
    .map((i) => `chart ${i.image.slice(i.image.lastIndexOf('/') + 1)} ${i.tag ?? i.digest.slice(0, 19)}`);
  return charts.length > 0 ? ` (${charts.join(', ')})` : '';
}

export interface CommitStatusSyncOptions {
  /** Where final statuses the API did not take are kept; without it (the CLI) they are only logged. */
  api?: KubeApi | undefined;
  http?: HttpOptions | undefined;
}

export class CommitStatusSync implements SyncReporter {
  private readonly reporters = new Map<string, CommitStatusReporter>();
  private readonly config: MooringConfig;
  private readonly log: Logger;
  private readonly http: HttpOptions;
  /**
   * The commit each deployment's last sync failed at for a reason that may pass: the agent retries it, and a
   * retry posts no new "pending" (only an end that differs from the last, as the reporter posts nothing twice).
   */
  private readonly retrying = new Map<string, string>();
  /** Undelivered final statuses; undefined when there is no cluster to keep them in. */
  readonly outbox: StatusOutbox | undefined;
  /** Where forge tokens may go besides apiUrl: the configured Git sources' hosts (forge-hosts.ts). */
  private readonly origins: GitOrigins;
  /** Repositories no reporter can be made for, with why: said once in the log, not at every sync. */
  private readonly refused = new Map<string, string>();

  constructor(config: MooringConfig, log: Logger, options: CommitStatusSyncOptions = {}) {
    this.config = config;
    this.log = log;
    this.http = { timeoutMs: STATUS_TIMEOUT_MS, ...options.http };
    this.origins = gitOrigins(config);
    if (options.api && config.deployments.some((d) => d.commitStatus.enabled && d.commitStatus.token)) {
      this.outbox = new StatusOutbox({
        store: new ConfigMapOutboxStore(options.api, config.cluster.namespace),
        deliver: (entry) => this.deliver(entry),
        log,
      });
    }
  }

  /** Delivers what a previous agent kept (the outbox), then keeps retrying in the background. */
  async start(): Promise<void> {
    await this.outbox?.start();
  }

  /** Stops retrying; undelivered statuses stay in the cluster for the next agent. */
  async close(): Promise<void> {
    await this.outbox?.close();
  }

  private repoUrl(deployment: Deployment): string | undefined {
    return this.config.sources.git.find((s) => s.name === deployment.source)?.url;
  }

  private reporter(deployment: Deployment): CommitStatusReporter | undefined {
    if (!deployment.commitStatus.enabled || !deployment.commitStatus.token) return undefined;
    const url = this.repoUrl(deployment);
    if (!url) return undefined;
    let reporter = this.reporters.get(deployment.name);
    if (!reporter) {
      reporter = new CommitStatusReporter({
        provider: providerFor(url, deployment.commitStatus, this.origins, this.http),
        config: deployment.commitStatus,
        cluster: this.config.cluster.name,
        deployment: deployment.name,
        namespace: deployment.namespace,
        logger: this.log,
      });
      this.reporters.set(deployment.name, reporter);
    }
    return reporter;
  }

  // Statuses to the same API back off together: the configured API (on the manifests' host), or the host.
  private gate(deployment: Deployment, repoUrl: string): string {
    const manifests = this.repoUrl(deployment);
    const own = manifests !== undefined && hostOf(manifests) === hostOf(repoUrl);
    return (own && deployment.commitStatus.apiUrl) || hostOf(repoUrl) || 'unknown';
  }

  /**
   * Where a sync's own status goes: the commit of its manifests' Git source, or, for manifests shipped as an OCI
   * artifact, the Git commit the artifact's annotations name (`org.opencontainers.image.source` and `.revision`).
   */
  private primary(
    sync: SyncRequest,
  ): { reporter: CommitStatusReporter; url: string; commit: string; repository?: string } | undefined {
    const artifact = sync.images[sync.deployment.source];
    if (artifact?.kind === 'manifests') {
      const built = artifact.source;
      const reporter = built && this.appReporter(sync.deployment, built.repository, true);
      if (!built || !reporter) return undefined;
      return { reporter, url: built.repository, commit: built.revision, repository: built.repository };
    }
    const reporter = this.reporter(sync.deployment);
    const url = this.repoUrl(sync.deployment);
    if (!reporter || !url || !sync.commit) return undefined;
    return { reporter, url, commit: sync.commit };
  }

  async started(sync: SyncRequest): Promise<void> {
    const target = this.primary(sync);
    if (!target) return;
    const { reporter, url } = target;
    if (this.retrying.get(sync.deployment.name) === target.commit) {
      this.log.debug({ deployment: sync.deployment.name }, 'a retry of the same commit: pending not posted');
      return;
    }
    const gate = this.gate(sync.deployment, url);
    // A late "pending" would only be wrong, so it is not kept; while the API backs off, it is not even tried.
    if (this.outbox && !this.outbox.isOpen(gate)) {
      this.log.debug(
        { deployment: sync.deployment.name, gate },
        'status API backing off: pending not posted',
      );
      return;
    }
    const what = sync.trigger === 'rollback' ? 'Rolling back' : 'Deploying';
    const result = await reporter.attempt(
      { repoUrl: url, commit: target.commit },
      {
        state: 'pending',
        description: `${what} ${sync.deployment.name} to ${sync.deployment.namespace}${artifactNote(sync)}`,
      },
      this.outbox ? PENDING_ATTEMPTS : undefined,
    );
    if (result.result === 'failed') this.outbox?.failed(gate, result.error);
    else
      await this.outbox?.posted(
        gate,
        entryKey({
          deployment: sync.deployment.name,
          repository: target.repository,
          commit: target.commit,
          context: reporter.context,
        }),
      );
  }

  /**
   * A new artifact digest refused (its signature does not verify): a failure on the commit the deployment keeps
   * running, saying why, kept in the outbox until delivered as any end is; and on the commit the artifact says it
   * was built from (its OCI labels), as a rollout of it would be reported there.
   */
  async artifactRefused(
    deployment: Deployment,
    commit: string | undefined,
    description: string,
    built?: { repository: string; revision: string },
  ): Promise<void> {
    const outcome: StatusReport = { state: 'failure', description };
    const reporter = this.reporter(deployment);
    const url = this.repoUrl(deployment);
    if (reporter && url && commit) await this.final(deployment, reporter, url, undefined, commit, outcome);
    const app = built && this.appReporter(deployment, built.repository);
    if (built && app)
      await this.final(deployment, app, built.repository, built.repository, built.revision, outcome);
  }

  /** The sync of a commit waits for the deployments it depends on: pending, saying for what. */
  async waiting(sync: SyncRequest, description: string): Promise<void> {
    if (sync.commit) await this.held(sync.deployment, sync.commit, description);
  }

  /**
   * A commit that is not deployed now (its deployment is suspended): pending with a description that says why and
   * what deploys it. The sync that follows the resume posts its own pending and end. Not kept in the outbox: a
   * late pending would only be wrong.
   */
  async held(deployment: Deployment, commit: string, description: string): Promise<void> {
    const reporter = this.reporter(deployment);
    const url = this.repoUrl(deployment);
    if (!reporter || !url) return;
    const gate = this.gate(deployment, url);
    if (this.outbox && !this.outbox.isOpen(gate)) return;
    const result = await reporter.attempt(
      { repoUrl: url, commit },
      { state: 'pending', description },
      this.outbox ? PENDING_ATTEMPTS : undefined,
    );
    if (result.result === 'failed') this.outbox?.failed(gate, result.error);
    else
      await this.outbox?.posted(
        gate,
        entryKey({ deployment: deployment.name, commit, context: reporter.context }),
      );
  }

  async finished(sync: SyncRequest, report: DeployReport, release: Release | undefined): Promise<void> {
    const target = this.primary(sync);
    if (!target) return;
    const retried = report.outcome === 'error' && classify(report.error).action !== 'stop';
    if (retried && sync.trigger !== 'drift' && sync.trigger !== 'config')
      this.retrying.set(sync.deployment.name, target.commit);
    else this.retrying.delete(sync.deployment.name);
    // A sync that never posted "pending" (no commit) has nothing to end; a cancelled one must end its pending.
    const described = describeOutcome(report, release, sync.trigger, sync.signal);
    const outcome =
      described.state === 'success'
        ? { ...described, description: `${described.description}${artifactNote(sync)}` }
        : described;
    await this.final(sync.deployment, target.reporter, target.url, target.repository, target.commit, outcome);
    // A rollout of a new image is also reported on the application's commit it was built from (OCI labels).
    if (sync.trigger !== 'image' || report.outcome === 'cancelled') return;
    for (const image of Object.values(sync.images)) {
      if (!image.source || image.kind === 'manifests') continue;
      const app = this.appReporter(sync.deployment, image.source.repository);
      if (app) {
        const { repository, revision } = image.source;
        await this.final(sync.deployment, app, repository, repository, revision, outcome);
      }
    }
  }

  /** Posts a final status, or keeps it in the outbox when the API cannot take it now. */
  private async final(
    deployment: Deployment,
    reporter: CommitStatusReporter,
    repoUrl: string,
    repository: string | undefined,
    commit: string,
    outcome: StatusReport,
  ): Promise<void> {
    const target = { repoUrl, commit };
    if (!this.outbox) {
      await reporter.report(target, outcome);
      return;
    }
    const status = reporter.statusFor(outcome);
    const gate = this.gate(deployment, repoUrl);
    const now = Date.now();
    const entry: OutboxEntry = {
      key: entryKey({ deployment: deployment.name, repository, commit, context: status.context }),
      deployment: deployment.name,
      repository,
      commit,
      context: status.context,
      state: status.state,
      description: status.description,
      targetUrl: status.targetUrl,
      gate,
      at: now,
      expiresAt: now + deployment.commitStatus.retryFor,
      attempts: 0,
    };
    if (!this.outbox.isOpen(gate)) {
      await this.outbox.keep(entry);
      return;
    }
    const result = await reporter.attempt(target, outcome, 1);
    if (result.result !== 'failed') await this.outbox.posted(gate, entry.key);
    else if (classify(result.error).action !== 'stop')
      await this.outbox.keep({ ...entry, attempts: 1 }, result.error);
  }

  /** Posts one kept status; false when its deployment or reporter is gone (nothing to post it with). */
  private async deliver(entry: OutboxEntry): Promise<boolean> {
    const deployment = this.config.deployments.find((d) => d.name === entry.deployment);
    if (!deployment) return false;
    const reporter = entry.repository
      ? this.appReporter(deployment, entry.repository, this.ociSourced(deployment))
      : this.reporter(deployment);
    const repoUrl = entry.repository ?? this.repoUrl(deployment);
    if (!reporter || !repoUrl) return false;
    const result = await reporter.attempt(
      { repoUrl, commit: entry.commit },
      { state: entry.state, description: entry.description, targetUrl: entry.targetUrl },
      1,
    );
    if (result.result === 'failed') throw result.error satisfies MooringError;
    return true;
  }

  /** Whether the deployment's manifests are an OCI artifact, whose source repository is its own status target. */
  private ociSourced(deployment: Deployment): boolean {
    return this.config.sources.oci.some((s) => s.name === deployment.source);
  }

  /**
   * The reporter for another repository than the manifests' (an image's or an OCI artifact's source). `own`: the
   * deployment's provider settings apply there (the repository an OCI artifact was built from is where its
   * deployment reports, as the manifests' repository is for a Git source).
   */
  private appReporter(
    deployment: Deployment,
    repository: string,
    own = false,
  ): CommitStatusReporter | undefined {
    if (!deployment.commitStatus.enabled || !deployment.commitStatus.token) return undefined;
    const key = `${deployment.name} ${repository}${own ? ' own' : ''}`;
    if (this.refused.has(key)) return undefined;
    let reporter = this.reporters.get(key);
    if (!reporter) {
      try {
        reporter = new CommitStatusReporter({
          provider: providerFor(
            repository,
            settingsFor(this.config, deployment, repository, own),
            this.origins,
            this.http,
          ),
          config: deployment.commitStatus,
          cluster: this.config.cluster.name,
          deployment: deployment.name,
          namespace: deployment.namespace,
          logger: this.log,
        });
      } catch (error) {
        // Not retried at every sync: the same annotation gives the same answer until the configuration changes.
        const why =
          error instanceof UnconfiguredForgeHost
            ? describeUnconfigured(error)
            : `cannot report on the source repository: ${errorMessage(error)}`;
        // Bounded: each pushed artifact may name another repository.
        if (this.refused.size >= MAX_REFUSED) this.refused.delete(this.refused.keys().next().value ?? '');
        this.refused.set(key, why);
        this.log.warn(
          { deployment: deployment.name, repository: describeRepo(repository), err: why },
          error instanceof UnconfiguredForgeHost
            ? 'commit status not posted: the source annotation names an unconfigured host'
            : 'cannot report on the source repository',
        );
        return undefined;
      }
      this.reporters.set(key, reporter);
    }
    return reporter;
  }
}
