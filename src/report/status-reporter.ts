// Posts a deployment's commit statuses through one provider, and is the one place that makes that safe to call
// from the sync's finalizer: it never throws, retries what a retry can fix within a bounded time, does not post
// what the commit already says, and keeps the token out of everything it logs or reports.
import type { Logger } from 'pino';
import { fullJitter } from '../backoff.ts';
import type { SecretRef } from '../config/schema.ts';
import { readSecret } from '../config/secret.ts';
import {
  classify,
  errorMessage,
  MooringError,
  StalledError,
  TransientError,
  WaitingError,
} from '../errors.ts';
import { describeRepo, statusSubject } from './forges/repo-url.ts';
import { renderTemplate, truncate } from './forges/text.ts';
import type { CommitState, CommitStatus, CommitStatusProvider, StatusTarget } from './forges/types.ts';

export type ReportResult = 'posted' | 'skipped' | 'failed';

/** What the sync says; the reporter adds the context and fits the description to the provider. */
export interface StatusReport {
  state: CommitState;
  description: string;
  /** Overrides commitStatus.targetUrl for this status. */
  targetUrl?: string | undefined;
}

export interface CommitStatusReporterOptions {
  provider: CommitStatusProvider;
  /** deployments[].commitStatus; `context` and `targetUrl` may use {cluster}, {deployment}, {namespace}. */
  config: {
    enabled: boolean;
    token?: SecretRef | undefined;
    context: string;
    targetUrl?: string | undefined;
  };
  cluster: string;
  deployment: string;
  namespace: string;
  logger: Logger;
  /** Told of every status that could not be posted; the error's message holds no secret. */
  onError?: ((error: MooringError) => void) | undefined;
  sleep?: ((ms: number) => Promise<void>) | undefined;
  readToken?: ((ref: SecretRef) => Promise<string>) | undefined;
  /** The back-off's random draw (full jitter); Math.random by default. */
  random?: (() => number) | undefined;
}

export const MAX_ATTEMPTS = 4;
export const MAX_WAIT_MS = 30_000;
const FIRST_BACKOFF_MS = 1_000;
// One entry per (repository, commit, context) last posted; old commits stop mattering once a newer one is synced.
const MAX_REMEMBERED = 1_000;
const REDACTED = '<redacted>';

export class CommitStatusReporter {
  readonly #options: CommitStatusReporterOptions;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #readToken: (ref: SecretRef) => Promise<string>;
  readonly #lastPosted = new Map<string, string>();

  constructor(options: CommitStatusReporterOptions) {
    this.#options = options;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#readToken = options.readToken ?? readSecret;
  }

  /** The context this reporter posts under. */
  get context(): string {
    return renderTemplate(this.#options.config.context, this.#values());
  }

  /** Never throws: a status that cannot be posted is logged, passed to onError, and answered 'failed'. */
  async report(target: StatusTarget, report: StatusReport): Promise<ReportResult> {
    return (await this.attempt(target, report)).result;
  }

  /**
   * As report(), with at most `maxAttempts` tries, and the reason when the status was not posted (its kind says
   * whether a later try can help), so that a caller can keep the status and post it later.
   */
  async attempt(
    target: StatusTarget,
    report: StatusReport,
    maxAttempts = MAX_ATTEMPTS,
  ): Promise<{ result: 'posted' | 'skipped' } | { result: 'failed'; error: MooringError }> {
    let status: CommitStatus | undefined;
    let token: string | undefined;
    let attempts = 0;
    try {
      if (!this.#options.config.enabled) return { result: 'skipped' };
      status = this.statusFor(report);
      const key = [target.repoUrl, target.commit, status.context].join('\n');
      const fingerprint = JSON.stringify([status.state, status.description, status.targetUrl ?? null]);
      if (this.#lastPosted.get(key) === fingerprint) {
        this.#options.logger.debug(this.#fields(target, status), 'commit status unchanged, not posted again');
        return { result: 'skipped' };
      }
      token = await this.#token();
      for (;;) {
        attempts += 1;
        try {
          await this.#options.provider.post(target, status, token);
          break;
        } catch (error) {
          const disposition = classify(error);
          if (disposition.action === 'stop' || attempts >= maxAttempts) throw error;
          const backoff = fullJitter(attempts - 1, {
            baseMs: FIRST_BACKOFF_MS,
            maxMs: MAX_WAIT_MS,
            random: this.#options.random,
          });
          const delayMs = Math.min(
            MAX_WAIT_MS,
            disposition.action === 'retry-after' ? disposition.delayMs : backoff,
          );
          const fields = { ...this.#fields(target, status), attempt: attempts, delayMs };
          this.#options.logger.debug(
            { ...fields, error: redact(errorMessage(error), token) },
            'commit status not posted, retrying',
          );
          await this.#sleep(delayMs);
        }
      }
      this.#remember(key, fingerprint);
    } catch (error) {
      return { result: 'failed', error: this.#fail(target, status, error, token, attempts) };
    }
    try {
      this.#options.logger.info({ ...this.#fields(target, status), attempts }, 'commit status posted');
    } catch {
      // Posted is posted, whatever the logger does.
    }
    return { result: 'posted' };
  }

  /** The status as it is posted: the context added, the description fitted to the provider. */
  statusFor(report: StatusReport): CommitStatus {
    const { provider, config } = this.#options;
    const targetUrl =
      webAddress(report.targetUrl) ?? (config.targetUrl && renderTemplate(config.targetUrl, this.#values()));
    return {
      state: report.state,
      description: truncate(plainLine(report.description), provider.maxDescription),
      context: this.context,
      ...(targetUrl ? { targetUrl } : {}),
    };
  }

  // Read for every post, not once: a rotated Secret (a file remounted, an env var in a restarted pod) is used at once.
  async #token(): Promise<string> {
    const ref = this.#options.config.token;
    if (ref === undefined) {
      throw new StalledError(
        'commitStatus.token is not set: the status API needs a token that can write statuses',
      );
    }
    return this.#readToken(ref);
  }

  #fail(
    target: StatusTarget,
    status: CommitStatus | undefined,
    error: unknown,
    token: string | undefined,
    attempts: number,
  ): MooringError {
    const safe = safeError(error, token, target);
    try {
      this.#options.logger.warn(
        { ...this.#fields(target, status), attempts, error: safe.message },
        'commit status not posted',
      );
      this.#options.onError?.(safe);
    } catch {
      // A failing logger or callback must not turn a lost status into a failed sync.
    }
    return safe;
  }

  #remember(key: string, fingerprint: string): void {
    this.#lastPosted.delete(key);
    this.#lastPosted.set(key, fingerprint);
    if (this.#lastPosted.size > MAX_REMEMBERED) {
      const oldest = this.#lastPosted.keys().next();
      if (!oldest.done) this.#lastPosted.delete(oldest.value);
    }
  }

  #values(): Record<string, string> {
    const { cluster, deployment, namespace } = this.#options;
    return { cluster, deployment, namespace };
  }

  // The repository in its safe form: a configured URL may carry credentials.
  #fields(target: StatusTarget, status: CommitStatus | undefined) {
    return {
      provider: this.#options.provider.name,
      repository: describeRepo(target.repoUrl),
      commit: target.commit,
      context: status?.context,
      state: status?.state,
    };
  }
}

/** Hides every occurrence of the token, also as it would appear URL-encoded. */
export function redact(text: string, token: string | undefined): string {
  if (!token) return text;
  let result = text.split(token).join(REDACTED);
  const encoded = encodeURIComponent(token);
  if (encoded !== token) result = result.split(encoded).join(REDACTED);
  return result;
}

// A fresh error of the same kind, without the cause: a cause from a library could carry request details, and
// nothing in it is needed to act on the failure.
function safeError(error: unknown, token: string | undefined, target: StatusTarget): MooringError {
  const subject = (error instanceof MooringError ? error.subject : undefined) ?? statusSubject(target);
  let message = errorMessage(error);
  if (subject && message.startsWith(`${subject.describe}: `))
    message = message.slice(subject.describe.length + 2);
  message = redact(message, token);
  if (error instanceof StalledError) return new StalledError(message, { subject });
  if (error instanceof WaitingError) return new WaitingError(message, error.retryAfterMs, { subject });
  return new TransientError(message, { subject });
}

/**
 * A description as one line of plain text: line breaks, control characters and bidirectional overrides become
 * spaces. What a status says may come from a record of the agent's namespace (a kept status, a rollback's `by`),
 * and a forge shows it beside the checks that gate a merge.
 */
function plainLine(text: string): string {
  return (
    text
      // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters replaced
      .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g, ' ')
      .replace(/ {2,}/g, ' ')
  );
}

/** `url` when it is an http(s) address, else undefined (the configured target URL, if any, is used instead). */
function webAddress(url: string | undefined): string | undefined {
  if (url === undefined || !URL.canParse(url)) return undefined;
  const protocol = new URL(url).protocol;
  return protocol === 'https:' || protocol === 'http:' ? url : undefined;
}
