// The control ConfigMap `mooring-control` in the agent's namespace: how `mooring suspend`, `resume` and
// `reconcile` reach a running agent without a port or a secret of their own. Who may patch this ConfigMap may
// hold and trigger syncs (RBAC decides). Each deployment has its own annotation keys, and every write is a JSON
// merge patch of just those keys, so two CLIs (or a CLI and the agent) never overwrite each other's:
//   suspend.mooring.io/<deployment>     JSON {since, by, reason?}: the deployment is held while this is set
//   reconcile.mooring.io/<deployment>   a request token (ISO time + random), as Flux's reconcile.fluxcd.io/requestedAt
//   reconciled.mooring.io/<deployment>  the agent's answer: JSON {token, state, release?, message, at}
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { KubeApi } from './api.ts';
import { describeKubeError, statusCode } from './errors.ts';

export const CONTROL_MAP = 'mooring-control';
export const SUSPEND_PREFIX = 'suspend.mooring.io/';
export const RECONCILE_PREFIX = 'reconcile.mooring.io/';
export const RECONCILED_PREFIX = 'reconciled.mooring.io/';
/** Bounds what one annotation may hold: a reason is a sentence, a message a summary. */
const MAX_TEXT = 500;

const suspensionSchema = z.object({
  since: z.string().max(64),
  by: z.string().max(256),
  reason: z.string().max(MAX_TEXT).optional(),
});
export type Suspension = z.infer<typeof suspensionSchema>;

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
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Reads the annotations of the control ConfigMap (absent: no annotations). */
export function parseControl(annotations: Record<string, string> | undefined): ControlState {
  const state: ControlState = { suspended: new Map(), requested: new Map(), answered: new Map() };
  for (const [key, value] of Object.entries(annotations ?? {})) {
    if (key.startsWith(SUSPEND_PREFIX)) {
      const parsed = suspensionSchema.safeParse(parseJson(value));
      state.suspended.set(
        key.slice(SUSPEND_PREFIX.length),
        parsed.success ? parsed.data : { since: '', by: 'unknown', reason: 'unreadable suspension record' },
      );
    } else if (key.startsWith(RECONCILE_PREFIX)) {
      state.requested.set(key.slice(RECONCILE_PREFIX.length), value.slice(0, 128));
    } else if (key.startsWith(RECONCILED_PREFIX)) {
      const parsed = answerSchema.safeParse(parseJson(value));
      if (parsed.success) state.answered.set(key.slice(RECONCILED_PREFIX.length), parsed.data);
    }
  }
  return state;
}

/** A new reconcile request token: when it was asked, and random, so that two requests never look alike. */
export function requestToken(now = new Date()): string {
  return `${now.toISOString()}.${randomBytes(4).toString('hex')}`;
}

/** How a suspension reads to people: `suspended since 2026-11-23T10:00Z by alice: maintenance`. */
export function describeSuspension(s: Suspension): string {
  const since = s.since.replace(/:\d\d(\.\d+)?Z$/, 'Z');
  return `suspended${since ? ` since ${since}` : ''} by ${s.by}${s.reason ? `: ${s.reason}` : ''}`;
}

function mapPath(namespace: string, name?: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps${name ? `/${name}` : ''}`;
}

export class ControlMap {
  private readonly api: KubeApi;
  readonly namespace: string;

  constructor(api: KubeApi, namespace: string) {
    this.api = api;
    this.namespace = namespace;
  }

  async read(): Promise<ControlState> {
    try {
      const cm = await this.api.request<{ metadata: { annotations?: Record<string, string> } }>(
        'GET',
        mapPath(this.namespace, CONTROL_MAP),
      );
      return parseControl(cm.metadata.annotations);
    } catch (error) {
      if (statusCode(error) === 404) return parseControl(undefined);
      throw describeKubeError(error, `read ConfigMap ${this.namespace}/${CONTROL_MAP}`);
    }
  }

  /**
   * Sets (a string) or removes (null) annotations with a JSON merge patch of just these keys, creating the
   * ConfigMap when it does not exist yet.
   */
  async annotate(annotations: Record<string, string | null>): Promise<void> {
    const what = `write ConfigMap ${this.namespace}/${CONTROL_MAP}`;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.api.request('PATCH', mapPath(this.namespace, CONTROL_MAP), {
          body: { metadata: { annotations } },
          contentType: 'application/merge-patch+json',
        });
        return;
      } catch (error) {
        if (statusCode(error) !== 404 || attempt > 0) throw describeKubeError(error, what);
      }
      const set = Object.fromEntries(Object.entries(annotations).filter(([, v]) => v !== null));
      if (Object.keys(set).length === 0) return;
      try {
        await this.api.request('POST', mapPath(this.namespace), {
          body: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: {
              name: CONTROL_MAP,
              namespace: this.namespace,
              labels: { 'app.kubernetes.io/managed-by': 'mooring', 'app.kubernetes.io/component': 'control' },
              annotations: set,
            },
          },
        });
        return;
      } catch (error) {
        // Another writer created it in between: patch it.
        if (statusCode(error) !== 409) throw describeKubeError(error, what);
      }
    }
  }
}
