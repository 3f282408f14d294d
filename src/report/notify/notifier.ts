// Notifications of sync outcomes (docs/notifications.md): a SyncReporter (and HoldReporter) that turns a finished
// sync into at most one message per receiver a deployment names in `notify`, for the outcomes it asks for:
//   failed  the sync failed, timed out or errored
//   stable  the sync recorded a stable release
//   pruned  a stable sync that deleted objects (a receiver asking for both gets the pruned message)
//   held    a commit of a suspended deployment was held
// Messages are queued on each receiver's Channel (never awaited by the sync). Quiet passes that recorded nothing
// (a drift pass with nothing to put back) and cancelled syncs send nothing.
import { createHmac, randomUUID } from 'node:crypto';
import type { Deployment, MooringConfig } from '../../config/schema.ts';
import { readSecret } from '../../config/secret.ts';
import type { DeployReport, HoldReason, Release, SyncReporter, SyncRequest } from '../../contract.ts';
import { VERSION } from '../../version.ts';
import { commitUrl } from '../commit-url.ts';
import { Channel, type Delivery, type DeliveryResult } from './channel.ts';
import { type NotifyEvent, type NotifyOutcome, slackBody, teamsBody, webhookBody } from './payloads.ts';

type Receiver = MooringConfig['notifications']['receivers'][number];

export interface NotifierOptions {
  log: ConstructorParameters<typeof Channel>[0]['log'];
  counted?: ((receiver: string, result: DeliveryResult) => void) | undefined;
  /** For tests: the first retry's delay. */
  backoffMs?: number | undefined;
}

/** The headers and signature of a generic webhook: HMAC-SHA256 of the raw body under the receiver's secret. */
export function signedHeaders(
  body: string,
  secret: string,
  outcome: string,
  now = new Date(),
): Record<string, string> {
  return {
    'X-Mooring-Event': outcome,
    'X-Mooring-Delivery': randomUUID(),
    'X-Mooring-Timestamp': String(Math.floor(now.getTime() / 1000)),
    'X-Mooring-Signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
  };
}

export class Notifier implements SyncReporter {
  private readonly config: MooringConfig;
  private readonly channels = new Map<string, { receiver: Receiver; channel: Channel }>();

  constructor(config: MooringConfig, options: NotifierOptions) {
    this.config = config;
    for (const receiver of config.notifications.receivers) {
      this.channels.set(receiver.name, {
        receiver,
        channel: new Channel({
          name: receiver.name,
          perMinute: receiver.perMinute,
          queue: receiver.queue,
          retryForMs: receiver.retryFor,
          log: options.log,
          counted: options.counted,
          backoffMs: options.backoffMs,
        }),
      });
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.channels.values()].map((c) => c.channel.close()));
  }

  finished(sync: SyncRequest, report: DeployReport, release: Release | undefined): void {
    const failed =
      report.outcome === 'failed' || report.outcome === 'timed-out' || report.outcome === 'error';
    const stable = (report.outcome === 'stable' || report.outcome === 'applied') && release !== undefined;
    if (!failed && !stable) return;
    const pruned = report.prune?.deleted ?? [];
    const verdicts = report.wait?.verdicts ?? [];
    const base = this.event(sync.deployment, {
      summary: report.summary,
      commit: sync.commit,
      trigger: sync.trigger,
      release: release?.id,
      durationMs: report.elapsedMs,
      images: Object.entries(sync.images).map(([source, i]) => ({
        source,
        image: i.image,
        tag: i.tag,
        digest: i.digest,
      })),
      objects: {
        total: report.applied.length,
        stable: verdicts.filter((v) => v.stability.state === 'stable').length,
        failed: verdicts.filter((v) => v.stability.state === 'failed').length,
      },
      pruned,
    });
    for (const n of sync.deployment.notify) {
      let outcome: NotifyOutcome | undefined;
      if (failed) outcome = n.on.includes('failed') ? 'failed' : undefined;
      else if (pruned.length > 0 && n.on.includes('pruned')) outcome = 'pruned';
      else if (n.on.includes('stable')) outcome = 'stable';
      if (outcome) this.queue(n.receiver, { ...base, outcome });
    }
  }

  /**
   * A commit held before its sync: notified when its deployment is suspended (`held`); the other holds (a
   * dependency, a rollout step, a promotion) end soon by themselves or with the syncs they wait for, which notify.
   */
  waiting(sync: SyncRequest, description: string, reason: HoldReason): void {
    if (sync.commit && reason === 'suspended') this.held(sync.deployment, sync.commit, description);
  }

  private held(deployment: Deployment, commit: string, description: string): void {
    const event = this.event(deployment, { summary: description, commit, images: [], pruned: [] });
    for (const n of deployment.notify)
      if (n.on.includes('held')) this.queue(n.receiver, { ...event, outcome: 'held' });
  }

  private event(
    d: Deployment,
    parts: Omit<NotifyEvent, 'outcome' | 'cluster' | 'deployment' | 'namespace' | 'time'>,
  ): NotifyEvent {
    const git = this.config.sources.git.find((s) => s.name === d.source);
    return {
      outcome: 'stable',
      cluster: this.config.cluster.name,
      deployment: d.name,
      namespace: d.namespace,
      time: new Date().toISOString(),
      ...parts,
      commitUrl: parts.commit && git ? commitUrl(git.url, d.commitStatus.provider, parts.commit) : undefined,
    };
  }

  private queue(name: string, event: NotifyEvent): void {
    const found = this.channels.get(name);
    if (!found) return;
    const { receiver, channel } = found;
    channel.send(`${event.deployment} ${event.outcome}`, async (): Promise<Delivery> => {
      const url = await readSecret(receiver.url);
      const payload =
        receiver.type === 'slack'
          ? slackBody(event)
          : receiver.type === 'teams'
            ? teamsBody(event)
            : webhookBody(event);
      const body = JSON.stringify(payload);
      const headers: Record<string, string> = {
        'Content-Type': 'application/json',
        'User-Agent': `mooring/${VERSION}`,
      };
      if (receiver.type === 'webhook' && receiver.secret)
        Object.assign(headers, signedHeaders(body, await readSecret(receiver.secret), event.outcome));
      return { url: url.trim(), headers, body };
    });
  }
}
