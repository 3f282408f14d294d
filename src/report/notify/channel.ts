// Delivery to one notification receiver: a bounded queue (the oldest message dropped past it, logged and counted),
// at most `perMinute` messages a minute, each request bounded in time, and retries with back-off on 5xx, 429
// (its Retry-After honoured) and network errors until `retryForMs` has passed; a 4xx other than 408/429 is not
// retried (the receiver refuses the message: a wrong URL, a revoked webhook). Sending only queues: a sync never waits
// for a receiver, and a receiver that hangs delays only its own messages.
//
// The receiver's URL is a secret (a Slack webhook URL grants posting): it is read when a message is sent, and never
// logged: messages name the receiver.
import { fullJitter } from '../../backoff.ts';
import { errorMessage } from '../../errors.ts';
import { httpVerdict, sendBounded } from '../../http/request.ts';
import { fetchHeaders } from '../../http/retry-after.ts';

export interface Delivery {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export type DeliveryResult = 'sent' | 'failed' | 'dropped';

export interface ChannelOptions {
  name: string;
  perMinute: number;
  queue: number;
  retryForMs: number;
  /** One request's limit; 10 s by default. */
  timeoutMs?: number | undefined;
  log: {
    info(fields: Record<string, unknown>, message: string): void;
    warn(fields: Record<string, unknown>, message: string): void;
  };
  /** Told of each message's end. */
  counted?: ((receiver: string, result: DeliveryResult) => void) | undefined;
  /** The back-off's base: retry n waits a random share of base * 2^n, at most a minute; 1 s by default. */
  backoffMs?: number | undefined;
  /** The back-off's random draw (full jitter); Math.random by default. */
  random?: (() => number) | undefined;
}

const MAX_BACKOFF_MS = 60_000;
// An answer is read for nothing but its status: a little of it is enough to keep the connection reusable.
const MAX_ANSWER_BYTES = 16 * 1024;

interface Message {
  what: string;
  build: () => Promise<Delivery>;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

export class Channel {
  private readonly options: ChannelOptions;
  private readonly waiting: Message[] = [];
  private running: Promise<void> | undefined;
  private readonly stop = new AbortController();
  private lastSent = 0;

  constructor(options: ChannelOptions) {
    this.options = options;
  }

  /** Messages not yet delivered or given up. */
  get pending(): number {
    return this.waiting.length + (this.running ? 1 : 0);
  }

  /** Queues a message; returns at once. `what` names it in logs (deployment and outcome). */
  send(what: string, build: () => Promise<Delivery>): void {
    if (this.stop.signal.aborted) return;
    if (this.waiting.length >= this.options.queue) {
      const dropped = this.waiting.shift();
      this.options.log.warn(
        { receiver: this.options.name, dropped: dropped?.what, queue: this.options.queue },
        'notification dropped: the receiver is behind and its queue is full',
      );
      this.options.counted?.(this.options.name, 'dropped');
    }
    this.waiting.push({ what, build });
    this.running ??= this.work().finally(() => {
      this.running = undefined;
      if (this.waiting.length > 0 && !this.stop.signal.aborted) this.running = this.work();
    });
  }

  /** Stops delivering: what is queued is given up. */
  async close(): Promise<void> {
    this.stop.abort();
    this.waiting.length = 0;
    await this.running;
  }

  private async work(): Promise<void> {
    const signal = this.stop.signal;
    for (let message = this.waiting.shift(); message && !signal.aborted; message = this.waiting.shift()) {
      const spacing = 60_000 / this.options.perMinute;
      const wait = this.lastSent + spacing - Date.now();
      if (wait > 0) await sleep(wait, signal);
      if (signal.aborted) return;
      this.lastSent = Date.now();
      const result = await this.deliver(message, signal);
      if (!signal.aborted) this.options.counted?.(this.options.name, result);
    }
  }

  private async deliver(message: Message, signal: AbortSignal): Promise<DeliveryResult> {
    const { name, log } = this.options;
    const deadline = Date.now() + this.options.retryForMs;
    const timeoutMs = this.options.timeoutMs ?? 10_000;
    for (let attempt = 1; ; attempt++) {
      let retryAfterMs: number | undefined;
      let why: string;
      try {
        const delivery = await message.build();
        const res = await sendBounded({
          method: 'POST',
          url: delivery.url,
          headers: delivery.headers,
          body: delivery.body,
          redirect: 'error',
          signal,
          timeoutMs,
          maxBodyBytes: MAX_ANSWER_BYTES,
          // The URL is a secret: the receiver's name stands for it.
          what: `POST to ${name}`,
        });
        if (res.ok) {
          log.info({ receiver: name, message: message.what, attempt }, 'notification sent');
          return 'sent';
        }
        why = `HTTP ${res.status}`;
        const verdict = httpVerdict(res.status, fetchHeaders(res.headers), { now: Date.now() });
        if (verdict.kind === 'stalled') {
          log.warn(
            { receiver: name, message: message.what, status: res.status },
            'notification refused by the receiver',
          );
          return 'failed';
        }
        if (verdict.kind === 'waiting') retryAfterMs = verdict.delayMs;
      } catch (error) {
        if (signal.aborted) return 'failed';
        why = errorMessage(error).replace(/https?:\/\/\S+/g, '<url>');
      }
      const delay = fullJitter(attempt - 1, {
        baseMs: this.options.backoffMs ?? 1000,
        maxMs: MAX_BACKOFF_MS,
        random: this.options.random,
      });
      const next = retryAfterMs !== undefined && retryAfterMs > 0 ? retryAfterMs : delay;
      if (Date.now() + next > deadline) {
        log.warn(
          { receiver: name, message: message.what, attempts: attempt, err: why },
          'notification given up',
        );
        return 'failed';
      }
      log.info(
        { receiver: name, message: message.what, attempt, err: why, retryInMs: next },
        'notification not delivered; retrying',
      );
      await sleep(next, signal);
      if (signal.aborted) return 'failed';
    }
  }
}
