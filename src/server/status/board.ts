// What the status page shows: one view per deployment, kept by the agent as it syncs. It is a SyncReporter (a sync
// started: syncing; finished: its outcome, its objects with their stability verdicts, the release) and reads each
// deployment's ledger (releases, a rollback's fence) at start, after each sync and while someone is watching, so
// that a rollback made from the command line shows. Suspensions come from the control (a function).
//
// Nothing here holds a manifest or a Secret value: names of objects, digests, verdict messages and the summaries that
// commit statuses carry (already redacted where they are made). Subscribers (the page's event stream) are told of
// every change; a view is a plain object, serialised as it is.
import type { Deployment, MooringConfig } from '../../config/schema.ts';
import type { DeployReport, Release, SyncReporter, SyncRequest } from '../../contract.ts';
import { errorMessage } from '../../errors.ts';
import type { DriftFinding } from '../../kube/drift.ts';
import { describeObject } from '../../render/manifest.ts';
import { commitUrl } from '../../report/commit-url.ts';
import { unpostedStatuses } from '../../report/forges/forge-hosts.ts';
import type { Ledger, LedgerData } from '../../report/ledger.ts';
import { safeUrl } from '../../sources/git/errors.ts';

export type DeploymentState = 'unknown' | 'synced' | 'syncing' | 'failed' | 'held' | 'suspended' | 'drifted';

export interface ObjectView {
  object: string;
  action: string;
  /** stable, progressing, failed; `not waited` when the sync did not wait for it. */
  verdict: string;
  message?: string | undefined;
}

export interface ReleaseView {
  id: number;
  time: string;
  trigger: string;
  result: string;
  durationMs: number;
  commit?: string | undefined;
  commitUrl?: string | undefined;
}

export interface DeploymentView {
  name: string;
  namespace: string;
  source: { name: string; kind: 'git' | 'local' | 'unknown'; location: string; ref?: string | undefined };
  state: DeploymentState;
  /** Why: the sync's summary, the hold, the suspension. */
  message: string;
  revision?: { commit: string; url?: string | undefined } | undefined;
  images: { source: string; image: string; tag?: string | undefined; digest: string }[];
  objects: ObjectView[];
  releases: ReleaseView[];
  syncingSince?: string | undefined;
  updated: string;
  /** The replica that syncs it, when replicas share the work. */
  owner?: string | undefined;
  /** The cluster, when the agent deploys to several (docs/clusters.md); its name then reads `cluster/name`. */
  cluster?: string | undefined;
  /** The deployment set that made it (docs/deployment-sets.md): the page groups and filters by it. */
  set?: string | undefined;
  /** Why commit statuses of the last sync were not posted (a source annotation naming an unconfigured host). */
  reporting?: string[] | undefined;
  /**
   * A new digest of an artifact it follows that was refused (its signature does not verify) while the verified one
   * keeps running: said until a new digest is deployed.
   */
  refused?: { description: string; since: string; digests: string[] } | undefined;
}

export interface BoardOptions {
  config: () => MooringConfig;
  ledger?: Ledger | undefined;
  /** The suspension of a deployment, if it is suspended. */
  suspended?: ((deployment: string) => { since?: string | undefined } | undefined) | undefined;
  log?: { warn(fields: Record<string, unknown>, message: string): void } | undefined;
  /** How many releases a view lists. */
  releases?: number | undefined;
  /** The replica that syncs a deployment, when replicas share the work. */
  owner?: ((deployment: string) => string | undefined) | undefined;
  /**
   * Whether views are kept as syncs run (the status page is on). Off, the board holds nothing per deployment; a
   * page turned on later reads the ledgers.
   */
  keepViews?: (() => boolean) | undefined;
  now?: () => Date;
  /** The cluster of its deployments, when the agent deploys to several: each view names it. */
  cluster?: string | undefined;
}

const MAX_OBJECTS = 300;

export class StatusBoard implements SyncReporter {
  private readonly views = new Map<string, DeploymentView>();
  private readonly listeners = new Set<(view: DeploymentView) => void>();
  /** The state last told to subscribers, by deployment (a suspension shows without a change of the view). */
  private readonly shown = new Map<string, DeploymentState>();
  private readonly options: BoardOptions;

  constructor(options: BoardOptions) {
    this.options = options;
  }

  private now(): string {
    return (this.options.now?.() ?? new Date()).toISOString();
  }

  private spec(name: string): Deployment | undefined {
    return this.options.config().deployments.find((d) => d.name === name);
  }

  private provider(d: Deployment): string | undefined {
    return d.commitStatus.provider;
  }

  private gitUrl(d: Deployment): string | undefined {
    return this.options.config().sources.git.find((s) => s.name === d.source)?.url;
  }

  private blank(d: Deployment): DeploymentView {
    const config = this.options.config();
    const git = config.sources.git.find((s) => s.name === d.source);
    const local = config.sources.local.find((s) => s.name === d.source);
    return {
      name: d.name,
      namespace: d.namespace,
      ...(d.set ? { set: d.set } : {}),
      source: git
        ? {
            name: git.name,
            kind: 'git',
            location: safeUrl(git.url),
            ref:
              git.ref.branch ??
              git.ref.tag ??
              git.ref.semver ??
              (git.ref.pullRequest === undefined ? undefined : `pull request #${git.ref.pullRequest}`),
          }
        : local
          ? { name: local.name, kind: 'local', location: local.path }
          : { name: d.source, kind: 'unknown', location: '' },
      state: 'unknown',
      message: 'no sync yet',
      images: [],
      objects: [],
      releases: [],
      updated: this.now(),
    };
  }

  private view(name: string): DeploymentView | undefined {
    const d = this.spec(name);
    if (!d) return undefined;
    let v = this.views.get(name);
    if (!v) {
      v = this.blank(d);
      this.views.set(name, v);
    }
    return v;
  }

  /** The views of the configured deployments, in the configuration's order. */
  list(): DeploymentView[] {
    const names = this.options.config().deployments.map((d) => d.name);
    for (const gone of [...this.views.keys()].filter((n) => !names.includes(n))) this.views.delete(gone);
    return names.flatMap((n) => {
      const v = this.view(n);
      if (!v) return [];
      return [this.present(v)];
    });
  }

  /** A view as the page shows it: with its suspension, owner and (of several clusters) cluster. */
  private present(v: DeploymentView): DeploymentView {
    const shown = this.withSuspension(v);
    const cluster = this.options.cluster;
    return cluster === undefined ? shown : { ...shown, name: `${cluster}/${shown.name}`, cluster };
  }

  private withSuspension(shown: DeploymentView): DeploymentView {
    const owner = this.options.owner?.(shown.name);
    const v = owner === undefined ? shown : { ...shown, owner };
    const suspension = this.options.suspended?.(v.name);
    if (suspension && v.state !== 'syncing')
      return {
        ...v,
        state: 'suspended',
        message: `suspended: changes are not deployed until mooring resume ${v.name}`,
      };
    return v;
  }

  subscribe(listener: (view: DeploymentView) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get watchers(): number {
    return this.listeners.size;
  }

  private changed(v: DeploymentView): void {
    v.updated = this.now();
    const shown = this.present(v);
    this.shown.set(v.name, shown.state);
    for (const listener of this.listeners) {
      try {
        listener(shown);
      } catch {
        // A listener that fails (a closed stream) is removed by its owner.
      }
    }
  }

  /** Tells subscribers the current view of a deployment (after a suspension changed, say). */
  touch(name: string): void {
    const v = this.view(name);
    if (v) this.changed(v);
  }

  /** False while no page is served: what syncs report is not kept (the ledgers have it). */
  private keeping(): boolean {
    if (this.options.keepViews?.() !== false) return true;
    this.views.clear();
    this.shown.clear();
    return false;
  }

  started(sync: SyncRequest): void {
    if (!this.keeping()) return;
    const v = this.view(sync.deployment.name);
    if (!v) return;
    v.state = 'syncing';
    v.syncingSince = this.now();
    v.message = `${sync.trigger}: syncing ${sync.commit ? sync.commit.slice(0, 7) : 'local files'}`;
    this.changed(v);
  }

  drifted(sync: SyncRequest, findings: readonly DriftFinding[]): void {
    if (!this.keeping()) return;
    const v = this.view(sync.deployment.name);
    if (!v || findings.length === 0) return;
    v.state = 'drifted';
    v.message = `${findings.length} object${findings.length === 1 ? '' : 's'} changed by hand: ${findings
      .slice(0, 3)
      .map((f) => f.object)
      .join(', ')}${findings.length > 3 ? '…' : ''}`;
    this.changed(v);
  }

  artifactRefused(deployment: Deployment, _commit: string | undefined, description: string): void {
    if (!this.keeping()) return;
    const v = this.view(deployment.name);
    if (!v) return;
    v.refused = { description, since: this.now(), digests: v.images.map((i) => i.digest) };
    this.changed(v);
  }

  async finished(sync: SyncRequest, report: DeployReport, release: Release | undefined): Promise<void> {
    if (!this.keeping()) return;
    const d = sync.deployment;
    const v = this.view(d.name);
    if (!v) return;
    v.syncingSince = undefined;
    // A refusal is over once another digest than those running when it was said is deployed.
    const deployed = Object.values(sync.images).map((i) => i.digest);
    if (v.refused && report.outcome !== 'cancelled' && deployed.some((x) => !v.refused?.digests.includes(x)))
      v.refused = undefined;
    if (report.outcome === 'cancelled') {
      // Superseded or withdrawn: the next sync (or the ledger) says where the deployment is.
      v.state = v.releases[0]?.result === 'stable' ? 'synced' : v.state === 'syncing' ? 'unknown' : v.state;
      v.message = report.summary;
      this.changed(v);
      return;
    }
    v.state = report.outcome === 'stable' || report.outcome === 'applied' ? 'synced' : 'failed';
    if (sync.trigger === 'drift' && report.drift && report.drift.length > 0 && report.outcome === 'stable')
      v.message = `drift corrected: ${report.summary}`;
    else v.message = report.summary;
    const git = this.gitUrl(d);
    if (sync.commit)
      v.revision = {
        commit: sync.commit,
        url: git ? commitUrl(git, this.provider(d), sync.commit) : undefined,
      };
    const unposted = unpostedStatuses(this.options.config(), d, sync.images);
    v.reporting = unposted.length > 0 ? unposted : undefined;
    v.images = Object.entries(sync.images).map(([source, i]) => ({
      source,
      image: i.image,
      tag: i.tag,
      digest: i.digest,
    }));
    const verdicts = new Map((report.wait?.verdicts ?? []).map((x) => [x.name, x.stability]));
    v.objects = report.applied.slice(0, MAX_OBJECTS).map((a) => {
      const object = describeObject(a.target.object);
      const verdict = verdicts.get(object);
      return {
        object,
        action: a.action,
        verdict: verdict ? verdict.state : 'not waited',
        ...(verdict && verdict.state !== 'stable' ? { message: verdict.message } : {}),
      };
    });
    if (release)
      v.releases = [this.releaseView(d, release), ...v.releases.filter((r) => r.id !== release.id)].slice(
        0,
        this.options.releases ?? 10,
      );
    this.changed(v);
    await this.refresh(d.name);
  }

  private releaseView(d: Deployment, r: Release): ReleaseView {
    const git = this.gitUrl(d);
    return {
      id: r.id,
      time: r.time,
      trigger: r.trigger,
      result: r.result,
      durationMs: r.durationMs,
      commit: r.commit,
      commitUrl: r.commit && git ? commitUrl(git, this.provider(d), r.commit) : undefined,
    };
  }

  /** Reads a deployment's ledger (unless given, read with the others): its releases, and a rollback's hold. */
  async refresh(name: string, given?: LedgerData): Promise<void> {
    const ledger = this.options.ledger;
    const d = this.spec(name);
    if (!ledger || !d) return;
    let data: LedgerData;
    try {
      data = given ?? (await ledger.read(name));
    } catch (error) {
      this.options.log?.warn(
        { deployment: name, err: errorMessage(error) },
        'status page: cannot read the ledger',
      );
      return;
    }
    const v = this.view(name);
    if (!v) return;
    const before = JSON.stringify(v);
    v.releases = data.releases.slice(0, this.options.releases ?? 10).map((r) => this.releaseView(d, r));
    const last = data.releases[0];
    if (v.state === 'unknown' && last) {
      // Seeded from the ledger at start: the newest release says where the deployment is.
      v.state = last.result === 'stable' || last.result === 'applied' ? 'synced' : 'failed';
      v.message = last.messages[0] ?? `release ${last.id}: ${last.result}`;
      const git = this.gitUrl(d);
      if (last.commit)
        v.revision = {
          commit: last.commit,
          url: git ? commitUrl(git, this.provider(d), last.commit) : undefined,
        };
      v.images = Object.entries(last.images).map(([source, i]) => ({
        source,
        image: i.image,
        tag: i.tag,
        digest: i.digest,
      }));
      v.objects = last.objects
        .slice(0, MAX_OBJECTS)
        .map((o) => ({ ...o, verdict: last.result === 'stable' ? 'stable' : 'unknown' }));
    }
    if (data.fence && v.state !== 'syncing') {
      v.state = 'held';
      v.message = `held by a rollback to release ${data.fence.release} since ${data.fence.since}: new commits and images are not deployed until the sources move`;
    } else if (!data.fence && v.state === 'held') {
      v.state = last?.result === 'stable' ? 'synced' : 'failed';
      v.message = last?.messages[0] ?? `release ${last?.id ?? '?'}: ${last?.result ?? 'none'}`;
    }
    if (JSON.stringify(v) !== before || this.withSuspension(v).state !== this.shown.get(name))
      this.changed(v);
  }

  /** Reads every configured deployment's ledger (at start, and now and then while someone watches). */
  async refreshAll(): Promise<void> {
    // One list of every ledger rather than one read per deployment: a fleet's page costs one request a refresh.
    const all = await this.options.ledger?.readAll().catch(() => undefined);
    for (const d of this.options.config().deployments)
      await this.refresh(d.name, all ? (all.get(d.name) ?? { releases: [], fence: undefined }) : undefined);
  }
}
