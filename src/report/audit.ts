// The audit log (seed 003, "Emit your deployed manifests to an audit log"): every hydrated object a sync applied,
// as JSON lines to a file or stdout and optionally POSTed to an HTTP endpoint, with the trigger, commit, image
// digests, deployment and result. Secret values, and values decrypted from SOPS files, are redacted here through
// render/redact.ts, the one place that redacts them.
import { appendFile } from 'node:fs/promises';
import { fullJitter } from '../backoff.ts';
import type { MooringConfig } from '../config/schema.ts';
import { readSecret } from '../config/secret.ts';
import type { DeployReport, Logger, Release, SyncReporter, SyncRequest } from '../contract.ts';
import { classify, errorMessage, MooringError, TransientError } from '../errors.ts';
import type { Fetch } from '../http/fetch.ts';
import { httpFailure, safeEndpoint, sendBounded } from '../http/request.ts';
import { decryptedValues, redactSecret } from '../render/redact.ts';

export interface AuditRecord {
  time: string;
  cluster: string;
  deployment: string;
  namespace: string;
  release: number | undefined;
  trigger: string;
  commit: string | undefined;
  images: Record<string, string>;
  result: string;
  action: string;
  object: unknown;
}

export function auditRecords(
  cluster: string,
  sync: SyncRequest,
  report: DeployReport,
  release: Release | undefined,
): AuditRecord[] {
  const time = new Date().toISOString();
  const images = Object.fromEntries(
    Object.entries(sync.images).map(([k, v]) => [k, `${v.image}:${v.tag ?? ''}@${v.digest}`]),
  );
  const base = {
    time,
    cluster,
    deployment: sync.deployment.name,
    namespace: sync.deployment.namespace,
    release: release?.id,
    trigger: sync.trigger,
    commit: sync.commit,
    images,
    result: report.outcome,
  };
  // Values decrypted from the sync's SOPS files are hidden wherever they appear: a Secret's data keys or type, or
  // any field a chart or kustomization copied one into.
  const decrypted = decryptedValues(sync.files);
  return [
    ...report.applied.map((applied) => ({
      ...base,
      action: applied.action,
      object: redactSecret(applied.target.object, decrypted),
    })),
    // A pruned object is named, not shown: its manifest is gone from the source.
    ...(report.prune?.deleted ?? []).map((object) => ({ ...base, action: 'pruned', object })),
  ];
}

// The audit endpoint: three tries, each bounded, with a short back-off (a sync's finalizer waits for it).
const AUDIT_ATTEMPTS = 3;
const AUDIT_TIMEOUT_MS = 10_000;
const AUDIT_BACKOFF_MS = 500;
const AUDIT_MAX_WAIT_MS = 5_000;

export interface AuditLogOptions {
  fetch?: Fetch | undefined;
  sleep?: ((ms: number) => Promise<void>) | undefined;
}

export class AuditLog implements SyncReporter {
  private readonly config: MooringConfig;
  private readonly log: Logger;
  private readonly stdout: (line: string) => void;
  private readonly fetch: Fetch | undefined;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    config: MooringConfig,
    log: Logger,
    stdout: (line: string) => void = (l) => process.stdout.write(l),
    options: AuditLogOptions = {},
  ) {
    this.config = config;
    this.log = log;
    this.stdout = stdout;
    this.fetch = options.fetch;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  get enabled(): boolean {
    const a = this.config.audit;
    return a.stdout || a.file !== undefined || a.url !== undefined;
  }

  async finished(sync: SyncRequest, report: DeployReport, release: Release | undefined): Promise<void> {
    const audit = this.config.audit;
    if (!this.enabled || report.applied.length === 0) return;
    const records = auditRecords(this.config.cluster.name, sync, report, release);
    const lines = records.map((r) => `${JSON.stringify(r)}\n`).join('');
    if (audit.stdout) this.stdout(lines);
    if (audit.file) await appendFile(audit.file, lines, { mode: 0o600 });
    if (audit.url) await this.post(audit.url, records);
  }

  private async post(url: string, records: AuditRecord[]): Promise<void> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.audit.token)
      headers.authorization = `Bearer ${await readSecret(this.config.audit.token)}`;
    // The target URL without credentials or query: it may carry a key.
    const target = safeEndpoint(url);
    const body = JSON.stringify({ records });
    for (let attempt = 0; ; attempt++) {
      let failure: MooringError | undefined;
      try {
        const response = await sendBounded({
          method: 'POST',
          url,
          headers,
          body,
          timeoutMs: AUDIT_TIMEOUT_MS,
          what: `POST ${target}`,
          fetch: this.fetch,
        });
        failure = httpFailure(response, `POST ${target}: HTTP ${response.status}`, { now: Date.now() });
      } catch (error) {
        failure = error instanceof MooringError ? error : new TransientError(errorMessage(error));
      }
      if (failure === undefined) return;
      const disposition = classify(failure);
      if (disposition.action === 'stop' || attempt + 1 >= AUDIT_ATTEMPTS) {
        this.log.warn({ target, err: failure.message }, 'audit endpoint failed');
        return;
      }
      const backoff = fullJitter(attempt, { baseMs: AUDIT_BACKOFF_MS, maxMs: AUDIT_MAX_WAIT_MS });
      const delay =
        disposition.action === 'retry-after' ? Math.min(AUDIT_MAX_WAIT_MS, disposition.delayMs) : backoff;
      await this.sleep(delay);
    }
  }
}
