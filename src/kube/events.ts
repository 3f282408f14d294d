// Kubernetes Events written by the agent (core/v1 Event: what `kubectl describe` and `kubectl get events` read on
// every version mooring supports; events.k8s.io/v1 is served from the same storage), bounded as client-go's
// EventCorrelator bounds a controller's:
//   - the same (object, type, reason, message) within 10 minutes is one Event whose count and lastTimestamp are
//     patched, not a new Event;
//   - each object has a token bucket (25 at once, then one per 5 minutes): a flapping deployment cannot flood
//     etcd; what is over is dropped (counted, logged at debug);
//   - messages are cut to 1024 bytes; names are `<object>.<hex>` as kubectl's recorder makes them.
// Writes are queued (at most 1000) and done one at a time in the background: a sync never waits for an Event. A
// namespace where Events are forbidden (no RBAC) is logged once and skipped for 10 minutes.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { errorMessage } from '../errors.ts';
import type { KubeApi } from './api.ts';
import { statusCode } from './errors.ts';

export interface EventTarget {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid?: string | undefined;
}

export interface EventLog {
  debug(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface EventRecorderOptions {
  log: EventLog;
  /** Told of each Event dropped by the per-object limit or a full queue. */
  dropped?: (() => void) | undefined;
  burst?: number | undefined;
  refillMs?: number | undefined;
  now?: () => number;
}

const WINDOW_MS = 10 * 60_000;
const MAX_MESSAGE = 1024;
const MAX_QUEUE = 1000;
const FORBIDDEN_PAUSE_MS = 10 * 60_000;

interface Pending {
  target: EventTarget;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export function cutMessage(message: string): string {
  if (Buffer.byteLength(message) <= MAX_MESSAGE) return message;
  let cut = message.slice(0, MAX_MESSAGE - 3);
  while (Buffer.byteLength(cut) > MAX_MESSAGE - 3) cut = cut.slice(0, -1);
  return `${cut}...`;
}

export class EventRecorder {
  private readonly api: KubeApi;
  private readonly options: EventRecorderOptions;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly recent = new Map<string, { name: string; count: number; at: number }>();
  private readonly forbidden = new Map<string, number>();
  private readonly queue: Pending[] = [];
  private running: Promise<void> | undefined;
  private closed = false;
  private readonly instance = hostname();

  constructor(api: KubeApi, options: EventRecorderOptions) {
    this.api = api;
    this.options = options;
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** Queues an Event; returns at once. */
  record(target: EventTarget, type: 'Normal' | 'Warning', reason: string, message: string): void {
    if (this.closed) return;
    const objectKey = `${target.namespace}/${target.kind}/${target.name}`;
    if (!this.take(objectKey)) {
      this.options.dropped?.();
      this.options.log.debug({ object: objectKey, reason }, 'event dropped: too many for this object');
      return;
    }
    if (this.queue.length >= MAX_QUEUE) {
      this.options.dropped?.();
      return;
    }
    this.queue.push({ target, type, reason, message: cutMessage(message) });
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
    });
  }

  /** Waits until the queued Events are written (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.running) await this.running;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  /** The per-object token bucket: `burst` at once, then one per `refillMs`. */
  private take(key: string): boolean {
    const burst = this.options.burst ?? 25;
    const refillMs = this.options.refillMs ?? 5 * 60_000;
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: burst, at: now };
    const refilled = Math.min(burst, bucket.tokens + Math.floor((now - bucket.at) / refillMs));
    const at = refilled > bucket.tokens ? now : bucket.at;
    if (refilled < 1) {
      this.buckets.set(key, { tokens: refilled, at });
      return false;
    }
    this.buckets.set(key, { tokens: refilled - 1, at });
    if (this.buckets.size > 10_000) this.buckets.delete(this.buckets.keys().next().value as string);
    return true;
  }

  private async drain(): Promise<void> {
    for (let next = this.queue.shift(); next; next = this.queue.shift()) {
      try {
        await this.write(next);
      } catch (error) {
        const ns = next.target.namespace;
        if (statusCode(error) === 403) {
          if (!this.forbidden.has(ns))
            this.options.log.warn(
              { namespace: ns, err: errorMessage(error) },
              'cannot write events in this namespace',
            );
          this.forbidden.set(ns, this.now());
        } else {
          this.options.log.debug(
            { namespace: ns, reason: next.reason, err: errorMessage(error) },
            'event not written',
          );
        }
      }
    }
  }

  private async write(e: Pending): Promise<void> {
    const { target } = e;
    const ns = target.namespace;
    const paused = this.forbidden.get(ns);
    if (paused !== undefined) {
      if (this.now() - paused < FORBIDDEN_PAUSE_MS) return;
      this.forbidden.delete(ns);
    }
    const now = this.now();
    const stamp = new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
    const key = `${ns}/${target.kind}/${target.name}/${target.uid ?? ''}|${e.type}|${e.reason}|${e.message}`;
    const seen = this.recent.get(key);
    const base = `/api/v1/namespaces/${encodeURIComponent(ns)}/events`;
    if (seen && now - seen.at < WINDOW_MS) {
      seen.count += 1;
      seen.at = now;
      try {
        await this.api.request('PATCH', `${base}/${encodeURIComponent(seen.name)}`, {
          body: { count: seen.count, lastTimestamp: stamp },
          contentType: 'application/merge-patch+json',
        });
        return;
      } catch (error) {
        if (statusCode(error) !== 404) throw error;
        this.recent.delete(key); // deleted (its TTL ran out): made again below
      }
    }
    const name = `${target.name}.${randomBytes(8).toString('hex')}`;
    await this.api.request('POST', base, {
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace: ns },
        involvedObject: {
          apiVersion: target.apiVersion,
          kind: target.kind,
          name: target.name,
          namespace: ns,
          ...(target.uid ? { uid: target.uid } : {}),
        },
        reason: e.reason,
        message: e.message,
        type: e.type,
        count: 1,
        firstTimestamp: stamp,
        lastTimestamp: stamp,
        source: { component: 'mooring', host: this.instance },
        reportingComponent: 'mooring',
        reportingInstance: this.instance,
      },
    });
    this.recent.set(key, { name, count: 1, at: now });
    if (this.recent.size > 5000) this.recent.delete(this.recent.keys().next().value as string);
  }
}
