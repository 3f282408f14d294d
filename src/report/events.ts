// Kubernetes Events of syncs (docs/events.md), as Flux writes them on its objects: on the deployment's ledger
// ConfigMap (`mooring-ledger-<deployment>` in the agent's namespace: the agent's state object for it) and on the
// workloads a sync applied, so that `kubectl describe deployment web` and `kubectl get events` tell the story:
//   Normal  Synced          web: 12/12 stable in 42s (rev abc1234)
//   Warning SyncFailed      web: Deployment shop/web: 0 of 2 replicas available after 5m (rev abc1234)
//   Normal  Pruned          web: pruned 2 objects: ConfigMap shop/old, Service shop/legacy
//   Normal  DriftCorrected  web: put back spec.replicas changed by hand (rev abc1234)
//   Warning Drifted         web: 1 object changed by hand: Deployment shop/web (spec.replicas)
//   Normal  Held            web: suspended: not deployed until mooring resume web (commit def5678)
// Messages are the sync's summary, the same redacted line as the commit status: never a Secret value. Events are
// queued on the recorder (src/kube/events.ts), which bounds them; a sync never waits for one.
import type { Deployment, MooringConfig } from '../config/schema.ts';
import type { DeployReport, Release, SyncReporter, SyncRequest } from '../contract.ts';
import type { KubeApi } from '../kube/api.ts';
import type { DriftFinding } from '../kube/drift.ts';
import type { EventRecorder, EventTarget } from '../kube/events.ts';
import { StateStore } from '../kube/state-store.ts';
import { describeObject } from '../render/manifest.ts';
import { ledgerName } from './ledger.ts';

const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob']);

export class SyncEvents implements SyncReporter {
  private readonly recorder: EventRecorder;
  private readonly api: KubeApi;
  private readonly config: MooringConfig;
  private readonly ledgerUids = new Map<string, string>();

  constructor(recorder: EventRecorder, api: KubeApi, config: MooringConfig) {
    this.recorder = recorder;
    this.api = api;
    this.config = config;
  }

  /** The deployment's ledger ConfigMap, with its uid when it can be read (kubectl describe matches by uid). */
  private async ledger(deployment: string): Promise<EventTarget> {
    const namespace = this.config.cluster.namespace;
    const name = ledgerName(deployment);
    // The ledger was written just before (the release), so its copy is usually known: no read.
    let uid = this.ledgerUids.get(deployment) ?? StateStore.knownUid(this.api, namespace, name);
    if (!uid) {
      uid = await this.api
        .request<{ metadata?: { uid?: string } }>(
          'GET',
          `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${name}`,
        )
        .then((cm) => cm.metadata?.uid)
        .catch(() => undefined);
      if (uid) this.ledgerUids.set(deployment, uid);
    }
    return { apiVersion: 'v1', kind: 'ConfigMap', name, namespace, uid };
  }

  async finished(sync: SyncRequest, report: DeployReport, release: Release | undefined): Promise<void> {
    const d = sync.deployment;
    const rev = sync.commit ? ` (rev ${sync.commit.slice(0, 7)})` : '';
    const failed =
      report.outcome === 'failed' || report.outcome === 'timed-out' || report.outcome === 'error';
    const stable = (report.outcome === 'stable' || report.outcome === 'applied') && release !== undefined;
    if (!failed && !stable) return;
    const verdicts = new Map((report.wait?.verdicts ?? []).map((v) => [v.name, v.stability]));
    const workloads = report.applied
      .filter((a) => WORKLOADS.has(a.target.object.kind))
      .map((a) => ({
        target: {
          apiVersion: a.target.object.apiVersion,
          kind: a.target.object.kind,
          name: a.target.object.metadata.name,
          namespace: a.target.object.metadata.namespace ?? d.namespace,
          uid: a.live?.metadata.uid,
        },
        described: describeObject(a.target.object),
      }));
    const ledger = await this.ledger(d.name);
    const message = `${d.name}: ${report.summary}${rev}`;
    if (failed) {
      this.recorder.record(ledger, 'Warning', 'SyncFailed', message);
      for (const w of workloads)
        if (verdicts.get(w.described)?.state !== 'stable')
          this.recorder.record(w.target, 'Warning', 'SyncFailed', message);
      return;
    }
    this.recorder.record(ledger, 'Normal', 'Synced', message);
    for (const w of workloads) this.recorder.record(w.target, 'Normal', 'Synced', message);
    const pruned = report.prune?.deleted ?? [];
    if (pruned.length > 0) {
      const listed = pruned.slice(0, 10).join(', ') + (pruned.length > 10 ? ', …' : '');
      this.recorder.record(
        ledger,
        'Normal',
        'Pruned',
        `${d.name}: pruned ${pruned.length} object${pruned.length === 1 ? '' : 's'}: ${listed}`,
      );
    }
    if (sync.trigger === 'drift')
      for (const finding of report.drift ?? []) {
        const w = workloads.find((x) => x.described === finding.object);
        const fields = finding.fields.slice(0, 5).join(', ');
        this.recorder.record(
          w?.target ?? ledger,
          'Normal',
          'DriftCorrected',
          `${d.name}: put back ${fields} changed by hand in ${finding.object}${rev}`,
        );
      }
  }

  async drifted(sync: SyncRequest, findings: readonly DriftFinding[]): Promise<void> {
    if (findings.length === 0) return;
    const d = sync.deployment;
    const listed = findings
      .slice(0, 5)
      .map((f) => `${f.object} (${[...f.fields, ...f.added].slice(0, 3).join(', ')})`)
      .join('; ');
    this.recorder.record(
      await this.ledger(d.name),
      'Warning',
      'Drifted',
      `${d.name}: ${findings.length} object${findings.length === 1 ? '' : 's'} changed by hand: ${listed}`,
    );
  }

  /** A new artifact digest refused for its signature: a Warning on the deployment's ledger. */
  async artifactRefused(
    deployment: Deployment,
    _commit: string | undefined,
    description: string,
  ): Promise<void> {
    this.recorder.record(await this.ledger(deployment.name), 'Warning', 'ArtifactRefused', description);
  }

  /** A commit held before its sync (suspended, waiting for a dependency, a rollout step, a promotion). */
  async waiting(sync: SyncRequest, description: string): Promise<void> {
    if (sync.commit) await this.held(sync.deployment, sync.commit, description);
  }

  private async held(deployment: Deployment, commit: string, description: string): Promise<void> {
    this.recorder.record(
      await this.ledger(deployment.name),
      'Normal',
      'Held',
      `${deployment.name}: ${description} (commit ${commit.slice(0, 7)})`,
    );
  }
}
