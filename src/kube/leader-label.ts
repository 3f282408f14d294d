// The leader marks its own Pod: the label `mooring.io/leader: "true"` while it holds the lease, removed when it
// steps down or stops. The chart's webhook Service selects it, so that webhooks only ever reach the replica that
// syncs (a standby answers 503 to one that still arrives, so that the sender retries).
//
// The Pod is named by POD_NAME (the downward API, set by the chart) in the agent's namespace; outside a Pod (no
// POD_NAME) nothing is marked. A failed write is logged, once per kind of failure, and never stops the agent.
import { errorMessage } from '../errors.ts';
import type { KubeApi } from './api.ts';

export const LEADER_LABEL = 'mooring.io/leader';

export interface LeaderLabelLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export class LeaderLabel {
  private marked: boolean | undefined;
  private lastError = '';
  private queue: Promise<void> = Promise.resolve();

  private readonly api: KubeApi;
  private readonly pod: { namespace: string; name: string | undefined };
  private readonly log: LeaderLabelLog;

  constructor(api: KubeApi, pod: { namespace: string; name: string | undefined }, log: LeaderLabelLog) {
    this.api = api;
    this.pod = pod;
    this.log = log;
  }

  /** Sets (true) or removes (false) the label on this agent's Pod; writes are done in order. */
  mark(leading: boolean): Promise<void> {
    this.queue = this.queue.then(() => this.write(leading));
    return this.queue;
  }

  private async write(leading: boolean): Promise<void> {
    const { namespace, name } = this.pod;
    if (!name || this.marked === leading) return;
    try {
      await this.api.request('PATCH', `/api/v1/namespaces/${namespace}/pods/${name}`, {
        body: { metadata: { labels: { [LEADER_LABEL]: leading ? 'true' : null } } },
        contentType: 'application/merge-patch+json',
      });
      this.marked = leading;
      this.lastError = '';
      this.log.info(
        { pod: name, label: LEADER_LABEL, leading },
        leading ? 'pod marked as leader' : 'leader mark removed',
      );
    } catch (error) {
      const message = errorMessage(error);
      if (message !== this.lastError)
        this.log.warn(
          { pod: name, err: message },
          'cannot mark the pod as leader: webhooks may reach a standby',
        );
      this.lastError = message;
    }
  }
}
