// The release ledger: for each deployment, its releases (newest first, bounded) and its rollback fence, kept in
// one ConfigMap `mooring-ledger-<deployment>` in the agent's namespace. It never holds manifests or Secret values:
// a release records what identifies it (commit, image digests, versioned object names) so that it can be
// rebuilt exactly, and what happened (result, duration, messages).
import type { KubeApi } from '../kube/api.ts';
import { describeKubeError, statusCode } from '../kube/errors.ts';

export type Trigger = 'commit' | 'image' | 'manual' | 'rollback' | 'drift' | 'config' | 'start';

export interface ReleaseImage {
  image: string;
  tag?: string | undefined;
  digest: string;
  /** From the image's OCI labels: the application repository and commit it was built from. */
  source?: { repository: string; revision: string } | undefined;
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
  objects: { object: string; action: string }[];
  /** A drift correction's: the fields it put back, by object. */
  drift?: { object: string; fields: string[] }[] | undefined;
  /** How the sync's hooks ran (docs/hooks.md): never in the inventory, never pruned, recorded here. */
  hooks?:
    | { object: string; hook: string; outcome: 'succeeded' | 'failed'; message: string; deleted: boolean }[]
    | undefined;
  result: 'stable' | 'failed' | 'timed-out' | 'cancelled' | 'error' | 'applied';
  durationMs: number;
  messages: string[];
}

/** Set by a rollback: the agent leaves the deployment alone until its sources move past `heads`. */
export interface Fence {
  release: number;
  since: string;
  /** The source revisions when the fence was set: the Git commit, and each image digest by source. */
  heads: { commit?: string | undefined; images: Record<string, string> };
}

/**
 * A sync in progress, written when it starts and cleared when its release is recorded: one still there when an
 * agent starts means the previous agent died in the middle of it (killed, out of memory), and its end is reported.
 */
export interface Attempt {
  commit?: string | undefined;
  revision: string;
  trigger: Trigger;
  images: Record<string, ReleaseImage>;
  since: string;
  /** The versioned objects it is to write, once rendered. */
  versions?: string[] | undefined;
}

/** A sync that waits for the deployments it depends on (dependsOn): what `mooring status` shows. */
export interface Waiting {
  /** `waiting for crds`, or `held: dependency crds failed …`. */
  message: string;
  commit?: string | undefined;
  since: string;
}

export interface LedgerData {
  releases: Release[];
  fence: Fence | undefined;
  attempt?: Attempt | undefined;
  waiting?: Waiting | undefined;
}

const MAX_OBJECTS = 300;
const MAX_MESSAGES = 10;
const MAX_MESSAGE = 500;

export function ledgerName(deployment: string): string {
  return `mooring-ledger-${deployment}`;
}

function path(namespace: string, deployment?: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps${deployment ? `/${ledgerName(deployment)}` : ''}`;
}

export class Ledger {
  private readonly api: KubeApi;
  private readonly namespace: string;
  private readonly limit: number;

  constructor(api: KubeApi, namespace: string, limit = 50) {
    this.api = api;
    this.namespace = namespace;
    this.limit = limit;
  }

  async read(deployment: string): Promise<LedgerData> {
    try {
      const cm = await this.api.request<{ data?: Record<string, string> }>(
        'GET',
        path(this.namespace, deployment),
      );
      return {
        releases: JSON.parse(cm.data?.['releases.json'] ?? '[]') as Release[],
        fence: cm.data?.['fence.json'] ? (JSON.parse(cm.data['fence.json']) as Fence) : undefined,
        attempt: cm.data?.['attempt.json'] ? (JSON.parse(cm.data['attempt.json']) as Attempt) : undefined,
        waiting: cm.data?.['waiting.json'] ? (JSON.parse(cm.data['waiting.json']) as Waiting) : undefined,
      };
    } catch (error) {
      if (statusCode(error) === 404) return { releases: [], fence: undefined };
      throw describeKubeError(error, `read the ledger of deployment ${deployment}`);
    }
  }

  /** Every deployment that has a ledger in the namespace. */
  async deployments(): Promise<string[]> {
    const list = await this.api
      .request<{ items: { metadata: { labels?: Record<string, string> } }[] | null }>(
        'GET',
        path(this.namespace),
        {
          query: { labelSelector: 'app.kubernetes.io/component=ledger' },
        },
      )
      .catch((error: unknown) => {
        throw describeKubeError(error, 'list ledgers');
      });
    return (list.items ?? [])
      .map((i) => i.metadata.labels?.['mooring.io/deployment'] ?? '')
      .filter(Boolean)
      .sort();
  }

  private async write(deployment: string, data: LedgerData): Promise<void> {
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: ledgerName(deployment),
        namespace: this.namespace,
        labels: {
          'app.kubernetes.io/managed-by': 'mooring',
          'app.kubernetes.io/component': 'ledger',
          'mooring.io/deployment': deployment,
        },
      },
      data: {
        'releases.json': JSON.stringify(data.releases.slice(0, this.limit), null, 1),
        ...(data.fence ? { 'fence.json': JSON.stringify(data.fence, null, 1) } : {}),
        ...(data.attempt ? { 'attempt.json': JSON.stringify(data.attempt, null, 1) } : {}),
        ...(data.waiting ? { 'waiting.json': JSON.stringify(data.waiting, null, 1) } : {}),
      },
    };
    try {
      // Replace, not merge: a lifted fence must disappear.
      await this.api
        .request('PUT', path(this.namespace, deployment), { body })
        .catch(async (error: unknown) => {
          if (statusCode(error) !== 404) throw error;
          await this.api.request('POST', path(this.namespace), { body });
        });
    } catch (error) {
      throw describeKubeError(error, `write the ledger of deployment ${deployment}`);
    }
  }

  /**
   * Records a release (bounded fields), newest first; returns it with its id. A retry that failed exactly as the
   * newest release did (same revision, same error, nothing else written) takes that release's place and id, so
   * that a sync retried for hours (a namespace that does not exist yet) does not push the history out.
   */
  async append(release: Omit<Release, 'id'>): Promise<Release> {
    const data = await this.read(release.deployment);
    const newest = data.releases[0];
    const bounded: Release = {
      ...release,
      id: (newest?.id ?? 0) + 1,
      objects: release.objects.slice(0, MAX_OBJECTS),
      ...(release.drift
        ? { drift: release.drift.slice(0, MAX_OBJECTS).map((d) => ({ ...d, fields: d.fields.slice(0, 20) })) }
        : {}),
      ...(release.hooks
        ? {
            hooks: release.hooks
              .slice(0, MAX_OBJECTS)
              .map((h) => ({ ...h, message: h.message.slice(0, MAX_MESSAGE) })),
          }
        : {}),
      messages: release.messages.slice(0, MAX_MESSAGES).map((m) => m.slice(0, MAX_MESSAGE)),
    };
    const repeated = newest !== undefined && sameFailure(newest, bounded);
    if (repeated) bounded.id = newest.id;
    // The release ends the attempt that made it.
    await this.write(release.deployment, {
      ...data,
      releases: [bounded, ...data.releases.slice(repeated ? 1 : 0)],
      attempt: undefined,
    });
    return bounded;
  }

  /** Notes a sync that starts (or, with undefined, one that ended without a release: cancelled). */
  async setAttempt(deployment: string, attempt: Attempt | undefined): Promise<void> {
    const data = await this.read(deployment);
    if (!attempt && !data.attempt) return;
    await this.write(deployment, { ...data, attempt });
  }

  /** Records (or clears) what the deployment's next sync waits for. */
  async setWaiting(deployment: string, waiting: Waiting | undefined): Promise<void> {
    const data = await this.read(deployment);
    if (!waiting && !data.waiting) return;
    await this.write(deployment, { ...data, waiting });
  }

  async setFence(deployment: string, fence: Fence | undefined): Promise<void> {
    const data = await this.read(deployment);
    await this.write(deployment, { ...data, fence });
  }
}

function sameFailure(a: Omit<Release, 'id'>, b: Omit<Release, 'id'>): boolean {
  const what = (r: Omit<Release, 'id'>) =>
    JSON.stringify([r.revision, r.trigger, r.commit, r.versions, r.objects, r.messages]);
  return a.result === 'error' && b.result === 'error' && what(a) === what(b);
}

/** The newest release that ended stable: what the deployment is at. */
export function current(data: LedgerData): Release | undefined {
  return data.releases.find((r) => r.result === 'stable');
}

/** A deployment's revision: what decides whether anything needs deploying (the commit plus every image digest). */
export function syncRevision(commit: string | undefined, images: Record<string, string>): string {
  const digests = Object.entries(images)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([source, digest]) => `${source}=${digest}`);
  return [commit ?? 'local', ...digests].join('|');
}
