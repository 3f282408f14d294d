// The audit log (seed 003, "Emit your deployed manifests to an audit log"): every hydrated object a sync applied,
// as JSON lines to a file or stdout and optionally POSTed to an HTTP endpoint, with the trigger, commit, image
// digests, deployment and result. Secret values, and values decrypted from SOPS files, are redacted here through
// render/redact.ts, the one place that redacts them.
import { appendFile } from 'node:fs/promises';
import type { MooringConfig } from '../config/schema.ts';
import { errorMessage } from '../errors.ts';
import { redactSecret } from '../render/redact.ts';
import { readSecret } from '../sources/secret.ts';
import { decryptedValues } from '../sources/sops/decrypt.ts';
import type { DeployReport } from '../sync/deploy.ts';
import type { Logger } from '../sync/logger.ts';
import type { SyncReporter, SyncRequest } from '../sync/sync-deployment.ts';
import type { Release } from './ledger.ts';

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

export class AuditLog implements SyncReporter {
  private readonly config: MooringConfig;
  private readonly log: Logger;
  private readonly stdout: (line: string) => void;

  constructor(
    config: MooringConfig,
    log: Logger,
    stdout: (line: string) => void = (l) => process.stdout.write(l),
  ) {
    this.config = config;
    this.log = log;
    this.stdout = stdout;
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
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify({ records }),
          signal: AbortSignal.timeout(10_000),
        });
        if (res.ok) return;
        if (res.status < 500 && res.status !== 429) throw new Error(`HTTP ${res.status}`);
      } catch (error) {
        if (attempt === 2) {
          // The target URL without credentials or query: it may carry a key.
          const safe = new URL(url);
          this.log.warn(
            { target: `${safe.origin}${safe.pathname}`, err: errorMessage(error) },
            'audit endpoint failed',
          );
          return;
        }
      }
      await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
    }
  }
}
