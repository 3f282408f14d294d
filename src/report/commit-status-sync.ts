// Commit statuses for syncs: `pending` when a sync of a commit starts, then `success` when every object is
// stable, `failure` naming the first failing object and rule, or `error` for agent-side problems. One reporter
// per deployment, so each has its own context (`mooring/<cluster>/<deployment>` by default).
import type { Deployment, MooringConfig } from '../config/schema.ts';
import { classify, errorMessage } from '../errors.ts';
import type { DeployReport } from '../sync/deploy.ts';
import type { Logger } from '../sync/logger.ts';
import type { SyncReporter, SyncRequest } from '../sync/sync-deployment.ts';
import type { Release } from './ledger.ts';
import { providerFor } from './status/provider.ts';
import { CommitStatusReporter } from './status/reporter.ts';
import type { CommitState } from './status/types.ts';

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
): { state: CommitState; description: string } {
  const prefix = trigger === 'rollback' ? `Rollback${release ? ` (release ${release.id})` : ''}: ` : '';
  const watched = report.wait?.verdicts.length ?? report.applied.length;
  switch (report.outcome) {
    case 'stable':
    case 'applied':
      return {
        state: 'success',
        description: `${prefix}${watched}/${watched} stable in ${seconds(report.elapsedMs)}${trigger === 'rollback' ? '; held until a new commit or image' : ''}`,
      };
    case 'failed':
    case 'timed-out':
      return {
        state: 'failure',
        description: `${prefix}${report.wait?.culprit?.stability.message ?? report.summary}`,
      };
    case 'error':
      // Bad manifests are the commit's failure; an unreachable cluster or registry is the agent's error.
      return classify(report.error).action === 'stop'
        ? { state: 'failure', description: `${prefix}${errorMessage(report.error)}` }
        : { state: 'error', description: `${prefix}${errorMessage(report.error)}` };
    default:
      return { state: 'error', description: `${prefix}${report.summary}` };
  }
}

export class CommitStatusSync implements SyncReporter {
  private readonly reporters = new Map<string, CommitStatusReporter>();
  private readonly config: MooringConfig;
  private readonly log: Logger;

  constructor(config: MooringConfig, log: Logger) {
    this.config = config;
    this.log = log;
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
        provider: providerFor(url, deployment.commitStatus),
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

  async started(sync: SyncRequest): Promise<void> {
    const reporter = this.reporter(sync.deployment);
    const url = this.repoUrl(sync.deployment);
    if (!reporter || !url || !sync.commit) return;
    const what = sync.trigger === 'rollback' ? 'Rolling back' : 'Deploying';
    await reporter.report(
      { repoUrl: url, commit: sync.commit },
      { state: 'pending', description: `${what} ${sync.deployment.name} to ${sync.deployment.namespace}` },
    );
  }

  async finished(sync: SyncRequest, report: DeployReport, release: Release | undefined): Promise<void> {
    const reporter = this.reporter(sync.deployment);
    const url = this.repoUrl(sync.deployment);
    if (!reporter || !url || report.outcome === 'cancelled') return;
    const outcome = describeOutcome(report, release, sync.trigger);
    if (sync.commit) await reporter.report({ repoUrl: url, commit: sync.commit }, outcome);
    // A rollout of a new image is also reported on the application's commit it was built from (OCI labels).
    if (sync.trigger !== 'image') return;
    for (const image of Object.values(sync.images)) {
      if (!image.source) continue;
      const app = this.appReporter(sync.deployment, image.source.repository);
      await app?.report({ repoUrl: image.source.repository, commit: image.source.revision }, outcome);
    }
  }

  private appReporter(deployment: Deployment, repository: string): CommitStatusReporter | undefined {
    if (!deployment.commitStatus.enabled || !deployment.commitStatus.token) return undefined;
    const key = `${deployment.name} ${repository}`;
    let reporter = this.reporters.get(key);
    if (!reporter) {
      try {
        // On the manifests' host, the deployment's provider settings apply; elsewhere the host decides.
        const manifests = this.repoUrl(deployment);
        const sameHost = manifests !== undefined && hostOf(manifests) === hostOf(repository);
        reporter = new CommitStatusReporter({
          provider: providerFor(
            repository,
            sameHost ? deployment.commitStatus : { provider: 'auto', apiUrl: undefined },
          ),
          config: deployment.commitStatus,
          cluster: this.config.cluster.name,
          deployment: deployment.name,
          namespace: deployment.namespace,
          logger: this.log,
        });
      } catch (error) {
        this.log.warn(
          { repository, err: errorMessage(error) },
          'cannot report on the image source repository',
        );
        return undefined;
      }
      this.reporters.set(key, reporter);
    }
    return reporter;
  }
}
