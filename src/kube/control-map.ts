// The control ConfigMap `mooring-control` in the agent's namespace: how `mooring suspend`, `resume` and
// `reconcile` reach a running agent without a port or a secret of their own. Who may patch this ConfigMap may
// hold and trigger syncs (RBAC decides). Each deployment has its own annotation keys, and every write is a JSON
// merge patch of just those keys with the resourceVersion read (state-store.ts), so two CLIs (or a CLI and the
// agent) never overwrite each other's:
//   suspend.mooring.io/<deployment>     JSON {since, by, reason?}: the deployment is held while this is set
//   reconcile.mooring.io/<deployment>   a request token (ISO time + random), as Flux's reconcile.fluxcd.io/requestedAt
//   reconciled.mooring.io/<deployment>  the agent's answer: JSON {token, state, release?, message, at}
//   promote.mooring.io/<deployment>     an approval of a promotion (`mooring promote`): JSON {revision, by, at}
//   rollback.mooring.io/<deployment>    `mooring rollback` under way: JSON {token, by, since, until}; the agent stops
//                                       the deployment's sync, answers the token, and starts none until it is gone
//                                       (or `until` has passed: a rollback that died holds no longer)
//   rollback-answered.mooring.io/<deployment>  the agent's answer to it, as a reconcile's (a key of its own, so
//                                       that it never replaces the answer a `mooring reconcile` follows)
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { parseJson } from '../json.ts';
import type { KubeApi } from './api.ts';
import { StateStore } from './state-store.ts';

export const CONTROL_MAP = 'mooring-control';
export const SUSPEND_PREFIX = 'suspend.mooring.io/';
export const RECONCILE_PREFIX = 'reconcile.mooring.io/';
export const RECONCILED_PREFIX = 'reconciled.mooring.io/';
export const PROMOTE_PREFIX = 'promote.mooring.io/';
export const ROLLBACK_PREFIX = 'rollback.mooring.io/';
export const ROLLBACK_ANSWERED_PREFIX = 'rollback-answered.mooring.io/';
/** Bounds what one annotation may hold: a reason is a sentence, a message a summary. */
const MAX_TEXT = 500;

const suspensionSchema = z.object({
  since: z.string().max(64),
  by: z.string().max(256),
  reason: z.string().max(MAX_TEXT).optional(),
});
export type Suspension = z.infer<typeof suspensionSchema>;

const approvalSchema = z.object({
  revision: z.string().min(1).max(128),
  by: z.string().max(256),
  at: z.string().max(64).optional(),
});
/** `mooring promote`: the revision (a commit or its prefix) approved for the deployment's promotion. */
export type PromotionApproval = z.infer<typeof approvalSchema>;

const rollbackSchema = z.object({
  token: z.string().min(1).max(128),
  by: z.string().max(256),
  since: z.string().max(64),
  until: z.string().max(64),
});
/** `mooring rollback` under way (from the CLI): the agent syncs nothing of the deployment until it ends. */
export type RollbackUnderWay = z.infer<typeof rollbackSchema>;

/** `running` while the sync goes on; the others are ends. */
export const ANSWER_STATES = [
  'running',
  'stable',
  'failed',
  'timed-out',
  'error',
  'cancelled',
  'suspended',
  'held',
  'unknown',
] as const;
const answerSchema = z.object({
  token: z.string().max(128),
  state: z.enum(ANSWER_STATES),
  release: z.number().int().optional(),
  message: z.string().max(MAX_TEXT * 2),
  at: z.string().max(64).optional(),
});
export type ReconcileAnswer = z.infer<typeof answerSchema>;

export interface ControlState {
  /** Held deployments. A value that cannot be read still holds its deployment (someone meant to hold it). */
  suspended: Map<string, Suspension>;
  /** Reconcile request tokens, by deployment. */
  requested: Map<string, string>;
  answered: Map<string, ReconcileAnswer>;
  /** Promotions approved (`mooring promote`), by deployment. */
  approved: Map<string, PromotionApproval>;
  /** Rollbacks under way (`mooring rollback`), by deployment. */
  rollingBack: Map<string, RollbackUnderWay>;
  /** The agent's answers to them. */
  rollbackAnswered: Map<string, ReconcileAnswer>;
}

function jsonOrUndefined(text: string): unknown {
  try {
    return parseJson(text);
  } catch {
    return undefined;
  }
}

/** Reads the annotations of the control ConfigMap (absent: no annotations). */
export function parseControl(annotations: Record<string, string> | undefined): ControlState {
  const state: ControlState = {
    suspended: new Map(),
    requested: new Map(),
    answered: new Map(),
    approved: new Map(),
    rollingBack: new Map(),
    rollbackAnswered: new Map(),
  };
  for (const [key, value] of Object.entries(annotations ?? {})) {
    if (key.startsWith(SUSPEND_PREFIX)) {
      const parsed = suspensionSchema.safeParse(jsonOrUndefined(value));
      state.suspended.set(
        key.slice(SUSPEND_PREFIX.length),
        parsed.success ? parsed.data : { since: '', by: 'unknown', reason: 'unreadable suspension record' },
      );
    } else if (key.startsWith(RECONCILE_PREFIX)) {
      state.requested.set(key.slice(RECONCILE_PREFIX.length), value.slice(0, 128));
    } else if (key.startsWith(PROMOTE_PREFIX)) {
      const parsed = approvalSchema.safeParse(jsonOrUndefined(value));
      if (parsed.success) state.approved.set(key.slice(PROMOTE_PREFIX.length), parsed.data);
    } else if (key.startsWith(ROLLBACK_PREFIX)) {
      // One that cannot be read holds nothing: its rollback waits for no answer from an agent that could not read it.
      const parsed = rollbackSchema.safeParse(jsonOrUndefined(value));
      if (parsed.success) state.rollingBack.set(key.slice(ROLLBACK_PREFIX.length), parsed.data);
    } else if (key.startsWith(ROLLBACK_ANSWERED_PREFIX)) {
      const parsed = answerSchema.safeParse(jsonOrUndefined(value));
      if (parsed.success) state.rollbackAnswered.set(key.slice(ROLLBACK_ANSWERED_PREFIX.length), parsed.data);
    } else if (key.startsWith(RECONCILED_PREFIX)) {
      const parsed = answerSchema.safeParse(jsonOrUndefined(value));
      if (parsed.success) state.answered.set(key.slice(RECONCILED_PREFIX.length), parsed.data);
    }
  }
  return state;
}

/** A new reconcile request token: when it was asked, and random, so that two requests never look alike. */
export function requestToken(now = new Date()): string {
  return `${now.toISOString()}.${randomBytes(4).toString('hex')}`;
}

/** How long a rollback from the CLI holds its deployment beyond the deployment's stability timeout. */
export const ROLLBACK_HOLD_MARGIN_MS = 10 * 60_000;

/**
 * Whether a rollback under way still holds at `now`: until its `until` (a rollback whose CLI died holds no longer)
 * and, given `maxMs` (the deployment's stability timeout and the margin, what the CLI asks for), no longer than
 * that from its `since`: whoever may write the control ConfigMap (its namespace's writers) cannot hold a deployment
 * for years with an `until` far ahead. A `since` ahead of the clock (a CLI whose clock runs ahead) is taken up to
 * `maxMs` ahead, so no entry holds longer than twice `maxMs` from now; one further ahead holds nothing.
 */
export function rollbackHolds(
  rollback: RollbackUnderWay | undefined,
  now = Date.now(),
  maxMs?: number,
): boolean {
  if (!rollback) return false;
  const until = Date.parse(rollback.until);
  if (!Number.isFinite(until) || now >= until) return false;
  if (maxMs === undefined) return true;
  const since = Date.parse(rollback.since);
  return Number.isFinite(since) && since <= now + maxMs && now < since + maxMs;
}

/** How a suspension reads to people: `suspended since 2026-11-23T10:00Z by alice: maintenance`. */
export function describeSuspension(s: Suspension): string {
  const since = s.since.replace(/:\d\d(\.\d+)?Z$/, 'Z');
  return `suspended${since ? ` since ${since}` : ''} by ${s.by}${s.reason ? `: ${s.reason}` : ''}`;
}

export class ControlMap {
  readonly namespace: string;
  private readonly store: StateStore;

  constructor(api: KubeApi, namespace: string) {
    this.namespace = namespace;
    this.store = new StateStore(api, namespace);
  }

  /** The map's requests; `fresh`: asked of the API server, not of the watch's copy. */
  async read(fresh = false): Promise<ControlState> {
    const cm = await this.store.read(CONTROL_MAP, `read ConfigMap ${this.namespace}/${CONTROL_MAP}`, fresh);
    return parseControl(cm?.annotations);
  }

  /**
   * Sets (a string) or removes (null) annotations, keeping every other key as it is stored now, creating the
   * ConfigMap when it does not exist yet.
   */
  async annotate(annotations: Record<string, string | null>): Promise<void> {
    await this.store.update(
      CONTROL_MAP,
      (current) => {
        const next = { ...current?.annotations };
        for (const [key, value] of Object.entries(annotations)) {
          if (value === null) delete next[key];
          else next[key] = value;
        }
        // Nothing to set on a map that is not there: nothing to create.
        if (!current && Object.keys(next).length === 0) return undefined;
        return { data: current?.data ?? {}, annotations: next };
      },
      {
        action: `write ConfigMap ${this.namespace}/${CONTROL_MAP}`,
        labels: { 'app.kubernetes.io/managed-by': 'mooring', 'app.kubernetes.io/component': 'control' },
        // Operators may be granted only `patch` on this ConfigMap (docs/control.md).
        verb: 'patch',
      },
    );
  }
}
