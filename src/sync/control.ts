import type { DeployReport, Logger, Release, SyncMetrics, SyncReporter } from '../contract.ts';
import { errorMessage } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import { ClusterCache } from '../kube/cache.ts';
import {
  CONTROL_MAP,
  ControlMap,
  type ControlState,
  describeSuspension,
  type PromotionApproval,
  parseControl,
  RECONCILED_PREFIX,
  type ReconcileAnswer,
  ROLLBACK_ANSWERED_PREFIX,
  type RollbackUnderWay,
  rollbackHolds,
  type Suspension,
} from '../kube/control-map.ts';
import type { ResourceInfo } from '../kube/discovery.ts';

export const CONFIGMAPS: ResourceInfo = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  plural: 'configmaps',
  namespaced: true,
};
/** After a watch that cannot work (forbidden), when it is tried again. */
const REWATCH_MS = 60_000;
/** Requests of unknown deployments answered for one change of the control map. */
const UNKNOWN_ANSWERS = 10;

export interface ControlDeps {
  api: KubeApi;
  /** The agent's cluster cache; without one the control watches through a cache of its own. */
  cache: ClusterCache | undefined;
  namespace: string;
  log: Logger;
  metrics?: SyncMetrics | undefined;
  /** The deployments the agent has now (a reload changes them). */
  deployments: () => readonly string[];
  /** A deployment another replica syncs (replicas sharing the work): its requests are that replica's to answer. */
  elsewhere?: ((deployment: string) => boolean) | undefined;
  reporters: () => readonly SyncReporter[];
}

export interface ControlHandlers {
  /** A reconcile request was accepted (answered `running`): poll the deployment's sources and sync it. */
  reconcile(deployment: string): Promise<void>;
  /** A suspension ended: deploy the newest revision now. */
  resume(deployment: string): Promise<void>;
  /** A promotion was approved (`mooring promote`): deploy it now. */
  promote?(deployment: string): Promise<void>;
  /**
   * `mooring rollback` is under way: stop the deployment's sync (its stability wait; what it writes finishes) and
   * resolve once it has ended. None starts while the rollback holds (gates.ts).
   */
  rollback?(deployment: string, rollback: RollbackUnderWay): Promise<void>;
}

/** A reconcile request taken by the sync that answers it. */
export interface ReconcileRequest {
  deployment: string;
  token: string;
}

export class Control {
  private readonly deps: ControlDeps;
  private readonly map: ControlMap;
  private state: ControlState = parseControl(undefined);
  /** The last request token handed to the agent, by deployment: each request is handled once. */
  private readonly handled = new Map<string, string>();
  /** The last rollback token answered, by deployment: each rollback is answered once. */
  private readonly handledRollbacks = new Map<string, string>();
  /** Accepted requests no sync has taken yet. */
  private readonly waiting = new Map<string, ReconcileRequest>();
  /** The commit last reported as held, by deployment, so that each held commit is reported once. */
  private readonly heldCommits = new Map<string, string>();
  private handlers: ControlHandlers | undefined;
  private readonly controller = new AbortController();
  private ownCache: ClusterCache | undefined;
  private rewatch: NodeJS.Timeout | undefined;
  /** Deployments the suspended gauge has a series of: one removed by a reload loses its series. */
  private readonly gauged = new Set<string>();

  constructor(deps: ControlDeps) {
    this.deps = deps;
    this.map = new ControlMap(deps.api, deps.namespace);
  }

  /** Reads the suspensions (before the agent's first poll, so that a restart holds what was held), then watches. */
  async start(): Promise<void> {
    this.update(await this.map.read());
    this.watch();
  }

  /** From now on, changes reach the agent; requests made while no agent ran are handled now. */
  listen(handlers: ControlHandlers): void {
    this.handlers = handlers;
    this.update(this.state);
  }

  /** The deployments changed (a reload, or replicas sharing the work moved some here): requests they have are taken. */
  refresh(): void {
    if (this.handlers) this.update(this.state);
  }

  stop(): void {
    this.handlers = undefined;
    this.controller.abort();
    if (this.rewatch) clearTimeout(this.rewatch);
    this.ownCache?.close();
  }

  suspended(deployment: string): Suspension | undefined {
    return this.state.suspended.get(deployment);
  }

  /**
   * The rollback under way from the CLI that holds the deployment now, if one does; given `maxMs`, one that has held
   * longer than that since it began holds no longer (control-map.ts, rollbackHolds).
   */
  rollingBack(deployment: string, maxMs?: number): RollbackUnderWay | undefined {
    const rollback = this.state.rollingBack.get(deployment);
    return rollbackHolds(rollback, Date.now(), maxMs) ? rollback : undefined;
  }

  /** The promotion approved for the deployment (`mooring promote`), if any. */
  approval(deployment: string): PromotionApproval | undefined {
    return this.state.approved.get(deployment);
  }

  private watch(): void {
    const { log } = this.deps;
    if (this.controller.signal.aborted) return;
    if (!this.deps.cache) this.ownCache ??= new ClusterCache(this.deps.api);
    const cache = this.deps.cache ?? (this.ownCache as ClusterCache);
    const subscription = cache.subscribe(
      CONFIGMAPS,
      this.deps.namespace,
      CONTROL_MAP,
      (object, note) => {
        // A note says the stream is in trouble: what is known stays in force until the server answers again.
        if (note) log.debug({ note }, 'control ConfigMap: watch interrupted');
        else this.update(parseControl(object?.metadata.annotations));
      },
      this.controller.signal,
      { metadataOnly: true },
    );
    subscription.done.catch((error: unknown) => {
      log.error(
        { err: errorMessage(error), retryInMs: REWATCH_MS },
        'cannot watch the control ConfigMap: suspend and reconcile requests are not seen',
      );
      this.rewatch = setTimeout(() => this.watch(), REWATCH_MS);
      this.rewatch.unref();
    });
  }

  private update(next: ControlState): void {
    const previous = this.state;
    this.state = next;
    const { log, metrics } = this.deps;
    const names = this.deps.deployments();
    for (const name of this.gauged) {
      if (names.includes(name)) continue;
      metrics?.suspended.remove({ deployment: name });
      this.gauged.delete(name);
    }
    for (const name of names) {
      metrics?.suspended.set({ deployment: name }, next.suspended.has(name) ? 1 : 0);
      this.gauged.add(name);
    }
    if (!this.handlers) return;
    const handlers = this.handlers;
    for (const [name, suspension] of next.suspended) {
      if (!previous.suspended.has(name) && previous !== next)
        log.info(
          { deployment: name, ...suspension },
          'deployment suspended: changes are noted, not deployed',
        );
    }
    for (const name of previous.suspended.keys()) {
      if (next.suspended.has(name)) continue;
      log.info({ deployment: name }, 'deployment resumed');
      this.heldCommits.delete(name);
      handlers
        .resume(name)
        .catch((error: unknown) =>
          log.error({ deployment: name, err: errorMessage(error) }, 'cannot sync the resumed deployment'),
        );
    }
    for (const [name, approval] of next.approved) {
      if (previous.approved.get(name)?.revision === approval.revision || this.deps.elsewhere?.(name))
        continue;
      if (!this.deps.deployments().includes(name)) continue;
      log.info({ deployment: name, ...approval }, 'promotion approved');
      handlers
        .promote?.(name)
        .catch((error: unknown) =>
          log.error({ deployment: name, err: errorMessage(error) }, 'cannot promote the deployment'),
        );
    }
    for (const [name, rollback] of next.rollingBack) {
      if (this.handledRollbacks.get(name) === rollback.token || this.deps.elsewhere?.(name)) continue;
      if (!this.deps.deployments().includes(name)) continue;
      this.handledRollbacks.set(name, rollback.token);
      // Answered by an earlier agent (this one restarted since), or given up by its CLI long ago.
      if (next.rollbackAnswered.get(name)?.token === rollback.token || !rollbackHolds(rollback)) continue;
      void this.stopForRollback(name, rollback, handlers);
    }
    for (const name of previous.rollingBack.keys()) {
      if (next.rollingBack.has(name) || previous === next || next.suspended.has(name)) continue;
      if (!this.deps.deployments().includes(name)) continue;
      // The rollback ended: its fence holds the deployment where it went (gates.ts); one that failed left none, and
      // the newest revision is deployed again.
      log.info({ deployment: name }, 'rollback from the CLI ended');
      handlers
        .resume(name)
        .catch((error: unknown) =>
          log.error({ deployment: name, err: errorMessage(error) }, 'cannot sync after the rollback'),
        );
    }
    // Requests of names the agent does not have are answered, so that a CLI does not wait in vain; a few each
    // change of the map: each answer is a write of the map, and a thousand keys written by hand made ten thousand
    // requests of the API server.
    let unknown = 0;
    for (const [name, token] of next.requested) {
      if (this.handled.get(name) === token) continue;
      if (this.deps.elsewhere?.(name)) continue;
      this.handled.set(name, token);
      // Answered by an earlier agent (this one restarted since).
      if (next.answered.get(name)?.token === token) continue;
      if (!this.deps.deployments().includes(name) && ++unknown > UNKNOWN_ANSWERS) continue;
      void this.accept({ deployment: name, token }, handlers);
    }
    if (unknown > UNKNOWN_ANSWERS)
      log.warn(
        { unanswered: unknown - UNKNOWN_ANSWERS },
        'reconcile requested of more deployments the agent does not have than it answers at once',
      );
    // Only the requests the map holds are remembered: memory follows the map, not every name ever written there.
    for (const name of this.handled.keys()) if (!next.requested.has(name)) this.handled.delete(name);
  }

  /** Stops the deployment's sync for a rollback from the CLI, then answers its token: the rollback goes on. */
  private async stopForRollback(
    name: string,
    rollback: RollbackUnderWay,
    handlers: ControlHandlers,
  ): Promise<void> {
    const request = { deployment: name, token: rollback.token };
    // A hold seen late (the agent was paused, or its watch behind) may be gone already: its CLI was interrupted
    // before the agent saw it. The map as it is now decides, so that a rollback given up stops no sync; one that
    // cannot be read stops it (the CLI waits for an answer).
    const now = await this.map.read(true).catch(() => undefined);
    if (now && now.rollingBack.get(name)?.token !== rollback.token) {
      this.deps.log.info(
        { deployment: name, by: rollback.by },
        'rollback from the CLI given up before the agent saw it: the sync goes on',
      );
      return;
    }
    this.deps.log.info(
      { deployment: name, by: rollback.by },
      'rollback from the CLI: the sync of the deployment stops',
    );
    try {
      await handlers.rollback?.(name, rollback);
      await this.answer(
        request,
        'held',
        `no sync of ${name} runs: held while ${rollback.by} rolls it back`,
        undefined,
        ROLLBACK_ANSWERED_PREFIX,
      );
    } catch (error) {
      await this.answer(
        request,
        'error',
        `cannot stop the sync of ${name}: ${errorMessage(error)}`,
        undefined,
        ROLLBACK_ANSWERED_PREFIX,
      );
    }
  }

  private async accept(request: ReconcileRequest, handlers: ControlHandlers): Promise<void> {
    const { deployment: name } = request;
    const log = this.deps.log.child({ deployment: name });
    if (!this.deps.deployments().includes(name)) {
      log.warn({ token: request.token }, 'reconcile requested of a deployment the agent does not have');
      return this.answer(request, 'unknown', `no deployment ${name} in the agent's configuration`);
    }
    const suspension = this.suspended(name);
    if (suspension) {
      return this.answer(
        request,
        'suspended',
        `deployment ${name} is ${describeSuspension(suspension)}; mooring resume ${name} first`,
      );
    }
    log.info({ token: request.token }, 'reconcile requested');
    this.waiting.set(name, request);
    await this.answer(request, 'running', `polling the sources of ${name}`);
    try {
      await handlers.reconcile(name);
    } catch (error) {
      if (this.take(name) === request) await this.answer(request, 'error', errorMessage(error));
    }
  }

  /**
   * The reconcile request waiting for a sync of `deployment`, if one waits: taken by the sync asked for next, or by
   * the sync of the same revision that one joins (src/sync/queue.ts).
   */
  take(deployment: string): ReconcileRequest | undefined {
    const request = this.waiting.get(deployment);
    this.waiting.delete(deployment);
    return request;
  }

  /** Whether a request of `deployment` still waits for a sync to take it. */
  pending(deployment: string): boolean {
    return this.waiting.has(deployment);
  }

  /** Writes the answer to a request; a failure to write is logged (the CLI then waits in vain and says so). */
  async answer(
    request: ReconcileRequest,
    state: ReconcileAnswer['state'],
    message: string,
    release?: Release | undefined,
    prefix: string = RECONCILED_PREFIX,
  ): Promise<void> {
    const answer: ReconcileAnswer = {
      token: request.token,
      state,
      ...(release ? { release: release.id } : {}),
      message: message.slice(0, 1000),
      at: new Date().toISOString(),
    };
    try {
      await this.map.annotate({ [`${prefix}${request.deployment}`]: JSON.stringify(answer) });
    } catch (error) {
      this.deps.log.error(
        { deployment: request.deployment, err: errorMessage(error) },
        'cannot answer the reconcile request',
      );
    }
  }

  /** Answers a request with the end of the sync that took it. */
  finished(request: ReconcileRequest, report: DeployReport, release: Release | undefined): Promise<void> {
    const state = report.outcome === 'applied' || report.outcome === 'dry-run' ? 'stable' : report.outcome;
    return this.answer(request, state, report.summary, release);
  }

  /**
   * A commit of a suspended deployment, to be reported once as held (holds.ts: pending, with how to deploy it):
   * the description to say, or undefined when it was said already or is the commit the deployment is at.
   */
  /** `name` left the configuration (its held commit's status was ended): a deployment of that name is new. */
  forgetHeld(name: string): void {
    this.heldCommits.delete(name);
  }

  /** The commit last reported as held for `name` (its pending status is open until a sync or a newer hold ends it). */
  heldCommit(name: string): string | undefined {
    return this.heldCommits.get(name);
  }

  held(name: string, commit: string | undefined, deployed: string | undefined): string | undefined {
    if (commit === undefined || commit === deployed || this.heldCommits.get(name) === commit)
      return undefined;
    this.heldCommits.set(name, commit);
    this.deps.log.info({ deployment: name, commit }, 'commit held: the deployment is suspended');
    return `suspended: not deployed until mooring resume ${name}`;
  }
}
